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

from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np
import pyarrow as pa

from client.read_committed import AbortedTransactions
from kafka_protocol.batch import BatchHeader, iter_headers
from kafka_protocol.control_records import decode_txn_marker
from kafka_protocol.errors import KafkaError
from kafka_protocol.record_check import Bodies, checked_record, compiled, field, varint

_INT32_MAX = 2**31 - 1
# Spark's Kafka source's headers column as Spark's Arrow converter spells it.
HEADERS_TYPE = pa.list_(pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])))


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


def committed_batches(view: memoryview, headers: list[tuple[int, BatchHeader]],
                      aborted: Iterable[tuple[int, int]]) -> list[tuple[int, BatchHeader]]:
    """The batches a read_committed reader keeps: the client's filter
    (client/read_committed.py), one step per batch from its header (a control
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
