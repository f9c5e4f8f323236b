"""Compiled walks over the records of decompressed v2 batch bodies.

A record is a chain of zig-zag varints (length, attributes, timestamp
delta, offset delta, key length, key, value length, value, header count,
headers), so where one field starts depends on every byte before it; numpy
cannot vectorize that, while a compiled loop does it at memory speed. Two
users: the broker checks every record of a producer's batches before it
appends them (partition_log.validator), and the Spark source decodes
records column-wise (kafka_protocol.columnar_records). Both walk with
`checked_record` below, so both accept exactly what kafka_protocol.records
decodes: every field inside its record, record lengths adding up to the
body, varints of at most 10 bytes, no negative length but -1 for null,
offset deltas inside the batch, timestamps within int64, header keys
non-null UTF-8.

The kernels are compiled on first use and cached on disk (`cache=True`:
next to this module, else numba's user-wide cache dir or NUMBA_CACHE_DIR);
where no cache dir is writable they are compiled in memory on each
process's first call instead of failing the import. nogil: a broker's
gRPC threads may walk batches side by side.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import numba
import numpy as np

from .batch import HEADER_SIZE, BatchHeader
from .compression import Codec, decompress

log = logging.getLogger(__name__)

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1


def compiled(fn):
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
inlined = numba.njit(inline="always")


@inlined
def varint(data, pos, end):
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


@inlined
def field(data, pos, end):
    """A length-prefixed field: (start, length, position after); length -1 is
    null; position -1 if the length is malformed or the bytes run past `end`."""
    n, pos = varint(data, pos, end)
    if pos < 0 or n < -1 or (n >= 0 and n > end - pos):
        return 0, 0, -1
    return pos, n, pos + max(n, 0)


@compiled
def utf8(data, pos, end):
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


@compiled
def record(data, pos, end):
    """The record at `pos` of a body ending at `end`: (the position after it,
    timestamp delta, offset delta, key start and length, value start and
    length, where its headers start, how many); position -1 if it is malformed."""
    ts_delta = offset_delta = k_pos = k_len = v_pos = v_len = h_pos = h_count = 0
    length, pos = varint(data, pos, end)
    if pos < 0 or length < 0 or length > end - pos:
        return -1, ts_delta, offset_delta, k_pos, k_len, v_pos, v_len, h_pos, h_count
    rec_end = pos + length
    ts_delta, pos = varint(data, pos + 1, rec_end)  # + 1: the attributes byte, unused
    if pos >= 0:
        offset_delta, pos = varint(data, pos, rec_end)
    if pos >= 0:
        k_pos, k_len, pos = field(data, pos, rec_end)
    if pos >= 0:
        v_pos, v_len, pos = field(data, pos, rec_end)
    if pos >= 0:
        h_pos = pos
        h_count, pos = varint(data, pos, rec_end)
        if h_count < 0:
            pos = -1
    i = 0
    while pos >= 0 and i < h_count:
        key_at, key_len, pos = field(data, pos, rec_end)
        if pos >= 0 and (key_len < 0 or not utf8(data, key_at, key_at + key_len)):
            pos = -1  # a header key is a non-null string
        if pos >= 0:
            _, _, pos = field(data, pos, rec_end)
        i += 1
    if pos != rec_end:
        pos = -1
    return pos, ts_delta, offset_delta, k_pos, k_len, v_pos, v_len, h_pos, h_count


@inlined
def checked_record(data, pos, end, last_delta, base_ts, log_append, max_ts):
    """`record` plus what its batch's header says of it: the offset delta
    inside [0, last_delta], the timestamp (the batch's max timestamp under
    LogAppendTime) within int64. Returns (position after, or -1 where the
    record breaks the format; timestamp, offset delta, key start and length,
    value start and length, headers start and count)."""
    pos, ts_delta, offset_delta, k_pos, k_len, v_pos, v_len, h_pos, h_count = record(data, pos, end)
    stamp = max_ts
    if pos >= 0 and not 0 <= offset_delta <= last_delta:
        pos = -1
    elif pos >= 0 and not log_append:
        if (base_ts > 0 and ts_delta > INT64_MAX - base_ts) or (base_ts < 0 and ts_delta < INT64_MIN - base_ts):
            pos = -1  # the timestamp overflows int64
        else:
            stamp = base_ts + ts_delta
    return pos, stamp, offset_delta, k_pos, k_len, v_pos, v_len, h_pos, h_count


# Why check_producer_bodies refused a batch.
OK = 0
MALFORMED = 1        # a record breaks the format (lengths, varints, header keys, timestamp overflow)
OFFSET_DELTA = 2     # a record's offset delta is not its index in the batch
TRAILING = 3         # bytes after the batch's last record
NULL_KEY = 4         # a record without a key in a compacted topic
TIMESTAMP = 5        # a CreateTime timestamp outside the topic's allowed range


@compiled
def check_producer_bodies(data, body_starts, body_ends, counts, base_ts, max_ts, append_time,
                          keys_required, ts_low, ts_high):
    """Every record of the producer batch bodies data[body_starts[i]:body_ends[i]]
    (recordsCount counts[i], offset deltas 0..counts[i]-1 in order) checked.
    A CreateTime timestamp other than -1 must lie in [ts_low, ts_high]; with
    `keys_required` every record needs a key. Returns (batch index, record
    index, reason) of the first failure, reason OK (0) if there is none."""
    for b in range(len(counts)):
        pos, end = body_starts[b], body_ends[b]
        last = counts[b] - 1
        log_append = append_time[b] != 0
        for i in range(counts[b]):
            pos, stamp, offset_delta, _, k_len, _, _, _, _ = checked_record(
                data, pos, end, last, base_ts[b], log_append, max_ts[b])
            if pos < 0:
                return b, i, MALFORMED
            if offset_delta != i:
                return b, i, OFFSET_DELTA
            if keys_required and k_len < 0:
                return b, i, NULL_KEY
            if not log_append and stamp != -1 and not ts_low <= stamp <= ts_high:
                return b, i, TIMESTAMP
        if pos != end:
            return b, counts[b], TRAILING
    return 0, 0, OK


@dataclass(frozen=True)
class Bodies:
    """The records sections of some batches as byte ranges of one read-only
    uint8 array, and what their headers say. Uncompressed bodies are read
    where they lie in the given bytes; only when some batch is compressed
    are the (decompressed) bodies joined into a new buffer."""

    data: np.ndarray  # uint8, read-only (one compiled variant for bytes, bytearray or memoryview)
    starts: np.ndarray
    ends: np.ndarray
    counts: np.ndarray
    base_offsets: np.ndarray
    last_deltas: np.ndarray
    base_ts: np.ndarray
    max_ts: np.ndarray
    append_time: np.ndarray

    @classmethod
    def of(cls, buf, batches: Sequence[tuple[int, BatchHeader]]) -> "Bodies":
        """`batches`: (position in `buf`, header) of checked headers. Raises
        CorruptRecordError / UnsupportedCompressionTypeError for a body that
        does not decompress."""
        view = memoryview(buf).cast("B").toreadonly()
        if any(h.codec != Codec.NONE for _, h in batches):
            bodies = [decompress(h.codec, view[pos + HEADER_SIZE:pos + h.size]) if h.codec != Codec.NONE
                      else view[pos + HEADER_SIZE:pos + h.size] for pos, h in batches]
            view = memoryview(b"".join(bodies)).toreadonly()
            starts, start = [], 0
            for body in bodies:
                starts.append(start)
                start += len(body)
            ends = starts[1:] + [start]
        else:
            starts = [pos + HEADER_SIZE for pos, _ in batches]
            ends = [pos + h.size for pos, h in batches]
        # One array built from tuples, then one copy into contiguous columns:
        # a fixed cost per call of a few µs, where a column at a time was 12.
        table = np.array([(s, e, h.records_count, h.base_offset, h.last_offset_delta, h.base_timestamp,
                           h.max_timestamp, h.is_log_append_time)
                          for s, e, (_, h) in zip(starts, ends, batches)], dtype=np.int64).reshape(-1, 8)
        return cls(np.frombuffer(view, dtype=np.uint8), *np.ascontiguousarray(table.T))
