"""The column-wise decoder against kafka_protocol.records' record-at-a-time one:
the same rows and headers for well-formed batches, and None (the caller's cue
to let the exact decoder name the error) wherever that one raises."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_protocol import batch as b
from kafka_protocol.compression import Codec
from kafka_protocol.errors import CorruptRecordError, KafkaError
from kafka_protocol.record_check import utf8 as _utf8
from kafka_protocol.records import Record, decode_batch, encode_batch
from kafka_protocol.varint import zigzag_bytes
from spark_jobs.arrow_rows import _record_at_a_time, arrow_schema, chunk_to_arrow
from kafka_protocol.columnar_records import HEADERS_TYPE, decode_columns
from spark_jobs.range_fetch import FetchedChunk

ROOT = Path(__file__).resolve().parents[2]

# Sometimes large (a repeated pattern up to 40 KB: several-byte varint lengths), mostly small.
large_bytes = st.builds(lambda unit, times: unit * times, st.binary(min_size=1, max_size=8), st.integers(100, 5000))
field_bytes = st.one_of(st.none(), st.just(b""), st.binary(max_size=300), large_bytes)
header_key = st.text(st.characters(codec="utf-8"), max_size=6)
records = st.builds(Record, field_bytes, field_bytes, st.integers(-1, 2**41),
                    st.lists(st.tuples(header_key, field_bytes), max_size=3).map(tuple),
                    offset=st.just(-1))  # builds() draws a named tuple's defaulted fields too
batch_specs = st.lists(st.tuples(st.lists(records, min_size=1, max_size=25), st.sampled_from(list(Codec)),
                                 st.booleans(), st.booleans()),
                       min_size=1, max_size=4)


def encode(spec) -> bytes:
    out, base = [], 0
    for recs, codec, log_append_time, control in spec:
        out.append(encode_batch(recs, base_offset=base, codec=codec, log_append_time=log_append_time,
                                control=control))
        base += len(recs)
    return b"".join(out)


def exact(data, lo: int, hi: int) -> list[tuple[Record, bool]]:
    """What kafka_protocol.records decodes of the batches decode_columns reads
    (not control, overlapping [lo, hi)); raises where it finds them malformed."""
    rows = []
    for pos, h in b.iter_headers(data):
        if h.is_control or h.last_offset < lo or h.base_offset >= hi:
            continue
        rows += [(r, h.is_log_append_time) for r in decode_batch(data, pos).records if lo <= r.offset < hi]
    return rows


def assert_same(columns, expected: list[tuple[Record, bool]], need_headers: bool) -> None:
    assert columns is not None
    assert columns.offsets.tolist() == [r.offset for r, _ in expected]
    assert columns.keys.to_pylist() == [r.key for r, _ in expected]
    assert columns.values.to_pylist() == [r.value for r, _ in expected]
    assert columns.timestamps_ms.tolist() == [r.timestamp for r, _ in expected]
    assert columns.log_append_time.tolist() == [t for _, t in expected]
    if need_headers:
        assert columns.headers.type == HEADERS_TYPE
        assert [[(h["key"], h["value"]) for h in hs] for hs in columns.headers.to_pylist()] == \
            [list(r.headers) for r, _ in expected]
    else:
        assert columns.headers is None


@settings(max_examples=300, deadline=None)
@given(batch_specs, st.integers(0, 40), st.integers(0, 130), st.booleans())
def test_columns_equal_the_record_decoder(spec, lo, span, need_headers) -> None:
    data = encode(spec)
    hi = lo + span
    assert_same(decode_columns(data, lo, hi, need_headers=need_headers), exact(data, lo, hi), need_headers)


@settings(max_examples=50, deadline=None)
@given(batch_specs, st.sampled_from([bytearray, memoryview, lambda d: memoryview(bytearray(d))]))
def test_any_bytes_like_decodes_alike(spec, kind) -> None:
    data = encode(spec)
    assert_same(decode_columns(kind(data), 0, 200, need_headers=True), exact(data, 0, 200), True)


def with_body(batch: bytes, body: bytes, count: int | None = None) -> bytes:
    """An uncompressed batch's header over another records section, with its
    batchLength, recordsCount and CRC made to fit: only the records are wrong."""
    out = bytearray(batch[:b.HEADER_SIZE] + body)
    struct.pack_into(">i", out, 8, len(out) - b.LOG_OVERHEAD)
    if count is not None:
        struct.pack_into(">i", out, 57, count)
    out[b.CRC_OFFSET:b.CRC_OFFSET + 4] = b.compute_crc(out, 0, len(out)).to_bytes(4, "big")
    return bytes(out)


def check_against_exact(data: bytes, lo: int = 0, hi: int = 1 << 40) -> None:
    """decode_columns is None exactly where kafka_protocol.records raises, else the same rows."""
    try:
        expected = exact(data, lo, hi)
    except KafkaError:
        assert decode_columns(data, lo, hi, need_headers=True) is None
        assert decode_columns(data, lo, hi, need_headers=False) is None
        return
    for need_headers in (True, False):
        assert_same(decode_columns(data, lo, hi, need_headers=need_headers), expected, need_headers)


uncompressed_specs = st.lists(st.tuples(st.lists(records, min_size=1, max_size=8), st.just(Codec.NONE),
                                        st.booleans(), st.just(False)), min_size=1, max_size=2)


@settings(max_examples=400, deadline=None)
@given(uncompressed_specs, st.lists(st.tuples(st.integers(0), st.integers(0, 255)), min_size=1, max_size=4),
       st.integers(-3, 3))
def test_corrupt_records_fall_back_to_the_exact_decoder(spec, edits, resize) -> None:
    """Bytes of the first batch's records overwritten, the section cut or
    grown, under a valid batch header and CRC: never a crash, never rows the
    exact decoder would not give."""
    data = encode(spec)
    first = b.parse_header(data)
    body = bytearray(data[b.HEADER_SIZE:first.size])
    for where, value in edits:
        body[where % len(body)] = value
    body = body[:len(body) + resize] if resize < 0 else body + bytes(resize)
    check_against_exact(with_body(data[:first.size], bytes(body)) + data[first.size:])


@settings(max_examples=100, deadline=None)
@given(batch_specs, st.integers(0))
def test_a_cut_fetch_falls_back(spec, cut) -> None:
    data = encode(spec)
    check_against_exact(data[:cut % len(data)])


def raw(*fields: bytes) -> bytes:
    """One record: its length, then the fields given."""
    body = b"".join(fields)
    return zigzag_bytes(len(body)) + body


def one_batch(*record_bodies: bytes, log_append_time: bool = False, base_ts: int = 0) -> bytes:
    template = encode_batch([Record(None, b"", base_ts)] * len(record_bodies), log_append_time=log_append_time)
    return with_body(template, b"".join(record_bodies))


Z = zigzag_bytes
ATTRIBUTES = b"\x00"


def test_a_hand_made_record_decodes() -> None:
    data = one_batch(raw(ATTRIBUTES, Z(7), Z(0), Z(2), b"k1", Z(-1), Z(1), Z(1), b"h", Z(0)), base_ts=1000)
    columns = decode_columns(data, 0, 1, need_headers=True)
    assert_same(columns, [(Record(b"k1", None, 1007, (("h", b""),), 0), False)], True)


def ten_byte_varint(value: int) -> bytes:
    """`value`'s zig-zag varint padded to 10 bytes with continuation bytes (Kafka's readVarlong allows 10)."""
    u = (value << 1) ^ (value >> 63)
    return bytes([(u >> (7 * i) & 0x7F) | (0x80 if i < 9 else 0) for i in range(10)])


def test_ten_byte_varints_decode_eleven_do_not() -> None:
    ten = one_batch(raw(ATTRIBUTES, ten_byte_varint(5), Z(0), Z(-1), Z(1), b"v", Z(0)))
    assert decode_columns(ten, 0, 1, need_headers=False).timestamps_ms.tolist() == [5]
    eleven = one_batch(raw(ATTRIBUTES, b"\x8a" + b"\x80" * 9 + b"\x00", Z(0), Z(-1), Z(1), b"v", Z(0)))
    with pytest.raises(KafkaError):
        exact(eleven, 0, 1)
    assert decode_columns(eleven, 0, 1, need_headers=False) is None


@pytest.mark.parametrize("record", [
    raw(ATTRIBUTES, Z(0), Z(0), Z(-2), Z(1), b"v", Z(0)),                # key length -2
    raw(ATTRIBUTES, Z(0), Z(0), Z(-1), Z(-5), Z(0)),                     # value length -5
    raw(ATTRIBUTES, Z(0), Z(0), Z(-1), Z(4), b"v", Z(0)),                # value runs past the record
    raw(ATTRIBUTES, Z(0), Z(0), Z(-1), Z(1), b"v", Z(-1)),               # header count -1
    raw(ATTRIBUTES, Z(0), Z(0), Z(-1), Z(1), b"v", Z(1), Z(-1), Z(0)),   # null header key
    raw(ATTRIBUTES, Z(0), Z(0), Z(-1), Z(1), b"v", Z(1), Z(2), b"\xc3\x28", Z(0)),  # header key not UTF-8
    raw(ATTRIBUTES, Z(0), Z(0), Z(-1), Z(1), b"v", Z(0), b"\x00"),       # a stray byte in the record
    raw(ATTRIBUTES, Z(0), Z(1), Z(-1), Z(1), b"v", Z(0)),                # offset delta past lastOffsetDelta 0
    raw(ATTRIBUTES, Z(0), Z(-1), Z(-1), Z(1), b"v", Z(0)),               # negative offset delta
    raw(ATTRIBUTES, Z(2**62), Z(0), Z(-1), Z(1), b"v", Z(0)),            # base 2**62 + 2**62 overflows int64
    Z(-3) + ATTRIBUTES,                                                  # negative record length
    Z(40) + ATTRIBUTES + Z(0),                                           # record length past the batch
    raw(ATTRIBUTES, Z(0), Z(0), Z(-1), Z(1), b"v", Z(0)) + b"\x00",      # a byte after the last record
], ids=["key-2", "value-5", "value-overrun", "headers-1", "null-header-key", "header-key-latin1", "stray-byte",
        "offset-delta-past", "offset-delta-negative", "timestamp-overflow", "record-length-negative",
        "record-length-past", "trailing-byte"])
def test_malformed_records_are_left_to_the_exact_decoder(record) -> None:
    data = one_batch(record, base_ts=2**62)
    with pytest.raises(KafkaError):
        exact(data, 0, 1)
    assert decode_columns(data, 0, 1, need_headers=True) is None
    assert decode_columns(data, 0, 1, need_headers=False) is None


def test_log_append_time_ignores_timestamp_deltas_that_would_overflow() -> None:
    data = one_batch(raw(ATTRIBUTES, Z(2**62), Z(0), Z(-1), Z(1), b"v", Z(0)), log_append_time=True,
                     base_ts=2**62)
    check_against_exact(data, 0, 1)


def test_a_record_whose_fields_overrun_its_length_is_left_to_the_exact_decoder() -> None:
    good = encode_batch([Record(b"k", b"value", 5)])
    # the value length byte (zig-zag 5 -> 10) made 6 (zig-zag 12): the fields now overrun the record
    broken = bytearray(good)
    at = broken.index(b"value") - 1
    assert broken[at] == 10
    broken[at] = 12
    assert decode_columns(with_body(good, bytes(broken[b.HEADER_SIZE:])), 0, 10, need_headers=False) is None


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.binary(max_size=12), st.text(max_size=6).map(lambda t: t.encode("utf-8", "surrogatepass"))))
def test_header_keys_are_utf8_as_python_decodes_it(raw_key: bytes) -> None:
    try:
        raw_key.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert _utf8(np.frombuffer(raw_key, dtype=np.uint8), 0, len(raw_key)) == valid


@settings(max_examples=60, deadline=None)
@given(batch_specs, st.integers(0, 30), st.integers(1, 130), st.booleans())
def test_arrow_rows_equal_the_exact_path(spec, lo, span, include_headers) -> None:
    """chunk_to_arrow's record batch, headers and all, equals the one the exact decoder's path builds."""
    data = encode(spec)
    chunk = FetchedChunk(data, lo, lo + span)
    fast = chunk_to_arrow(chunk, "t", 3, include_headers)
    slow = _record_at_a_time(chunk, "t", 3, include_headers)
    if slow is None:  # no record in range
        assert fast is None
        return
    assert fast is not None and fast.schema == arrow_schema(include_headers)
    assert fast.equals(slow)


def test_a_cache_dir_that_cannot_be_written_does_not_break_the_decoder(tmp_path) -> None:
    """numba refuses cache=True when no cache dir is writable (here: one under a
    file, as even root cannot create it); the kernels are then compiled in memory."""
    (tmp_path / "file").write_text("")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "file" / "cache"),
               NUMBA_CACHE_LOCATOR_CLASSES="UserProvidedCacheLocator")
    script = ("from kafka_protocol.records import Record, encode_batch\n"
              "from kafka_protocol.columnar_records import decode_columns\n"
              "c = decode_columns(encode_batch([Record(b'k', b'v', 7, (('h', None),))]), 0, 1, need_headers=True)\n"
              "print(c.keys.to_pylist(), c.values.to_pylist(), c.headers.to_pylist())\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[b'k'] [b'v'] [[{'key': 'h', 'value': None}]]"
    assert not (tmp_path / "file").read_text()


def test_no_batches_in_range_give_no_rows() -> None:
    data = encode_batch([Record(b"k", b"v", 1)], base_offset=10)
    columns = decode_columns(data, 0, 10, need_headers=True)
    assert len(columns.offsets) == 0 and len(columns.headers) == 0 and columns.keys.type == pa.binary()


def test_chunk_to_arrow_names_the_error_of_a_corrupt_record() -> None:
    """Where the kernels give up, the exact decoder runs and raises Kafka's CORRUPT_MESSAGE."""
    data = one_batch(raw(ATTRIBUTES, Z(0), Z(0), Z(-2), Z(1), b"v", Z(0)))
    with pytest.raises(CorruptRecordError, match="negative length -2"):
        chunk_to_arrow(FetchedChunk(data, 0, 1), "t", 0, False)


def test_read_committed_drops_aborted_transactions_and_markers_in_both_decoders() -> None:
    """The columnar decode and the record-at-a-time fallback filter a
    read_committed chunk alike: producer 7's aborted transaction goes, its
    committed one, producer 8's open one and plain records stay."""
    from kafka_protocol.control_records import encode_txn_marker
    from spark_jobs.range_fetch import FetchedChunk

    def txn(pid: int, values: list[str], base: int) -> bytes:
        return encode_batch([Record(None, v.encode(), 0) for v in values], base_offset=base, producer_id=pid,
                            producer_epoch=0, base_sequence=0, transactional=True)

    chunk = b"".join([
        txn(7, ["a0", "a1"], 0), encode_batch([Record(None, b"plain", 0)], base_offset=2),
        encode_txn_marker(7, 1, False, 0, 0, base_offset=3),
        txn(7, ["c0"], 4), txn(8, ["open"], 5), encode_txn_marker(7, 2, True, 0, 0, base_offset=6),
    ])
    expected = [b"plain", b"c0", b"open"]
    columns = decode_columns(chunk, 0, 7, need_headers=False, aborted=[(7, 0)])
    assert columns is not None and columns.values.to_pylist() == expected
    assert list(columns.offsets) == [2, 4, 5]
    slow = _record_at_a_time(FetchedChunk(chunk, 0, 7, ((7, 0),)), "t", 0, False)
    assert slow is not None and slow.column(1).to_pylist() == expected
    everything = decode_columns(chunk, 0, 7, need_headers=False)  # read_uncommitted: markers only go
    assert everything is not None and everything.values.to_pylist() == [b"a0", b"a1", b"plain"] + expected[1:]


@pytest.mark.parametrize("include_headers", [False, True])
def test_the_client_schema_is_what_spark_derives(include_headers) -> None:
    """kafka_protocol spells Spark's Kafka source rows without PySpark (the
    consumer's poll_arrow has them too); Spark's own converter must agree."""
    from kafka_protocol.columnar_records import row_schema
    assert row_schema(include_headers).equals(arrow_schema(include_headers), check_metadata=True)
