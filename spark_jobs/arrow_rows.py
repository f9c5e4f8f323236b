"""Rows as Spark's Kafka source has them, built as Arrow record batches.

The schema is Spark's Kafka source's: key, value, topic, partition, offset,
timestamp, timestampType, and headers with includeHeaders=true. A Python
data source may yield `pyarrow.RecordBatch`es (several times faster than
tuples), but only with exactly the Arrow schema Spark derives from the
declared one, so that schema is derived here with Spark's own converter.
Records, headers too, are decoded column-wise by compiled kernels
(columnar_records), or one at a time with kafka_protocol.records where
those cannot vouch for them (anything malformed: the exact decoder names
the error); control batches (transaction markers) are not rows, nor, read
read_committed, the batches of the fetch's aborted transactions.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Optional

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType,
)

from kafka_protocol.read_committed import AbortedTransactions
from kafka_protocol.records import iter_batches

from kafka_protocol.columnar_records import decode_columns, record_batch, rows_batch

from .range_fetch import FetchedChunk

CREATE_TIME, LOG_APPEND_TIME = 0, 1  # Kafka's timestampType values

HEADER_TYPE = StructType([StructField("key", StringType()), StructField("value", BinaryType())])


def source_schema(include_headers: bool) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", ArrayType(HEADER_TYPE)))
    return StructType(fields)


@lru_cache(maxsize=2)
def arrow_schema(include_headers: bool) -> pa.Schema:
    return to_arrow_schema(source_schema(include_headers), timezone="UTC")


def chunk_to_arrow(chunk: FetchedChunk, topic: str, partition: int,
                   include_headers: bool) -> Optional[pa.RecordBatch]:
    """The records of `chunk` in [position, end) as one record batch (None: none)."""
    columns = decode_columns(chunk.records, chunk.position, chunk.end, need_headers=include_headers,
                             aborted=chunk.aborted)
    if columns is None:
        return _record_at_a_time(chunk, topic, partition, include_headers)
    if not len(columns.offsets):
        return None
    return record_batch(columns, topic, partition, include_headers)


def _record_at_a_time(chunk: FetchedChunk, topic: str, partition: int,
                      include_headers: bool) -> Optional[pa.RecordBatch]:
    """kafka_protocol.records' exact decoder: headers, and the precise error for corrupt records."""
    keys: list[Optional[bytes]] = []
    values: list[Optional[bytes]] = []
    offsets: list[int] = []
    stamps: list[int] = []
    types: list[int] = []
    headers: list[list[dict]] = []
    lo, hi = chunk.position, chunk.end
    committed = AbortedTransactions(chunk.aborted or ())  # read_uncommitted: only control batches go
    for decoded in iter_batches(chunk.records):
        h = decoded.header
        if not committed.keep(decoded) or h.last_offset < lo or h.base_offset >= hi:
            continue
        kind = LOG_APPEND_TIME if h.is_log_append_time else CREATE_TIME
        for r in decoded.records:
            if lo <= r.offset < hi:
                keys.append(r.key)
                values.append(r.value)
                offsets.append(r.offset)
                stamps.append(r.timestamp)
                types.append(kind)
                if include_headers:
                    headers.append([{"key": k, "value": v} for k, v in r.headers])
    if not offsets:
        return None
    return rows_batch(topic, partition, keys, values, offsets, stamps, types, headers if include_headers else None)
