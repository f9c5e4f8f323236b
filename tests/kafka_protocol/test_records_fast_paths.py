"""The record codec's fast paths against plain reference code, at their edges.

kafka_protocol.varint and kafka_protocol.records take shortcuts for speed: a
table of one- and two-byte varints, one-byte varints read inline, one-pass
encoding and decoding. Each shortcut has a boundary (64 and 8192 for values,
one and two bytes for encodings); these tests put values on both sides of
every boundary and check the bytes against a byte-at-a-time reference and
against kafka-python's record builder, and check that damage inside the
inline paths is refused as CORRUPT_MESSAGE, never another exception.
"""
from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafka_protocol.batch import HEADER_SIZE
from kafka_protocol.errors import CorruptRecordError
from kafka_protocol.records import Record, decode_batch, encode_batch
from kafka_protocol.varint import TABLE_BIAS, read_zigzag, write_zigzag, zigzag_bytes, zigzag_size

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
# Values around every place where the encoding changes length or path.
EDGES = sorted({v for k in (6, 13, 14, 20, 27, 34, 41, 48, 55, 62) for base in (1 << k, -(1 << k))
                for v in (base - 1, base, base + 1)} | {0, -1, 1, INT64_MIN, INT64_MAX})


def reference_zigzag(value: int) -> bytes:
    """Kafka's ByteUtils.writeVarlong, a byte at a time."""
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def test_every_table_entry_and_its_neighbours_match_the_reference() -> None:
    for value in range(-TABLE_BIAS - 3, TABLE_BIAS + 3):
        encoded = zigzag_bytes(value)
        assert encoded == reference_zigzag(value), value
        assert read_zigzag(encoded, 0) == (value, len(encoded))
        assert zigzag_size(value) == len(encoded)


@pytest.mark.parametrize("value", EDGES)
def test_edge_values_encode_like_the_reference_and_read_back_at_a_buffer_end(value: int) -> None:
    expected = reference_zigzag(value)
    out = bytearray(b"\x55")
    write_zigzag(out, value)
    assert bytes(out) == b"\x55" + expected
    assert zigzag_size(value) == len(expected)
    # At the very end of the buffer (no byte to spare for a look-ahead) and mid-buffer.
    assert read_zigzag(bytes(out), 1) == (value, len(out))
    assert read_zigzag(memoryview(bytes(out) + b"\x00\x00"), 1) == (value, len(out))


def test_a_varint_cut_short_is_refused() -> None:
    for encoded in (reference_zigzag(64), reference_zigzag(TABLE_BIAS), reference_zigzag(INT64_MIN)):
        with pytest.raises(CorruptRecordError):
            read_zigzag(encoded[:-1], 0)


# --- records: byte-exact against kafka-python ---------------------------------

SIZES = [0, 1, 63, 64, 65, 8191, 8192, 8193, 20000]


def kafka_python_records_section(records: list[Record]) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for r in records:
        assert builder.append(r.offset, r.timestamp, r.key, r.value, list(r.headers)) is not None
    return bytes(builder.build())[HEADER_SIZE:]


@pytest.mark.parametrize("size", SIZES)
def test_lengths_around_the_fast_path_limits_are_byte_exact(size: int) -> None:
    records = [
        Record(None, b"v" * size, 1000, (), 0),
        Record(b"k" * size, None, 1000, (), 1),
        Record(b"k" * size, b"v" * size, 1000, (("h" * size, b"x" * size), ("n", None), ("", b"")), 2),
    ]
    raw = encode_batch(records)
    assert raw[HEADER_SIZE:] == kafka_python_records_section(records)
    assert decode_batch(raw).records == records


@pytest.mark.parametrize("delta", [d for d in EDGES if 0 < d < 2**40])
def test_offset_and_timestamp_deltas_around_the_fast_path_limits_are_byte_exact(delta: int) -> None:
    # The first record sets the base timestamp; the second is `delta` away in
    # time and in offset (a compacted gap; lastOffsetDelta is an int32), the
    # third goes back in time.
    gap = min(delta, 2**31 - 2)
    records = [Record(b"a", b"1", 10**12, (), 0), Record(b"b", b"2", 10**12 + delta, (), gap),
               Record(b"c", b"3", 10**12 - min(delta, 10**11), (("k", b"v"),), gap + 1)]
    raw = encode_batch(records)
    base_first = [records[0], records[1]]  # kafka-python takes the first record's timestamp as the base
    assert encode_batch(base_first)[HEADER_SIZE:] == kafka_python_records_section(base_first)
    assert decode_batch(raw).records == records


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.none() | st.binary(max_size=200), st.none() | st.binary(max_size=200),
                          st.integers(0, 20000), st.integers(1, 20000),
                          st.lists(st.tuples(st.text(max_size=70), st.none() | st.binary(max_size=70)),
                                   max_size=3)),
                min_size=1, max_size=8))
def test_any_records_with_ascending_timestamps_are_byte_exact(specs) -> None:
    records, offset, timestamp = [], 0, 10**12
    for key, value, ts_step, offset_step, headers in specs:
        records.append(Record(key, value, timestamp, tuple(headers), offset))
        offset += offset_step
        timestamp += ts_step
    raw = encode_batch(records)
    assert raw[HEADER_SIZE:] == kafka_python_records_section(records)
    assert decode_batch(raw).records == records


# --- damage inside the inline decoding paths ----------------------------------

def sealed(records_section: bytes, count: int, last_offset_delta: int = 0) -> bytes:
    """A valid header (correct lengths and CRC) around hand-made record bytes."""
    out = bytearray(encode_batch([Record(None, b"x", 5)]))[:HEADER_SIZE] + records_section
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">i", out, 23, last_offset_delta)
    struct.pack_into(">i", out, 57, count)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def record_bytes(body: bytes) -> bytes:
    return reference_zigzag(len(body)) + body


def z(v: int) -> bytes:
    return reference_zigzag(v)


DAMAGED = {
    # attributes, ts delta, offset delta, key, value, header count
    "the section ends inside a record's fields": record_bytes(b"\x00" + z(0) + z(0))[:-1],
    "an empty record at the section's end": z(0),
    "a record's length runs past the section": z(50) + b"\x00" + z(0) + z(0) + z(-1) + z(-1) + z(0),
    "a key runs past its record": record_bytes(b"\x00" + z(0) + z(0) + z(10) + b"abc" + z(-1) + z(0)),
    "a value length below -1": record_bytes(b"\x00" + z(0) + z(0) + z(-1) + z(-2) + z(0)),
    "a null header key": record_bytes(b"\x00" + z(0) + z(0) + z(-1) + z(-1) + z(1) + z(-1) + z(-1)),
    "a negative header count": record_bytes(b"\x00" + z(0) + z(0) + z(-1) + z(-1) + z(-3)),
    "a header value past its record": record_bytes(b"\x00" + z(0) + z(0) + z(-1) + z(-1) + z(1) + z(1) + b"k"
                                                   + z(5) + b"v"),
    "a header key that is not UTF-8": record_bytes(b"\x00" + z(0) + z(0) + z(-1) + z(-1) + z(1) + z(1) + b"\xff"
                                                   + z(-1)),
    "an offset delta past lastOffsetDelta": record_bytes(b"\x00" + z(0) + z(1) + z(-1) + z(-1) + z(0)),
    "stray bytes inside a record": record_bytes(b"\x00" + z(0) + z(0) + z(-1) + z(-1) + z(0) + b"\x00"),
    "a record cut inside its header varints": record_bytes(b"\x00" + z(0) + z(0) + z(-1) + z(-1) + z(1) + z(1)),
}


@pytest.mark.parametrize("section", DAMAGED.values(), ids=DAMAGED.keys())
def test_damaged_records_are_refused_as_corrupt(section: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_batch(sealed(section, 1))


def test_the_hand_made_record_bytes_decode_when_undamaged() -> None:
    # The same construction as DAMAGED, intact: so the cases above fail for their damage alone.
    section = record_bytes(b"\x00" + z(0) + z(0) + z(1) + b"k" + z(-1) + z(1) + z(1) + b"h" + z(-1))
    assert decode_batch(sealed(section, 1)).records == [Record(b"k", None, 5, (("h", None),), 0)]
