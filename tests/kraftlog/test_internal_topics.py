"""Internal topics and the size of one metadata change, against a real cluster (3 controllers + 3 brokers).

`__cluster_metadata` is the quorum's own log: no request may create, delete,
grow, produce to or fetch it. `__consumer_offsets` is the brokers' own
topic: clients may not create, delete, grow or produce to it. One request
may write at most Kafka's MAX_RECORDS_PER_USER_OP (10,000) metadata records,
refused whole before anything is written. Each refusal is checked on a raw
gRPC request (the server's check is the one that counts) and, where the
CLI has the command, through `kraftlog` too; and nothing changed after it.
"""
from __future__ import annotations

import pytest

from devcluster.local_cluster import LocalCluster
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kafka_protocol.internal_topics import CLUSTER_METADATA_TOPIC, GROUP_METADATA_TOPIC
from metadata_quorum.controller import Error
from metadata_quorum.controller.result import MAX_RECORDS_PER_USER_OP
from kafka_protocol.records import Record, encode_batch

from .test_cli_admin import PROPERTIES, eventually, fails, ok, ok_json, running_cluster

TOPIC = "plain"
GROUP = "keeper"
METADATA_DIR = f"{CLUSTER_METADATA_TOPIC}-0"
CREATION_PROHIBITED = "Creation of internal topic {} is prohibited."


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    for c in running_cluster(tmp_path_factory.mktemp("internal-topics"), PROPERTIES):
        assert c.create_topic(TOPIC, 3, 3).error_code == 0
        c.wait_for_leaders(TOPIC)
        # An admin commit creates __consumer_offsets (through the coordinator's own path) and a group.
        ok(c, "groups", "reset-offsets", GROUP, "--topic", f"{TOPIC}:0", "--to-offset", "0", "--execute")
        c.wait_for_leaders(GROUP_METADATA_TOPIC)
        yield c


def active_controller_is(cluster: LocalCluster, node: int) -> bool:
    """An empty DeleteTopics writes nothing; only the active controller answers it NONE."""
    answer = cluster.controller_stub(node).DeleteTopics(cpb.DeleteTopicsRequest(), timeout=10)
    return answer.error_code == Error.NONE


def active_controller(cluster: LocalCluster) -> int:
    return eventually(lambda: next((n for n in cluster.controllers if active_controller_is(cluster, n)), None),
                      "an active controller")


def topic_names(cluster: LocalCluster) -> set[str]:
    return {t.name for t in cluster.metadata().topics}


def partition_count(cluster: LocalCluster, topic: str) -> int:
    (described,) = cluster.metadata(topics=[topic]).topics
    assert described.error_code == 0
    return len(described.partitions)


def metadata_logs(cluster: LocalCluster) -> dict[int, tuple[bool, int]]:
    """Every node's quorum directory: (quorum-state present, bytes of its .log segments)."""
    state = {}
    for node in cluster.controllers + cluster.brokers:
        directory = cluster.plans[node].home / "data" / METADATA_DIR
        state[node] = ((directory / "quorum-state").is_file(),
                       sum(f.stat().st_size for f in directory.glob("*.log")))
    return state


def committed(cluster: LocalCluster) -> list[tuple[int, int]]:
    return [(o["partition"], o["committed"]) for o in ok_json(cluster, "groups", "describe", GROUP)["offsets"]]


def produce(cluster: LocalCluster, topic: str) -> bpb.ProduceResponse.PartitionResponse:
    batch = encode_batch([Record(None, b"not metadata")])
    request = bpb.ProduceRequest(acks=-1, timeout_ms=5000, topics=[bpb.ProduceRequest.TopicData(
        name=topic, partitions=[bpb.ProduceRequest.PartitionData(index=0, records=batch)])])
    (topic_answer,) = cluster.broker_stub(cluster.brokers[0]).Produce(request, timeout=15).responses
    (answer,) = topic_answer.partitions
    return answer


def fetch_error(cluster: LocalCluster, topic: str) -> int:
    request = bpb.FetchRequest(replica_id=-1, max_wait_ms=0, max_bytes=1 << 20, topics=[bpb.FetchRequest.FetchTopic(
        topic=topic, partitions=[bpb.FetchRequest.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
            partition_max_bytes=1 << 20)])])
    for broker in cluster.brokers:
        (topic_answer,) = cluster.broker_stub(broker).Fetch(request, timeout=15).responses
        (answer,) = topic_answer.partitions
        assert answer.error_code != Error.NONE and not len(answer.records)
    return answer.error_code


def test_cluster_metadata_is_no_topic(cluster) -> None:
    logs = metadata_logs(cluster)
    assert all(present for present, _ in logs.values())
    broker = cluster.broker_stub(cluster.brokers[0])
    controller = cluster.controller_stub(active_controller(cluster))
    create = cpb.CreateTopicsRequest(topics=[cpb.CreateTopicsRequest.CreatableTopic(
        name=CLUSTER_METADATA_TOPIC, num_partitions=1, replication_factor=1)])
    for stub in (broker, controller):  # the controller refuses it from anyone, not only from clients
        (result,) = stub.CreateTopics(create, timeout=15).topics
        assert (result.error_code, result.error_message) == (
            Error.INVALID_REQUEST, CREATION_PROHIBITED.format(CLUSTER_METADATA_TOPIC))
        (result,) = stub.DeleteTopics(cpb.DeleteTopicsRequest(names=[CLUSTER_METADATA_TOPIC]), timeout=15).topics
        assert result.error_code == Error.INVALID_REQUEST and "Deletion of internal topic" in result.error_message
        (result,) = stub.CreatePartitions(cpb.CreatePartitionsRequest(topics=[cpb.CreatePartitionsRequest.Topic(
            name=CLUSTER_METADATA_TOPIC, count=2)]), timeout=15).topics
        assert result.error_code == Error.INVALID_REQUEST
    produced = produce(cluster, CLUSTER_METADATA_TOPIC)
    assert (produced.error_code, produced.error_message) == (
        Error.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {CLUSTER_METADATA_TOPIC}")
    assert fetch_error(cluster, CLUSTER_METADATA_TOPIC) == Error.UNKNOWN_TOPIC_OR_PARTITION
    fails(cluster, "topics", "create", CLUSTER_METADATA_TOPIC, "--partitions", "1", error="INVALID_REQUEST")
    # For the tools it is no topic at all (the raw requests above show what the broker answers).
    # The tools wait for a topic they do not know (max.block.ms, default.api.timeout.ms: 60 s each); 1.5 s will do.
    fails(cluster, "produce", CLUSTER_METADATA_TOPIC, "--partition", "0", "--producer-property", "max.block.ms=1500",
          stdin="x\n", error="UNKNOWN_TOPIC_OR_PARTITION")
    fails(cluster, "consume", CLUSTER_METADATA_TOPIC, "--partition", "0", "--offset", "0", "--timeout-ms", "1500",
          "--consumer-property", "default.api.timeout.ms=1500", error="UNKNOWN_TOPIC_OR_PARTITION")
    fails(cluster, "topics", "delete", CLUSTER_METADATA_TOPIC, error="not allowed to be marked for deletion")
    # Nothing changed: no such topic, and every node's quorum log is where it was, none shorter.
    assert CLUSTER_METADATA_TOPIC not in topic_names(cluster)
    after = metadata_logs(cluster)
    assert all(present and after[n][1] >= logs[n][1] for n, (present, _) in after.items())


def test_the_offsets_topic_is_the_brokers_own(cluster) -> None:
    partitions = partition_count(cluster, GROUP_METADATA_TOPIC)
    before = committed(cluster)
    assert before == [(0, 0)]
    broker = cluster.broker_stub(cluster.brokers[0])
    controller = cluster.controller_stub(active_controller(cluster))
    create = cpb.CreateTopicsRequest(topics=[
        cpb.CreateTopicsRequest.CreatableTopic(name="fresh", num_partitions=1, replication_factor=1),
        cpb.CreateTopicsRequest.CreatableTopic(name=GROUP_METADATA_TOPIC, num_partitions=1, replication_factor=1)],
        validate_only=True)
    fresh, internal = broker.CreateTopics(create, timeout=15).topics  # the other topic still gets its answer
    assert (fresh.name, fresh.error_code) == ("fresh", Error.NONE)
    assert (internal.error_code, internal.error_message) == (
        Error.INVALID_REQUEST, CREATION_PROHIBITED.format(GROUP_METADATA_TOPIC))
    for stub in (broker, controller):
        (result,) = stub.DeleteTopics(cpb.DeleteTopicsRequest(names=[GROUP_METADATA_TOPIC]), timeout=15).topics
        assert result.error_code == Error.INVALID_TOPIC_EXCEPTION
        assert "internal topic and is not allowed to be marked for deletion" in result.error_message
        (result,) = stub.CreatePartitions(cpb.CreatePartitionsRequest(topics=[cpb.CreatePartitionsRequest.Topic(
            name=GROUP_METADATA_TOPIC, count=partitions + 1)]), timeout=15).topics
        assert result.error_code == Error.INVALID_TOPIC_EXCEPTION and "cannot be changed" in result.error_message
    produced = produce(cluster, GROUP_METADATA_TOPIC)
    assert (produced.error_code, produced.error_message) == (
        Error.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {GROUP_METADATA_TOPIC}")
    fails(cluster, "produce", GROUP_METADATA_TOPIC, "--producer-property", "max.block.ms=1500", stdin="x\n",
          error="INVALID_TOPIC_EXCEPTION")
    fails(cluster, "topics", "delete", GROUP_METADATA_TOPIC,
          error=f"Topic {GROUP_METADATA_TOPIC} is a kafka internal topic and is not allowed to be marked for deletion.")
    fails(cluster, "topics", "add-partitions", GROUP_METADATA_TOPIC, "--partitions", str(partitions + 1),
          error="The number of partitions for the internal topics")
    # Nothing changed: the topic, its partition count and the group's offsets are all still there.
    assert partition_count(cluster, GROUP_METADATA_TOPIC) == partitions
    assert "fresh" not in topic_names(cluster)
    assert committed(cluster) == before


def test_one_request_writes_at_most_the_cap(cluster) -> None:
    broker = cluster.broker_stub(cluster.brokers[0])
    line = fails(cluster, "topics", "add-partitions", TOPIC, "--partitions", "100000", error="POLICY_VIOLATION")
    assert str(MAX_RECORDS_PER_USER_OP) in line
    fails(cluster, "topics", "create", "huge", "--partitions", "100000", "--replication-factor", "3",
          error="POLICY_VIOLATION")

    def create(partitions: int) -> cpb.CreateTopicsResponse.Result:
        request = cpb.CreateTopicsRequest(validate_only=True, topics=[cpb.CreateTopicsRequest.CreatableTopic(
            name="huge", num_partitions=partitions, replication_factor=3)])
        (result,) = broker.CreateTopics(request, timeout=60).topics
        return result
    # One TopicRecord and the partitions: the cap is reached, then passed by one.
    assert create(MAX_RECORDS_PER_USER_OP - 1).error_code == Error.NONE
    assert create(MAX_RECORDS_PER_USER_OP).error_code == Error.POLICY_VIOLATION
    assert partition_count(cluster, TOPIC) == 3
    assert "huge" not in topic_names(cluster)


def test_a_controller_that_loses_leadership_says_why(cluster) -> None:
    # Last in the module: it moves the active controller. Paused past the
    # fetch timeout, the leader is replaced; resumed, it learns so and warns.
    old = active_controller(cluster)
    cluster.pause(old)
    try:
        eventually(lambda: next((n for n in cluster.controllers if n != old and active_controller_is(cluster, n)),
                                None), "another active controller")
    finally:
        cluster.resume(old)
    line = eventually(lambda: next((l for l in cluster.log_text(old).splitlines()
                                    if "is no longer the active controller" in l), None), "the old leader's warning")
    assert " WARNING " in line and f"node {old} " in line

