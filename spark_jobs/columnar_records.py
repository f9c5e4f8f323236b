"""Records of v2 batches decoded column-wise with numpy, for Arrow.

partition_log.records decodes one record at a time into Python objects:
exact and general, but about 10 µs a record, which made the decode the
bottleneck of a Spark read. Here only the record boundaries are found in a
Python loop (one or two varint bytes a record); every field is then decoded
for all records of a fetch at once with numpy, and keys and values are cut
out of the batch bodies by slices joined straight into Arrow buffers.

`decode_columns` returns None when it cannot vouch for the result (a record
whose fields do not end where its length says, headers wanted and present):
the caller then decodes with partition_log.records, which raises the
precise error for corrupt data. Batch headers and CRCs are checked first,
with partition_log.batch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa

from partition_log.batch import HEADER_SIZE, iter_headers
from partition_log.compression import decompress
from partition_log.errors import CorruptRecordError
from partition_log.varint import read_zigzag

_LANES = np.arange(10)
_SHIFTS = (7 * _LANES).astype(np.uint64)
_PAD = b"\0" * 10


@dataclass(frozen=True)
class RecordColumns:
    keys: pa.Array
    values: pa.Array
    offsets: np.ndarray          # int64
    timestamps_ms: np.ndarray    # int64
    log_append_time: np.ndarray  # bool


def decode_columns(buf: bytes, lo: int, hi: int, *, need_headers: bool) -> Optional[RecordColumns]:
    """The records of the batches in `buf` with offsets in [lo, hi), control
    batches left out; None: decode these with partition_log.records instead."""
    bodies: list[bytes] = []
    counts, base_offsets, base_ts, max_ts, append_time = [], [], [], [], []
    for pos, h in iter_headers(buf):
        if h.is_control or h.last_offset < lo or h.base_offset >= hi or h.records_count == 0:
            continue
        bodies.append(decompress(h.codec, memoryview(buf)[pos + HEADER_SIZE:pos + h.size]))
        counts.append(h.records_count)
        base_offsets.append(h.base_offset)
        base_ts.append(h.base_timestamp)
        max_ts.append(h.max_timestamp)
        append_time.append(h.is_log_append_time)
    if not bodies:
        return None if need_headers else _empty()
    body = b"".join(bodies)
    bounds = _record_bounds(body, [len(b) for b in bodies], counts)
    if bounds is None:
        return None
    starts, ends = bounds
    arr = np.frombuffer(body + _PAD, dtype=np.uint8)
    limit = len(body)
    p = starts + 1  # the attributes byte is unused
    ts_delta, p = _varints(arr, p, limit)
    offset_delta, p = _varints(arr, p, limit)
    key_len, p = _varints(arr, p, limit)
    key_start = p
    p = p + np.maximum(key_len, 0)
    value_len, p = _varints(arr, p, limit)
    value_start = p
    p = p + np.maximum(value_len, 0)
    header_count, p = _varints(arr, p, limit)
    if (header_count < 0).any() or (p > ends).any() or ((header_count == 0) & (p != ends)).any():
        return None
    if need_headers and header_count.any():
        return None
    per_record = np.repeat(np.arange(len(counts)), counts)
    offsets = np.asarray(base_offsets, dtype=np.int64)[per_record] + offset_delta
    appended = np.asarray(append_time, dtype=bool)[per_record]
    stamps = np.where(appended, np.asarray(max_ts, dtype=np.int64)[per_record],
                      np.asarray(base_ts, dtype=np.int64)[per_record] + ts_delta)
    keep = (offsets >= lo) & (offsets < hi)
    if not keep.all():
        offsets, stamps, appended = offsets[keep], stamps[keep], appended[keep]
        key_start, key_len, value_start, value_len = key_start[keep], key_len[keep], value_start[keep], value_len[keep]
    return RecordColumns(_binary(arr, key_start, key_len), _binary(arr, value_start, value_len),
                         offsets, stamps, appended)


def _empty() -> RecordColumns:
    none = np.zeros(0, dtype=np.int64)
    return RecordColumns(pa.array([], pa.binary()), pa.array([], pa.binary()), none, none, none.astype(bool))


def _record_bounds(body: bytes, sizes: list[int], counts: list[int]) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """Where each record's fields start (after its length) and end; None if
    the lengths do not add up to the bodies. The one per-record Python loop,
    kept short: a length takes one byte up to 63 and two up to 8191 (zig-zag)."""
    starts: list[int] = []
    lengths: list[int] = []
    add_start, add_length = starts.append, lengths.append
    pos = 0
    body_end = 0
    try:
        for size, count in zip(sizes, counts):
            body_end += size
            for _ in range(count):
                b = body[pos]
                if b < 0x80:
                    pos += 1
                else:
                    c = body[pos + 1]
                    if c < 0x80:
                        b = (b & 0x7F) | (c << 7)
                        pos += 2
                    else:
                        length, pos = read_zigzag(body, pos)
                        b = (length << 1) ^ (length >> 63)
                length = (b >> 1) ^ -(b & 1)
                add_start(pos)
                add_length(length)
                pos += length
            if pos != body_end:
                return None
    except (IndexError, CorruptRecordError):
        return None
    first = np.asarray(starts, dtype=np.int64)
    spans = np.asarray(lengths, dtype=np.int64)
    if len(spans) and spans.min() < 1:
        return None
    return first, first + spans


def _varints(arr: np.ndarray, p: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The zig-zag varints at positions `p`, and the positions after them."""
    if (p >= limit).any():
        p = np.minimum(p, limit)  # the caller's end check fails such records
    first = arr[p]
    one = first < 0x80
    if one.all():  # the common case: every value in -64..63
        return _unzigzag(first.astype(np.int64)), p + 1
    second = arr[p + 1]
    if (one | (second < 0x80)).all():  # -8192..8191
        raw = np.where(one, first, (first & 0x7F).astype(np.int64) | (second.astype(np.int64) << 7))
        return _unzigzag(raw.astype(np.int64)), p + 2 - one
    window = arr[p[:, None] + _LANES]
    size = np.argmin(window >= 0x80, axis=1) + 1
    raw = np.where(_LANES < size[:, None], (window & 0x7F).astype(np.uint64) << _SHIFTS, 0).sum(axis=1,
                                                                                            dtype=np.uint64)
    return (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64), p + size


def _unzigzag(raw: np.ndarray) -> np.ndarray:
    return (raw >> 1) ^ -(raw & 1)


def _binary(arr: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """A binary array of the byte ranges [start, start + length) (length -1: null)."""
    count = len(starts)
    nulls = lengths < 0
    sizes = np.where(nulls, 0, lengths)
    out_offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(sizes, out=out_offsets[1:])
    view = memoryview(arr)
    data = b"".join([view[s:s + n] for s, n in zip(starts.tolist(), sizes.tolist())]) if out_offsets[-1] else b""
    validity = pa.array(~nulls).buffers()[1] if nulls.any() else None
    return pa.Array.from_buffers(pa.binary(), count, [validity, pa.py_buffer(out_offsets), pa.py_buffer(data)],
                                 null_count=int(nulls.sum()))
