"""Committed offsets and the life of their topic, on a real cluster (3
combined nodes): deleting a topic removes every group's offsets of it, as
Kafka's coordinator does, so a topic created again under that name is read
from its start; a commit for a topic that does not exist is refused with
UNKNOWN_TOPIC_OR_PARTITION (it could otherwise bring deleted offsets back);
and a coordinator that was down while the topic was deleted drops those
offsets when it loads the group again."""
from __future__ import annotations

from typing import Optional

import grpc
import pytest

from broker.groups.placement import partition_for
from client.cluster import Cluster
from client.consumer import Consumer, TopicPartition
from client.errors import KafkaError
from client.topics import delete_topic
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until
from kraftlog_api import groups_pb2 as gpb
from kraftlog_api import groups_pb2_grpc as gpb_grpc

from ..client.produce_consume import produce_values
from .test_cli_admin import ok_json
from .test_console_hardening import requests_answered

WAIT_S = 120  # bounds every wait; never part of an assert
OFFSETS_PARTITIONS = 3
PROPERTIES = {
    "broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500,
    # One replica per __consumer_offsets partition: stopping its broker leaves
    # it without a coordinator, which is what the last test needs.
    "offsets.topic.num.partitions": OFFSETS_PARTITIONS, "offsets.topic.replication.factor": 1,
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("offsets-lifecycle"), combined=3,
                      properties=PROPERTIES).running() as c:
        coordinator_of(c, "probe")  # creates __consumer_offsets before the tests
        yield c


def coordinator_of(cluster: LocalCluster, group: str) -> int:
    def found() -> Optional[int]:
        for b in cluster.live_brokers():
            stub = gpb_grpc.GroupCoordinatorStub(cluster.channel(cluster.broker_addresses[b]))
            try:
                [c] = stub.FindCoordinator(gpb.FindCoordinatorRequest(keys=[group]), timeout=10).coordinators
            except grpc.RpcError:
                continue
            if c.error_code == 0:
                return c.node_id
        return None
    return wait_until(found, WAIT_S, f"a coordinator for {group}", interval=0.2)


def make_topic(cluster: LocalCluster, name: str, partitions: int = 3) -> None:
    cluster.create_topic(name, partitions, 2)
    cluster.wait_for_leaders(name)


def produce(cluster: LocalCluster, topic: str, partition: int, count: int) -> None:
    summary = produce_values(cluster.bootstrap, topic, [b"v%d" % i for i in range(count)], partition=partition)
    assert summary.acknowledged == count, summary.errors


def admin(cluster: LocalCluster, group: str) -> Consumer:
    """A consumer outside the group's membership: commits as an admin tool does.
    A commit retries UNKNOWN_TOPIC_OR_PARTITION until default.api.timeout.ms
    (the topic may be new to the coordinator), so the refusal of a deleted
    topic's commit comes after that: 5 s here, not the default minute."""
    return Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, "default.api.timeout.ms": 5000})


def committed(consumer: Consumer, tp: TopicPartition) -> Optional[int]:
    found = consumer.committed([tp], timeout=30)[tp]
    return None if found is None else found.offset


def test_a_deleted_topic_created_again_is_read_from_its_start(cluster) -> None:
    group, t1, kept = "readers", TopicPartition("t1", 1), TopicPartition("kept", 0)
    make_topic(cluster, "t1")
    make_topic(cluster, "kept", 1)
    produce(cluster, "t1", 1, 5)
    with admin(cluster, group) as c:
        c.commit({t1: 3, kept: 2})
        assert committed(c, t1) == 3

        with Cluster(cluster.bootstrap) as admin_client:
            delete_topic(admin_client, "t1")
        wait_until(lambda: committed(c, t1) is None, WAIT_S, "t1's committed offset removed")
        assert committed(c, kept) == 2  # the other topic's offset stays
        # A commit for the deleted topic is refused: it cannot come back.
        with pytest.raises(KafkaError) as refused:
            c.commit({t1: 4})
        assert refused.value.name == "UNKNOWN_TOPIC_OR_PARTITION"
        assert committed(c, t1) is None
        described = ok_json(cluster, "groups", "describe", group)
        assert [(o["topic"], o["partition"], o["committed"]) for o in described["offsets"]] == [("kept", 0, 2)]

    make_topic(cluster, "t1")
    produce(cluster, "t1", 1, 5)
    with admin(cluster, group) as c:
        c.assign([t1])
        read: list[int] = []
        for _ in range(100):  # bounded: 5 records, 0.2 s per empty poll
            read += [r.offset for r in c.poll(0.2)]
            if len(read) >= 5:
                break
    assert read == [0, 1, 2, 3, 4]  # from the start, not from the old topic's offset 3


def test_a_coordinator_down_during_the_deletion_drops_the_offsets_on_loading(cluster) -> None:
    group = next(g for g in (f"offline-{i}" for i in range(100))
                 if partition_for(g, OFFSETS_PARTITIONS) != partition_for("readers", OFFSETS_PARTITIONS))
    t2, kept = TopicPartition("t2", 0), TopicPartition("kept", 0)
    make_topic(cluster, "t2")
    with admin(cluster, group) as c:
        c.commit({t2: 7, kept: 1})
        assert committed(c, t2) == 7
    node = coordinator_of(cluster, group)
    cluster.stop(node, timeout=WAIT_S)
    try:
        # Deleted while the only replica of the group's __consumer_offsets
        # partition is down: no coordinator sees this deletion happen.
        with Cluster(",".join(cluster.broker_addresses[b] for b in cluster.live_brokers())) as survivors:
            delete_topic(survivors, "t2")
        wait_until(lambda: all((m := cluster.metadata(b, ["t2"])) is not None and m.topics[0].error_code
                               for b in cluster.live_brokers()), WAIT_S, "t2 gone on the live brokers")
    finally:
        cluster.start(node)
    cluster.wait_for_brokers()
    assert coordinator_of(cluster, group) == node  # the restarted broker loads the group from its log
    with admin(cluster, group) as c:
        assert committed(c, t2) is None
        assert committed(c, kept) == 1


def test_a_commit_for_a_topic_not_yet_known_waits_for_it(cluster) -> None:
    """The coordinator refuses offsets of a topic its metadata does not have;
    the client retries that within its deadline, as Kafka's commitSync does,
    so a commit racing the topic's creation still lands."""
    tp, group = TopicPartition("late", 0), "early-committer"
    node = coordinator_of(cluster, group)
    answered = lambda: requests_answered(cluster, "OffsetCommit", node)  # noqa: E731
    with Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                   "enable.auto.commit": False, "default.api.timeout.ms": 60_000}) as c:
        before = answered()
        pending = c.commit({tp: 2}, asynchronous=True)
        assert pending is not None
        wait_until(lambda: answered() >= before + 2, WAIT_S, "the commit refused and tried again")
        assert not pending.done()
        make_topic(cluster, "late", 1)  # while the commit is being refused and retried
        pending.result(timeout=WAIT_S)
        assert committed(c, tp) == 2
