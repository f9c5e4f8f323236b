"""A simulated disk that does what ready.py asks, in that order, and can lose what was not flushed.

Two views of the log: `written` (what the process sees, page cache
included) and `durable` (what survives a crash: the state at the last
flush). Quorum-state, snapshots and truncations are made durable at once,
as the contract asks; log appends become durable only at the next flush.
"""

from __future__ import annotations

from typing import Optional

from metadata_quorum.raft import DurableState, Entry, QuorumStateData, Ready, Snapshot


class SimDisk:
    __slots__ = (
        "quorum_state",
        "snapshot",
        "durable_start",
        "durable",
        "written_start",
        "written",
        "fsyncs",
    )

    def __init__(self) -> None:
        self.quorum_state: Optional[QuorumStateData] = None
        self.snapshot: Optional[Snapshot] = None
        self.durable_start = 0
        self.durable: list[Entry] = []
        self.written_start = 0
        self.written: list[Entry] = []
        self.fsyncs = 0

    @property
    def written_end(self) -> int:
        return self.written_start + len(self.written)

    @property
    def snapshot_end(self) -> int:
        return self.snapshot.snapshot_id.end_offset if self.snapshot else 0

    def apply(self, ready: Ready) -> None:
        """Carry out a Ready bundle's storage steps 1-5, in the documented order."""
        if ready.quorum_state is not None:
            self.quorum_state = ready.quorum_state
            self.fsyncs += 1
        if ready.snapshot_to_install is not None:
            snap = ready.snapshot_to_install
            end = snap.snapshot_id.end_offset
            self.snapshot = snap
            self.written_start = self.durable_start = end
            self.written = []
            self.durable = []
            self.fsyncs += 1
        if ready.snapshot_to_save is not None:
            self.snapshot = ready.snapshot_to_save
            self.fsyncs += 1
        if ready.truncate_to is not None:
            assert ready.truncate_to >= self.written_start, (ready.truncate_to, self.written_start)
            del self.written[ready.truncate_to - self.written_start :]
            self.flush()  # the contract: a truncation is durable before going on
        if ready.entries:
            assert ready.entries_base_offset == self.written_end, (ready.entries_base_offset, self.written_end)
            self.written.extend(ready.entries)
        if ready.log_start_offset is not None:
            start = ready.log_start_offset
            assert self.snapshot is not None and self.snapshot_end == start
            del self.written[: start - self.written_start]
            self.written_start = start
            # Deleting whole segments below a durable snapshot is a durable act.
            if self.durable_start < start:
                del self.durable[: start - self.durable_start]
                self.durable_start = start

    def flush(self) -> int:
        """fsync the log: what was written is now durable. Returns the flushed end offset."""
        self.durable = list(self.written)
        self.durable_start = self.written_start
        self.fsyncs += 1
        return self.written_end

    def durable_state(self) -> DurableState:
        """What a restart finds on disk."""
        entries = self.durable
        start = self.durable_start
        snap_end = self.snapshot_end
        if start < snap_end:
            # Entries the snapshot covers were deleted with it; a shorter durable
            # log than the snapshot (flush lagging behind) simply starts empty.
            entries = entries[snap_end - start :]
            start = snap_end
        return DurableState(self.quorum_state, self.snapshot, start, list(entries))

    def crash(self) -> None:
        """Lose everything not flushed."""
        state = self.durable_state()
        self.durable_start = state.log_start_offset
        self.durable = state.entries
        self.written_start = state.log_start_offset
        self.written = list(state.entries)

    def durable_entry(self, offset: int) -> Optional[Entry]:
        i = offset - self.durable_start
        if 0 <= i < len(self.durable):
            return self.durable[i]
        return None
