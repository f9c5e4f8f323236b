"""Records of v2 batches decoded column-wise for Arrow, with compiled kernels.

partition_log.records decodes one record at a time into Python objects:
exact and general, but several µs a record, which made the decode the
bottleneck of a Spark read. Here one compiled pass (`_walk`) goes over the
decompressed batch bodies and writes, per record, its offset, timestamp,
where its key, value and headers lie and how long they are; Arrow then
copies keys, values and header fields out of the bodies in one call each
(`_binary`). No Python runs per record.

Why numba: a record is a chain of zig-zag varints (length, timestamp
delta, offset delta, key length, key, value length, value, header count,
headers), so where one field starts depends on every byte before it; numpy
cannot vectorize that walk (the record boundaries alone needed a Python
loop, and cutting values out another), while a compiled loop does it at
memory speed. The kernels are compiled on first use and cached on disk
(`cache=True`: next to this module, else numba's user-wide cache dir or
NUMBA_CACHE_DIR); where no cache dir is writable they are compiled in
memory on each process's first call instead of failing the import.

The walk checks what partition_log.records checks (every field inside its
record, the record lengths adding up to the body, varints of at most 10
bytes, no negative lengths but -1 for null, offset deltas inside the batch,
timestamps within int64, header keys non-null UTF-8). `decode_columns`
returns None where any check fails, for the records' batches or the
batches' headers, CRCs and compression: the caller then decodes with
partition_log.records, which raises the precise CorruptRecordError.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional

import numba
import numpy as np
import pyarrow as pa

from partition_log.batch import HEADER_SIZE, iter_headers
from partition_log.compression import Codec, decompress
from partition_log.errors import KafkaError

log = logging.getLogger(__name__)

_INT32_MAX = 2**31 - 1
_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1
# Spark's Kafka source's headers column as Spark's Arrow converter spells it.
HEADERS_TYPE = pa.list_(pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])))


def _compiled(fn):
    """`fn` compiled lazily, its machine code cached on disk where numba finds a
    writable place; numba refuses cache=True outright when it finds none."""
    try:
        return numba.njit(cache=True, nogil=True)(fn)
    except RuntimeError as exc:  # "cannot cache function ...: no locator available"
        log.info("numba cannot cache %s (%s): compiling it in memory", fn.__name__, exc)
        return numba.njit(nogil=True)(fn)


# The per-record helpers, inlined into their callers by numba itself: the
# record walk takes a quarter less time than with calls, for a first compile
# about 1.5 s longer (once per machine, where the cache can be written).
_inlined = numba.njit(inline="always")


@dataclass(frozen=True)
class RecordColumns:
    keys: pa.Array
    values: pa.Array
    offsets: np.ndarray          # int64
    timestamps_ms: np.ndarray    # int64
    log_append_time: np.ndarray  # bool
    headers: Optional[pa.Array] = None  # HEADERS_TYPE, when asked for


def decode_columns(buf, lo: int, hi: int, *, need_headers: bool) -> Optional[RecordColumns]:
    """The records of the batches in `buf` (any bytes-like) with offsets in
    [lo, hi), control batches left out; None: decode these with
    partition_log.records instead."""
    try:
        batches = _Batches.of(buf, lo, hi)
    except KafkaError:  # a batch header, CRC or compressed body the exact decoder will name
        return None
    kept, fields, appended = _walk(batches.data, batches.body_starts, batches.body_ends, batches.counts,
                                   batches.base_offsets, batches.last_deltas, batches.base_ts, batches.max_ts,
                                   batches.append_time, lo, hi)
    if kept < 0:
        return None
    offsets, stamps, key_pos, key_len, value_pos, value_len, header_pos, header_count = fields[:, :kept]
    appended = appended[:kept]
    keys = _binary(batches.data, key_pos, key_len)
    values = _binary(batches.data, value_pos, value_len)
    if keys is None or values is None:
        return None
    headers = None
    if need_headers:
        headers = _headers(batches.data, header_pos, header_count)
        if headers is None:
            return None
    return RecordColumns(keys, values, offsets, stamps, appended, headers)


@dataclass(frozen=True)
class _Batches:
    """The bodies of the batches to decode, as byte ranges of `data`, and what
    their headers say. Uncompressed bodies are read where they lie in the
    fetched bytes; only when some batch is compressed are the bodies joined."""

    data: np.ndarray  # uint8, read-only (one compiled variant for bytes, bytearray or memoryview)
    body_starts: np.ndarray
    body_ends: np.ndarray
    counts: np.ndarray
    base_offsets: np.ndarray
    last_deltas: np.ndarray
    base_ts: np.ndarray
    max_ts: np.ndarray
    append_time: np.ndarray

    @classmethod
    def of(cls, buf, lo: int, hi: int) -> "_Batches":
        view = memoryview(buf).cast("B").toreadonly()
        spans, headers, compressed = [], [], False
        for pos, h in iter_headers(view):
            if h.is_control or h.last_offset < lo or h.base_offset >= hi:
                continue
            spans.append((pos + HEADER_SIZE, pos + h.size))
            headers.append(h)
            compressed = compressed or h.codec != Codec.NONE
        if compressed:
            bodies = [decompress(h.codec, view[start:end]) if h.codec != Codec.NONE else view[start:end]
                      for (start, end), h in zip(spans, headers)]
            sizes = np.fromiter(map(len, bodies), dtype=np.int64, count=len(bodies))
            ends = np.cumsum(sizes)
            view = memoryview(b"".join(bodies)).toreadonly()
            spans = list(zip((ends - sizes).tolist(), ends.tolist()))

        def column(values) -> np.ndarray:
            return np.fromiter(values, dtype=np.int64, count=len(headers))

        return cls(np.frombuffer(view, dtype=np.uint8),
                   column(s for s, _ in spans), column(e for _, e in spans),
                   column(h.records_count for h in headers), column(h.base_offset for h in headers),
                   column(h.last_offset_delta for h in headers), column(h.base_timestamp for h in headers),
                   column(h.max_timestamp for h in headers), column(h.is_log_append_time for h in headers))


@_inlined
def _varint(data, pos, end):
    """The zig-zag varint at `pos` (at most 10 bytes, Java's readVarlong) and
    the position after it; position -1 if it runs to `end` or past 10 bytes."""
    if pos < end and data[pos] < 0x80:  # most varints of a record are one byte
        v = np.int64(data[pos])
        return (v >> 1) ^ -(v & 1), pos + 1
    u = np.uint64(0)
    for i in range(10):
        if pos >= end:
            return 0, -1
        b = data[pos]
        pos += 1
        u |= np.uint64(b & 0x7F) << np.uint64(7 * i)  # the 10th byte's bits past 64 drop, as in Java
        if b < 0x80:
            return np.int64(u >> np.uint64(1)) ^ -np.int64(u & np.uint64(1)), pos
    return 0, -1


@_inlined
def _field(data, pos, end):
    """A length-prefixed field: (start, length, position after); length -1 is
    null; position -1 if the length is malformed or the bytes run past `end`."""
    n, pos = _varint(data, pos, end)
    if pos < 0 or n < -1 or (n >= 0 and n > end - pos):
        return 0, 0, -1
    return pos, n, pos + max(n, 0)


@_compiled
def _utf8(data, pos, end):
    """Whether data[pos:end] is UTF-8 as Python's strict codec takes it: no
    overlong forms, no surrogates, nothing past U+10FFFF."""
    while pos < end:
        c = data[pos]
        if c < 0x80:
            pos += 1
            continue
        if 0xC2 <= c <= 0xDF:
            tail, low, high = 1, 0x80, 0xBF
        elif c == 0xE0:
            tail, low, high = 2, 0xA0, 0xBF
        elif c == 0xED:
            tail, low, high = 2, 0x80, 0x9F
        elif 0xE1 <= c <= 0xEF:
            tail, low, high = 2, 0x80, 0xBF
        elif c == 0xF0:
            tail, low, high = 3, 0x90, 0xBF
        elif 0xF1 <= c <= 0xF3:
            tail, low, high = 3, 0x80, 0xBF
        elif c == 0xF4:
            tail, low, high = 3, 0x80, 0x8F
        else:
            return False
        if tail >= end - pos or not low <= data[pos + 1] <= high:
            return False
        for k in range(2, tail + 1):
            if data[pos + k] & 0xC0 != 0x80:
                return False
        pos += tail + 1
    return True


@_compiled
def _record(data, pos, end):
    """The record at `pos` of a body ending at `end`: (the position after it,
    timestamp delta, offset delta, key start and length, value start and
    length, where its headers start, how many); position -1 if it is malformed."""
    ts_delta = offset_delta = k_pos = k_len = v_pos = v_len = h_pos = h_count = 0
    length, pos = _varint(data, pos, end)
    if pos < 0 or length < 0 or length > end - pos:
        return -1, ts_delta, offset_delta, k_pos, k_len, v_pos, v_len, h_pos, h_count
    rec_end = pos + length
    ts_delta, pos = _varint(data, pos + 1, rec_end)  # + 1: the attributes byte, unused
    if pos >= 0:
        offset_delta, pos = _varint(data, pos, rec_end)
    if pos >= 0:
        k_pos, k_len, pos = _field(data, pos, rec_end)
    if pos >= 0:
        v_pos, v_len, pos = _field(data, pos, rec_end)
    if pos >= 0:
        h_pos = pos
        h_count, pos = _varint(data, pos, rec_end)
        if h_count < 0:
            pos = -1
    i = 0
    while pos >= 0 and i < h_count:
        key_at, key_len, pos = _field(data, pos, rec_end)
        if pos >= 0 and (key_len < 0 or not _utf8(data, key_at, key_at + key_len)):
            pos = -1  # a header key is a non-null string
        if pos >= 0:
            _, _, pos = _field(data, pos, rec_end)
        i += 1
    if pos != rec_end:
        pos = -1
    return pos, ts_delta, offset_delta, k_pos, k_len, v_pos, v_len, h_pos, h_count


@_compiled
def _walk(data, body_starts, body_ends, counts, base_offsets, last_deltas, base_ts, max_ts, append_time, lo, hi):
    """Every record of the batch bodies data[body_starts[i]:body_ends[i]]
    checked, and those with offsets in [lo, hi) described: (kept, their
    fields in the first `kept` columns of `fields`, whether each one's
    timestamp is the log append time).
    kept is -1 where a record breaks the format."""
    total = 0
    for b in range(len(counts)):
        total += counts[b]
    # One row a field, one column a kept record: offset, timestamp, key start,
    # key length, value start, value length (-1: null), headers start, count.
    fields = np.empty((8, total), np.int64)
    appended = np.empty(total, np.bool_)
    kept = 0
    for b in range(len(counts)):
        pos, end = body_starts[b], body_ends[b]
        log_append = append_time[b] != 0
        base = base_ts[b]
        for _ in range(counts[b]):
            pos, ts_delta, offset_delta, k_pos, k_len, v_pos, v_len, h_pos, h_count = _record(data, pos, end)
            if pos < 0 or not 0 <= offset_delta <= last_deltas[b]:
                pos = -1
                break
            if log_append:
                stamp = max_ts[b]
            elif (base > 0 and ts_delta > _INT64_MAX - base) or (base < 0 and ts_delta < _INT64_MIN - base):
                pos = -1  # the timestamp overflows int64
                break
            else:
                stamp = base + ts_delta
            offset = base_offsets[b] + offset_delta
            if lo <= offset < hi:
                fields[0, kept], fields[1, kept] = offset, stamp
                fields[2, kept], fields[3, kept] = k_pos, k_len
                fields[4, kept], fields[5, kept] = v_pos, v_len
                fields[6, kept], fields[7, kept] = h_pos, h_count
                appended[kept] = log_append
                kept += 1
        if pos != end:  # a malformed record, or bytes after the batch's last one
            kept = -1
            break
    return kept, fields, appended


@_compiled
def _header_fields(data, header_pos, header_count, total):
    """Where each header's key and value lie (records already checked by _walk)."""
    spans = np.empty((4, total), np.int64)  # key start, key length, value start, value length
    h = 0
    for r in range(len(header_pos)):
        _, pos = _varint(data, header_pos[r], len(data))
        for _ in range(header_count[r]):
            spans[0, h], spans[1, h], pos = _field(data, pos, len(data))
            spans[2, h], spans[3, h], pos = _field(data, pos, len(data))
            h += 1
    return spans


def _binary(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
            kind: pa.DataType = pa.binary()) -> Optional[pa.Array]:
    """An Arrow binary (or string) array of the byte ranges [start, start +
    length) of `data`, in ascending order (length -1: null); None where
    int32 offsets cannot reach."""
    count = len(starts)
    nulls = lengths < 0
    null_count = int(np.count_nonzero(nulls))
    if null_count == count:
        return pa.nulls(count, kind)  # keyless records: no buffers to build
    if len(data) > _INT32_MAX:
        return None
    # Arrow cuts the ranges out in one call, at memcpy speed: over all of
    # `data`, an array of 2n values whose even ones are the ranges (the odd
    # ones the bytes between them), filtered to the even ones.
    bounds = np.empty(2 * count + 1, dtype=np.int32)
    bounds[0:-1:2] = starts
    bounds[1::2] = starts + np.maximum(lengths, 0)
    bounds[-1] = bounds[-2]
    even = np.zeros(2 * count, dtype=bool)
    even[::2] = True
    spans = pa.Array.from_buffers(pa.binary(), 2 * count, [None, pa.py_buffer(bounds), pa.py_buffer(data)])
    cut = spans.filter(pa.array(even))
    validity = pa.py_buffer(np.packbits(~nulls, bitorder="little")) if null_count else None
    return pa.Array.from_buffers(kind, count, [validity, *cut.buffers()[1:]], null_count=null_count)


def _headers(data: np.ndarray, header_pos: np.ndarray, header_count: np.ndarray) -> Optional[pa.Array]:
    """Each record's headers as Spark's Kafka source has them: list<struct<key string, value binary>>."""
    list_offsets = np.zeros(len(header_count) + 1, dtype=np.int64)
    np.cumsum(header_count, out=list_offsets[1:])
    total = int(list_offsets[-1])
    if total > _INT32_MAX:
        return None
    key_pos, key_len, value_pos, value_len = _header_fields(data, header_pos, header_count, total)
    keys = _binary(data, key_pos, key_len, pa.string())
    values = _binary(data, value_pos, value_len)
    if keys is None or values is None:
        return None
    entries = pa.StructArray.from_arrays([keys, values], fields=list(HEADERS_TYPE.value_type))
    return pa.ListArray.from_arrays(pa.array(list_offsets.astype(np.int32)), entries, type=HEADERS_TYPE)
