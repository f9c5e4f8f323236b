"""A dynamic controller quorum (KIP-853) of real processes: three controllers formatted
with `--initial-controllers` and found through `controller.quorum.bootstrap.servers`, a
fourth formatted to join. The fourth is added with `kraftlog quorum add-controller`, the
first (the leader, if it leads) removed, and every ACL written before the changes is still
in the metadata afterwards. Hostile changes on the way get Kafka's errors.

One cluster for the module; every process is stopped by PID and the directory removed.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Iterator

import grpc
import pytest

from client.errors import KafkaError
from client.quorum_admin import add_voter, remove_voter
from devcluster.dynamic_quorum import ROOT, LocalDynamicQuorum
from devcluster.local_processes import wait_until
from kafka_protocol.errors import Errors
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import controller_pb2_grpc as cpb_grpc
from kraftlog.cli import main
from kraftlog_api import quorum_pb2, quorum_pb2_grpc
from security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from security.acl_proto import binding_to_proto

CLUSTER = "ZHluYW1pYy1xdW9ydW0tMQ"
ACLS = 12


class Quorum(LocalDynamicQuorum):
    def controller(self, node_id: int) -> cpb_grpc.KRaftControllerStub:
        return cpb_grpc.KRaftControllerStub(self.channel(node_id))

    def quorum(self, node_id: int) -> quorum_pb2_grpc.KRaftQuorumStub:
        return quorum_pb2_grpc.KRaftQuorumStub(self.channel(node_id))


@pytest.fixture(scope="module")
def quorum() -> Iterator[Quorum]:
    q = Quorum(CLUSTER, controllers=3, spares=1)
    try:
        q.start()
        yield q
    finally:
        q.close()
        print(q.log_tails())  # shown by pytest when a test failed


def acl(i: int) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, f"orders-{i}", PatternType.LITERAL, "User:alice", "*",
                      AclOperation.READ, AclPermissionType.ALLOW)


def kraftlog(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraftlog", *args], capture_output=True, text=True, timeout=90,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)


def run_in_process(monkeypatch: pytest.MonkeyPatch, *args: str) -> None:
    """The CLI's main() in this process, which must end well."""
    monkeypatch.setattr("sys.argv", ["kraftlog", *args])
    try:
        main()
    except SystemExit as exited:
        assert exited.code in (0, None), args


def write_acls(q: Quorum) -> None:
    """ACLs through the active controller, retried while it is elected."""
    request = cpb.CreateAclsRequest(creations=[binding_to_proto(acl(i)) for i in range(ACLS)])

    def created() -> bool:
        leader = q.describe()["leader_id"]
        try:
            answer = q.controller(leader).CreateAcls(request, timeout=10)
        except grpc.RpcError:
            return False
        return answer.error_code == Errors.NONE and all(r.error_code == Errors.NONE for r in answer.results)
    wait_until(created, 60, "ACLs written through the active controller", interval=0.3)


def test_add_a_controller_remove_one_and_keep_the_metadata(quorum: Quorum, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    q = quorum
    info = q.describe(timeout=60)
    assert sorted(r["replica_id"] for r in info["voters"]) == [1, 2, 3]
    assert {r["replica_id"]: r["directory_id"] for r in info["voters"]} == {n: q.directory[n] for n in (1, 2, 3)}
    write_acls(q)
    # Node 4 fetches as an observer until it has caught up; then it is added.
    wait_until(lambda: any(r["replica_id"] == 4 and r["log_end_offset"] >= q.describe()["high_watermark"]
                           for r in q.describe()["observers"]), 60, "node 4 caught up as an observer")
    added = kraftlog("quorum", "add-controller", "--bootstrap-controller", q.address(2),
                     "--config", str(q.config_file(4)), "--timeout", "60")
    assert added.returncode == 0, added.stderr
    assert f"Added controller 4 (directory {q.directory[4]})" in added.stdout
    info = q.describe()
    assert sorted(r["replica_id"] for r in info["voters"]) == [1, 2, 3, 4]
    # Remove node 1 with the CLI, in this process, whoever leads (a leader
    # removing itself hands over once it commits).
    run_in_process(monkeypatch, "quorum", "remove-controller", "--bootstrap-controller", q.address(3),
                   "--controller-id", "1", "--controller-directory-id", q.directory[1], "--timeout", "60")
    assert f"Removed controller 1 (directory {q.directory[1]})" in capsys.readouterr().out
    wait_until(lambda: sorted(r["replica_id"] for r in q.describe()["voters"]) == [2, 3, 4], 60,
               "node 1 out of the voters")
    # Node 1 goes on fetching, as an observer (from a new leader once it fetches from it).
    wait_until(lambda: (1, q.directory[1]) in [(r["replica_id"], r["directory_id"]) for r in q.describe()["observers"]],
               30, "node 1 an observer")
    # In this process (the CLI's start-up is paid once, by add-controller above).
    run_in_process(monkeypatch, "quorum", "describe", "--bootstrap-controller", q.address(4), "--json")
    described = json.loads(capsys.readouterr().out)
    voters = json.loads(described["status"]["CurrentVoters"])
    assert [(v["id"], v["directoryId"]) for v in voters] == [(n, q.directory[n]) for n in (2, 3, 4)]
    assert voters[2]["endpoints"] == [f"CONTROLLER://{q.address(4)}"]
    assert (1, q.directory[1]) in [(r["replica_id"], r["directory_id"]) for r in described["observers"]]
    # Every ACL written before the changes is in the leader's metadata, and node 4 holds the whole log.
    leader = described["leader_id"]
    assert leader in (2, 3, 4)
    match_all = cpb.AclBindingFilter(resource_type=ResourceType.ANY, pattern_type=PatternType.ANY,
                                     operation=AclOperation.ANY, permission_type=AclPermissionType.ANY)
    answer = q.controller(leader).DeleteAcls(cpb.DeleteAclsRequest(filters=[match_all]), timeout=15)
    assert answer.error_code == Errors.NONE
    assert sorted(b.resource_name for b in answer.filter_results[0].matching_acls) == \
        sorted(f"orders-{i}" for i in range(ACLS))
    wait_until(lambda: next(r for r in q.describe()["voters"] if r["replica_id"] == 4)["log_end_offset"]
               >= q.describe()["high_watermark"], 30, "node 4 holding the committed log")


def test_hostile_voter_changes_on_the_wire(quorum: Quorum) -> None:
    q = quorum
    info = q.describe(timeout=60)
    voters = {r["replica_id"]: r["directory_id"] for r in info["voters"]}
    some = min(voters)
    # An existing voter, a bogus directory, the voter's id with another directory.
    with pytest.raises(KafkaError, match="DUPLICATE_VOTER"):
        add_voter(q.address(some), some, voters[some], [("CONTROLLER", "127.0.0.1", 1)], timeout=20)
    with pytest.raises(KafkaError, match="VOTER_NOT_FOUND"):
        remove_voter(q.address(some), some, "AAAAAAAAAAAAAAAAAAAAAw", timeout=20)
    # A follower refuses, naming the leader; a malformed directory id is refused on the wire.
    follower = next(n for n in voters if n != info["leader_id"])
    answer = q.quorum(follower).RemoveRaftVoter(
        quorum_pb2.RemoveRaftVoterRequest(voter_id=some, voter_directory_id=voters[some]), timeout=10)
    assert (answer.error_code, answer.leader_id) == (Errors.NOT_LEADER_OR_FOLLOWER, info["leader_id"])
    with pytest.raises(grpc.RpcError) as refused:
        q.quorum(follower).RemoveRaftVoter(
            quorum_pb2.RemoveRaftVoterRequest(voter_id=some, voter_directory_id="not-a-uuid"), timeout=10)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    # Nothing changed.
    assert {r["replica_id"]: r["directory_id"] for r in q.describe()["voters"]} == voters
