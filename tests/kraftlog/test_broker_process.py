"""Brokers as real processes: three controllers and three brokers (or three
combined nodes) on 127.0.0.1, spoken to over gRPC as a client would.

Brokers register and are unfenced; a topic is created through a broker;
acks=all produces are read back byte for byte from every partition's leader;
after kill -9 of a leader's broker, new leaders come from the ISR and every
acknowledged record is still there, and the restarted broker rejoins every
ISR; SIGTERM is a controlled shutdown; brokers keep serving through a kill -9
of the active controller and follow its successor.
"""
from __future__ import annotations

import time

import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from kafka_protocol.errors import Errors
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until
from kraftlog_api import broker_pb2 as bpb
from kafka_protocol import batch as b
from kafka_protocol.records import Record, encode_batch

PROPERTIES = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "broker.session.timeout.ms": 2000,
    "broker.heartbeat.interval.ms": 500,
    "replica.fetch.wait.max.ms": 200,
    "replica.fetch.backoff.ms": 200,
}
TOPIC = "orders"
PARTITIONS = 6
BATCHES = 4
RECORDS_PER_BATCH = 10


@pytest.fixture(scope="module")
def module_cluster(tmp_path_factory):
    """One 3 + 3 cluster for the module: each test has its own topic."""
    c = LocalCluster(tmp_path_factory.mktemp("broker-process"), controllers=3, brokers=3, properties=PROPERTIES)
    try:
        c.start()
        yield c
    finally:
        c.close()


@pytest.fixture
def cluster(module_cluster):
    """The module's cluster with every node running, whatever a test before left killed or
    stopped (a test that failed half-way through its kill and restart included)."""
    module_cluster.start_missing()
    return module_cluster


@pytest.fixture
def combined(tmp_path):
    c = LocalCluster(tmp_path, combined=3, properties=PROPERTIES)
    try:
        c.start()
        yield c
    finally:
        c.close()


def produce(stub, partition: int, records: bytes, acks: int = -1,
            topic: str = TOPIC) -> bpb.ProduceResponse.PartitionResponse:
    response = stub.Produce(bpb.ProduceRequest(acks=acks, timeout_ms=10000, topics=[bpb.ProduceRequest.TopicData(
        name=topic, partitions=[bpb.ProduceRequest.PartitionData(index=partition, records=records)])]), timeout=20)
    return response.responses[0].partitions[0]


def fetch(stub, partition: int, offset: int) -> bpb.FetchResponse.PartitionData:
    response = stub.Fetch(bpb.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, topics=[
        bpb.FetchRequest.FetchTopic(topic=TOPIC, partitions=[bpb.FetchRequest.FetchPartition(
            partition=partition, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
            partition_max_bytes=1 << 20)])]), timeout=10)
    return response.responses[0].partitions[0]


def read_all(stub, partition: int, end: int) -> bytes:
    """Every batch below `end` (which must be at or below the high watermark)."""
    data, offset = b"", 0
    while offset < end:
        answer = fetch(stub, partition, offset)
        assert answer.error_code == 0, answer
        assert answer.high_watermark >= end and answer.records, answer
        data += answer.records
        offset = b.end_offset(data)
    return data


def produce_everywhere(c: LocalCluster, topic: bpb.MetadataResponse.Topic) -> dict[int, bytes]:
    """acks=all batches to every partition's leader; per partition the bytes
    its log must hold: what we sent, stamped with the offsets and epoch the
    leader gave them (both outside the CRC)."""
    expected: dict[int, bytes] = {}
    for p in topic.partitions:
        stub = c.broker_stub(p.leader_id)
        written = b""
        for n in range(BATCHES):
            sent = encode_batch([Record(f"key-{i}".encode(), f"p{p.partition_index} b{n} r{i}".encode(),
                                        1_700_000_000_000 + i) for i in range(RECORDS_PER_BATCH)])
            answer = produce(stub, p.partition_index, sent)
            assert answer.error_code == 0, answer
            assert answer.base_offset == n * RECORDS_PER_BATCH
            stamped = bytearray(sent)
            b.stamp(stamped, 0, answer.base_offset, p.leader_epoch)
            written += stamped
        expected[p.partition_index] = written
    return expected


def test_brokers_serve_replicated_partitions_and_survive_a_leaders_kill_9(cluster) -> None:
    brokers = set(cluster.brokers)
    seen = cluster.wait_for_brokers()
    assert {broker.node_id for broker in seen.brokers} == brokers
    assert seen.controller_id in cluster.controllers

    created = cluster.create_topic(TOPIC, PARTITIONS, 3)
    assert created.error_code == 0 and created.num_partitions == PARTITIONS
    topic = cluster.wait_for_leaders(TOPIC)
    assert [p.partition_index for p in topic.partitions] == list(range(PARTITIONS))
    for p in topic.partitions:
        assert set(p.replica_nodes) == brokers and p.leader_id in p.replica_nodes
        assert set(p.isr_nodes) == brokers and not p.offline_replicas
    assert len({p.leader_id for p in topic.partitions}) == 3  # leaders spread over the brokers

    expected = produce_everywhere(cluster, topic)
    end = BATCHES * RECORDS_PER_BATCH
    for p in topic.partitions:
        assert read_all(cluster.broker_stub(p.leader_id), p.partition_index, end) == expected[p.partition_index]
        # Followers hold the same bytes, but serve no consumers.
        follower = next(r for r in p.replica_nodes if r != p.leader_id)
        assert fetch(cluster.broker_stub(follower), p.partition_index, 0).error_code == Errors.NOT_LEADER_OR_FOLLOWER

    victim = topic.partitions[0].leader_id
    isr_before = {p.partition_index: set(p.isr_nodes) for p in topic.partitions}
    led_before = {p.partition_index for p in topic.partitions if p.leader_id == victim}
    cluster.kill(victim)
    survivors = tuple(sorted(brokers - {victim}))

    # After the victim's session times out the controller fences it and
    # elects new leaders from the ISR.
    after = cluster.wait_for_leaders(TOPIC, among=survivors)
    for p in after.partitions:
        assert p.leader_id in isr_before[p.partition_index] and p.leader_id != victim
        assert victim not in p.isr_nodes
        if p.partition_index in led_before:
            assert p.leader_epoch > topic.partitions[p.partition_index].leader_epoch
    described = cluster.metadata(survivors[0])
    assert victim not in {broker.node_id for broker in described.brokers}

    for p in after.partitions:
        stub = cluster.broker_stub(p.leader_id)
        # A new leader's high watermark reaches the old one once the ISR fetched again.
        wait_until(lambda: fetch(stub, p.partition_index, 0).high_watermark >= end, 20,
                   f"partition {p.partition_index}'s high watermark on broker {p.leader_id}")
        assert read_all(stub, p.partition_index, end) == expected[p.partition_index]

    # The surviving ISR takes acks=all writes.
    more = encode_batch([Record(None, b"after the kill", 1_700_000_001_000)])
    answer = produce(cluster.broker_stub(after.partitions[0].leader_id), 0, more)
    assert answer.error_code == 0 and answer.base_offset == end

    # Restarted, the victim registers anew, catches up and its leaders ask
    # the controller to take it back into every ISR (AlterPartition).
    cluster.start(victim)
    cluster.wait_for_brokers(brokers)

    def rejoined():
        described = cluster.metadata(survivors[0], [TOPIC])
        return described is not None and all(set(p.isr_nodes) == brokers for p in described.topics[0].partitions)

    wait_until(rejoined, 30, f"broker {victim} back in every ISR")


def test_sigterm_is_a_controlled_shutdown(cluster) -> None:
    cluster.wait_for_brokers()
    cluster.create_topic("shutdown", PARTITIONS, 3)
    topic = cluster.wait_for_leaders("shutdown")
    leaving = topic.partitions[0].leader_id
    try:
        assert cluster.stop(leaving) == 0
        assert "controlled shutdown done" in cluster.log_text(leaving)
        # The controller moved every leadership away before the broker exited:
        # no election waits for a session timeout.
        survivors = [b for b in cluster.brokers if b != leaving]
        after = cluster.metadata(survivors[0], ["shutdown"]).topics[0]
        assert all(p.leader_id in survivors for p in after.partitions), after
    finally:  # every broker running again for the module's next test
        cluster.start(leaving)
        cluster.wait_for_brokers(timeout=60)


def services(channel) -> set[str]:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    answer = next(stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
    return {s.name for s in answer.list_services_response.service}


def serving(channel, service: str = "") -> bool:
    status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
    return status.status == health_pb2.HealthCheckResponse.SERVING


def test_combined_nodes_run_the_quorum_and_the_partitions_and_stop_one_at_a_time(combined) -> None:
    nodes = set(combined.brokers)
    assert set(combined.controllers) == nodes
    seen = combined.wait_for_brokers()
    assert {broker.node_id for broker in seen.brokers} == nodes
    # Each listener serves its own services, with health checking and reflection.
    broker_channel = combined.channel(combined.broker_addresses[1])
    controller_channel = combined.channel(combined.controller_addresses[1])
    assert services(broker_channel) == {"kraftlog.broker.v1.KafkaBroker", "kraftlog.broker.v1.FetchStream",
                                        "kraftlog.broker.v1.ProduceStream", "kraftlog.groups.v1.GroupCoordinator",
                                        "kraftlog.transactions.v1.TransactionCoordinator", "grpc.health.v1.Health",
                                        "grpc.reflection.v1alpha.ServerReflection"}
    assert {"kraftlog.quorum.v1.KRaftQuorum", "kraftlog.controller.v1.KRaftController"} <= services(controller_channel)
    wait_until(lambda: serving(broker_channel, "kraftlog.broker.v1.KafkaBroker"), 10, "the broker service SERVING")
    assert serving(broker_channel, "kraftlog.groups.v1.GroupCoordinator")
    assert serving(broker_channel, "kraftlog.broker.v1.FetchStream")
    assert serving(broker_channel, "kraftlog.broker.v1.ProduceStream")
    assert serving(broker_channel) and serving(controller_channel)
    combined.create_topic(TOPIC, 3, 3)
    topic = combined.wait_for_leaders(TOPIC)
    for p in topic.partitions:
        stub = combined.broker_stub(p.leader_id)
        sent = encode_batch([Record(b"k", b"combined", 1_700_000_000_000)])
        answer = produce(stub, p.partition_index, sent)
        assert answer.error_code == 0, answer
        stamped = bytearray(sent)
        b.stamp(stamped, 0, answer.base_offset, p.leader_epoch)
        assert read_all(stub, p.partition_index, 1) == stamped
    stop_one_at_a_time(combined)  # the same cluster: one start fewer


def stop_one_at_a_time(combined: LocalCluster) -> None:
    """Stopped one at a time (with TOPIC led), the first two nodes shut down in a controlled
    way; the last has no quorum left to answer and says so instead of
    waiting out its controlled shutdown timeout."""
    combined.wait_for_leaders(TOPIC)
    for node in (1, 2):
        assert combined.stop(node) == 0
        assert "controlled shutdown done" in combined.log_text(node)
    assert combined.stop(3) == 0
    last = combined.log_text(3)
    assert "the metadata quorum has had no leader" in last and "skipping the controlled shutdown" in last
    assert "no controlled shutdown within" not in last


def test_brokers_follow_a_new_active_controller_after_kill_9(cluster) -> None:
    cluster.wait_for_brokers()
    cluster.create_topic("controller-failover", 3, 3)
    topic = cluster.wait_for_leaders("controller-failover")
    active = wait_until(lambda: (m := cluster.metadata()) is not None and m.controller_id > 0 and m.controller_id,
                        20, "an active controller named by a broker")
    cluster.kill(active)

    # Partitions keep taking acks=all writes: their leaders do not need the controller.
    for p in topic.partitions:
        answer = produce(cluster.broker_stub(p.leader_id), p.partition_index,
                         encode_batch([Record(None, b"during the election", 1_700_000_000_000)]),
                         topic="controller-failover")
        assert answer.error_code == 0, answer

    def new_controller():
        described = cluster.metadata()
        return described is not None and described.controller_id not in (-1, active) and described.controller_id

    wait_until(new_controller, 20, "a new active controller")
    # The new controller knows every registration from the metadata log, and
    # the brokers' heartbeats keep their sessions with it past a session timeout.
    cluster.create_topic("after-failover", 3, 3)
    cluster.wait_for_leaders("after-failover")
    time.sleep(2 * PROPERTIES["broker.session.timeout.ms"] / 1000)  # two session timeouts go by
    assert cluster.create_topic("much-later", 3, 3).error_code == 0
    assert {b.node_id for b in cluster.metadata().brokers} == set(cluster.brokers)

