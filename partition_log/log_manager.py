"""All partition logs of one log directory, as Kafka's LogManager keeps them.

Owns the directory-level files in Kafka's formats: `recovery-point-offset-checkpoint`,
`log-start-offset-checkpoint` and `replication-offset-checkpoint` (the high
watermarks; version 0, a count, then "topic partition offset" lines) and the
`.kafka_cleanshutdown` marker. A directory opened without that marker had a
crash: every log recovers from its recovery point. The marker holds, as
Kafka's since KIP-966, `{"version":0,"brokerEpoch":N}`: the broker epoch
this broker stopped with, which its next registration sends as
previous_broker_epoch (`previous_broker_epoch`; -1 when there was no
marker, or one that does not parse, such as the empty one older software
wrote), so the controller can tell a clean shutdown from an unclean one. A reopened log starts
from its checkpointed high watermark (capped at its log end), so a restarted
broker serves consumers up to it at once, as Kafka's does.
"""
from __future__ import annotations

import hashlib
import json
from array import array
import logging
from pathlib import Path
from typing import Callable

from kafka_protocol.errors import KafkaStorageError
from kafka_protocol.internal_topics import CLUSTER_METADATA_TOPIC

from . import cleaner
from .checkpoint import read_checkpoint, write_atomically, write_checkpoint
from .clock import monotonic_ms
from .config import LogConfig
from .log import Clock, Log, parse_partition_dir, wall_clock_ms
from .log_dir_failure import LogDirFailure
from .segment_handles import SegmentHandles

# The replicated metadata log shares a log directory with partitions (as in
# Kafka, metadata.log.dir defaults to the first of log.dirs) but is owned by
# the quorum, never opened as a partition here.
METADATA_LOG_DIR = f"{CLUSTER_METADATA_TOPIC}-0"

log = logging.getLogger(__name__)

RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_FILE = "log-start-offset-checkpoint"
HIGH_WATERMARK_FILE = "replication-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"

TopicPartition = tuple[str, int]


class LogManager:
    def __init__(self, log_dir: Path, default_config: LogConfig | None = None, *, clock: Clock = wall_clock_ms,
                 timer: Clock = monotonic_ms, max_open_segments: int | None = None) -> None:
        """`max_open_segments`: open .log files at most, over all logs (default: half the descriptor limit).
        `clock` is the wall clock (timestamps, retention, roll, flush.ms as Kafka's); `timer` the
        monotonic one, for how long a segment file sat unused."""
        self.log_dir = Path(log_dir)
        self.default_config = default_config or LogConfig()
        self.clock = clock
        self.handles = SegmentHandles(timer, max_open_segments)
        # KIP-112: one I/O error takes the whole directory offline (log_dir_failure.py).
        self.failure = LogDirFailure(self.log_dir)
        self._written: dict[str, bytes] = {}  # checkpoint file -> a digest of the logs and offsets it holds
        self.logs: dict[TopicPartition, Log] = {}
        self.first_dirty: dict[TopicPartition, int] = {}
        try:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KafkaStorageError(f"log.dirs entry {self.log_dir} is unusable: {exc.strerror}") from exc
        marker = self.log_dir / CLEAN_SHUTDOWN_FILE
        self.clean_shutdown = marker.exists()
        self.previous_broker_epoch = read_marker_epoch(marker) if self.clean_shutdown else -1
        recovery_points = self._read_offsets(RECOVERY_POINT_FILE)
        log_starts = self._read_offsets(LOG_START_FILE)
        high_watermarks = self._read_offsets(HIGH_WATERMARK_FILE)
        for entry in sorted(self.log_dir.iterdir()):
            if not entry.is_dir() or entry.name == METADATA_LOG_DIR:
                continue  # the metadata log belongs to the quorum, as in Kafka
            try:
                tp = parse_partition_dir(entry.name)
            except ValueError:
                log.warning("ignoring %s: not a <topic>-<partition> directory", entry)
                continue
            self.logs[tp] = Log(entry, self.default_config, recovery_point=recovery_points.get(tp, 0),
                                log_start_offset=log_starts.get(tp, 0), clean_shutdown=self.clean_shutdown,
                                clock=clock, handles=self.handles, high_watermark=high_watermarks.get(tp, 0),
                                dir_failure=self.failure)
        # The marker stays only while we are cleanly shut down.
        marker.unlink(missing_ok=True)

    def _read_offsets(self, name: str) -> dict[TopicPartition, int]:
        try:
            rows = read_checkpoint(self.log_dir / name, 0, 3)
        except ValueError as exc:
            # A damaged checkpoint only costs recovery time: recover from zero.
            log.warning("%s; recovering every log from its start", exc)
            return {}
        return {(t, int(p)): int(o) for t, p, o in rows or []}

    def get_or_create(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        tp = (topic, partition)
        if tp not in self.logs:
            self.failure.check()
            self.logs[tp] = Log(self.log_dir / f"{topic}-{partition}", config or self.default_config, clock=self.clock,
                                handles=self.handles, dir_failure=self.failure)
        elif config is not None:
            self.logs[tp].config = config
        return self.logs[tp]

    def delete_log(self, topic: str, partition: int) -> bool:
        """Topic deletion: forget the log and remove its directory with every
        segment, index and producer snapshot (Log.delete). False if unknown."""
        lg = self.logs.pop((topic, partition), None)
        self.first_dirty.pop((topic, partition), None)
        if lg is None:
            return False
        lg.delete()
        return True

    def checkpoint(self) -> None:
        """Persist recovery points and log start offsets (Kafka does it periodically)."""
        self._checkpoint(RECOVERY_POINT_FILE, lambda lg: lg.recovery_point)
        self._checkpoint(LOG_START_FILE, lambda lg: lg.log_start_offset)

    def checkpoint_high_watermarks(self) -> None:
        """Persist every log's high watermark (replica.high.watermark.checkpoint.interval.ms)."""
        self._checkpoint(HIGH_WATERMARK_FILE, lambda lg: lg.high_watermark)

    def _checkpoint(self, name: str, offset: Callable[[Log], int]) -> None:
        # An unchanged file is not written (nor fsynced) again; whether it
        # changed is asked of the logs and offsets as they are, before any
        # text is made: an idle broker with 10,000 partitions made and sorted
        # every line each time (the top item of bench/idle_fetch.py's profile).
        self.failure.check()  # an offline directory is written no more
        values = [offset(lg) for lg in self.logs.values()]
        digest = hash(tuple(self.logs)).to_bytes(8, "big", signed=True) + hashlib.blake2b(
            array("q", values).tobytes(), digest_size=16).digest()
        if self._written.get(name) == digest:
            return
        offsets = dict(zip(self.logs, values))
        try:
            write_checkpoint(self.log_dir / name, 0, [f"{t} {p} {offsets[(t, p)]}" for t, p in sorted(offsets)])
        except KafkaStorageError as exc:
            raise self.failure.fail(exc) from exc
        self._written[name] = digest

    def flush_due(self) -> None:
        now = self.clock()
        for lg in self.logs.values():
            lg.flush_if_due(now)

    def close_idle_segments(self) -> int:
        """Close the segment files unused for a while (segment_handles.IDLE_MS); how many."""
        return self.handles.close_idle()

    def run_retention(self) -> int:
        return sum(lg.delete_old_segments() for lg in self.logs.values())

    def run_cleaner(self) -> list[tuple[TopicPartition, cleaner.CleanStats]]:
        """Clean the compacted logs whose dirty ratio passed min.cleanable.dirty.ratio."""
        done = []
        for tp, lg in self.logs.items():
            if not lg.config.compact:
                continue
            if cleaner.dirty_ratio(lg, self.first_dirty.get(tp, 0)) < lg.config.min_cleanable_dirty_ratio:
                continue
            stats = cleaner.clean(lg)
            self.first_dirty[tp] = lg.active_segment.base_offset
            done.append((tp, stats))
        return done

    def close(self, broker_epoch: int = -1) -> None:
        """Flush, checkpoint and mark the clean shutdown with `broker_epoch`
        (-1, never registered in this run: the epoch the marker had when the
        directory was opened, whose registration still stands); in an offline
        directory only close the files (its next start recovers)."""
        for lg in self.logs.values():
            lg.close()
        if self.failure.offline:
            return
        self.checkpoint()
        self.checkpoint_high_watermarks()
        epoch = broker_epoch if broker_epoch >= 0 else self.previous_broker_epoch
        write_atomically(self.log_dir / CLEAN_SHUTDOWN_FILE, marker_bytes(epoch))


def marker_bytes(broker_epoch: int) -> bytes:
    return json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":")).encode()


def read_marker_epoch(marker: Path) -> int:
    """The broker epoch a clean-shutdown marker holds; -1 for an empty or unreadable one."""
    try:
        content = json.loads(marker.read_bytes() or b"null")
    except (OSError, ValueError):
        return -1
    epoch = content.get("brokerEpoch") if isinstance(content, dict) else None
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) and epoch >= 0 else -1
