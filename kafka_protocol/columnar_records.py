"""Records of v2 batches decoded column-wise for Arrow, with compiled kernels.

kafka_protocol.records decodes one record at a time into Python objects:
exact and general, but several µs a record, which made the decode the
bottleneck of a Spark read. Here one compiled pass (`_walk`) goes over the
decompressed batch bodies and writes, per record, its offset, timestamp,
where its key, value and headers lie and how long they are; Arrow then
copies keys, values and header fields out of the bodies in one call each
(`_binary`). No Python runs per record.

The walk is kafka_protocol.record_check's (numba, compiled and cached on
disk; see there why): the broker checks producers' batches with the same
record walk, so what the broker accepts this decodes. It checks what
kafka_protocol.records checks; `decode_columns` returns None where any check
fails, for the records' batches or the batches' headers, CRCs and
compression: the caller then decodes with kafka_protocol.records, which
raises the precise CorruptRecordError.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np
import pyarrow as pa

from .read_committed import AbortedTransactions
from .batch import BatchHeader, iter_headers
from .control_records import decode_txn_marker
from .errors import KafkaError
from .record_check import Bodies, checked_record, compiled, field, varint

_INT32_MAX = 2**31 - 1
# Spark's Kafka source's headers column as Spark's Arrow converter spells it.
HEADERS_TYPE = pa.list_(pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])))
# Spark's Kafka source's rows as Arrow has them (what Spark's converter derives
# from that source's schema; tests/spark_jobs checks the two agree).
_ROW_FIELDS = [pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("topic", pa.string()),
               pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
               pa.field("timestamp", pa.timestamp("us", tz="UTC")), pa.field("timestampType", pa.int32())]
ROW_SCHEMA = pa.schema(_ROW_FIELDS)
ROW_SCHEMA_WITH_HEADERS = pa.schema([*_ROW_FIELDS, pa.field("headers", HEADERS_TYPE)])


@dataclass(frozen=True)
class RecordColumns:
    keys: pa.Array
    values: pa.Array
    offsets: np.ndarray          # int64
    timestamps_ms: np.ndarray    # int64
    log_append_time: np.ndarray  # bool
    headers: Optional[pa.Array] = None  # HEADERS_TYPE, when asked for


def decode_columns(buf, lo: int, hi: int, *, need_headers: bool,
                   aborted: Optional[Iterable[tuple[int, int]]] = None) -> Optional[RecordColumns]:
    """The records of the batches in `buf` (any bytes-like) with offsets in
    [lo, hi), control batches left out; with `aborted` (a read_committed
    fetch's aborted transactions: producer id, first offset) the batches of
    those transactions too. None: decode these with kafka_protocol.records instead."""
    try:
        view = memoryview(buf).cast("B").toreadonly()
        headers = list(iter_headers(view))
        if aborted:
            headers = committed_batches(view, headers, aborted)
        batches = Bodies.of(view, [(pos, h) for pos, h in headers
                                   if not (h.is_control or h.last_offset < lo or h.base_offset >= hi)])
    except KafkaError:  # a batch header, CRC or compressed body the exact decoder will name
        return None
    kept, fields, appended = _walk(batches.data, batches.starts, batches.ends, batches.counts,
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


def row_schema(include_headers: bool) -> pa.Schema:
    return ROW_SCHEMA_WITH_HEADERS if include_headers else ROW_SCHEMA


def record_batch(columns: RecordColumns, topic: str, partition: int, include_headers: bool) -> pa.RecordBatch:
    """The decoded records as rows of Spark's Kafka source (headers: when asked for and decoded)."""
    count = len(columns.offsets)
    arrays = [
        columns.keys,
        columns.values,
        pa.repeat(pa.scalar(topic, pa.string()), count),
        pa.array(np.full(count, partition, dtype=np.int32)),
        pa.array(columns.offsets),
        pa.array(columns.timestamps_ms * 1000, pa.timestamp("us", tz="UTC")),
        pa.array(columns.log_append_time.astype(np.int32)),
    ]
    if include_headers:
        arrays.append(columns.headers)
    return pa.RecordBatch.from_arrays(arrays, schema=row_schema(include_headers))


def rows_batch(topic: str, partition: int, keys: list, values: list, offsets: list[int], stamps: list[int],
               types: list[int], headers: Optional[list[list[dict]]]) -> pa.RecordBatch:
    """Rows from records decoded one at a time (kafka_protocol.records): the
    readers' path where the compiled decode cannot vouch for the batches.
    `headers`: each record's [{"key": str, "value": bytes}], or None for no headers column."""
    count = len(offsets)
    include_headers = headers is not None
    arrays = [
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
        pa.array([topic] * count, pa.string()),
        pa.array(np.full(count, partition, dtype=np.int32)),
        pa.array(offsets, pa.int64()),
        pa.array(np.asarray(stamps, dtype=np.int64) * 1000, pa.timestamp("us", tz="UTC")),
        pa.array(types, pa.int32()),
    ]
    if include_headers:
        arrays.append(pa.array(headers, HEADERS_TYPE))
    return pa.RecordBatch.from_arrays(arrays, schema=row_schema(include_headers))


@dataclass(frozen=True)
class KernelCache:
    """Where this process keeps the record walk's machine code: `path` None
    when numba found no writable place and compiles it in memory (seconds in
    every new Python worker); hits and misses of this process so far."""
    path: Optional[str]
    writable: bool
    hits: int
    misses: int


def kernel_cache() -> KernelCache:
    """For a Spark cluster's executors, whose Python workers may run as
    another user than the install's: is the walk cached where they can write
    (numba's order: NUMBA_CACHE_DIR, the package's __pycache__, the user's
    cache dir)?"""
    stats = _walk.stats
    path = stats.cache_path or None
    return KernelCache(path, path is not None and os.access(path, os.W_OK),
                       sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))


def committed_batches(view: memoryview, headers: list[tuple[int, BatchHeader]],
                      aborted: Iterable[tuple[int, int]]) -> list[tuple[int, BatchHeader]]:
    """The batches a read_committed reader keeps: the client's filter
    (kafka_protocol/read_committed.py), one step per batch from its header (a control
    batch's one record is decoded to tell an ABORT marker); no work per record."""
    keep = AbortedTransactions(aborted).keep_header
    return [(pos, h) for pos, h in headers if keep(h, h.is_control and _is_abort(view[pos:pos + h.size]))]


def _is_abort(batch: memoryview) -> bool:
    marker = decode_txn_marker(batch)
    return marker is not None and not marker.committed


@compiled
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
        for _ in range(counts[b]):
            pos, stamp, offset_delta, k_pos, k_len, v_pos, v_len, h_pos, h_count = checked_record(
                data, pos, end, last_deltas[b], base_ts[b], log_append, max_ts[b])
            if pos < 0:
                break
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


@compiled
def _header_fields(data, header_pos, header_count, total):
    """Where each header's key and value lie (records already checked by _walk)."""
    spans = np.empty((4, total), np.int64)  # key start, key length, value start, value length
    h = 0
    for r in range(len(header_pos)):
        _, pos = varint(data, header_pos[r], len(data))
        for _ in range(header_count[r]):
            spans[0, h], spans[1, h], pos = field(data, pos, len(data))
            spans[2, h], spans[3, h], pos = field(data, pos, len(data))
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
    # The mask as Arrow's bitmap, bits 1010... little-endian, i.e. bytes 0x55:
    # pa.array() of a numpy bool array converts element by element (6 ms for 72,000).
    even = pa.Array.from_buffers(pa.bool_(), 2 * count,
                                 [None, pa.py_buffer(np.full((2 * count + 7) // 8, 0x55, dtype=np.uint8))])
    spans = pa.Array.from_buffers(pa.binary(), 2 * count, [None, pa.py_buffer(bounds), pa.py_buffer(data)])
    cut = spans.filter(even)
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


# --- encoding: Arrow columns into the records sections of v2 batches ----------
# (the compiled encoder is kafka_protocol.record_encode's, without pyarrow)

def binary_parts(column: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A binary Arrow array's value offsets (int64, one more than rows), bytes
    and validity (bool per row) as numpy arrays, without copying the bytes."""
    if pa.types.is_large_binary(column.type) or pa.types.is_large_string(column.type):
        column = column.cast(pa.large_binary())
        offset_type = np.int64
    else:
        column = column.cast(pa.binary())
        offset_type = np.int32
    validity, offsets_buf, data_buf = column.buffers()
    n = len(column)
    offsets = np.frombuffer(offsets_buf, dtype=offset_type, count=n + 1 + column.offset)[column.offset:]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    valid = column.is_valid().to_numpy(zero_copy_only=False) if column.null_count else np.ones(n, np.bool_)
    return offsets.astype(np.int64), data, valid
