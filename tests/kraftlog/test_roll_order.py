"""`kraftlog cluster roll`'s pure half: which node goes next, and what the
quorum's and the brokers' answers say about the cluster's health."""
from __future__ import annotations

import textwrap

import pytest

from chaos.availability import produce_unavailability
from chaos.nemesis import ROLLING_RESTART, schedule
from devcluster import launcher
from devcluster import roll
from devcluster.roll import grpc_addresses, next_node, partitions_problem, quorum_problem, selected
from kraftlog_api import broker_pb2 as bpb

CLUSTER = textwrap.dedent("""\
    cluster.id: MkU3OEVBNTcwNTJENDM2Qk
    nodes:
      - {node.id: 1, process.roles: controller, listeners: "CONTROLLER://127.0.0.1:19091"}
      - {node.id: 2, process.roles: controller, listeners: "CONTROLLER://127.0.0.1:19092"}
      - {node.id: 3, process.roles: controller, listeners: "CONTROLLER://0.0.0.0:19093"}
      - {node.id: 4, process.roles: broker, listeners: "PLAINTEXT://127.0.0.1:19094"}
      - {node.id: 5, process.roles: "broker,controller",
         listeners: "PLAINTEXT://127.0.0.1:19095,CONTROLLER://127.0.0.1:19096"}
      - {node.id: 6, process.roles: broker,
         listeners: "PLAINTEXT://0.0.0.0:19097,CLIENTS://127.0.0.1:19098",
         advertised.listeners: "PLAINTEXT://localhost:19097",
         listener.security.protocol.map: "PLAINTEXT:PLAINTEXT,CLIENTS:PLAINTEXT,CONTROLLER:PLAINTEXT",
         kraftlog.kafka.protocol.listeners: CLIENTS}
    """)


@pytest.fixture
def plans(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER)
    return launcher.plan_cluster(path, tmp_path / "data")


def roll_order(plans, leaders):
    """The order a roll takes when the quorum's leader is leaders[i] before step i."""
    remaining, order = list(plans), []
    for leader in leaders:
        plan = next_node(remaining, leader)
        remaining.remove(plan)
        order.append(plan.node_id)
    return order


def test_controllers_first_the_active_one_last_then_brokers(plans):
    assert roll_order(plans, [1] * 6) == [2, 3, 5, 1, 4, 6]
    # the leader moved to 3 after 2 restarted: 3 waits for last among the controllers
    assert roll_order(plans, [1, 3, 3, 3, 3, 3]) == [2, 1, 5, 3, 4, 6]
    # no leader known: file order among the controllers
    assert roll_order(plans, [None] * 6) == [1, 2, 3, 5, 4, 6]


def test_selections(plans):
    assert [p.node_id for p in selected(plans, brokers_only=True)] == [4, 5, 6]
    assert [p.node_id for p in selected(plans, controllers_only=True)] == [1, 2, 3, 5]
    assert len(selected(plans)) == 6
    with pytest.raises(ValueError, match="exclude each other"):
        selected(plans, brokers_only=True, controllers_only=True)


def test_health_is_asked_of_the_grpc_listeners_only(plans):
    by_id = {p.node_id: p for p in plans}
    assert grpc_addresses(by_id[3]) == ["127.0.0.1:19093"]  # as the voters name it
    assert grpc_addresses(by_id[5]) == ["127.0.0.1:19096", "127.0.0.1:19095"]
    assert grpc_addresses(by_id[6]) == ["localhost:19097"]  # advertised; the Kafka-protocol listener is not gRPC
    assert grpc_addresses(by_id[5], controller=False) == ["127.0.0.1:19095"]


def quorum(leader=1, hw=10, ends=(10, 10, 10)):
    return {"leader_id": leader, "leader_epoch": 3, "high_watermark": hw,
            "voters": [{"replica_id": i + 1, "log_end_offset": end} for i, end in enumerate(ends)]}


def test_quorum_health():
    assert quorum_problem(quorum()) is None
    assert quorum_problem(quorum(leader=-1)) == "the quorum has no leader"
    assert "voter 3 at offset 7" in quorum_problem(quorum(ends=(10, 12, 7)))
    assert "not known yet" in quorum_problem(quorum(hw=-1))


def metadata(brokers=(4, 6), isr=(4, 6), leader=4):
    return bpb.MetadataResponse(brokers=[bpb.MetadataResponse.Broker(node_id=b) for b in brokers], topics=[
        bpb.MetadataResponse.Topic(name="t", partitions=[bpb.MetadataResponse.Partition(
            partition_index=0, leader_id=leader, replica_nodes=[4, 6], isr_nodes=list(isr))])])


def test_partition_health_as_every_broker_sees_it():
    assert partitions_problem({4: metadata(), 6: metadata()}, [4, 6]) is None
    assert partitions_problem({4: metadata(), 6: None}, [4, 6]) == "broker 6 does not answer Metadata"
    assert partitions_problem({4: metadata(brokers=(4,)), 6: metadata()}, [4, 6]) == (
        "broker 6 not unfenced (as broker 4 sees it)")
    assert partitions_problem({4: metadata(isr=(4,))}, [4, 6]) == (
        "t-0 is under-replicated: ISR [4] of replicas [4, 6] (as broker 4 sees it)")
    assert partitions_problem({4: metadata(leader=-1)}, [4, 6]) == "t-0 has no leader (as broker 4 sees it)"


def test_the_rolling_restart_scenario_is_one_roll_after_a_warm_up():
    faults = schedule(ROLLING_RESTART, 3, 60)
    assert [(f.kind, f.start_s) for f in faults] == [("roll", 5.0)]


def send(process, key, at_s, kind=None):
    line = {"process": process, "f": "send", "key": key, "time": int(at_s * 1e9)}
    return {**line, "type": kind} if kind else {**line, "type": "invoke"}


def test_produce_unavailability_is_the_longest_wait_for_an_acknowledgement():
    history = [send(1, "c-0", 0.0), send(1, "c-0", 0.1, "ok"),
               send(2, "c-0", 0.2), send(3, "c-1", 0.2), send(3, "c-1", 0.3, "ok"),
               send(2, "c-0", 1.0, "info"),  # failed: the partition still took nothing
               {"process": "nemesis", "type": "info", "f": "roll", "value": {}, "time": 0},
               send(4, "c-0", 1.1), send(4, "c-0", 2.6, "ok")]
    assert produce_unavailability(history) == {
        "c-0": {"longest_s": 2.5, "from_s": 0.1, "to_s": 2.6},
        "c-1": {"longest_s": 0.1, "from_s": 0.2, "to_s": 0.3}}


class Recording:
    """A NodeControl that only records what the roll asks of it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def stop(self, plan) -> str:
        self.calls.append(("stop", plan.node_id))
        return "stopped"

    def start(self, plan) -> None:
        self.calls.append(("start", plan.node_id))

    def alive(self, plan) -> bool:
        return True


def test_a_cluster_that_stays_unhealthy_stops_the_roll_at_that_node(plans, monkeypatch):
    checks = iter([(None, (1, 5))] * 3)  # healthy before the roll, never after the first restart
    monkeypatch.setattr(roll, "POLL_S", 0.01)
    monkeypatch.setattr(roll, "STABLE_S", 0.0)
    monkeypatch.setattr(roll.ClusterWatch, "active_controller", lambda self: 1)
    monkeypatch.setattr(roll.ClusterWatch, "problem", lambda self, restarted: next(
        checks, ("t-0 is under-replicated: ISR [4] of replicas [4, 6]", (1, 5))))
    control = Recording()
    with pytest.raises(roll.RollError, match=r"after restarting node 2: the cluster is not healthy after 0.3s "
                                             r"\(t-0 is under-replicated.*\); the roll stops here"):
        roll.roll(plans, timeout_s=0.3, control=control)
    assert control.calls == [("stop", 2), ("start", 2)]  # never on to the next node
