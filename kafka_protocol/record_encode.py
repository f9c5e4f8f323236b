"""The records sections of v2 batches encoded by one compiled pass (numba),
for batches without record headers: from Arrow columns (the producer's
produce_arrow, through kafka_protocol.columnar_records.binary_parts) or from
the producer's per-record lists (`encode_lists`, what a ProducerBatch holds
when it is sent). The bytes are kafka_protocol.records.encode_batch's
records section, byte for byte (tests/kafka_protocol/test_record_encode.py
checks it): offset deltas 0, 1, ..., timestamps as deltas from the batch's
smallest, every record's attributes 0, no headers.

No pyarrow here: the per-record producer imports this module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from .record_check import compiled, inlined

Parts = tuple[np.ndarray, np.ndarray, np.ndarray]  # value offsets (int64, n + 1), bytes (uint8), validity (bool)

# Each record's encoded bytes besides its key and value, at most: length (5),
# attributes (1), timestamp delta (10), offset delta (5), key and value lengths
# (5 each), header count (1).
RECORD_OVERHEAD_BOUND = 32
# Timestamps spread wider than this within one batch are left to the Python
# encoder (their deltas would not fit int64's zig-zag varints here).
TIMESTAMP_SPREAD_LIMIT = 2**62


@dataclass(frozen=True)
class EncodedBodies:
    """Records sections, one per batch, back to back in `data`: batch i is
    data[ends[i - 1]:ends[i]] (from 0 for the first) and holds `counts[i]`
    records, timestamps from `base_ts[i]` to `max_ts[i]`."""
    data: np.ndarray  # uint8
    ends: np.ndarray
    counts: np.ndarray
    base_ts: np.ndarray
    max_ts: np.ndarray

    def body(self, i: int) -> memoryview:
        start = int(self.ends[i - 1]) if i else 0
        return memoryview(self.data)[start:int(self.ends[i])]


def encode_bodies(keys: Optional[Parts], values: Parts, timestamps: np.ndarray, rows: np.ndarray,
                  bounds: np.ndarray) -> EncodedBodies:
    """The records sections of batches of the rows `rows[bounds[i]:bounds[i + 1]]`
    (keys/values: value offsets, bytes and validity per row; keys None: every
    key null; timestamps int64 ms per row), encoded by one compiled pass: no
    headers, offset deltas 0, 1, ... within each batch."""
    if keys is None:
        keys = (np.zeros(len(timestamps) + 1, np.int64), np.zeros(0, np.uint8), np.zeros(len(timestamps), np.bool_))
    data, ends, base_ts, max_ts = _encode(keys[0], keys[1], keys[2], values[0], values[1], values[2],
                                          timestamps, rows, bounds)
    return EncodedBodies(data, ends, np.diff(bounds), base_ts, max_ts)


def list_parts(items: Sequence[Optional[bytes]]) -> Parts:
    """A list of bytes and None as encode_bodies takes a column (the bytes joined once)."""
    n = len(items)
    offsets = np.zeros(n + 1, np.int64)
    try:  # no None among them (the usual case): join and len() refuse None, so no scan for it first
        data = b"".join(items)  # type: ignore[arg-type]
        np.cumsum(np.fromiter(map(len, items), np.int64, n), out=offsets[1:])  # type: ignore[arg-type]
        return offsets, np.frombuffer(data, np.uint8), np.ones(n, np.bool_)
    except TypeError:
        pass
    valid = np.fromiter((item is not None for item in items), np.bool_, n)
    np.cumsum(np.fromiter((len(item) if item is not None else 0 for item in items), np.int64, n), out=offsets[1:])
    return offsets, np.frombuffer(b"".join([item for item in items if item is not None]), np.uint8), valid


def encode_lists(keys: Optional[Sequence[Optional[bytes]]], values: Sequence[Optional[bytes]],
                 timestamps: Sequence[int], counts: Optional[Sequence[int]] = None,
                 stamps_in_ns: bool = False) -> Optional[EncodedBodies]:
    """The records sections (no headers) of batches of consecutive records,
    `counts[i]` records each (None: one batch of all), from the records'
    keys (None: all null), values and timestamps (ms; ns with `stamps_in_ns`,
    floored to ms here, all at once). None where a timestamp is outside
    int64 or they spread too wide: the Python encoder then writes (or
    refuses) them."""
    n = len(values)
    try:
        stamps = np.fromiter(timestamps, np.int64, n)
    except OverflowError:
        return None
    if stamps_in_ns:
        stamps //= 1_000_000  # numpy's floor division, as Python's
    if int(stamps.max()) - int(stamps.min()) >= TIMESTAMP_SPREAD_LIMIT:
        return None
    bounds = np.zeros(1 + (1 if counts is None else len(counts)), np.int64)
    if counts is None:
        bounds[1] = n
    else:
        np.cumsum(counts, out=bounds[1:])
    return encode_bodies(None if keys is None else list_parts(keys), list_parts(values), stamps,
                         np.arange(n, dtype=np.int64), bounds)


@inlined
def _varint_size(v):
    z = np.uint64((v << 1) ^ (v >> 63))
    n = 1
    while z >= 0x80:
        z >>= np.uint64(7)
        n += 1
    return n


@inlined
def _put_varint(out, pos, v):
    z = np.uint64((v << 1) ^ (v >> 63))
    while z >= 0x80:
        out[pos] = np.uint8((z & np.uint64(0x7F)) | np.uint64(0x80))
        z >>= np.uint64(7)
        pos += 1
    out[pos] = np.uint8(z)
    return pos + 1


@inlined
def _copy(out, pos, data, start, length):
    """data[start:start + length] into out at pos (nothing for a null's -1); the position after it.
    Unsigned indices: numba then skips the negative-index wrap-around and the loop becomes a
    vectorized copy (about ten times faster than with signed ones, or with slices, which
    build a view per call)."""
    if length > 0:
        to, at = np.uint64(pos), np.uint64(start)
        for i in range(np.uint64(length)):
            out[to + i] = data[at + i]
        return pos + length
    return pos


@compiled
def _encode(key_offs, key_data, key_valid, value_offs, value_data, value_valid, stamps, rows, bounds):
    batches = len(bounds) - 1
    bound = 0  # the records' size at most
    for j in range(bounds[0], bounds[batches]):
        r = rows[j]
        bound += 32 + (key_offs[r + 1] - key_offs[r]) + (value_offs[r + 1] - value_offs[r])  # RECORD_OVERHEAD_BOUND
    out = np.empty(bound, np.uint8)
    ends = np.empty(batches, np.int64)
    base_ts = np.empty(batches, np.int64)
    max_ts = np.empty(batches, np.int64)
    pos = 0
    for b in range(batches):
        lo, hi = bounds[b], bounds[b + 1]
        first, last = stamps[rows[lo]], stamps[rows[lo]]
        for j in range(lo, hi):
            t = stamps[rows[j]]
            first = min(first, t)
            last = max(last, t)
        base_ts[b], max_ts[b] = first, last
        for j in range(lo, hi):
            r = rows[j]
            k_len = np.int64(key_offs[r + 1] - key_offs[r]) if key_valid[r] else np.int64(-1)
            v_len = np.int64(value_offs[r + 1] - value_offs[r]) if value_valid[r] else np.int64(-1)
            ts_delta = np.int64(stamps[r] - first)
            delta = np.int64(j - lo)
            size = (1 + _varint_size(ts_delta) + _varint_size(delta) + _varint_size(k_len) + max(k_len, 0)
                    + _varint_size(v_len) + max(v_len, 0) + 1)
            pos = _put_varint(out, pos, np.int64(size))
            out[pos] = 0  # attributes
            pos = _put_varint(out, pos + 1, ts_delta)
            pos = _put_varint(out, pos, delta)
            pos = _put_varint(out, pos, k_len)
            pos = _copy(out, pos, key_data, key_offs[r], k_len)
            pos = _put_varint(out, pos, v_len)
            pos = _copy(out, pos, value_data, value_offs[r], v_len)
            out[pos] = 0  # no headers
            pos += 1
        ends[b] = pos
    return out[:pos], ends, base_ts, max_ts
