"""Batch reads (`spark.read.format("kraftlog")`): the offset ranges are fixed
on the driver when Spark builds the reader, so a bad option, an unknown
topic or an unreachable cluster fails the query at analysis with a message
naming the option; each task then fetches its range and yields Arrow."""
from __future__ import annotations

from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from .arrow_rows import chunk_to_arrow
from .options import EARLIEST, LATEST, ReadOptions, option_error
from .planning import OffsetRange, offset_ranges
from .range_fetch import FetchSettings, fetch_range
from .topic_offsets import list_offsets, open_cluster, resolve, subscribed_partitions


def fetch_settings(options: ReadOptions) -> FetchSettings:
    return FetchSettings(options.bootstrap, options.fail_on_data_loss, options.poll_timeout_ms,
                         options.fetch_max_bytes, options.security, options.isolation_level)


def read_range(options: ReadOptions, rng: OffsetRange) -> Iterator[pa.RecordBatch]:
    """A task's rows: its range fetched from the partition's leader, as Arrow."""
    for chunk in fetch_range(fetch_settings(options), rng):
        batch = chunk_to_arrow(chunk, rng.topic, rng.partition, options.include_headers)
        if batch is not None:
            yield batch


def plan_batch(options: ReadOptions) -> list[OffsetRange]:
    assert options.ending is not None
    with open_cluster(options.bootstrap, options.security) as cluster:
        partitions = subscribed_partitions(cluster, options.subscription)
        earliest = list_offsets(cluster, {tp: EARLIEST for tp in partitions})
        latest = list_offsets(cluster, {tp: LATEST for tp in partitions}, options.isolation_level)
        bounds = dict(earliest=earliest, latest=latest, fail_on_data_loss=options.fail_on_data_loss)
        starts = resolve(cluster, options.starting, partitions, **bounds)
        ends = resolve(cluster, options.ending, partitions, **bounds)
    for tp in partitions:
        if ends[tp] < starts[tp]:
            raise option_error(options.ending.option, f"{tp[0]}-{tp[1]} ends at {ends[tp]}, before its start "
                                                      f"{starts[tp]} ({options.starting.option})")
    return offset_ranges(starts, ends, options.min_partitions)


class KraftlogBatchReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self.ranges = plan_batch(options)

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(r) for r in self.ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_range(self.options, partition.value)
