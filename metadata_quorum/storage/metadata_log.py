"""The Raft log of the metadata quorum: a partition_log `Log` in `__cluster_metadata-0`.

Entries become v2 record batches, one batch for each run of consecutive
entries with the same (epoch, control), up to about 1 MiB: partitionLeaderEpoch
is the epoch; data records have a null key and the entry as value; control
entries are control batches: each new leader's leader-change record with
Kafka's LEADER_CHANGE key, a voter set (KIP-853) with KRAFT_VOTERS and
Kafka's VotersRecord value (the core's tag in front of it is not stored). Offsets are the core's, so batches go in through
`append_as_follower`.

Flushing is split so the fsyncs can run on a worker thread while the event
loop keeps appending (and rolling segments):

    begin_flush()     loop thread: the log end now, and duplicated file
                      descriptors of the segments holding unflushed data
    PendingFlush.run  worker thread: fsync those descriptors, nothing else
    complete_flush()  loop thread: the flushed end becomes the recovery point

The log is opened with recovery point 0, so every segment is validated on
start (as Kafka does for its metadata log); snapshots keep it short.
"""

from __future__ import annotations

import bisect
import logging
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Sequence

from metadata_quorum.raft import Entry
from kafka_protocol import batch as b
from partition_log.checkpoint import fsync_dir
from partition_log.config import LogConfig
from kafka_protocol.errors import KafkaError, KafkaStorageError, OffsetOutOfRangeError
from partition_log.log import INT32_MAX, Log, wall_clock_ms
from kafka_protocol.records import DecodedBatch, Record, decode_batch, encode_batch, iter_batches

from metadata_quorum.raft.voters import VOTERS_TAG

from .control import KRAFT_VOTERS, LEADER_CHANGE, control_key, control_type
from .errors import StorageError

log = logging.getLogger(__name__)

MAX_BATCH_BYTES = 1 << 20  # a run of entries longer than this is split into several batches
_READ_BYTES = 1 << 20
_LEADER_CHANGE_KEY = control_key(LEADER_CHANGE)
_KRAFT_VOTERS_KEY = control_key(KRAFT_VOTERS)


class PendingFlush:
    """One flush, prepared on the loop thread; `run` is the only part for a worker thread."""

    __slots__ = ("end_offset", "_fds", "_directory", "_bases", "_generation")

    def __init__(self, end_offset: int, fds: list[int], directory: Optional[Path],
                 bases: frozenset[int], generation: int) -> None:
        self.end_offset = end_offset
        self._fds = fds
        self._directory = directory  # set when segments were created since the last flush
        self._bases = bases
        self._generation = generation

    def run(self) -> None:
        """fsync the collected segment files (and the directory if it gained segments). Raises OSError."""
        fds, self._fds = self._fds, []
        try:
            for fd in fds:
                os.fsync(fd)
            if self._directory is not None:
                fsync_dir(self._directory)
        finally:
            for fd in fds:
                os.close(fd)

    def __del__(self) -> None:
        for fd in self._fds:  # never run: do not leak the duplicates
            os.close(fd)


class MetadataLog:
    def __init__(self, directory: Path, *, segment_bytes: int = 1 << 30) -> None:
        # Retention is the snapshots' business (delete_below), never time or size.
        config = LogConfig(segment_bytes=segment_bytes, retention_ms=-1, retention_bytes=-1,
                           max_message_bytes=INT32_MAX - b.LOG_OVERHEAD)
        try:
            self._log = Log(Path(directory), config)
        except KafkaStorageError as exc:
            if isinstance(exc, StorageError):
                raise
            raise StorageError(exc.args[0] if exc.args else f"{directory}: cannot open the log") from exc
        self.directory = self._log.directory
        self._generation = 0  # bumped by truncate_to/reset_to: a flush begun before is stale
        try:
            self._cut_at_hole()
            self._sync_all()  # recovery leaves a segment whose torn tail it cut unsynced
        except BaseException:
            self._log.close()
            raise

    # -- reading -------------------------------------------------------------
    @property
    def start_offset(self) -> int:
        return self._log.log_start_offset

    @property
    def end_offset(self) -> int:
        return self._log.log_end_offset

    def read_entries(self, start: int) -> list[Entry]:
        """Every entry from `start` to the log end."""
        if not self.start_offset <= start <= self.end_offset:
            raise OffsetOutOfRangeError(
                f"{self.directory}: offset {start} is outside [{self.start_offset}, {self.end_offset}]")
        entries: list[Entry] = []
        for batch in self._batches(start):
            entries += [self._entry(batch, r) for r in batch.records if r.offset >= start]
            if entries and batch.records[-1].offset != start + len(entries) - 1:
                raise StorageError(f"{self.directory}: offsets are missing before {batch.header.next_offset}")
        if start + len(entries) != self.end_offset:
            raise StorageError(f"{self.directory}: entries stop at offset {start + len(entries)}, "
                               f"the log ends at {self.end_offset}")
        return entries

    def epoch_of(self, offset: int) -> int:
        """The epoch of the entry at `offset` (its batch's partitionLeaderEpoch)."""
        return self._batch_at(offset).header.partition_leader_epoch

    def _batch_at(self, offset: int) -> DecodedBatch:
        with self._corruption_as_storage_error():
            return decode_batch(self._log.read(offset, 1))

    def _batches(self, start: int) -> Iterator[DecodedBatch]:
        with self._corruption_as_storage_error():
            for data in self._log.iter_reads(start, _READ_BYTES):
                yield from iter_batches(data)

    @contextmanager
    def _corruption_as_storage_error(self) -> Iterator[None]:
        try:
            yield
        except (KafkaStorageError, OffsetOutOfRangeError):
            raise
        except KafkaError as exc:  # damaged after recovery checked it: the disk lied
            raise StorageError(f"{self.directory}: {exc}") from exc

    def _entry(self, batch: DecodedBatch, record: Record) -> Entry:
        h = batch.header
        kind = control_type(record.key) if h.is_control else None
        if record.value is None or (h.is_control and kind not in (LEADER_CHANGE, KRAFT_VOTERS)):
            raise StorageError(f"{self.directory}: record at offset {record.offset} is not a quorum entry "
                               f"(key {record.key!r}, control={h.is_control})")
        if kind == KRAFT_VOTERS:
            return Entry(h.partition_leader_epoch, VOTERS_TAG + record.value, True)
        return Entry(h.partition_leader_epoch, record.value, h.is_control)

    # -- appending -----------------------------------------------------------
    def append(self, base_offset: int, entries: Sequence[Entry]) -> None:
        """Write (no fsync) `entries` at `base_offset`, which must be the log end."""
        if base_offset != self.end_offset:
            raise ValueError(f"{self.directory}: append at {base_offset}, but the log ends at {self.end_offset}")
        self._write(base_offset, entries)

    def _write(self, base_offset: int, entries: Sequence[Entry]) -> None:
        assert base_offset == self.end_offset, (base_offset, self.end_offset)
        now = wall_clock_ms()
        offset = base_offset
        for run in _runs(entries):
            first = run[0]
            if _is_voters(first):
                records = [Record(_KRAFT_VOTERS_KEY, entry.data[len(VOTERS_TAG):], now) for entry in run]
            else:
                key = _LEADER_CHANGE_KEY if first.control else None
                records = [Record(key, entry.data, now) for entry in run]
            self._log.append_as_follower(encode_batch(records, base_offset=offset, control=first.control,
                                                      partition_leader_epoch=first.epoch))
            offset += len(run)

    # -- flushing ------------------------------------------------------------
    def begin_flush(self) -> Optional[PendingFlush]:
        """What to fsync now; None when everything written is flushed."""
        plog = self._log
        end = plog.log_end_offset
        if end <= plog.recovery_point:
            return None
        segments = plog.segments
        bases = frozenset(s.base_offset for s in segments)
        first = max(0, bisect.bisect_right([s.base_offset for s in segments], plog.recovery_point) - 1)
        fds = [os.dup(seg.fd) for seg in segments[first:]]
        directory = self.directory if bases - self._synced_bases else None
        return PendingFlush(end, fds, directory, bases, self._generation)

    def complete_flush(self, pending: PendingFlush) -> None:
        """After `pending.run()` returned: its end is durable. A flush begun before a truncation is ignored."""
        if pending._generation != self._generation:
            return
        plog = self._log
        plog.recovery_point = max(plog.recovery_point, min(pending.end_offset, plog.log_end_offset))
        if pending._directory is not None:
            self._synced_bases = pending._bases

    def _sync_all(self) -> None:
        self._log.flush()
        fsync_dir(self.directory)
        self._synced_bases = frozenset(s.base_offset for s in self._log.segments)

    # -- truncation and deletion ---------------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Drop the entries at `offset` and above, durably."""
        if not self.start_offset <= offset <= self.end_offset:
            raise ValueError(f"{self.directory}: cannot truncate to {offset}, "
                             f"the log holds [{self.start_offset}, {self.end_offset})")
        if offset == self.end_offset:
            return
        # partition_log cuts whole batches: write back the part of the cut batch below `offset`.
        cut = self._batch_at(offset)
        kept = [self._entry(cut, r) for r in cut.records if r.offset < offset]
        self._pop_segments(offset)
        self._log.truncate_to(offset)
        assert self.end_offset == cut.header.base_offset, (self.end_offset, cut.header)
        self._write(self.end_offset, kept)
        self._after_rewrite()

    def reset_to(self, offset: int) -> None:
        """A snapshot ending at `offset` was installed: the log becomes empty and starts there, durably."""
        if offset < 0:
            raise ValueError(f"{self.directory}: cannot start the log at {offset}")
        self._pop_segments(-1)
        self._log.truncate_fully_and_start_at(offset)
        self._after_rewrite()

    def delete_below(self, offset: int) -> None:
        """Delete the segments that lie wholly below `offset`; the log then starts at the first kept one."""
        plog = self._log
        bases = [s.base_offset for s in plog.segments]
        new_start = bases[max(0, bisect.bisect_right(bases, offset) - 1)]
        if new_start <= plog.log_start_offset:
            return
        # partition_log deletes only below its high watermark. The Raft core owns
        # the real one; everything below a snapshot is committed.
        plog.update_high_watermark(new_start)
        plog.advance_log_start_offset(new_start)
        plog.delete_old_segments()

    def _pop_segments(self, offset: int) -> None:
        """Delete the segments starting at or after `offset`, newest first, keeping the first.

        A crash in between leaves a prefix of the old log, never a hole
        (partition_log deletes oldest first). An empty last segment (a crash
        right after a roll) stops this early: partition_log does not truncate
        at the log end. The rest is then deleted oldest first, and a crash
        there leaves a hole that the next open cuts off (`_cut_at_hole`)."""
        plog = self._log
        while len(plog.segments) > 1 and offset <= plog.segments[-1].base_offset < plog.log_end_offset:
            plog.truncate_to(plog.segments[-1].base_offset)

    def _after_rewrite(self) -> None:
        self._generation += 1
        self._sync_all()

    def _cut_at_hole(self) -> None:
        """Drop segments after a gap in the offsets.

        Only a crash before an fsync leaves one (an earlier segment lost its
        unflushed tail, a later one did not); what lies past it was never flushed."""
        plog = self._log
        for prev, nxt in zip(plog.segments, plog.segments[1:]):
            last = nxt.base_offset - 1
            found = prev.read(last, 1)
            if found is not None and b.parse_header(found[1]).next_offset == nxt.base_offset:
                continue
            if found is not None:
                raise StorageError(f"{prev.log_path}: its last batch overlaps {nxt.log_path}")
            log.warning("%s: offsets up to %d are missing from %s (a crash before a flush): "
                        "dropping the segments from %s on", self.directory, last, prev.log_path.name,
                        nxt.log_path.name)
            plog.truncate_to(last)
            return

    def close(self) -> None:
        self._log.close()


def _is_voters(entry: Entry) -> bool:
    return entry.control and entry.data.startswith(VOTERS_TAG)


def _runs(entries: Sequence[Entry]) -> Iterator[Sequence[Entry]]:
    """Consecutive entries with the same (epoch, control record key), at most about MAX_BATCH_BYTES each."""
    start, size = 0, 0
    for i, entry in enumerate(entries):
        first = entries[start]
        if i > start and ((entry.epoch, entry.control, _is_voters(entry)) != (first.epoch, first.control, _is_voters(first))
                          or size + len(entry.data) > MAX_BATCH_BYTES):
            yield entries[start:i]
            start, size = i, 0
        size += len(entry.data)
    if start < len(entries):
        yield entries[start:]
