"""partition_log.validator: a leader's check of every record of a producer's
batches (Kafka's LogValidator for appends from clients).

Each malformed case carries a valid CRC - the CRC only says the bytes are
the ones the client sent - and must be refused with Kafka's error; valid
batches of every codec pass; and whatever bytes the fuzzer makes, the check
never crashes and never accepts a batch kafka_protocol.records cannot decode.
"""
from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_protocol import batch as b
from kafka_protocol.compression import Codec, compress
from partition_log.config import LogConfig
from kafka_protocol.errors import (CorruptRecordError, InvalidRecordError, InvalidTimestampError,
                                   KafkaError, UnsupportedCompressionTypeError)
from kafka_protocol.records import Record, decode_batch, encode_batch
from partition_log.validator import check_producer_batches
from kafka_protocol.varint import zigzag_bytes as Z

NOW = 1_700_000_000_000
DEFAULT = LogConfig()


def check(data: bytes, config: LogConfig = DEFAULT, now: int = NOW) -> list[tuple[int, b.BatchHeader]]:
    """What the leader runs: headers and CRCs (Log.validate_as_leader), then the records."""
    batches = list(b.iter_headers(data, validate=True, require_dense=True))
    check_producer_batches(data, batches, config, now)
    return batches


def with_crc(buf: bytearray) -> bytes:
    """`buf` (one batch) with its batchLength and CRC made to match its bytes."""
    b._INT32.pack_into(buf, 8, len(buf) - b.LOG_OVERHEAD)
    buf[b.CRC_OFFSET:b.CRC_OFFSET + 4] = b.compute_crc(buf, 0, len(buf)).to_bytes(4, "big")
    return bytes(buf)


def batch_from(body: bytes, count: int, *, attributes: int = 0, last_delta: int | None = None,
               producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
               base_ts: int = NOW) -> bytes:
    """A batch around a records section (compressed as `attributes` says), valid CRC."""
    buf = bytearray(b.HEADER_SIZE)
    b.HEADER.pack_into(buf, 0, 0, 0, -1, b.MAGIC, 0, attributes, count - 1 if last_delta is None else last_delta,
                       base_ts, base_ts, producer_id, producer_epoch, base_sequence, count)
    return with_crc(buf + body)


def record(offset_delta: int = 0, key: bytes | None = b"k", value: bytes | None = b"v", ts_delta: int = 0,
           headers: bytes = Z(0)) -> bytes:
    def field(x: bytes | None) -> bytes:
        return Z(-1) if x is None else Z(len(x)) + x
    inner = b"\x00" + Z(ts_delta) + Z(offset_delta) + field(key) + field(value) + headers
    return Z(len(inner)) + inner


def attributes_of(data: bytes, set_bits: int) -> bytes:
    buf = bytearray(data)
    struct.pack_into(">h", buf, b.ATTRIBUTES_OFFSET, struct.unpack_from(">h", buf, b.ATTRIBUTES_OFFSET)[0] | set_bits)
    return with_crc(buf)


RECORDS = st.lists(st.tuples(st.none() | st.binary(max_size=40), st.none() | st.binary(max_size=200),
                             st.integers(NOW - 10**6, NOW + 10**6),
                             st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)),
                                      max_size=3).map(tuple)),
                   min_size=1, max_size=30)


@settings(max_examples=150, deadline=None)
@given(RECORDS, st.sampled_from(list(Codec)), st.booleans())
def test_valid_batches_of_every_codec_pass(records, codec, idempotent) -> None:
    pid = dict(producer_id=7, producer_epoch=0, base_sequence=3) if idempotent else {}
    data = encode_batch([Record(k, v, t, h) for k, v, t, h in records], codec=codec, **pid)
    assert len(check(data)) == 1
    # Several batches in one request, too.
    assert len(check(data + data)) == 2


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_a_codec_id_kafka_does_not_have(codec) -> None:
    data = batch_from(record(), 1, attributes=codec)
    with pytest.raises(UnsupportedCompressionTypeError, match=f"codec id {codec}"):
        check(data)


@pytest.mark.parametrize("codec", [c for c in Codec if c != Codec.NONE])
def test_a_compression_flag_on_a_body_that_is_not_compressed(codec) -> None:
    body = record() * 3
    with pytest.raises(CorruptRecordError):
        check(batch_from(body, 3, attributes=codec))
    assert check(batch_from(compress(codec, record(0) + record(1) + record(2)), 3, attributes=codec))


def test_control_and_transactional_batches_from_a_client() -> None:
    good = encode_batch([Record(b"k", b"v", NOW)])
    with pytest.raises(InvalidRecordError, match="control"):
        check(attributes_of(good, b.CONTROL_MASK))
    with pytest.raises(InvalidRecordError, match="no producer id"):
        check(attributes_of(good, b.TRANSACTIONAL_MASK))
    idempotent = encode_batch([Record(b"k", b"v", NOW)], producer_id=9, producer_epoch=0, base_sequence=0)
    # A producer's transactional batch passes: the broker's producer state decides on transactions.
    assert check(attributes_of(idempotent, b.TRANSACTIONAL_MASK))


def test_record_counts_that_do_not_match_the_body() -> None:
    two = record(0) + record(1)
    assert check(batch_from(two, 2))
    with pytest.raises(InvalidRecordError, match="at least one record"):
        check(batch_from(b"", 0))
    with pytest.raises(InvalidRecordError):  # says 3, holds 2: the third runs past the body
        check(batch_from(two, 3))
    with pytest.raises(InvalidRecordError, match="bytes after its last record"):
        check(batch_from(two + record(2), 2))
    with pytest.raises(InvalidRecordError, match="does not match lastOffsetDelta"):
        check(batch_from(two, 2, last_delta=5))
    with pytest.raises(InvalidRecordError):  # trailing garbage too short to be a record
        check(batch_from(two + b"\x00", 2))


def test_offset_deltas_must_number_the_records_in_order() -> None:
    for deltas in ((1, 0), (0, 0), (1, 1)):
        with pytest.raises(InvalidRecordError, match="offset delta"):
            check(batch_from(record(deltas[0]) + record(deltas[1]), 2))


@pytest.mark.parametrize("body", [
    b"\xff" * 12,                                            # a varint longer than 10 bytes
    Z(-5) + b"\x00" * 4,                                     # a negative record length
    record(key=None)[:1] + b"\x00\x00\x00" + Z(-7) + b"x",   # a key length below -1
    record(headers=Z(1) + Z(-1) + Z(-1)),                    # a null header key
    record(headers=Z(1) + Z(2) + b"\xc3\x28" + Z(-1)),       # a header key that is not UTF-8
    record(headers=Z(-1)),                                   # a negative header count
])
def test_malformed_records(body) -> None:
    with pytest.raises(InvalidRecordError):
        check(batch_from(body, 1))
    with pytest.raises(CorruptRecordError):  # what a consumer would have met
        decode_batch(batch_from(body, 1))


def test_a_timestamp_beyond_int64() -> None:
    with pytest.raises(InvalidRecordError):
        check(batch_from(record(ts_delta=2**62), 1, base_ts=2**62))


def test_compacted_topics_need_keys() -> None:
    compacted = LogConfig(cleanup_policy="compact")
    keyless = encode_batch([Record(b"k", b"v", NOW), Record(None, b"v", NOW)])
    assert check(keyless)
    with pytest.raises(InvalidRecordError, match="record 1 has no key"):
        check(keyless, compacted)
    assert check(encode_batch([Record(b"k", None, NOW)]), compacted)  # a tombstone has a key


def test_timestamps_outside_before_and_after_max_ms() -> None:
    config = LogConfig.from_mapping({"message.timestamp.before.max.ms": "1000",
                                     "message.timestamp.after.max.ms": "500"})
    for ts in (NOW - 1000, NOW, NOW + 500, -1):  # -1: no timestamp, not checked (as Kafka)
        assert check(encode_batch([Record(b"k", b"v", ts)]), config)
    for ts in (NOW - 1001, NOW + 501, 0):
        with pytest.raises(InvalidTimestampError, match="message.timestamp.before.max.ms=1000"):
            check(encode_batch([Record(b"k", b"v", NOW), Record(b"k", b"v", ts)]), config)
    # The older single bound stands for both where they are unset (KIP-937).
    older = LogConfig.from_mapping({"log.message.timestamp.difference.max.ms": "10"})
    assert (older.timestamp_before_max_ms, older.timestamp_after_max_ms) == (10, 10)
    with pytest.raises(InvalidTimestampError):
        check(encode_batch([Record(b"k", b"v", NOW + 11)]), older)
    # Under LogAppendTime the broker's clock counts, not the client's.
    assert check(encode_batch([Record(b"k", b"v", 0)], log_append_time=True), config)


def test_one_bad_batch_names_its_index() -> None:
    good = encode_batch([Record(b"k", b"v", NOW)])
    with pytest.raises(InvalidRecordError, match=r"batch 1 \(at byte"):
        check(good + batch_from(record(3), 1))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RECORDS, st.sampled_from(list(Codec)), st.data())
def test_fuzz_accepted_means_decodable(records, codec, data) -> None:
    """Flips, cuts and insertions anywhere past the CRC, the CRC and length then
    made valid again: the check raises a KafkaError or accepts, and what it
    accepts kafka_protocol.records decodes into recordsCount records."""
    buf = bytearray(encode_batch([Record(k, v, t, h) for k, v, t, h in records], codec=codec))
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "cut", "insert", "header"]))
        if kind == "header":  # a header field the CRC covers: attributes .. recordsCount
            at = data.draw(st.integers(b.ATTRIBUTES_OFFSET, b.HEADER_SIZE - 1))
            buf[at] = data.draw(st.integers(0, 255))
        elif len(buf) > b.HEADER_SIZE and kind in ("flip", "cut"):
            at = data.draw(st.integers(b.HEADER_SIZE, len(buf) - 1))
            if kind == "flip":
                buf[at] ^= 1 << data.draw(st.integers(0, 7))
            else:
                del buf[at:at + data.draw(st.integers(1, 8))]
        else:
            at = data.draw(st.integers(b.HEADER_SIZE, len(buf)))
            buf[at:at] = data.draw(st.binary(min_size=1, max_size=8))
    mutated = with_crc(buf)
    try:
        batches = check(mutated)
    except KafkaError:
        return
    decoded = decode_batch(mutated)
    assert len(decoded.records) == batches[0][1].records_count
    assert [r.offset for r in decoded.records] == list(range(len(decoded.records)))
