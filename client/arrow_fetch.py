"""A fetch answer decoded column-wise, for Consumer.poll_arrow(): the rows of
Spark's Kafka source as one pyarrow.RecordBatch per partition, decoded by
the compiled kernel the Spark source uses (kafka_protocol.columnar_records),
with no Python object per record.

The same records as decode_fetched (client/fetcher.py) gives poll(), and
the same next position: from `position` on, below the high watermark
(read_committed: the last stable offset), control batches left out, and
read_committed the batches of aborted transactions. Where the compiled
decode cannot vouch for the batches (anything malformed) the answer is
decoded by decode_fetched instead, record at a time, so a corrupt batch
ends the answer and raises exactly as it does for poll().

pyarrow is imported by this module alone (and only when poll_arrow runs).
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pyarrow as pa

from kafka_protocol.batch import NO_PARTITION_LEADER_EPOCH, iter_headers
from kafka_protocol.columnar_records import decode_columns, record_batch, row_schema, rows_batch
from kafka_protocol.errors import KafkaError
from kraftlog_api import broker_pb2 as bpb

from .consumer_types import TopicPartition
from .fetcher import decode_fetched
from .subscription_state import CompletedFetch, FetchedRows

_NO_LIMIT = 2**63


def decode_fetched_arrow(tp: TopicPartition, position: int, data: bpb.FetchResponse.PartitionData,
                         read_committed: bool, include_headers: bool) -> CompletedFetch:
    hw = data.high_watermark
    if read_committed and data.last_stable_offset >= 0:
        hw = data.last_stable_offset
    end = hw if hw >= 0 else _NO_LIMIT
    raw = data.records
    aborted = [(a.producer_id, a.first_offset) for a in data.aborted_transactions] if read_committed else None
    columns = decode_columns(raw, position, end, need_headers=include_headers, aborted=aborted)
    if columns is None:
        return _record_at_a_time(tp, position, data, read_committed, include_headers)
    # The position moves past every batch below `end`, dropped ones too (as decode_fetched).
    next_offset, bases, epochs = position, [], []
    try:
        for _, h in iter_headers(raw, validate=False):
            if h.base_offset >= end:
                break
            next_offset = max(next_offset, h.next_offset)
            bases.append(h.base_offset)
            epochs.append(h.partition_leader_epoch)
    except KafkaError:  # decode_columns checked these headers already; not reached
        return _record_at_a_time(tp, position, data, read_committed, include_headers)
    if hw >= 0:
        next_offset = min(next_offset, max(hw, position))
    count = len(columns.offsets)
    if count:
        next_offset = max(next_offset, int(columns.offsets[-1]) + 1)
    rows = FetchedRows(record_batch(columns, tp.topic, tp.partition, include_headers), include_headers,
                       columns.offsets, np.asarray(bases, np.int64), np.asarray(epochs, np.int64))
    return CompletedFetch(tp, position, [], next_offset, size=len(raw), rows=rows)


def _record_at_a_time(tp: TopicPartition, position: int, data: bpb.FetchResponse.PartitionData,
                      read_committed: bool, include_headers: bool) -> CompletedFetch:
    """decode_fetched's records (and its errors) as rows."""
    fetched = decode_fetched(tp, position, data, read_committed)
    records = fetched.records
    headers: Optional[list[list[dict]]] = None
    if include_headers:
        headers = [[{"key": k, "value": v} for k, v in r.headers] for r in records]
    batch = rows_batch(tp.topic, tp.partition, [r.key for r in records], [r.value for r in records],
                       [r.offset for r in records], [r.timestamp for r in records],
                       [int(r.timestamp_type) for r in records], headers)
    offsets = np.asarray([r.offset for r in records], np.int64)
    epochs = np.asarray([NO_PARTITION_LEADER_EPOCH if r.leader_epoch is None else r.leader_epoch
                         for r in records], np.int64)
    return CompletedFetch(tp, position, [], fetched.next_offset, size=fetched.size,
                          rows=FetchedRows(batch, include_headers, offsets, offsets, epochs))


def empty_rows(include_headers: bool) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=row_schema(include_headers))


def join_rows(batches: list[pa.RecordBatch], include_headers: bool) -> pa.RecordBatch:
    """One record batch of several partitions' rows (a copy only when there are several)."""
    if not batches:
        return empty_rows(include_headers)
    if len(batches) == 1:
        return batches[0]
    return pa.concat_batches(batches)
