"""open_metadata_storage: a restarted node gets back what it made durable, made consistent after any crash."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from metadata_quorum.raft import Entry, QuorumStateData, RaftCore, Snapshot, SnapshotId
from metadata_quorum.storage import (CorruptSnapshotError, InconsistentClusterIdError, MetadataStorage,
                                     StorageError, open_metadata_storage)

VOTERS = (1, 2, 3)


def start(tmp_path: Path, cluster_id: str = "c1", node_id: int = 1) -> MetadataStorage:
    return open_metadata_storage(tmp_path / "meta", cluster_id=cluster_id, node_id=node_id, voters=VOTERS,
                                 segment_bytes=300)


def entries(first: int, epochs: list[int]) -> list[Entry]:
    return [Entry(e, f"e{first + i}".encode(), i == 0) for i, e in enumerate(epochs)]


def written(tmp_path: Path, epochs: list[int], epoch: int = 3) -> MetadataStorage:
    """A node that promised `epoch` and wrote one entry per element of `epochs`, then shut down."""
    storage = start(tmp_path)
    storage.quorum_state.write(QuorumStateData(epoch, 2, 2))
    storage.log.append(0, entries(0, epochs))
    storage.log.close()
    return storage


def test_a_first_start_creates_the_layout_and_an_empty_state(tmp_path: Path) -> None:
    storage = start(tmp_path)
    durable = storage.durable
    assert (durable.quorum_state, durable.snapshot, durable.log_start_offset, durable.entries) == (None, None, 0, [])
    assert (tmp_path / "meta" / "meta.properties").exists()
    assert (tmp_path / "meta" / "__cluster_metadata-0" / "00000000000000000000.log").exists()
    RaftCore(1, VOTERS, "c1", random.Random(1), durable=durable)


def test_a_restart_gives_back_quorum_state_and_log(tmp_path: Path) -> None:
    written(tmp_path, [1, 1, 2, 2, 3])
    durable = start(tmp_path).durable
    assert durable.quorum_state == QuorumStateData(3, 2, 2)
    assert durable.entries == entries(0, [1, 1, 2, 2, 3])
    RaftCore(1, VOTERS, "c1", random.Random(1), durable=durable)


def test_a_restart_after_a_snapshot_starts_the_log_at_its_end(tmp_path: Path) -> None:
    storage = written(tmp_path, [1] * 10 + [2] * 20)
    storage = start(tmp_path)
    snapshot = Snapshot(SnapshotId(25, 2), b"state")
    storage.snapshots.save(snapshot)  # the state machine's own snapshot: no reset
    storage.log.close()
    storage = start(tmp_path)
    assert storage.durable.snapshot == snapshot
    assert storage.durable.log_start_offset == 25
    assert storage.durable.entries == entries(0, [1] * 10 + [2] * 20)[25:]
    assert 0 < storage.log.start_offset <= 25  # whole segments below the snapshot are gone
    RaftCore(1, VOTERS, "c1", random.Random(1), durable=storage.durable)


@pytest.mark.parametrize("epochs", [[1] * 5, [1] * 30], ids=["log-ends-below-snapshot", "log-diverges-at-end-1"])
def test_a_crash_between_installing_a_snapshot_and_resetting_the_log(tmp_path: Path, epochs: list[int]) -> None:
    storage = written(tmp_path, epochs)
    storage = start(tmp_path)
    snapshot = Snapshot(SnapshotId(20, 3), b"from the leader")
    storage.snapshots.save(snapshot)
    storage.log.close()  # ... and the crash comes before storage.log.reset_to(20)
    for _ in range(2):  # the repaired directory opens the same way again
        storage = start(tmp_path)
        assert storage.durable.snapshot == snapshot
        assert (storage.durable.log_start_offset, storage.durable.entries) == (20, [])
        assert (storage.log.start_offset, storage.log.end_offset) == (20, 20)
        storage.log.close()


def test_a_log_starting_after_the_snapshot_is_a_gap(tmp_path: Path) -> None:
    storage = start(tmp_path)
    storage.quorum_state.write(QuorumStateData(3, 2, 2))
    storage.log.reset_to(30)
    storage.log.append(30, entries(30, [3, 3]))
    storage.snapshots.save(Snapshot(SnapshotId(20, 2), b"s"))
    storage.log.close()
    with pytest.raises(StorageError, match="starts at offset 30, after the end of snapshot"):
        start(tmp_path)


def test_a_log_not_starting_at_zero_needs_a_snapshot(tmp_path: Path) -> None:
    storage = start(tmp_path)
    storage.log.reset_to(30)
    storage.log.close()
    with pytest.raises(StorageError, match="starts at offset 30, but no snapshot"):
        start(tmp_path)


def test_epochs_going_backwards_are_refused(tmp_path: Path) -> None:
    written(tmp_path, [1, 2, 2, 1])
    with pytest.raises(StorageError, match="offset 3 has epoch 1, after epoch 2"):
        start(tmp_path)


@pytest.mark.parametrize("promised", [None, 1])
def test_a_quorum_state_behind_the_log_is_refused(tmp_path: Path, promised) -> None:
    storage = start(tmp_path)
    if promised is not None:
        storage.quorum_state.write(QuorumStateData(promised, None, None))
    storage.log.append(0, entries(0, [1, 2]))
    storage.log.close()
    with pytest.raises(StorageError, match="quorum-state.*holds epoch 2"):
        start(tmp_path)


def test_another_cluster_or_node_is_refused(tmp_path: Path) -> None:
    start(tmp_path).log.close()
    with pytest.raises(InconsistentClusterIdError, match="meta.properties"):
        start(tmp_path, cluster_id="c2")
    with pytest.raises(StorageError, match="node 1, not node 2"):
        start(tmp_path, node_id=2)


def test_a_corrupt_latest_snapshot_stops_the_start(tmp_path: Path) -> None:
    storage = written(tmp_path, [1] * 10)
    storage = start(tmp_path)
    storage.snapshots.save(Snapshot(SnapshotId(5, 1), b"snap"))
    storage.log.close()
    path = storage.snapshots.path(SnapshotId(5, 1))
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(CorruptSnapshotError, match=path.name):
        start(tmp_path)
