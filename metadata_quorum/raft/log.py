"""The core's view of the replicated log: entries after the latest snapshot.

The log starts at `start_offset` (the end offset of the latest snapshot, or
0). `start_epoch` is the epoch of the entry just before the start, i.e. the
snapshot's epoch (0 when there is no snapshot). An epoch cache, the list of
`(epoch, first offset)` pairs of the entries held, answers "where does epoch
e end?" — the question behind divergence detection.

Nothing here does I/O; the core tells the shell what changed.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Iterable, Optional

from .messages import Entry, EpochEndOffset


class RaftLog:
    __slots__ = ("start_offset", "start_epoch", "_entries", "_epochs")

    def __init__(self, start_offset: int = 0, start_epoch: int = 0, entries: Iterable[Entry] = ()) -> None:
        assert start_offset >= 0 and start_epoch >= 0
        assert (start_offset == 0) == (start_epoch == 0), "a snapshot has a non-zero epoch"
        self.start_offset = start_offset
        self.start_epoch = start_epoch
        self._entries: list[Entry] = []
        self._epochs: list[tuple[int, int]] = []
        for entry in entries:
            self.append(entry)

    # --- reading -----------------------------------------------------------

    @property
    def end_offset(self) -> int:
        return self.start_offset + len(self._entries)

    @property
    def last_epoch(self) -> int:
        return self._epochs[-1][0] if self._epochs else self.start_epoch

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, offset: int) -> Entry:
        assert self.start_offset <= offset < self.end_offset, (offset, self.start_offset, self.end_offset)
        return self._entries[offset - self.start_offset]

    def epoch_at(self, offset: int) -> int:
        """Epoch of the entry at `offset`; offset start-1 answers the snapshot's epoch."""
        if offset == self.start_offset - 1 or offset == -1:
            return self.start_epoch
        return self.entry(offset).epoch

    def entries_from(self, offset: int, max_bytes: int) -> tuple[Entry, ...]:
        """Entries from `offset` on, at least one if any, about max_bytes of data."""
        i = offset - self.start_offset
        assert i >= 0
        entries = self._entries
        end = i
        size = 0
        n = len(entries)
        while end < n:
            size += len(entries[end].data) + 16
            if size > max_bytes and end > i:
                break
            end += 1
        return tuple(entries[i:end])

    def entries_between(self, start: int, end: int) -> tuple[Entry, ...]:
        return tuple(self._entries[start - self.start_offset : end - self.start_offset])

    def end_offset_for_epoch(self, epoch: int) -> Optional[EpochEndOffset]:
        """The largest epoch <= `epoch` this log knows and the offset where it ends.

        None when the answer lies inside the snapshot (before the log start),
        where epoch boundaries are no longer known.
        """
        epochs = self._epochs
        if epoch >= self.last_epoch:
            return EpochEndOffset(self.last_epoch, self.end_offset)
        i = bisect_right(epochs, (epoch, float("inf"))) - 1
        if i < 0:
            # Older than every entry held: only the snapshot's epoch is known.
            if epoch >= self.start_epoch:
                return EpochEndOffset(self.start_epoch, self.start_offset)
            return None
        found_epoch = epochs[i][0]
        return EpochEndOffset(found_epoch, epochs[i + 1][1])

    def matches(self, offset: int, epoch: int) -> bool:
        """True when this log has an entry at offset-1 with `epoch` (offset 0: always)."""
        if offset == 0:
            return epoch == 0
        if offset < self.start_offset or offset > self.end_offset:
            return False
        return self.epoch_at(offset - 1) == epoch

    # --- changing ----------------------------------------------------------

    def append(self, entry: Entry) -> int:
        epochs = self._epochs
        last = self.last_epoch
        assert entry.epoch >= last, f"epoch goes back: {entry.epoch} after {last}"
        assert entry.epoch > 0, "entries carry a leader epoch >= 1"
        offset = self.end_offset
        if not epochs or entry.epoch != epochs[-1][0]:
            epochs.append((entry.epoch, offset))
        self._entries.append(entry)
        return offset

    def truncate_to(self, offset: int) -> None:
        """Drop every entry at `offset` and above."""
        assert self.start_offset <= offset <= self.end_offset, (offset, self.start_offset, self.end_offset)
        del self._entries[offset - self.start_offset :]
        epochs = self._epochs
        while epochs and epochs[-1][1] >= offset:
            epochs.pop()

    def delete_before(self, offset: int) -> None:
        """Move the log start to `offset` (a snapshot now covers what is dropped)."""
        assert self.start_offset < offset <= self.end_offset
        new_start_epoch = self.epoch_at(offset - 1)
        del self._entries[: offset - self.start_offset]
        self.start_offset = offset
        self.start_epoch = new_start_epoch
        if not self._entries:
            self._epochs = []
            return
        # Keep the epochs that start at or after `offset`, plus the one in
        # force at `offset`, now starting there.
        in_force = new_start_epoch
        kept: list[tuple[int, int]] = []
        for epoch, first in self._epochs:
            if first <= offset:
                in_force = epoch
            else:
                kept.append((epoch, first))
        kept.insert(0, (in_force, offset))
        self._epochs = kept

    def reset(self, start_offset: int, start_epoch: int) -> None:
        """Forget everything and start empty at a snapshot's end."""
        self._entries = []
        self._epochs = []
        self.start_offset = start_offset
        self.start_epoch = start_epoch

    def check(self) -> None:
        """Full consistency check of the epoch cache (tests and the simulator)."""
        expected: list[tuple[int, int]] = []
        last = self.start_epoch
        for i, entry in enumerate(self._entries):
            assert entry.epoch >= last
            if not expected or expected[-1][0] != entry.epoch:
                expected.append((entry.epoch, self.start_offset + i))
            last = entry.epoch
        assert expected == self._epochs, (expected, self._epochs)
