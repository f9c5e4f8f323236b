"""meta.properties and quorum-state: round trips, and a damaged or foreign file is refused, never ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metadata_quorum.raft import QuorumStateData
from metadata_quorum.storage import (CorruptQuorumStateError, InconsistentClusterIdError, MetaProperties,
                                     QuorumStateFile, StorageError)

VOTERS = (1, 2, 3)


def state_file(tmp_path: Path, cluster_id: str = "c1", voters=VOTERS) -> QuorumStateFile:
    return QuorumStateFile(tmp_path / "__cluster_metadata-0" / "quorum-state", cluster_id, voters)


@pytest.mark.parametrize("data", [QuorumStateData(0, None, None), QuorumStateData(4, None, 2),
                                  QuorumStateData(5, 3, None), QuorumStateData(7, 1, 1)])
def test_quorum_state_round_trips(tmp_path: Path, data: QuorumStateData) -> None:
    state_file(tmp_path).write(data)
    assert state_file(tmp_path).read() == data


def test_quorum_state_is_kafkas_json(tmp_path: Path) -> None:
    qs = state_file(tmp_path)
    qs.write(QuorumStateData(5, 3, None))
    assert json.loads(qs.path.read_text()) == {
        "clusterId": "c1", "leaderId": 3, "leaderEpoch": 5, "votedId": -1, "appliedOffset": 0,
        "currentVoters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}], "data_version": 0}
    assert not list(qs.path.parent.glob("*.tmp"))


def test_absent_quorum_state_reads_as_none(tmp_path: Path) -> None:
    assert state_file(tmp_path).read() is None


def valid_doc(**changes) -> dict:
    doc = {"clusterId": "c1", "leaderId": -1, "leaderEpoch": 2, "votedId": 1, "appliedOffset": 0,
           "currentVoters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}], "data_version": 0}
    return {**doc, **changes}


@pytest.mark.parametrize("content", [
    b"", b"  \n", b"{\"clusterId\": \"c1\", \"leaderEp", b"\xff\xfe garbage", b"[1, 2]",
    json.dumps(valid_doc(leaderEpoch="2")).encode(),
    json.dumps(valid_doc(leaderEpoch=-3)).encode(),
    json.dumps(valid_doc(votedId=True)).encode(),
    json.dumps(valid_doc(votedId=9)).encode(),
    json.dumps(valid_doc(leaderId=None)).encode(),
    json.dumps(valid_doc(data_version=1)).encode(),
    json.dumps(valid_doc(currentVoters=[1, 2, 3])).encode(),
    json.dumps({k: v for k, v in valid_doc().items() if k != "votedId"}).encode(),
], ids=["empty", "blank", "partial", "binary", "list", "string-epoch", "negative-epoch", "bool-vote",
        "vote-for-non-voter", "null-leader", "unknown-version", "bare-voter-ids", "no-vote-key"])
def test_damaged_quorum_state_is_an_error_naming_the_file(tmp_path: Path, content: bytes) -> None:
    qs = state_file(tmp_path)
    qs.path.parent.mkdir(parents=True)
    qs.path.write_bytes(content)
    with pytest.raises(CorruptQuorumStateError, match="quorum-state"):
        qs.read()


def test_quorum_state_of_another_cluster_is_refused(tmp_path: Path) -> None:
    state_file(tmp_path, "other").write(QuorumStateData(3, None, 2))
    with pytest.raises(InconsistentClusterIdError, match="'other'"):
        state_file(tmp_path, "c1").read()


def test_quorum_state_with_an_empty_cluster_id_is_accepted(tmp_path: Path) -> None:
    qs = state_file(tmp_path)
    qs.path.parent.mkdir(parents=True)
    qs.path.write_text(json.dumps(valid_doc(clusterId="")))
    assert qs.read() == QuorumStateData(2, None, 1)


def test_quorum_state_for_other_voters_is_refused(tmp_path: Path) -> None:
    state_file(tmp_path, voters=(1, 2, 3)).write(QuorumStateData(3, None, 2))
    with pytest.raises(StorageError, match=r"voters \[1, 2, 3\].*\[1, 2, 3, 4\]"):
        state_file(tmp_path, voters=(1, 2, 3, 4)).read()


def test_meta_properties_is_written_once_in_kafkas_format(tmp_path: Path) -> None:
    made = MetaProperties.ensure(tmp_path / "meta", "c1", 2)
    text = (tmp_path / "meta" / "meta.properties").read_text()
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines[:3] == ["version=1", "cluster.id=c1", "node.id=2"]
    # KIP-853's directory.id: a base64url UUID made with the file, kept across restarts.
    assert lines[3:] == [f"directory.id={made.directory_id}"] and len(made.directory_id or "") == 22
    MetaProperties.ensure(tmp_path / "meta", "c1", 2)  # a restart
    assert MetaProperties.read(tmp_path / "meta") == MetaProperties("c1", 2, directory_id=made.directory_id)


def test_meta_properties_without_a_directory_id_gets_one_and_keeps_the_rest(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("version=1\ncluster.id=c1\nnode.id=2\n")
    found = MetaProperties.ensure(tmp_path, "c1", 2)
    assert found.directory_id is not None
    assert MetaProperties.read(tmp_path) == found


@pytest.mark.parametrize("bogus", ["AAAAAAAAAAAAAAAAAAAAAA", "not-a-uuid", "A" * 23])
def test_a_bogus_directory_id_is_refused(tmp_path: Path, bogus: str) -> None:
    (tmp_path / "meta.properties").write_text(f"version=1\ncluster.id=c1\nnode.id=2\ndirectory.id={bogus}\n")
    with pytest.raises(StorageError, match="directory.id"):
        MetaProperties.ensure(tmp_path, "c1", 2)


def test_a_dynamic_quorums_state_file_has_no_voters(tmp_path: Path) -> None:
    state = QuorumStateFile(tmp_path / "quorum-state", "c1", None)
    state.write(QuorumStateData(4, 7, 7))
    doc = json.loads((tmp_path / "quorum-state").read_text())
    assert doc["data_version"] == 1 and "currentVoters" not in doc
    assert state.read() == QuorumStateData(4, 7, 7)


def test_meta_properties_of_another_cluster_or_node_is_refused(tmp_path: Path) -> None:
    MetaProperties.ensure(tmp_path, "c1", 2)
    with pytest.raises(InconsistentClusterIdError, match="meta.properties.*'c1'"):
        MetaProperties.ensure(tmp_path, "c2", 2)
    with pytest.raises(StorageError, match="meta.properties.*node 2"):
        MetaProperties.ensure(tmp_path, "c1", 3)


@pytest.mark.parametrize("text", ["version=0\ncluster.id=c1\nnode.id=2\n", "version=1\nnode.id=2\n",
                                  "version=1\ncluster.id=c1\nnode.id=two\n", "version 1\n"])
def test_damaged_meta_properties_is_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / "meta.properties").write_text(text)
    with pytest.raises(StorageError, match="meta.properties"):
        MetaProperties.ensure(tmp_path, "c1", 2)
