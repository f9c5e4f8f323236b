"""Our record batches against kafka-python's, an independent implementation of
Kafka's v2 format: what one side writes, the other reads back identically,
for every codec. kafka-python is a test-only dependency."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from kafka_protocol.batch import iter_headers, validate_batch
from kafka_protocol.compression import Codec
from kafka_protocol.records import Record, decode_batch, encode_batch, iter_batches

CODECS = list(Codec)
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Values that compress (a short pattern repeated) next to arbitrary bytes, so
# every codec meets both incompressible and compressible input.
repeated = st.builds(lambda chunk, times: chunk * times, st.binary(min_size=1, max_size=8), st.integers(50, 400))
payloads = st.none() | st.binary(max_size=40) | repeated
headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=16)), max_size=3).map(tuple)
# Any order, so batches whose timestamps go back in time are covered too.
timestamps = st.integers(0, 2**42)


@st.composite
def record_lists(draw: st.DrawFn, max_size: int = 12) -> list[Record]:
    """Records with increasing offsets from 0, with gaps as compaction leaves."""
    n = draw(st.integers(1, max_size))
    offset = 0
    records = []
    for i in range(n):
        offset += 0 if i == 0 else draw(st.integers(1, 3))
        records.append(Record(draw(payloads), draw(payloads), draw(timestamps), draw(headers), offset))
    return records


def theirs_as_ours(record) -> Record:
    """A kafka-python record in our terms, headers as a tuple of pairs."""
    return Record(record.key, record.value, record.timestamp, tuple(record.headers), record.offset)


def built_by_kafka_python(records: list[Record], codec: Codec, producer: tuple[int, int, int] | None = None,
                          transactional: bool = False) -> bytes:
    producer_id, epoch, sequence = producer or (-1, -1, -1)
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=int(codec), is_transactional=transactional,
        producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence, batch_size=1 << 30,
    )
    for r in records:
        assert builder.append(r.offset, r.timestamp, r.key, r.value, list(r.headers)) is not None
    return bytes(builder.build())


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
@SETTINGS
@given(records=record_lists(), base_offset=st.integers(0, 2**40))
def test_kafka_python_reads_our_batches(codec: Codec, records: list[Record], base_offset: int) -> None:
    shifted = [Record(r.key, r.value, r.timestamp, r.headers, base_offset + r.offset) for r in records]
    raw = encode_batch(shifted, base_offset=base_offset, codec=codec, partition_leader_epoch=3)

    theirs = DefaultRecordBatch(raw)
    assert theirs.validate_crc()
    assert theirs.compression_type == codec
    assert (theirs.base_offset, theirs.last_offset) == (base_offset, shifted[-1].offset)
    assert theirs.records_count == len(records)
    assert theirs.max_timestamp == max(r.timestamp for r in records)
    assert theirs.leader_epoch == 3
    assert [theirs_as_ours(r) for r in theirs] == shifted


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
@SETTINGS
@given(records=record_lists())
def test_we_read_kafka_python_batches(codec: Codec, records: list[Record]) -> None:
    raw = built_by_kafka_python(records, codec)

    header = validate_batch(raw, require_dense=False)
    # kafka-python sends a batch uncompressed when compressing does not pay.
    assert header.codec == DefaultRecordBatch(raw).compression_type
    assert header.codec in (codec, Codec.NONE)
    assert header.last_offset == records[-1].offset
    assert header.max_timestamp == max(r.timestamp for r in records)
    assert decode_batch(raw).records == records


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
@SETTINGS
@given(records=record_lists(),
       producer=st.tuples(st.integers(0, 2**62), st.integers(0, 2**15 - 1), st.integers(0, 2**31 - 1)),
       transactional=st.booleans())
def test_producer_state_of_kafka_python_batches(codec: Codec, records: list[Record],
                                                producer: tuple[int, int, int], transactional: bool) -> None:
    raw = built_by_kafka_python(records, codec, producer, transactional)

    theirs = DefaultRecordBatch(raw)
    decoded = decode_batch(raw)
    h = decoded.header
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == producer
    # Sequences wrap past int32 max; both sides must agree on where to.
    assert h.last_sequence == theirs.last_sequence
    assert h.is_transactional == transactional
    assert decoded.records == records


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
@SETTINGS
@given(records=record_lists(max_size=40), batch_size=st.integers(200, 2000))
def test_we_read_several_batches_from_memory_records_builder(codec: Codec, records: list[Record],
                                                             batch_size: int) -> None:
    # One MemoryRecordsBuilder makes one batch; a new one starts where the
    # last filled up, as kafka-python's producer accumulator does.
    batches: list[bytes] = []
    builder = MemoryRecordsBuilder(magic=2, compression_type=int(codec), batch_size=batch_size)
    for r in records:
        if builder.append(r.timestamp, r.key, r.value, list(r.headers)) is None:
            builder.close()
            batches.append(bytes(builder.buffer()))
            builder = MemoryRecordsBuilder(magic=2, compression_type=int(codec), batch_size=batch_size,
                                           offset=builder.next_offset())
            assert builder.append(r.timestamp, r.key, r.value, list(r.headers)) is not None
    builder.close()
    batches.append(bytes(builder.buffer()))
    log = b"".join(batches)

    positions = [pos for pos, _ in iter_headers(log)]
    assert positions == [sum(len(b) for b in batches[:i]) for i in range(len(batches))]
    dense = [Record(r.key, r.value, r.timestamp, r.headers, i) for i, r in enumerate(records)]
    assert [r for batch in iter_batches(log) for r in batch.records] == dense


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
@SETTINGS
@given(chunks=st.lists(record_lists(max_size=5), min_size=1, max_size=4))
def test_kafka_python_iterates_our_concatenated_batches(codec: Codec, chunks: list[list[Record]]) -> None:
    parts, expected, base = [], [], 0
    for chunk in chunks:
        shifted = [Record(r.key, r.value, r.timestamp, r.headers, base + r.offset) for r in chunk]
        parts.append(encode_batch(shifted, base_offset=base, codec=codec))
        expected += shifted
        base = shifted[-1].offset + 1

    seen = []
    for theirs in MemoryRecords(b"".join(parts)):
        assert theirs.validate_crc()
        seen += [theirs_as_ours(r) for r in theirs]
    assert seen == expected
