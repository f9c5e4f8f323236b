"""The LogManager's background work, as Kafka schedules it: time-based
flushes, retention, the offset checkpoints (recovery points and log starts,
and the high watermarks in replication-offset-checkpoint), the log cleaner,
and closing segment files left unused, each every its own interval (Kafka's
names and defaults). LogManager.close() writes every checkpoint once more
at a clean shutdown. The jobs run on the event
loop, between requests: partition logs are not shared with other threads.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from kafka_protocol.config_values import LONG_MAX, parse_bool, parse_int
from partition_log.log_manager import LogManager

log = logging.getLogger(__name__)

LOG_FLUSH_SCHEDULER_INTERVAL_MS = "log.flush.scheduler.interval.ms"
LOG_RETENTION_CHECK_INTERVAL_MS = "log.retention.check.interval.ms"
LOG_FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS = "log.flush.offset.checkpoint.interval.ms"
LOG_FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS = "log.flush.start.offset.checkpoint.interval.ms"
REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS = "replica.high.watermark.checkpoint.interval.ms"
LOG_CLEANER_BACKOFF_MS = "log.cleaner.backoff.ms"
LOG_CLEANER_ENABLE = "log.cleaner.enable"

# Kafka property name -> (field, default)
_INTERVALS: dict[str, tuple[str, int]] = {
    LOG_FLUSH_SCHEDULER_INTERVAL_MS: ("flush_scheduler_ms", LONG_MAX),
    LOG_RETENTION_CHECK_INTERVAL_MS: ("retention_check_ms", 300_000),
    LOG_FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS: ("recovery_point_checkpoint_ms", 60_000),
    LOG_FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS: ("log_start_checkpoint_ms", 60_000),
    REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS: ("high_watermark_checkpoint_ms", 5_000),
    LOG_CLEANER_BACKOFF_MS: ("cleaner_backoff_ms", 15_000),
}
KAFKA_PROPERTY_NAMES = frozenset({*_INTERVALS, LOG_CLEANER_ENABLE})
# An interval this long never comes: Kafka's Long.MAX_VALUE default means "off".
NEVER_MS = 2**31
# How often segment files unused for a while are closed (partition_log/segment_handles.py).
IDLE_SEGMENTS_CHECK_MS = 60_000


@dataclass(frozen=True)
class LogJobIntervals:
    flush_scheduler_ms: int = LONG_MAX
    retention_check_ms: int = 300_000
    recovery_point_checkpoint_ms: int = 60_000
    log_start_checkpoint_ms: int = 60_000
    high_watermark_checkpoint_ms: int = 5_000
    cleaner_backoff_ms: int = 15_000
    cleaner_enable: bool = True

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> "LogJobIntervals":
        values: dict[str, Any] = {}
        for key, (attr, _default) in _INTERVALS.items():
            if key in props:
                values[attr] = parse_int(key, props[key], 1)
        if LOG_CLEANER_ENABLE in props:
            values["cleaner_enable"] = parse_bool(LOG_CLEANER_ENABLE, props[LOG_CLEANER_ENABLE])
        return cls(**values)




class LogJobs:
    """One asyncio task per enabled job; `stop()` cancels them (a job in
    progress finishes first: it is synchronous)."""

    def __init__(self, logs: LogManager, intervals: LogJobIntervals) -> None:
        self.logs = logs
        self.intervals = intervals
        self._tasks: list[asyncio.Task[None]] = []

    def jobs(self) -> list[tuple[str, int, Callable[[], object]]]:
        iv = self.intervals
        jobs: list[tuple[str, int, Callable[[], object]]] = [
            ("flush", iv.flush_scheduler_ms, self.logs.flush_due),
            ("retention", iv.retention_check_ms, self._retention),
            ("checkpoint", min(iv.recovery_point_checkpoint_ms, iv.log_start_checkpoint_ms), self.logs.checkpoint),
            ("high-watermark-checkpoint", iv.high_watermark_checkpoint_ms, self.logs.checkpoint_high_watermarks),
            ("idle-segments", IDLE_SEGMENTS_CHECK_MS, self.logs.close_idle_segments),
        ]
        if iv.cleaner_enable:
            jobs.append(("cleaner", iv.cleaner_backoff_ms, self._clean))
        return [job for job in jobs if job[1] < NEVER_MS]

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._every(name, ms, job), name=f"log-{name}")
                       for name, ms, job in self.jobs()]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def _every(self, name: str, interval_ms: int, job: Callable[[], object]) -> None:
        while not self.logs.failure.offline:  # an offline directory is touched no more
            await asyncio.sleep(interval_ms / 1000)
            try:
                job()
            except Exception:  # noqa: BLE001 - a failed round is logged; the next one tries again
                log.exception("log %s job failed", name)

    def _retention(self) -> None:
        deleted = self.logs.run_retention()
        if deleted:  # each partition's log said at INFO which segments went and why
            log.debug("retention deleted %d segments", deleted)

    def _clean(self) -> None:
        for (topic, partition), stats in self.logs.run_cleaner():
            log.info("cleaned %s-%d: %s", topic, partition, stats)
