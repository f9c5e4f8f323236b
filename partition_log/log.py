"""A partition's log: a directory of segments with Kafka's layout and rules.

    append_as_leader   validate header + CRC, stamp offsets and leader epoch, write bytes
    append_as_follower validate, keep the leader's offsets, write bytes
    read               whole batches, as file bytes, below an optional high watermark
    truncate_to        follower divergence; truncate_fully_and_start_at
    delete_old_segments  retention by time and size

Transactions (section 18 of docs/architecture.md): each segment's `.txnindex`
lists the aborted transactions whose ABORT marker it holds
(`append_aborted_txn`, `collect_aborted_txns`); producer state snapshots
(`<offset>.snapshot`, producer_snapshot.py) are written by the broker through
`snapshot_listener` and follow the log here: truncation drops those above the
new end, segment deletion those below the log start (but the newest of them).
The log itself never interprets producer state, except to rebuild a damaged
or stale `.txnindex` from the markers in its batches (`rebuild_txn_indexes`).
"""
from __future__ import annotations

import bisect
import logging
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

from kafka_protocol import batch as b
from kafka_protocol.control_records import decode_txn_marker
from kafka_protocol.errors import (InvalidRecordError, KafkaStorageError, MessageTooLargeError,
                                   OffsetOutOfRangeError, UnsupportedForMessageFormatError)
from kafka_protocol.records import decode_batch
from kafka_protocol.wording import counted

from . import clock
from . import producer_snapshot as snapshots
from .checkpoint import fsync_dir
from .config import LogConfig
from .index import IndexCorruptError
from .leader_epoch import LeaderEpochCache
from .log_dir_failure import LogDirFailure, guarded
from .segment import BatchPosition, LogSegment
from .segment_handles import SegmentHandles
from .txn_index import AbortedTxn

log = logging.getLogger(__name__)

_SEGMENT_FILE = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex)(\.(?:swap|cleaned|deleted))?$")
INT32_MAX = 2**31 - 1

Clock = Callable[[], int]


def wall_clock_ms() -> int:
    return clock.wall_ms()  # the one wall clock, skewable by the chaos testbed


def parse_partition_dir(name: str) -> tuple[str, int]:
    """`my-topic-3` -> ("my-topic", 3)."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f"{name!r} is not a <topic>-<partition> directory name")
    return topic, int(partition)


@dataclass(frozen=True, slots=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    batches: int
    size: int


@dataclass(frozen=True, slots=True)
class LoadReport:
    """What opening the log found and did; recovery never drops data silently."""

    recovered_segments: int = 0
    truncated_bytes: int = 0
    deleted_segments_after_corruption: int = 0
    rebuilt_indexes: int = 0
    completed_swaps: int = 0
    reasons: list[str] = field(default_factory=list)
    new_log: bool = False  # no segment was found: the log starts empty
    rebuilt_txn_indexes: bool = False  # the .txnindex files were rebuilt from the log's markers


# Every new log's report, shared (a broker creating 100,000 replicas keeps one,
# not 100,000); a report is read, never changed.
NEW_LOG = LoadReport(new_log=True)


class Log:
    def __init__(self, directory: Path, config: LogConfig, *, recovery_point: int = 0,
                 log_start_offset: int = 0, clean_shutdown: bool = False, clock: Clock = wall_clock_ms,
                 handles: SegmentHandles | None = None, high_watermark: int = 0,
                 dir_failure: LogDirFailure | None = None) -> None:
        """`handles`: the bound on open segment files shared with other logs (LogManager's);
        `high_watermark`: a checkpointed one, capped into [log start, log end];
        `dir_failure`: shared by the logs of one log directory (log_dir_failure.py)."""
        self.directory = directory if isinstance(directory, Path) else Path(directory)  # the caller's, not a copy
        self.dir_failure = dir_failure or LogDirFailure(self.directory)
        self.handles = handles
        self.topic, self.partition = parse_partition_dir(self.directory.name)
        self.config = config
        self.clock = clock
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self.high_watermark = 0
        # Kept up to date by the broker (the partition's first offset of an
        # open or not yet stable transaction; None: no transaction is open).
        # The cleaner never cleans at or past it.
        self.first_unstable_offset: Optional[int] = None
        # Called with the new segment's base offset right after a roll, and
        # with the log end offset at close: the broker writes its producer
        # state snapshot there (snapshots.write_snapshot).
        self.snapshot_listener: Optional[Callable[[int], None]] = None
        # True when a .txnindex failed its check at load (or recovery cut a
        # segment holding markers): the indexes were rebuilt from the log's
        # markers before the log was served (rebuild_txn_indexes); the broker
        # needs to do nothing but may log it.
        self.txn_index_damaged = False
        self._unflushed_batches = 0
        self._last_flush_ms = clock()
        self._new_files = False  # a segment was created since the last flush: its folder's entry needs an fsync
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if not os.access(self.directory, os.R_OK | os.W_OK | os.X_OK):
                raise PermissionError(13, "permission denied")
        except OSError as exc:
            raise KafkaStorageError(f"log directory {self.directory} is unusable: {exc.strerror or exc}") from exc
        self.leader_epochs = LeaderEpochCache(self.directory)
        self.load_report = self._load(clean_shutdown)
        self.update_high_watermark(high_watermark)

    # -- properties ----------------------------------------------------------
    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    # -- loading and recovery ------------------------------------------------
    def _new_segment(self, base_offset: int, suffix: str = "") -> LogSegment:
        return LogSegment(self.directory, base_offset, index_interval_bytes=self.config.index_interval_bytes,
                          max_index_bytes=self.config.segment_index_bytes, created_ms=self.clock(), suffix=suffix,
                          handles=self.handles)

    def _create_segment(self, base_offset: int) -> LogSegment:
        """A new, empty segment whose .log file exists at once, as in Kafka
        (its descriptor is opened by the first append or read)."""
        seg = self._new_segment(base_offset)
        seg.create()
        self._new_files = True
        return seg

    def _set_segments(self, segments: list[LogSegment]) -> None:
        self.segments = sorted(segments, key=lambda s: s.base_offset)
        self._bases = [s.base_offset for s in self.segments]

    def _load(self, clean_shutdown: bool) -> LoadReport:
        names = sorted(os.listdir(self.directory))
        logs, swaps, indexes = [], [], set()
        txn_indexes: set[int] = set()
        for name in names:
            m = _SEGMENT_FILE.match(name)
            if not m:
                continue
            base, kind, suffix = int(m.group(1)), m.group(2), m.group(3)
            if suffix in (".cleaned", ".deleted"):
                # An unfinished clean (.cleaned) was never swapped in; a .deleted
                # file was already replaced. Both are garbage.
                (self.directory / name).unlink(missing_ok=True)
            elif suffix == ".swap":
                if kind == "log":
                    swaps.append(base)
            elif kind == "log":
                logs.append(base)
            else:
                indexes.add((base, kind))
                if kind == "txnindex":
                    txn_indexes.add(base)
        for base in swaps:
            self._complete_swap(base, logs)
        for base, kind in indexes:
            if base not in logs:
                (self.directory / f"{base:020d}.{kind}").unlink(missing_ok=True)  # orphan index
        self._set_segments([self._new_segment(base) for base in sorted(set(logs))])
        if self.segments:
            self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
            damaged = self._check_txn_indexes(txn_indexes | set(swaps))
            report = self._recover(len(swaps), clean_shutdown)
            if damaged or report.rebuilt_txn_indexes:
                self.txn_index_damaged = True
        else:
            # A new log: one empty segment, nothing to recover, read or fsync
            # (a broker creating thousands of partitions pays no disk flush each).
            self._set_segments([self._create_segment(self.log_start_offset)])
            report = NEW_LOG
        self._log_end_offset = self.active_segment.base_offset if report.new_log else \
            max(self.active_segment.load_tail(), self.active_segment.base_offset)
        self.recovery_point = min(max(self.recovery_point, 0), self._log_end_offset)
        self.leader_epochs.truncate_from_end(self._log_end_offset)
        self.leader_epochs.truncate_from_start(self.log_start_offset)
        self.leader_epochs.sync()  # epochs recovered from batches are as durable as the batches
        # Snapshots past the end describe batches that are gone (a torn tail).
        self.delete_snapshots_above(self._log_end_offset)
        if self.txn_index_damaged:
            self.rebuild_txn_indexes()
        if report.truncated_bytes:
            log.warning("%s-%d: recovery truncated %d bytes: %s", self.topic, self.partition,
                        report.truncated_bytes, "; ".join(report.reasons))
        return report

    def _complete_swap(self, base: int, logs: list[int]) -> None:
        """A cleaner crashed after its output became the truth (.swap) but before
        the rename: finish it by replacing the segments the swap covers."""
        swap = self._new_segment(base, suffix=".swap")
        result = swap.recover(INT32_MAX)
        self.txn_index_damaged |= result.txn_index_damaged
        for old in [x for x in logs if base <= x < result.next_offset]:
            self._new_segment(old).delete()
            logs.remove(old)
        swap.change_suffix("")
        logs.append(base)

    def _check_txn_indexes(self, bases: set[int]) -> bool:
        """Check the .txnindex files found at load (only those: most segments
        have none); a damaged one is emptied for the rebuild. Any damaged?"""
        damaged = False
        for seg in self.segments:
            if seg.base_offset not in bases:
                continue
            try:
                seg.txn_index.sanity_check()
            except IndexCorruptError as exc:
                log.warning("%s-%d: %s; rebuilding the transaction indexes from the log",
                            self.topic, self.partition, exc)
                seg.txn_index.reset()
                damaged = True
        return damaged

    def _recover(self, completed_swaps: int, clean_shutdown: bool) -> LoadReport:
        reasons: list[str] = []
        recovered = truncated = deleted = rebuilt = 0
        saw_marker = False

        def on_batch(h: b.BatchHeader) -> None:
            nonlocal saw_marker
            saw_marker |= h.is_control and h.is_transactional
            self._recover_epoch(h)
        i = 0
        while i < len(self.segments):
            seg = self.segments[i]
            next_base = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else None
            if seg.size == 0:
                seg.start_empty()  # nothing to recover; no descriptor, no fsync
                i += 1
                continue
            unflushed = not clean_shutdown and (next_base is None or next_base > self.recovery_point)
            needs_rebuild = unflushed or not seg.offset_index.path.exists() or not seg.time_index.path.exists()
            if not needs_rebuild:
                try:
                    limit = next_base if next_base is not None else seg.load_tail()
                    seg.offset_index.sanity_check(limit, seg.size)
                    seg.time_index.sanity_check(limit)
                except IndexCorruptError as exc:
                    reasons.append(str(exc))
                    needs_rebuild = True
            if not needs_rebuild and next_base is None:
                # A clean shutdown recovers nothing: the active segment's tail
                # is checked (what load_tail reads anyway, one index interval),
                # so a file cut or damaged there while the node was down
                # recovers as after a crash instead of counting offsets it lacks.
                damage = seg.tail_damage()
                if damage is not None:
                    reasons.append(f"{seg.log_path.name}: {damage}")
                    needs_rebuild = True
            if needs_rebuild:
                result = seg.recover(max(self.config.max_message_bytes + b.LOG_OVERHEAD, 2 * 1024 * 1024),
                                     on_batch)
                self.txn_index_damaged |= result.txn_index_damaged
                recovered += 1
                if not unflushed:
                    rebuilt += 1
                if result.truncated_bytes:
                    truncated += result.truncated_bytes
                    reasons.append(f"{seg.log_path.name}: {result.reason}")
                    # Everything after a corrupt batch is unreachable by offset.
                    for later in self.segments[i + 1:]:
                        truncated += later.size
                        later.delete()
                        deleted += 1
                    self._set_segments(self.segments[:i + 1])
                    break
                if i + 1 < len(self.segments):
                    seg.on_become_inactive()
                seg.flush()
            i += 1
        # A recovered segment's markers may have been written after its
        # .txnindex last reached disk: its entries are rebuilt from them.
        return LoadReport(recovered, truncated, deleted, rebuilt, completed_swaps, reasons,
                          rebuilt_txn_indexes=saw_marker)

    def _recover_epoch(self, h: b.BatchHeader) -> None:
        """As Kafka, a recovered batch of a newer epoch than the cache knows
        puts that epoch back (its checkpoint entry may not have reached disk)."""
        if h.partition_leader_epoch > self.leader_epochs.latest_epoch:
            self.leader_epochs.assign(h.partition_leader_epoch, h.base_offset, sync=False)

    # -- append --------------------------------------------------------------
    def start_leader_epoch(self, epoch: int) -> None:
        """A new leader: `epoch` starts at the log end. Its fsync waits for the
        next flush: no batch of it exists yet (leader_epoch.py)."""
        self.leader_epochs.assign(epoch, self._log_end_offset, sync=False)

    def validate_as_leader(self, data: bytes | bytearray | memoryview) -> list[tuple[int, b.BatchHeader]]:
        """append_as_leader's checks (header, CRC, dense offsets, size) alone, for
        a caller that decides on the batches before they are written
        (idempotent producers); pass the result to append_as_leader."""
        return self._validate_from_producer(data)

    def _validate_from_producer(self, data: bytes | bytearray | memoryview) -> list[tuple[int, b.BatchHeader]]:
        try:
            return self._validate(data, require_dense=True)
        except UnsupportedForMessageFormatError as exc:
            # Kafka's Produce (v3 and later) takes magic 2 only, and names an
            # older batch INVALID_RECORD (an unknown magic is CORRUPT_MESSAGE).
            raise InvalidRecordError(*exc.args) from None

    @guarded
    def append_as_leader(self, data: bytes | bytearray | memoryview, leader_epoch: int, *,
                         validated: list[tuple[int, b.BatchHeader]] | None = None) -> AppendInfo:
        """Append producer batches: checks, then offsets and the leader epoch are
        stamped into a copy of each 61-byte header (both fields lie outside the
        CRC); the record bytes are written as they came, never copied.
        `validated`: validate_as_leader's answer for these very bytes."""
        view = memoryview(data)
        headers = self._validate_from_producer(view) if validated is None else validated
        offset = self._log_end_offset
        chunks: list[bytes | bytearray | memoryview] = []
        stamped = []
        for pos, h in headers:
            head = bytearray(view[pos:pos + b.HEADER_SIZE])
            b.stamp(head, 0, offset, leader_epoch)
            chunks += (head, view[pos + b.HEADER_SIZE:pos + h.size])
            stamped.append((pos, b.parse_header(head)))
            offset += h.last_offset_delta + 1
        self.leader_epochs.assign(leader_epoch, self._log_end_offset)
        return self._append(chunks, len(view), stamped)

    @guarded
    def append_as_follower(self, data: bytes | bytearray | memoryview) -> AppendInfo:
        """Append batches fetched from the leader, keeping their offsets and epochs."""
        headers = self._validate(data, require_dense=False)
        expected = self._log_end_offset
        for pos, h in headers:
            if h.base_offset < expected:
                raise InvalidRecordError(
                    f"batch at offset {h.base_offset} overlaps the log (end offset {expected}): truncate first")
            expected = h.next_offset
            self.leader_epochs.assign(h.partition_leader_epoch, h.base_offset)
        return self._append([data], len(data), headers)

    def _validate(self, data: bytes | bytearray | memoryview, *, require_dense: bool) -> list[tuple[int, b.BatchHeader]]:
        headers = list(b.iter_headers(data, validate=True, require_dense=require_dense))
        if not headers:
            raise InvalidRecordError("no record batches to append")
        for pos, h in headers:
            if h.size > self.config.max_message_bytes:
                raise MessageTooLargeError(
                    f"batch of {h.size} bytes exceeds max.message.bytes={self.config.max_message_bytes}")
        return headers

    def _append(self, chunks: list[bytes | bytearray | memoryview], size: int,
                headers: list[tuple[int, b.BatchHeader]]) -> AppendInfo:
        first, last = headers[0][1], headers[-1][1]
        max_ts = max(h.max_timestamp for _, h in headers)
        self._maybe_roll(size, last.last_offset, max_ts)
        self.active_segment.append(chunks, size, [BatchPosition(p, h) for p, h in headers])
        self._log_end_offset = last.next_offset
        self._unflushed_batches += len(headers)
        self._maybe_flush()
        return AppendInfo(first.base_offset, last.last_offset, max_ts, len(headers), size)

    def _maybe_roll(self, size: int, last_offset: int, max_timestamp: int) -> None:
        seg = self.active_segment
        if seg.size == 0:
            return
        # As Kafka: time since the segment's first batch is measured with the new
        # batches' timestamps when both are known, else with the clock.
        first = seg.first_batch_timestamp
        if first is not None and max_timestamp >= 0:
            waited = max_timestamp - first
        else:
            waited = self.clock() - seg.created_ms
        if (seg.size + size > self.config.segment_bytes
                or waited > self.config.segment_ms
                or seg.offset_index.is_full or seg.time_index.is_full
                or last_offset - seg.base_offset > INT32_MAX):
            self.roll()

    @guarded
    def roll(self) -> LogSegment:
        """Seal the active segment and start a new one at the log end offset."""
        if self.active_segment.size == 0:
            return self.active_segment
        old = self.active_segment
        old.on_become_inactive()
        self._set_segments(self.segments + [self._create_segment(self._log_end_offset)])
        if self.snapshot_listener is not None:
            self.snapshot_listener(self._log_end_offset)
        return self.active_segment

    # -- flushing ------------------------------------------------------------
    def _maybe_flush(self) -> None:
        if self._unflushed_batches >= self.config.flush_messages:
            self.flush()
        else:
            self.flush_if_due(self.clock())

    def flush_if_due(self, now: int) -> None:
        """flush.ms: called on append and by the owner's periodic scheduler."""
        if self._unflushed_batches and now - self._last_flush_ms >= self.config.flush_ms:
            self.flush()

    @guarded
    def flush(self) -> None:
        """fsync every segment holding data past the recovery point (and
        first the leader epochs its batches carry). Nothing to do when
        everything is flushed: an idle log costs no fsync, at shutdown neither."""
        if self.recovery_point >= self._log_end_offset:
            return
        self.leader_epochs.sync()
        for seg in self.segments:
            next_base = self._next_base(seg)
            if next_base is None or next_base > self.recovery_point:
                seg.flush()
        if self._new_files:
            # A new segment's data is durable only with its name: after a power
            # loss an fsynced file whose folder entry was not is gone.
            fsync_dir(self.directory)
            self._new_files = False
        self.recovery_point = self._log_end_offset
        self._unflushed_batches = 0
        self._last_flush_ms = self.clock()

    def _next_base(self, seg: LogSegment) -> int | None:
        i = bisect.bisect_left(self._bases, seg.base_offset)
        return self._bases[i + 1] if i + 1 < len(self._bases) else None

    # -- read ----------------------------------------------------------------
    def read(self, offset: int, max_bytes: int, *, max_offset: int | None = None,
             min_one_batch: bool = True) -> bytes | memoryview:
        """Batch bytes from the batch holding `offset`; empty at the end of the log.
        Bytes-like: a view when the segment read was trimmed (LogSegment.read).

        `max_offset` (the high watermark for consumers) is exclusive: no batch
        starting at or past it is returned.
        """
        if offset < self.log_start_offset or offset > self._log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{self.log_start_offset}, {self._log_end_offset}] "
                f"of {self.topic}-{self.partition}")
        if offset == self._log_end_offset:
            if self.dir_failure.reason is not None:  # inline, not @guarded: every caught-up fetch comes here
                raise KafkaStorageError(self.dir_failure.reason)
            return b""  # a caught-up reader (every idle follower, each fetch): no index, no file
        return self._read(offset, max_bytes, max_offset, min_one_batch)

    @guarded
    def _read(self, offset: int, max_bytes: int, max_offset: int | None, min_one_batch: bool) -> bytes | memoryview:
        i = max(0, bisect.bisect_right(self._bases, offset) - 1)
        for seg in self.segments[i:]:
            found = seg.read(offset, max_bytes, max_offset, min_one_batch)
            if found is not None:
                return found[1]
            next_base = self._next_base(seg)
            if max_offset is not None and next_base is not None and next_base >= max_offset:
                break
        return b""

    def iter_reads(self, offset: int, max_bytes: int, *, max_offset: int | None = None) -> Iterator[bytes | memoryview]:
        """Successive reads from `offset` to the log end (or `max_offset`), each
        starting where the last one's final batch ended. The first chunk may
        begin before `offset`: readers skip records below it, as Kafka's do."""
        end = self._log_end_offset if max_offset is None else min(max_offset, self._log_end_offset)
        while offset < end:
            data = self.read(offset, max_bytes, max_offset=max_offset)
            if not data:
                return
            yield data
            offset = b.end_offset(data)

    def iter_batch_headers(self, start_offset: int = 0) -> Iterator[b.BatchHeader]:
        """The header of every batch ending at or after `start_offset`, read
        from the segment files (61 bytes a batch; records are not read)."""
        i = max(0, bisect.bisect_right(self._bases, start_offset) - 1)
        for seg in self.segments[i:]:
            for bp in seg.iter_batch_positions():
                if bp.header.next_offset > start_offset:
                    yield bp.header

    def find_offset_by_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= `timestamp`."""
        for seg in self.segments:
            if seg.max_timestamp_and_offset[0] < timestamp:
                continue
            entry = seg.time_index.lookup(timestamp)
            start = seg.offset_index.lookup(entry[1]) if entry else None
            for bp in seg.iter_batch_positions(start[1] if start else 0):
                if bp.header.max_timestamp < timestamp:
                    continue
                for record in decode_batch(seg.read_batch(bp)).records:
                    if record.timestamp >= timestamp and record.offset >= self.log_start_offset:
                        return record.offset, record.timestamp
        return None

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: (epoch, end offset) for a follower's divergence check."""
        return self.leader_epochs.end_offset_for(epoch, self._log_end_offset)

    # -- high watermark ------------------------------------------------------
    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark, clamped into [log start, log end]."""
        self.high_watermark = min(max(offset, self.log_start_offset), self._log_end_offset)
        return self.high_watermark

    def maybe_increment_high_watermark(self, offset: int) -> bool:
        if offset > self.high_watermark:
            self.update_high_watermark(offset)
            return True
        return False

    # -- truncation ----------------------------------------------------------
    @guarded
    def truncate_to(self, offset: int) -> int:
        """Drop every batch at or after the one holding `offset` (follower
        divergence). Returns the new log end offset."""
        if offset >= self._log_end_offset:
            # Nothing to drop, but the epoch cache may hold an entry at the log
            # end: this broker led briefly and recorded its epoch's start without
            # appending. Kept, the follower would find the same divergence on
            # every fetch and truncate here forever (Kafka truncates it too).
            self.leader_epochs.truncate_from_end(self._log_end_offset)
            return self._log_end_offset
        if offset <= self.log_start_offset:
            self.truncate_fully_and_start_at(self.log_start_offset)
            return self._log_end_offset
        keep = [s for s in self.segments if s.base_offset < offset]
        for seg in self.segments[len(keep):]:
            seg.delete()
        self._set_segments(keep)
        self.active_segment.truncate_to(offset)
        self._log_end_offset = max(self.active_segment.load_tail(), self.active_segment.base_offset)
        self._after_truncation()
        return self._log_end_offset

    @guarded
    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log and start it at `offset` (a follower far behind the
        leader's log start): every segment, index and snapshot goes."""
        for seg in self.segments:
            seg.delete()
        self.log_start_offset = offset
        self._set_segments([self._create_segment(offset)])
        self._log_end_offset = offset
        self.leader_epochs.clear()
        self.delete_snapshots_above(-1)
        self._after_truncation()

    def _after_truncation(self) -> None:
        self.leader_epochs.truncate_from_end(self._log_end_offset)
        self.recovery_point = min(self.recovery_point, self._log_end_offset)
        self.high_watermark = min(self.high_watermark, self._log_end_offset)
        self.delete_snapshots_above(self._log_end_offset)
        if self.first_unstable_offset is not None and self.first_unstable_offset > self._log_end_offset:
            self.first_unstable_offset = None  # the broker sets it again from its reloaded state

    # -- retention -----------------------------------------------------------
    @guarded
    def delete_old_segments(self) -> int:
        """Retention: delete whole segments past retention.ms or retention.bytes,
        never the active segment and never data above the high watermark.
        Returns the number of segments deleted."""
        if not self.config.delete:
            return self._delete_below_start()
        now = self.clock()
        budget = self.size_in_bytes - self.config.retention_bytes
        reasons: list[str] = []
        for seg in self.segments[:-1]:
            next_base = self._next_base(seg)
            if next_base is None or next_base > self.high_watermark:
                break
            too_old = 0 <= self.config.retention_ms < now - seg.largest_timestamp
            too_big = self.config.retention_bytes >= 0 and budget - seg.size >= 0
            below_start = next_base <= self.log_start_offset
            if not (too_old or too_big or below_start):
                break
            budget -= seg.size
            # Kafka checks time, then size, then the log start offset: the first breach is the reason.
            reasons.append("time" if too_old else "size" if too_big else "start")
        self._log_deletion(reasons)
        return self._delete_leading(len(reasons))

    def _log_deletion(self, reasons: list[str]) -> None:
        """One INFO line per retention round that deletes, with what Kafka's UnifiedLog logs for each
        breach: an operator reading the broker's log can tell which data went and why."""
        if not reasons:
            return
        doomed = self.segments[:len(reasons)]
        end = self.segments[len(reasons)].base_offset  # the first segment kept: never the last one doomed
        why = {
            "time": f"log retention time {self.config.retention_ms}ms breach "
                    f"based on the largest record timestamp in the segment",
            "size": f"log retention size {self.config.retention_bytes} bytes breach",
            "start": f"log start offset {self.log_start_offset} breach",
        }
        kinds = list(dict.fromkeys(reasons))
        causes = why[kinds[0]] if len(kinds) == 1 else ", ".join(
            f"{why[kind]} ({counted(reasons.count(kind), 'segment')})" for kind in kinds)
        log.info("%s-%d: deleting %s (offsets %d to %d) due to %s: %s. Log start offset will be %d",
                 self.topic, self.partition, counted(len(doomed), "segment"), doomed[0].base_offset, end - 1,
                 causes, ", ".join(f"LogSegment(baseOffset={s.base_offset}, size={s.size}, "
                                   f"largestRecordTimestamp={s.largest_timestamp})" for s in doomed),
                 max(self.log_start_offset, end))

    def _delete_below_start(self) -> int:
        reasons: list[str] = []
        for seg in self.segments[:-1]:
            next_base = self._next_base(seg)
            if next_base is None or next_base > self.log_start_offset:
                break
            reasons.append("start")
        self._log_deletion(reasons)
        return self._delete_leading(len(reasons))

    def _delete_leading(self, count: int) -> int:
        if count == 0:
            return 0
        doomed, kept = self.segments[:count], self.segments[count:]
        self._set_segments(kept)
        self.log_start_offset = max(self.log_start_offset, kept[0].base_offset)
        self.leader_epochs.truncate_from_start(self.log_start_offset)
        for seg in doomed:
            seg.delete()
        self._delete_snapshots_below(self.log_start_offset)
        return count

    @guarded
    def advance_log_start_offset(self, offset: int) -> None:
        """DeleteRecords: records below `offset` become unreadable at once;
        their segments go at the next retention pass."""
        if offset > self.high_watermark:
            raise OffsetOutOfRangeError(f"cannot delete records above the high watermark {self.high_watermark}")
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self.leader_epochs.truncate_from_start(offset)

    # -- segment swap (used by the cleaner) ----------------------------------
    @guarded
    def replace_segments(self, cleaned: LogSegment, old: list[LogSegment]) -> None:
        """Swap `cleaned` in for `old` so that a crash at any point leaves either
        the old segments or the cleaned one (completed by `_complete_swap`)."""
        cleaned.flush()
        cleaned.change_suffix(".swap")  # from here on, recovery completes the swap
        for seg in old:
            seg.change_suffix(".deleted")
        cleaned.change_suffix("")
        for seg in old:
            seg.delete()
        remaining = [s for s in self.segments if s not in old]
        self._set_segments(remaining + [cleaned])

    # -- transactions: aborted-transaction indexes -----------------------------
    @guarded
    def append_aborted_txn(self, entry: AbortedTxn) -> None:
        """Index an aborted transaction whose ABORT marker was just appended
        (so it lies in the active segment). Entries come in marker order."""
        self.active_segment.txn_index.append(entry)

    def collect_aborted_txns(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Kafka's collectAbortedTransactions: every aborted transaction with
        last_offset >= fetch_offset and first_offset < upper_bound. The search
        starts at the segment holding `fetch_offset` and goes on past
        `upper_bound` (a marker may come segments later than its data) until an
        entry's last stable offset shows no later abort can overlap."""
        i = max(0, bisect.bisect_right(self._bases, fetch_offset) - 1)
        found: list[AbortedTxn] = []
        for seg in self.segments[i:]:
            entries, complete = seg.txn_index.search(fetch_offset, upper_bound)
            found += entries
            if complete:
                break
        return found

    def rebuild_txn_indexes(self) -> int:
        """Rewrite every segment's .txnindex from the log's own batches (Kafka
        rebuilds them by replaying producer state): transactional data batches
        open a producer's transaction, an ABORT marker closes it with an entry
        whose last stable offset is the first offset of the oldest other open
        transaction (else the marker's offset + 1). Open transactions older than
        the first segment come from the newest readable snapshot at or below it;
        a marker with no known start uses its own offset, as Kafka does.
        Called at load when an index was damaged; returns the entries written."""
        open_txns = self._open_txns_before(self.segments[0].base_offset)
        written = 0
        for seg in self.segments:
            seg.txn_index.reset()
            for bp in seg.iter_batch_positions():
                h = bp.header
                if not h.is_transactional:
                    continue
                if not h.is_control:
                    open_txns.setdefault(h.producer_id, h.base_offset)
                    continue
                marker = decode_txn_marker(seg.read_batch(bp))
                if marker is None:
                    continue
                first = open_txns.pop(h.producer_id, h.base_offset)
                if not marker.committed:
                    lso = min(open_txns.values(), default=h.base_offset + 1)
                    seg.txn_index.append(AbortedTxn(h.producer_id, first, h.base_offset, lso))
                    written += 1
            seg.txn_index.flush()
        return written

    def _open_txns_before(self, offset: int) -> dict[int, int]:
        for at in reversed([o for o in snapshots.snapshot_offsets(self.directory) if o <= offset]):
            try:
                entries = snapshots.read_snapshot(snapshots.snapshot_path(self.directory, at))
            except snapshots.CorruptSnapshotError:
                continue  # the broker deletes it when it loads its state
            return {e.producer_id: e.current_txn_first_offset for e in entries if e.current_txn_first_offset >= 0}
        return {}

    # -- transactions: producer state snapshots -------------------------------
    def latest_snapshot_offset(self) -> Optional[int]:
        """The offset of the newest producer state snapshot file, if any."""
        offsets = snapshots.snapshot_offsets(self.directory)
        return offsets[-1] if offsets else None

    def load_latest_snapshot(self) -> Optional[tuple[int, list[snapshots.SnapshotEntry]]]:
        """(offset, producers) of the newest snapshot that reads back, for the
        broker's load (it then replays the batches from that offset). A
        damaged one is logged and deleted, and the next older one is tried;
        None when none is left (replay from the log start)."""
        for at in reversed(snapshots.snapshot_offsets(self.directory)):
            if at > self._log_end_offset:
                continue
            path = snapshots.snapshot_path(self.directory, at)
            try:
                return at, snapshots.read_snapshot(path)
            except snapshots.CorruptSnapshotError as exc:
                log.warning("%s-%d: %s; deleting it", self.topic, self.partition, exc)
                path.unlink(missing_ok=True)
        return None

    def delete_snapshots_above(self, offset: int) -> None:
        """Delete the snapshots of offsets above `offset` (truncation)."""
        for at in snapshots.snapshot_offsets(self.directory):
            if at > offset:
                snapshots.delete_snapshot(self.directory, at)

    def _delete_snapshots_below(self, log_start: int) -> None:
        """Segments below `log_start` are gone: so are their snapshots, but the
        newest at or below it, from which the producer state still loads."""
        below = [o for o in snapshots.snapshot_offsets(self.directory) if o <= log_start]
        for at in below[:-1]:
            snapshots.delete_snapshot(self.directory, at)

    # -- shutdown ------------------------------------------------------------
    def delete(self) -> None:
        """Topic deletion (or the replica moved away): close every segment and
        remove the partition directory with everything in it (segments,
        indexes, snapshots, checkpoints)."""
        for seg in self.segments:
            seg.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def close(self) -> None:
        """Flush and trim the active segment's indexes: the files are as Kafka
        leaves them after a clean shutdown. The broker's snapshot of the
        producer state at the log end is written first (snapshot_listener).
        In an offline directory only the descriptors close: nothing is written."""
        if self.dir_failure.offline:
            for seg in self.segments:
                seg.close()
            return
        if self.snapshot_listener is not None:
            self.snapshot_listener(self._log_end_offset)
        self.flush()
        self.active_segment.on_become_inactive()
        for seg in self.segments:
            seg.close()
