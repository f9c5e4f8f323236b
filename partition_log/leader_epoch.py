"""The leader-epoch cache: which leader epoch began at which offset.

Followers use it to find where their log diverges from a new leader's
(OffsetsForLeaderEpoch, KIP-101/279) and truncate there instead of guessing
from the high watermark. Persisted as Kafka's `leader-epoch-checkpoint`:
version 0, entry count, then one "epoch start_offset" line per entry.

Every change is written and fsynced at once, as Kafka does, except an
epoch begun at the log end (`assign(..., sync=False)`: a new leader, or an
epoch recovery found in the batches): until a batch of that epoch is
flushed, losing the entry in a crash is the same as crashing just before
it (recovery puts back the epochs of the batches that survive), so the
file is written with the log's next flush (`sync()`), and a new leader of
an empty or idle partition costs no disk write at all.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kafka_protocol.errors import KafkaStorageError

from .checkpoint import read_checkpoint, write_checkpoint

FILE_NAME = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory  # the log's own Path, shared; `path` is made on use
        try:
            rows = read_checkpoint(self.path, 0, 2)
        except ValueError as exc:
            raise KafkaStorageError(str(exc)) from exc
        self.entries: list[EpochEntry] = [EpochEntry(int(e), int(o)) for e, o in rows or []]
        self.unsynced = False  # entries not yet written and fsynced (sync=False)

    @property
    def path(self) -> Path:
        return self.directory / FILE_NAME

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1].epoch if self.entries else UNDEFINED_EPOCH

    def epoch_for_offset(self, offset: int) -> int:
        epoch = UNDEFINED_EPOCH
        for entry in self.entries:
            if entry.start_offset > offset:
                break
            epoch = entry.epoch
        return epoch

    def assign(self, epoch: int, start_offset: int, *, sync: bool = True) -> None:
        """Record that `epoch` starts at `start_offset` (no-op if already known);
        `sync=False` leaves the fsync to the next `sync()` (see the module doc)."""
        if epoch < 0 or (self.entries and self.entries[-1].epoch == epoch):
            return
        # A newer epoch supersedes any entry that claims the same or later ground.
        kept = [e for e in self.entries if e.epoch < epoch and e.start_offset < start_offset]
        self.entries = kept + [EpochEntry(epoch, start_offset)]
        self._flush(sync)

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest epoch <= requested, the offset where it ended) as Kafka's
        OffsetsForLeaderEpoch answers; (-1, -1) when the epoch is unknown."""
        if not self.entries or requested_epoch < self.entries[0].epoch:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if requested_epoch >= self.latest_epoch:
            if requested_epoch > self.latest_epoch:
                return UNDEFINED_EPOCH, UNDEFINED_OFFSET
            return self.latest_epoch, log_end_offset
        for i, entry in enumerate(self.entries):
            if entry.epoch > requested_epoch:
                return self.entries[i - 1].epoch, entry.start_offset
        raise AssertionError("unreachable: requested epoch below the latest")

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs that start at or after `end_offset` (log truncated there)."""
        kept = [e for e in self.entries if e.start_offset < end_offset]
        if kept != self.entries:
            self.entries = kept
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset`: the epoch covering it starts there."""
        earlier = [e for e in self.entries if e.start_offset <= start_offset]
        if not earlier or (len(earlier) == 1 and earlier[0].start_offset == start_offset):
            return
        later = self.entries[len(earlier):]
        self.entries = [EpochEntry(earlier[-1].epoch, start_offset)] + later
        self._flush()

    def clear(self) -> None:
        self.entries = []
        self._flush()

    def sync(self) -> None:
        """Write and fsync entries assigned with `sync=False` (before data of their epochs is flushed)."""
        if self.unsynced:
            self._flush()

    def _flush(self, sync: bool = True) -> None:
        if sync:
            write_checkpoint(self.path, 0, [f"{e.epoch} {e.start_offset}" for e in self.entries])
        self.unsynced = not sync
