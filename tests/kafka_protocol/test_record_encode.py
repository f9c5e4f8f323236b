"""The compiled records-section encoder (kafka_protocol/record_encode.py)
against the Python one (kafka_protocol.records.encode_batch), byte for byte:
from the producer's per-record lists directly, and through ProducerBatch,
which uses it for the batches produce() fills; kafka-python reads what it
writes. Values cross every varint length boundary, keys and values are null
or empty, timestamps go backwards, far apart, and out of int64's range
(which the compiled encoder leaves to the Python one)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from client import producer_batch
from client.producer_batch import (COMPILED_MIN_RECORDS, NS_PER_MS, ProducerBatch, encode_sections,
                                   load_compiled_encoder, record_size_upper_bound)
from client.record_future import Settlement, SyncRecordFuture
from kafka_protocol import batch as b
from kafka_protocol.compression import Codec
from kafka_protocol.record_encode import TIMESTAMP_SPREAD_LIMIT, encode_lists
from kafka_protocol.records import decode_batch, encode_batch, seal_batch

CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]
# Lengths on both sides of the one-, two- and three-byte varints (63/64, 8191/8192).
LENGTHS = [0, 1, 63, 64, 65, 8191, 8192]
NOW = 1_764_000_000_000


def blobs(size: int = 300) -> st.SearchStrategy:
    return st.one_of(st.none(), st.binary(max_size=size), st.sampled_from(LENGTHS).map(lambda n: b"x" * n))


records_lists = st.lists(st.tuples(blobs(40), blobs(), st.one_of(
    st.integers(NOW - 100_000, NOW + 100_000), st.integers(-1, 2**45), st.integers(-2**60, 2**60))),
    min_size=1, max_size=80)


def python_batch(records: list[tuple], codec: Codec = Codec.NONE, **identity: int) -> bytes:
    return encode_batch([(k, v, t, (), -1) for k, v, t in records], codec=codec, **identity)


def compiled_batch(records: list[tuple]) -> bytes:
    keys = [k for k, _, _ in records]
    encoded = encode_lists(keys if any(k is not None for k in keys) else None,
                           [v for _, v, _ in records], [t for _, _, t in records])
    assert encoded is not None
    body, base_ts, max_ts = encoded.body(0), int(encoded.base_ts[0]), int(encoded.max_ts[0])
    return seal_batch(bytes(body), len(records), base_offset=0, codec=Codec.NONE, log_append_time=False,
                      producer_id=-1, producer_epoch=-1, base_sequence=-1,
                      partition_leader_epoch=b.NO_PARTITION_LEADER_EPOCH, transactional=False, control=False,
                      delete_horizon=False, last_offset_delta=len(records) - 1, base_timestamp=base_ts,
                      max_timestamp=max_ts)


@settings(max_examples=150, deadline=None)
@given(records_lists)
def test_the_compiled_section_is_the_python_encoders_byte_for_byte(records) -> None:
    assert compiled_batch(records) == python_batch(records)


@settings(max_examples=40, deadline=None)
@given(records_lists, st.sampled_from(CODECS), st.booleans())
def test_a_producer_batch_encodes_as_encode_batch_and_kafka_python_reads_it(records, codec, transactional) -> None:
    load_compiled_encoder()
    batch = ProducerBatch("t", 0, 0, 0.0)
    for key, value, stamp in records:
        record = (key, value, stamp * NS_PER_MS, (), -1)
        batch.append(record, record_size_upper_bound(record), SyncRecordFuture.new(batch.settlement))
    batch.producer_id, batch.producer_epoch, batch.base_sequence = 9, 1, 5
    ours = batch.encode(codec, transactional)
    assert ours == python_batch(records, codec, producer_id=9, producer_epoch=1, base_sequence=5,
                                transactional=transactional)
    theirs = DefaultRecordBatch(ours)
    assert theirs.validate_crc() and theirs.is_transactional == transactional
    assert [(r.key, r.value, r.timestamp) for r in theirs] == records
    # A new epoch and sequence (a KIP-360 bump) rewrites the header, not the records.
    batch.producer_epoch, batch.base_sequence = 2, 0
    assert batch.encode(codec, transactional) == python_batch(records, codec, producer_id=9, producer_epoch=2,
                                                              base_sequence=0, transactional=transactional)


@settings(max_examples=30, deadline=None)
@given(st.lists(records_lists, min_size=1, max_size=6), st.sampled_from(CODECS))
def test_the_batches_of_one_request_encoded_in_one_call_are_each_encode_batchs(batches, codec) -> None:
    """The sender encodes the sections of a request's batches in one call (encode_sections)."""
    load_compiled_encoder()
    built = []
    for n, records in enumerate(batches):
        batch = ProducerBatch("t", n, n, 0.0)
        for key, value, stamp in records:
            record = (key, value, stamp * NS_PER_MS, (), -1)
            batch.append(record, record_size_upper_bound(record), SyncRecordFuture.new(batch.settlement))
        built.append(batch)
    encode_sections(built, codec)
    # Timestamps held in ns (ProducerRecord) beyond int64 (past the year 2262) are left to encode_batch.
    assert all(batch._section is not None for batch in built if batch.record_count >= COMPILED_MIN_RECORDS
               and all(-2**63 <= stamp < 2**63 for stamp in batch.stamps))
    for batch, records in zip(built, batches):
        assert batch.encode(codec) == python_batch(records, codec)


def test_records_with_headers_keys_and_nulls_mixed_in_one_batch_keep_their_columns() -> None:
    load_compiled_encoder()
    records = [(None, b"a", NOW, ()), (b"k", None, NOW + 1, ()), (None, b"c", NOW - 1, (("h", b"1"), ("n", None))),
               *((b"k%d" % i, b"v%d" % i, NOW, ()) for i in range(COMPILED_MIN_RECORDS))]
    batch = ProducerBatch("t", 0, 0, 0.0)
    for key, value, stamp, headers in records:
        record = (key, value, stamp * NS_PER_MS, headers, -1)
        batch.append(record, record_size_upper_bound(record), SyncRecordFuture.new(batch.settlement))
    assert batch.records == [(*r, -1) for r in records]
    decoded = decode_batch(batch.encode(Codec.NONE))
    assert [(r.key, r.value, r.timestamp, r.headers) for r in decoded.records] == [
        (k, v, t, tuple(h)) for k, v, t, h in records]


def test_timestamps_the_compiled_encoder_cannot_write_are_left_to_the_python_one() -> None:
    assert encode_lists(None, [b"a", b"b"], [0, 2**63]) is None               # beyond int64
    assert encode_lists(None, [b"a", b"b"], [0, TIMESTAMP_SPREAD_LIMIT]) is None  # deltas too wide
    load_compiled_encoder()
    wide = [(None, b"v%d" % i, 0 if i % 2 else TIMESTAMP_SPREAD_LIMIT, ()) for i in range(COMPILED_MIN_RECORDS)]
    batch = ProducerBatch("t", 0, 0, 0.0)
    for record in wide:
        key, value, stamp, headers = record
        batch.append((key, value, stamp * NS_PER_MS, headers, -1), 40, SyncRecordFuture.new(Settlement()))
    assert batch.encode(Codec.NONE) == encode_batch(batch.records)


def test_small_batches_and_batches_before_the_encoder_is_loaded_use_the_python_encoder(monkeypatch) -> None:
    monkeypatch.setattr(producer_batch, "_encode_lists", None)
    monkeypatch.setattr(producer_batch, "_load_in_background", lambda: None)
    batch = ProducerBatch("t", 0, 0, 0.0)
    for i in range(COMPILED_MIN_RECORDS):
        batch.append((None, b"v", (NOW + i) * NS_PER_MS, (), -1), 30, SyncRecordFuture.new(batch.settlement))
    assert batch.encode(Codec.NONE) == encode_batch(batch.records)
    assert batch._section is None


@pytest.mark.parametrize("length", LENGTHS)
def test_one_long_value_at_each_varint_boundary(length: int) -> None:
    records = [(b"k" * length, b"v" * length, NOW)] * 3
    assert compiled_batch(records) == python_batch(records)


def test_timestamps_in_ns_are_floored_to_ms_all_at_once() -> None:
    """The producer's batches hold their records' timestamps in ns (client/producer_batch.ProducerRecord)."""
    stamps_ms = [NOW, NOW + 7, NOW - 3, 0, -1]
    values = [b"a", b"bb", None, b"", b"c"]
    in_ns = encode_lists(None, values, [t * NS_PER_MS + 999_999 for t in stamps_ms], stamps_in_ns=True)
    in_ms = encode_lists(None, values, stamps_ms)
    assert in_ns is not None and in_ms is not None
    assert bytes(in_ns.body(0)) == bytes(in_ms.body(0))
    assert (int(in_ns.base_ts[0]), int(in_ns.max_ts[0])) == (-1, NOW + 7)
