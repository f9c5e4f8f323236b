"""produce_arrow's batches (client/column_batch.py, encoded by
kafka_protocol.columnar_records' compiled pass) read back by kafka-python's
own decoder and by ours: every row's key, value and timestamp, CRC valid,
for every codec; rows go to the partition the per-record API would pick."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from client.column_batch import ColumnBatch, encode_table
from client.partitioner import key_partition
from client.record_future import Settlement
from kafka_protocol.compression import Codec
from kafka_protocol.errors import KafkaError, MessageTooLargeError
from kafka_protocol.records import decode_batch

CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]


def sealed(encoded, codec: Codec, producer_id: int = -1, base_sequence: int = -1) -> list[bytes]:
    out = []
    for e in encoded:
        batch = ColumnBatch("t", e, codec, 0, 0.0, Settlement())
        batch.producer_id, batch.producer_epoch, batch.base_sequence = producer_id, 0 if producer_id >= 0 else -1, \
            base_sequence
        out.append(batch.encode(codec, transactional=producer_id >= 0))
    return out


@settings(max_examples=12, deadline=None)  # make test time
@given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=20)), st.one_of(st.none(), st.binary(max_size=300)),
                          st.integers(0, 2**41)), min_size=1, max_size=60),
       st.sampled_from(CODECS), st.integers(1, 4), st.sampled_from([64, 1024, 16384]))
def test_kafka_python_reads_every_row(rows, codec, partitions, batch_size) -> None:
    table = pa.table({"key": pa.array([k for k, _, _ in rows], pa.binary()),
                      "value": pa.array([v for _, v, _ in rows], pa.binary()),
                      "timestamp": pa.array([t for _, _, t in rows], pa.int64())})
    encoded = encode_table(table, partitions, None, batch_size=batch_size, max_record_size=1 << 20, codec=codec)
    got: dict[int, list[tuple]] = {}
    in_order: list[tuple] = []
    for e, raw in zip(encoded, sealed(encoded, codec, 7, 3)):
        theirs = DefaultRecordBatch(raw)
        assert theirs.validate_crc() and theirs.compression_type == int(codec) and theirs.producer_id == 7
        theirs_rows = [(r.key, r.value, r.timestamp) for r in theirs]
        ours = decode_batch(raw, 0)
        assert [(r.key, r.value, r.timestamp) for r in ours.records] == theirs_rows
        assert [r.offset for r in ours.records] == list(range(e.count)) and ours.header.base_sequence == 3
        got.setdefault(e.partition, []).extend(theirs_rows)
        in_order.extend(theirs_rows)
    if any(k is not None for k, _, _ in rows):  # where Kafka's partitioner puts them (keyless ones: partition 0)
        for p in range(partitions):
            assert got.get(p, []) == [r for r in rows if (key_partition(r[0], partitions) if r[0] is not None else 0) == p]
    else:  # keyless: consecutive runs, batch after batch
        assert in_order == rows


def test_partition_argument_column_and_errors() -> None:
    table = pa.table({"value": [b"a", b"b", b"c"], "partition": pa.array([2, 0, 2], pa.int32())})
    encoded = encode_table(table, 3, None, batch_size=16384, max_record_size=1000, codec=Codec.NONE)
    assert sorted((e.partition, e.count) for e in encoded) == [(0, 1), (2, 2)]
    assert [e.partition for e in encode_table(table, 3, 1, batch_size=16384, max_record_size=1000,
                                             codec=Codec.NONE)] == [1]
    with pytest.raises(KafkaError, match="not in the range"):
        encode_table(table, 2, None, batch_size=16384, max_record_size=1000, codec=Codec.NONE)
    with pytest.raises(MessageTooLargeError):
        encode_table(pa.table({"value": [b"x" * 2000]}), 1, None, batch_size=16384, max_record_size=1000,
                     codec=Codec.NONE)
    with pytest.raises(ValueError, match="value"):
        encode_table(pa.table({"key": [b"k"]}), 1, None, batch_size=16384, max_record_size=1000, codec=Codec.NONE)
    assert encode_table(pa.table({"value": pa.array([], pa.binary())}), 1, None, batch_size=1, max_record_size=1,
                        codec=Codec.NONE) == []


def test_keyless_rows_fill_batches_in_turn_and_strings_and_timestamps_convert() -> None:
    n = 1000
    table = pa.table({"value": pa.array(["v%d" % i for i in range(n)], pa.large_string()),
                      "timestamp": pa.array(np.arange(n) * 1000, pa.timestamp("us"))})
    encoded = encode_table(table, 3, None, batch_size=1024, max_record_size=1000, codec=Codec.NONE, start=1)
    assert [e.partition for e in encoded[:4]] == [1, 2, 0, 1] and sum(e.count for e in encoded) == n
    values = [r.value for raw in sealed(encoded, Codec.NONE) for r in decode_batch(raw, 0).records]
    assert values == [b"v%d" % i for i in range(n)]
    assert decode_batch(sealed(encoded, Codec.NONE)[1], 0).records[0].timestamp == encoded[0].count
