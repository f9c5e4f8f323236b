"""The active controller in real controller processes, spoken to over gRPC as a broker and an admin would.

Brokers do not exist yet as processes; the test plays three of them
(registration and heartbeats) and checks what the controllers decide.
"""

from __future__ import annotations

import pytest

from kafka_protocol.errors import Errors
from devcluster.local_processes import wait_until
from devcluster.local_quorum import LocalQuorum
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import controller_pb2_grpc as cpb_grpc
from kraftlog_api import metadata_pb2 as mpb


PROPERTIES = {
    "kraftlog.quorum.state.machine": "metadata",
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "broker.session.timeout.ms": 3000,
}
BROKERS = (101, 102, 103)


@pytest.fixture
def quorum(tmp_path):
    q = LocalQuorum(tmp_path, 3, PROPERTIES)
    try:
        q.start()
        q.wait_for_leader()
        yield q
    finally:
        q.close()


def active_stub(q: LocalQuorum, among=None) -> tuple[cpb_grpc.KRaftControllerStub, int]:
    def find():
        leader = q.leader(among)
        if leader is None:
            return None
        stub = cpb_grpc.KRaftControllerStub(q.channel(leader[0]))
        probe = stub.CreateTopics(cpb.CreateTopicsRequest(validate_only=True), timeout=5)
        return (stub, leader[0]) if probe.error_code != Errors.NOT_CONTROLLER else None

    return wait_until(find, 20, "an active controller")


def register(stub, cluster_id: str, broker_id: int) -> int:
    response = stub.BrokerRegistration(
        cpb.BrokerRegistrationRequest(
            broker_id=broker_id, cluster_id=cluster_id, incarnation_id=f"incarnation-{broker_id}",
            listeners=[mpb.BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=9000 + broker_id)],
        ),
        timeout=10,
    )
    assert response.error_code == 0, response
    return response.broker_epoch


def heartbeat(stub, broker_id: int, epoch: int) -> cpb.BrokerHeartbeatResponse:
    return stub.BrokerHeartbeat(
        cpb.BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=1 << 40),
        timeout=10,
    )


def create(stub, name: str, partitions: int = 3, rf: int = 3, validate_only: bool = False) -> cpb.CreateTopicsResponse.Result:
    response = stub.CreateTopics(
        cpb.CreateTopicsRequest(
            topics=[cpb.CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf)],
            validate_only=validate_only,
        ),
        timeout=10,
    )
    assert response.error_code == 0, response
    return response.topics[0]


def test_only_the_active_controller_decides_and_its_decisions_survive_failover(quorum) -> None:
    cluster_id = quorum.plans[1].config.cluster_id
    stub, leader = active_stub(quorum)
    follower = next(n for n in quorum.plans if n != leader)
    follower_stub = cpb_grpc.KRaftControllerStub(quorum.channel(follower))

    def follower_points_to_leader():
        # wait_for_ready: a quorum can elect its leader before the third process listens.
        answer = follower_stub.CreateTopics(cpb.CreateTopicsRequest(), timeout=20, wait_for_ready=True)
        assert answer.error_code == Errors.NOT_CONTROLLER
        return answer.controller_id == leader

    wait_until(follower_points_to_leader, 20, "a follower names the active controller")

    wrong = stub.BrokerRegistration(cpb.BrokerRegistrationRequest(broker_id=1, cluster_id="another"), timeout=5)
    assert wrong.error_code == Errors.INCONSISTENT_CLUSTER_ID
    assert create(stub, "too-early").error_code == Errors.INVALID_REPLICATION_FACTOR  # no live brokers yet

    epochs = {b: register(stub, cluster_id, b) for b in BROKERS}
    assert len(set(epochs.values())) == 3  # a broker epoch is the offset of its registration
    for b, epoch in epochs.items():
        assert heartbeat(stub, b, epoch).error_code == 0
    stale = heartbeat(stub, 101, epochs[101] - 1)
    assert stale.error_code == Errors.STALE_BROKER_EPOCH

    created = create(stub, "orders", partitions=6, rf=3)
    assert created.error_code == 0 and len(created.topic_id) == 16
    assert create(stub, "orders").error_code == Errors.TOPIC_ALREADY_EXISTS

    # The metadata is in the replicated log: a new active controller knows the topic.
    quorum.kill(leader)
    survivors = tuple(n for n in quorum.plans if n != leader)
    new_stub, new_leader = active_stub(quorum, survivors)
    assert new_leader != leader
    assert create(new_stub, "orders").error_code == Errors.TOPIC_ALREADY_EXISTS
    # Broker sessions restart with the new controller: heartbeats keep the brokers.
    for b, epoch in epochs.items():
        assert heartbeat(new_stub, b, epoch).error_code == 0


def test_a_silent_broker_is_fenced_after_its_session_timeout(quorum) -> None:
    cluster_id = quorum.plans[1].config.cluster_id
    stub, _ = active_stub(quorum)
    epochs = {b: register(stub, cluster_id, b) for b in BROKERS}

    def all_unfenced():
        return all(not heartbeat(stub, b, e).is_fenced for b, e in epochs.items())

    wait_until(all_unfenced, 10, "the brokers are unfenced once caught up")
    # 103 goes silent while the others keep heartbeating. Once its session
    # expires it is fenced, and RF 3 no longer fits the live brokers.
    def fenced_103():
        for b in (101, 102):
            assert heartbeat(stub, b, epochs[b]).error_code == 0
        return create(stub, "probe", rf=3, validate_only=True).error_code == Errors.INVALID_REPLICATION_FACTOR

    wait_until(fenced_103, 30, "broker 103 fenced", interval=0.5)
    assert create(stub, "after-fence", rf=2).error_code == 0
