"""The simulated disk keeps the shell contract of ready.py, including what a crash loses."""

from __future__ import annotations

from metadata_quorum.raft import Entry, QuorumStateData, Ready, Snapshot, SnapshotId
from metadata_quorum.sim.disk import SimDisk


def entries(*epochs: int) -> tuple[Entry, ...]:
    return tuple(Entry(e, b"x") for e in epochs)


def test_a_crash_loses_what_was_not_flushed_but_never_quorum_state() -> None:
    disk = SimDisk()
    disk.apply(Ready(quorum_state=QuorumStateData(2, None, 1), entries_base_offset=0, entries=entries(1, 1)))
    disk.flush()
    disk.apply(Ready(entries_base_offset=2, entries=entries(2)))
    disk.crash()
    state = disk.durable_state()
    assert state.quorum_state == QuorumStateData(2, None, 1)
    assert state.entries == list(entries(1, 1))


def test_a_truncation_is_durable_at_once() -> None:
    # Else a crash could revive the dropped entries under a later snapshot.
    disk = SimDisk()
    disk.apply(Ready(entries_base_offset=0, entries=entries(1, 1, 1, 1)))
    disk.flush()
    disk.apply(Ready(truncate_to=2, entries_base_offset=2, entries=entries(2)))
    disk.crash()
    assert disk.durable_state().entries == list(entries(1, 1))


def test_a_snapshot_over_an_unflushed_log_restarts_cleanly() -> None:
    disk = SimDisk()
    disk.apply(Ready(entries_base_offset=0, entries=entries(1, 1, 1)))
    snap = Snapshot(SnapshotId(2, 1), b"s")
    disk.apply(Ready(snapshot_to_save=snap, log_start_offset=2))
    disk.crash()
    state = disk.durable_state()
    assert (state.snapshot, state.log_start_offset, state.entries) == (snap, 2, [])
