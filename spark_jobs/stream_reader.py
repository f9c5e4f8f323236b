"""Streaming reads (`spark.readStream.format("kraftlog")`).

Spark's checkpoint holds this source's offsets, one per partition, in the
JSON shape of Spark's Kafka source: {"topic": {"0": 42, "1": 17}}. Each
micro-batch reads [previous end, new end) of every partition, so a query
restarted from its checkpoint resumes exactly there. Partitions that appear
(a subscribed topic grown, a new topic matching the pattern) are read from
their earliest offset. `maxOffsetsPerTrigger` becomes Spark's ReadMaxRows
admission limit, which Trigger.AvailableNow honours too.

Only planning runs here on the driver side (initialOffset, latestOffset,
partitions, in one long-lived Python process); `read` runs in executors with
nothing but what the InputPartition and the pickled options carry. Nothing
depends on `commit` or `stop` being called.
"""
from __future__ import annotations

import logging
from typing import Iterator, Optional, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from kafka_protocol.errors import Errors
from client.cluster import Cluster
from client.errors import error_for_code

from .batch_reader import read_range
from .options import EARLIEST, LATEST, ReadOptions, TopicPartition
from .planning import from_offset_json, offset_ranges, rate_limit, to_offset_json
from .topic_offsets import list_offsets, open_cluster, resolve, subscribed_partitions

log = logging.getLogger(__name__)


class KraftlogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        # Planning state of the driver-side process; never used by read().
        self._cluster: Optional[Cluster] = None
        self._available_now_target: Optional[dict[TopicPartition, int]] = None
        # Checked once, so that a bad option or an unknown topic fails at start.
        self._partitions()

    def __getstate__(self) -> dict:
        return {"options": self.options, "_cluster": None, "_available_now_target": None}

    def _connected(self) -> Cluster:
        if self._cluster is None:
            self._cluster = open_cluster(self.options.bootstrap, self.options.security)
        return self._cluster

    def _partitions(self) -> list[TopicPartition]:
        cluster = self._connected()
        cluster.refresh(None)
        return subscribed_partitions(cluster, self.options.subscription)

    def initialOffset(self) -> dict:
        partitions = self._partitions()
        cluster = self._connected()
        earliest = list_offsets(cluster, {tp: EARLIEST for tp in partitions})
        latest = list_offsets(cluster, {tp: LATEST for tp in partitions}, self.options.isolation_level)
        return to_offset_json(resolve(cluster, self.options.starting, partitions, earliest=earliest,
                                      latest=latest, fail_on_data_loss=self.options.fail_on_data_loss))

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now_target = self._latest()

    def _latest(self) -> dict[TopicPartition, int]:
        partitions = self._partitions()
        return list_offsets(self._connected(), {tp: LATEST for tp in partitions}, self.options.isolation_level)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        starts = from_offset_json(start)
        latest = self._available_now_target if self._available_now_target is not None else self._latest()
        for tp, offset in starts.items():
            if tp in latest and latest[tp] < offset:
                self._lost(tp, offset, latest[tp])
                latest[tp] = offset
        new = [tp for tp in latest if tp not in starts]
        if new:
            log.info("new partitions, read from their earliest offsets: %s", new)
            starts_for_limit = {**starts, **list_offsets(self._connected(), {tp: EARLIEST for tp in new})}
        else:
            starts_for_limit = starts
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(starts_for_limit, latest, limit.max_rows)
        # A partition gone from the cluster keeps its offset, so a restart knows it was read.
        return to_offset_json({**starts, **latest})

    def _lost(self, tp: TopicPartition, offset: int, latest: int) -> None:
        detail = (f"{tp[0]}-{tp[1]}: the checkpoint is at offset {offset} but the partition now ends at {latest} "
                  "(records were lost, or the topic was recreated)")
        if self.options.fail_on_data_loss:
            raise error_for_code(Errors.OFFSET_OUT_OF_RANGE, f"{detail}; set option 'failOnDataLoss' to false to go on")
        log.warning("%s; going on from the checkpoint's offset", detail)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        ranges = offset_ranges(from_offset_json(start), from_offset_json(end), self.options.min_partitions)
        return [InputPartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_range(self.options, partition.value)

    def commit(self, end: dict) -> None:
        """Offsets live in Spark's checkpoint; nothing to commit to the cluster."""

    def stop(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
