"""Snapshot files: round trips in Kafka's layout, and every kind of damage is caught and named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metadata_quorum.raft import Snapshot, SnapshotId
from metadata_quorum.storage import CorruptSnapshotError, SnapshotStore
from metadata_quorum.storage.control import SNAPSHOT_FOOTER, SNAPSHOT_HEADER, control_type
from kafka_protocol.records import iter_batches

SNAP = Snapshot(SnapshotId(42, 3), b"state machine bytes")


def store(tmp_path: Path) -> SnapshotStore:
    return SnapshotStore(tmp_path / "__cluster_metadata-0")


@pytest.mark.parametrize("data", [b"", b"x", os.urandom(3 * (1 << 20) + 17)], ids=["empty", "one-byte", "3MiB"])
def test_snapshot_round_trips(tmp_path: Path, data: bytes) -> None:
    snap = Snapshot(SnapshotId(1000, 7), data)
    store(tmp_path).save(snap)
    assert store(tmp_path).latest() == snap


def test_snapshot_file_is_header_chunks_footer_in_kafkas_layout(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.save(Snapshot(SnapshotId(1000, 7), bytes(2 * (1 << 20) + 1)))
    path = s.directory / "00000000000000001000-0000000007.checkpoint"
    batches = list(iter_batches(path.read_bytes()))
    assert [b.header.base_offset for b in batches] == [0, 1, 2, 3, 4]
    assert {b.header.partition_leader_epoch for b in batches} == {7}
    assert [b.header.is_control for b in batches] == [True, False, False, False, True]
    assert control_type(batches[0].records[0].key) == SNAPSHOT_HEADER
    assert control_type(batches[-1].records[0].key) == SNAPSHOT_FOOTER
    assert [len(b.records[0].value) for b in batches[1:-1]] == [1 << 20, 1 << 20, 1]


def test_save_replaces_older_snapshots_and_latest_is_the_newest(tmp_path: Path) -> None:
    s = store(tmp_path)
    assert s.latest() is None and s.ids() == []
    s.save(Snapshot(SnapshotId(10, 1), b"a"))
    s.save(Snapshot(SnapshotId(20, 2), b"b"))
    assert s.ids() == [SnapshotId(20, 2)]
    assert s.latest() == Snapshot(SnapshotId(20, 2), b"b")


def test_a_part_file_left_by_a_crash_is_removed_on_open(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.save(SNAP)
    part = s.directory / "00000000000000000099-0000000004.checkpoint.part"
    part.write_bytes(b"half a snapshot")
    s = store(tmp_path)
    assert not part.exists()
    assert s.latest() == SNAP


def saved_file(tmp_path: Path) -> Path:
    s = store(tmp_path)
    s.save(SNAP)
    return s.path(SNAP.snapshot_id)


def test_every_flipped_byte_is_caught(tmp_path: Path) -> None:
    path = saved_file(tmp_path)
    good = path.read_bytes()
    for i in range(len(good)):
        damaged = bytearray(good)
        damaged[i] ^= 0x01
        path.write_bytes(damaged)
        with pytest.raises(CorruptSnapshotError, match=path.name):
            store(tmp_path).latest()


@pytest.mark.parametrize("cut", [1, 10, 61, 100])
def test_a_truncated_snapshot_is_corrupt(tmp_path: Path, cut: int) -> None:
    path = saved_file(tmp_path)
    raw = path.read_bytes()
    path.write_bytes(raw[:len(raw) - cut])
    with pytest.raises(CorruptSnapshotError, match=path.name):
        store(tmp_path).latest()


def test_a_snapshot_without_its_footer_is_torn(tmp_path: Path) -> None:
    path = saved_file(tmp_path)
    batches = list(iter_batches(path.read_bytes()))
    path.write_bytes(path.read_bytes()[:-batches[-1].header.size])
    with pytest.raises(CorruptSnapshotError, match=f"{path.name}.*SNAPSHOT_FOOTER"):
        store(tmp_path).latest()


def test_an_empty_snapshot_file_is_corrupt(tmp_path: Path) -> None:
    path = saved_file(tmp_path)
    path.write_bytes(b"")
    with pytest.raises(CorruptSnapshotError, match=f"{path.name}.*empty"):
        store(tmp_path).latest()


def test_a_snapshot_carries_its_voter_set_as_a_kraft_voters_record(tmp_path: Path) -> None:
    from metadata_quorum.raft.voters import Endpoint, ReplicaKey, Voter, VoterSet

    voters = VoterSet([Voter(ReplicaKey(1, "AAAAAAAAAAAAAAAAAAAAAQ"), (Endpoint("CONTROLLER", "h1", 9093),))])
    store = SnapshotStore(tmp_path)
    snapshot = Snapshot(SnapshotId(5, 2), b"state", voters)
    store.save(snapshot)
    assert store.read(SnapshotId(5, 2)) == snapshot
    store.save(Snapshot(SnapshotId(6, 2), b"static"))  # a static quorum's: no voters
    assert store.read(SnapshotId(6, 2)).voters is None
