"""Bad input against real controller processes: each request gets a Kafka
error code or a gRPC status, and the quorum is none the worse for it.
Corrupt durable files stop a node with a clear message."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from kafka_protocol.errors import Errors
from devcluster.local_processes import wait_until
from devcluster.local_quorum import LocalQuorum
from kraftlog_api import quorum_pb2 as pb
from kraftlog_api import quorum_pb2_grpc as pb_grpc


FAST = {"controller.quorum.election.timeout.ms": 500, "controller.quorum.fetch.timeout.ms": 1000}
OBSERVER = 99  # not a voter: may fetch like a broker, may not vote


@pytest.fixture(scope="module")
def quorum(tmp_path_factory):
    q = LocalQuorum(tmp_path_factory.mktemp("bad-input"), 3, FAST)
    try:
        q.start()
        q.wait_for_leader()
        q.client.append([b"first"])
        yield q
    finally:
        q.close()


@pytest.fixture
def leader(quorum):
    """(stub of the leader, its id, its epoch)."""
    leader_id, epoch = quorum.wait_for_leader()
    return pb_grpc.KRaftQuorumStub(quorum.channel(leader_id)), leader_id, epoch


def cluster_id(quorum: LocalQuorum) -> str:
    return quorum.plans[1].config.cluster_id


def test_wrong_cluster_id_is_refused(quorum, leader) -> None:
    stub, leader_id, epoch = leader
    answers = [
        stub.Vote(pb.VoteRequest(cluster_id="other", candidate_id=OBSERVER, candidate_epoch=epoch + 1)),
        stub.Fetch(pb.FetchRequest(cluster_id="other", replica_id=OBSERVER, current_leader_epoch=epoch)),
        stub.BeginQuorumEpoch(pb.BeginQuorumEpochRequest(cluster_id="other", leader_id=OBSERVER, leader_epoch=epoch)),
    ]
    assert [a.error_code for a in answers] == [Errors.INCONSISTENT_CLUSTER_ID] * 3


def test_unknown_voter_and_misrouted_requests_are_refused(quorum, leader) -> None:
    stub, leader_id, epoch = leader
    cid = cluster_id(quorum)
    far = epoch + 1_000_000
    vote = stub.Vote(pb.VoteRequest(cluster_id=cid, candidate_id=OBSERVER, candidate_epoch=far))
    begin = stub.BeginQuorumEpoch(pb.BeginQuorumEpochRequest(cluster_id=cid, leader_id=OBSERVER, leader_epoch=far))
    misrouted = stub.Fetch(
        pb.FetchRequest(cluster_id=cid, destination_id=leader_id + 100, replica_id=OBSERVER, current_leader_epoch=epoch)
    )
    assert (vote.error_code, begin.error_code, misrouted.error_code) == (Errors.INCONSISTENT_VOTER_SET,) * 3
    # A far-future epoch from a node that may not vote moved nothing.
    assert quorum.leader() == (leader_id, epoch)


def test_fetch_epochs_and_offsets_out_of_range(quorum, leader) -> None:
    stub, leader_id, epoch = leader
    cid = cluster_id(quorum)

    def fetch(**fields):
        return stub.Fetch(pb.FetchRequest(cluster_id=cid, replica_id=OBSERVER, **fields))

    assert fetch(current_leader_epoch=epoch - 1, fetch_offset=0).error_code == Errors.FENCED_LEADER_EPOCH
    assert fetch(current_leader_epoch=epoch + 1000, fetch_offset=0).error_code == Errors.UNKNOWN_LEADER_EPOCH
    beyond = fetch(current_leader_epoch=epoch, fetch_offset=10**12, last_fetched_epoch=epoch)
    assert beyond.error_code == Errors.OFFSET_OUT_OF_RANGE
    nonsense = fetch(current_leader_epoch=epoch, fetch_offset=-5, last_fetched_epoch=0)
    assert nonsense.error_code == Errors.INVALID_REQUEST
    # A well-formed observer fetch is served.
    ok = fetch(current_leader_epoch=epoch, fetch_offset=0, last_fetched_epoch=0)
    assert ok.error_code == Errors.NONE and len(ok.records) >= 1 and ok.high_watermark >= 1
    missing = stub.FetchSnapshot(
        pb.FetchSnapshotRequest(
            cluster_id=cid, replica_id=OBSERVER, current_leader_epoch=epoch,
            snapshot_id=pb.SnapshotId(end_offset=12345, epoch=epoch), max_bytes=1024,
        )
    )
    assert missing.error_code == Errors.SNAPSHOT_NOT_FOUND


def test_malformed_requests_get_invalid_argument(quorum, leader) -> None:
    stub, leader_id, epoch = leader
    cid = cluster_id(quorum)
    malformed = [
        lambda: stub.Fetch(pb.FetchRequest(cluster_id=cid, replica_id=-5, current_leader_epoch=epoch)),
        lambda: stub.FetchSnapshot(pb.FetchSnapshotRequest(cluster_id=cid, replica_id=OBSERVER, max_bytes=10)),
        lambda: stub.Vote(pb.VoteRequest(cluster_id=cid, candidate_id=leader_id, candidate_epoch=epoch + 1)),
    ]
    for call in malformed:
        with pytest.raises(grpc.RpcError) as info:
            call()
        assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    vote = stub.Vote(pb.VoteRequest(cluster_id=cid, candidate_id=OBSERVER, candidate_epoch=epoch + 1,
                                    last_offset_epoch=epoch + 5, last_offset=3))
    assert vote.error_code == Errors.INCONSISTENT_VOTER_SET  # voter set is checked first


def test_undecodable_bytes_are_refused(quorum, leader) -> None:
    _, leader_id, _ = leader
    raw = quorum.channel(leader_id).unary_unary(
        "/kraftlog.quorum.v1.KRaftQuorum/Fetch",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    with pytest.raises(grpc.RpcError) as info:
        raw(b"\xff\xff\xff\xff\x0f\x01garbage", timeout=5)
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "FetchRequest" in info.value.details()


def test_append_limits(quorum, leader) -> None:
    _, leader_id, _ = leader
    stub = pb_grpc.QuorumLogStub(quorum.channel(leader_id))
    assert stub.Append(pb.AppendRequest(records=[])).error_code == Errors.INVALID_REQUEST
    assert stub.Append(pb.AppendRequest(records=[b"x" * (2 << 20)])).error_code == Errors.MESSAGE_TOO_LARGE
    with pytest.raises(grpc.RpcError) as info:
        stub.Append(pb.AppendRequest(records=[b"y" * (5 << 20)] * 2))  # 10 MiB: over the transport limit
    assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    reply = stub.ReadCommitted(pb.ReadCommittedRequest(start_offset=-1))
    assert reply.error_code == Errors.OFFSET_OUT_OF_RANGE


def test_the_quorum_is_unharmed(quorum, leader) -> None:
    _, leader_id, epoch = leader
    base, last = quorum.client.append([b"after the abuse"])
    assert quorum.leader() == (leader_id, epoch)
    health = health_pb2_grpc.HealthStub(quorum.channel(leader_id))
    assert health.Check(health_pb2.HealthCheckRequest(service="")).status == health_pb2.HealthCheckResponse.SERVING
    reflection = reflection_pb2_grpc.ServerReflectionStub(quorum.channel(leader_id))
    answer = next(reflection.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
    listed = {s.name for s in answer.list_services_response.service}
    assert {"kraftlog.quorum.v1.KRaftQuorum", "kraftlog.quorum.v1.QuorumLog", "grpc.health.v1.Health"} <= listed
    wait_until(lambda: all((last, b"after the abuse") in quorum.client.read_committed(n) for n in quorum.plans),
               10, "every node applied the last record")


# --- corrupt durable state --------------------------------------------------


@pytest.fixture
def single(tmp_path):
    q = LocalQuorum(tmp_path, 1, {"metadata.log.max.record.bytes.between.snapshots": 1024})
    try:
        q.start()
        q.wait_for_leader()
        yield q
    finally:
        q.close()


def metadata_dir(q: LocalQuorum):
    return q.plans[1].home / "data" / "__cluster_metadata-0"


def test_a_corrupt_quorum_state_stops_the_node(single) -> None:
    single.client.append([b"x"])
    assert single.stop(1) == 0
    (metadata_dir(single) / "quorum-state").write_text('{"clusterId": "TG9jYWxRdW9ydW1UZXN0MQ", "leaderEp')
    single.start(1)
    assert single.wait_exit(1, timeout=30) == 1
    assert "quorum-state" in single.log_text(1).splitlines()[-1]


def test_a_corrupt_snapshot_stops_the_node(single) -> None:
    for i in range(20):
        single.client.append([b"%03d" % i + b"z" * 100])
    assert single.stop(1) == 0
    snapshots = sorted(metadata_dir(single).glob("*.checkpoint"))
    assert snapshots, "no snapshot was taken"
    latest = snapshots[-1]
    data = bytearray(latest.read_bytes())
    data[len(data) // 2] ^= 0xFF
    latest.write_bytes(bytes(data))
    single.start(1)
    assert single.wait_exit(1, timeout=30) == 1
    assert latest.name in single.log_text(1).splitlines()[-1]


def test_a_node_restarts_from_its_snapshot_and_log(single) -> None:
    acked = [single.client.append([b"%03d" % i + b"z" * 100])[1] for i in range(20)]
    before = single.client.read_committed(1)
    assert [o for o, _ in before][-len(acked):] == acked
    assert single.stop(1) == 0
    single.start(1)
    single.wait_for_leader()
    wait_until(lambda: (single.applied(1) or [])[: len(before)] == before, 20, "the restarted node has it all")
