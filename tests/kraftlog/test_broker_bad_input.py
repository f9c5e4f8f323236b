"""Bad input to a real cluster (three controllers, three brokers): unknown
topics and partitions, requests to brokers that do not lead, stale leader
epochs, offsets out of range, corrupt, truncated and oversized batches,
requests over the gRPC size limit or that do not decode, invalid topic names
and configs, and a second broker registering under a live broker's id.

Each is answered with Kafka's error code (or the gRPC status for a request
that never reached a handler); no process dies, nothing is appended by a
refused request, and every record acknowledged before is still served.
One cluster serves the whole module; the last test checks it.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

import grpc
import pytest

from kafka_protocol.errors import Errors
from devcluster.local_cluster import CLUSTER_ID, RETRIABLE_ADMIN_ERRORS, LocalCluster
from devcluster.local_processes import wait_until
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from kafka_protocol import batch as b
from kafka_protocol.records import Record, encode_batch, iter_batches

PROPERTIES = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "broker.session.timeout.ms": 2000,
    "broker.heartbeat.interval.ms": 500,
    "replica.fetch.wait.max.ms": 200,
    "replica.fetch.backoff.ms": 200,
}
A, B, C = 4, 5, 6  # the brokers (controllers are 1-3)
GOOD = "good"        # on A (leader) and B; C holds no replica
SMALL = "small"      # max.message.bytes=1024
EPOCHS = "epochs"    # on C (leader) and B, for leader epoch changes



@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("bad-input"), controllers=3, brokers=3, properties=PROPERTIES)
    with cluster.running(timeout=30) as c:  # every process still running is killed by PID at the end
        create(c, GOOD, assignments=[(A, B)])
        create(c, SMALL, assignments=[(A, B)], configs={"max.message.bytes": "1024"})
        create(c, EPOCHS, assignments=[(C, B)])
        for topic, leader in ((GOOD, A), (SMALL, A), (EPOCHS, C)):
            wait_until(lambda: leader_of(c, leader, topic) == leader, 30, f"{topic} led by broker {leader}")
        yield c


@pytest.fixture(scope="module")
def acknowledged(cluster) -> list[bytes]:
    """The values of GOOD acknowledged so far, in offset order; the last test reads them back."""
    values = [f"first-{i}".encode() for i in range(5)]
    assert produce_values(cluster, A, GOOD, values).error_code == Errors.NONE
    return values


def create(c: LocalCluster, name: str, *, assignments: Optional[list[tuple[int, ...]]] = None,
           configs: Optional[Mapping[str, str]] = None) -> cpb.CreateTopicsResponse.Result:
    """CreateTopics through broker C, retried while no controller takes it; the topic's result."""
    topic = cpb.CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=-1 if assignments else 1, replication_factor=-1 if assignments else 1,
        configs=[cpb.ConfigEntry(name=k, value=v) for k, v in (configs or {}).items()])
    for index, replicas in enumerate(assignments or ()):
        topic.assignments.add(partition_index=index, broker_ids=replicas)

    def answered() -> Optional[cpb.CreateTopicsResponse]:
        response = c.broker_stub(C).CreateTopics(cpb.CreateTopicsRequest(topics=[topic]), timeout=30)
        return None if response.error_code in RETRIABLE_ADMIN_ERRORS else response

    response = wait_until(answered, 30, f"CreateTopics {name!r}", interval=0.2)
    assert response.error_code == Errors.NONE, response
    return response.topics[0]


def leader_of(c: LocalCluster, by: int, topic: str) -> Optional[int]:
    answer = c.metadata(by, [topic])
    if answer is None or answer.topics[0].error_code:
        return None
    return answer.topics[0].partitions[0].leader_id


def produce(c: LocalCluster, broker: int, topic: str, records: bytes, partition: int = 0,
            acks: int = -1) -> bpb.ProduceResponse.PartitionResponse:
    response = c.broker_stub(broker).Produce(bpb.ProduceRequest(acks=acks, timeout_ms=10000, topics=[
        bpb.ProduceRequest.TopicData(name=topic, partitions=[
            bpb.ProduceRequest.PartitionData(index=partition, records=records)])]), timeout=20)
    return response.responses[0].partitions[0]


def batch_of(values: list[bytes]) -> bytes:
    return encode_batch([Record(None, v, 1_700_000_000_000 + i) for i, v in enumerate(values)])


def produce_values(c: LocalCluster, broker: int, topic: str, values: list[bytes]
                   ) -> bpb.ProduceResponse.PartitionResponse:
    return produce(c, broker, topic, batch_of(values))


def fetch(c: LocalCluster, broker: int, topic: str, offset: int = 0, partition: int = 0,
          epoch: int = -1) -> bpb.FetchResponse.PartitionData:
    response = c.broker_stub(broker).Fetch(bpb.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, topics=[
        bpb.FetchRequest.FetchTopic(topic=topic, partitions=[bpb.FetchRequest.FetchPartition(
            partition=partition, current_leader_epoch=epoch, fetch_offset=offset, last_fetched_epoch=-1,
            partition_max_bytes=1 << 20)])]), timeout=10)
    return response.responses[0].partitions[0]


def list_offset(c: LocalCluster, broker: int, topic: str, partition: int = 0, epoch: int = -1,
                timestamp: int = -1) -> bpb.ListOffsetsResponse.ListOffsetsPartitionResponse:
    response = c.broker_stub(broker).ListOffsets(bpb.ListOffsetsRequest(replica_id=-1, topics=[
        bpb.ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
            bpb.ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, current_leader_epoch=epoch,
                                                        timestamp=timestamp)])]), timeout=10)
    return response.topics[0].partitions[0]


def log_end(c: LocalCluster, topic: str = GOOD) -> int:
    """The leader's high watermark, which acks=all keeps at its log end here."""
    answer = list_offset(c, A, topic)
    assert answer.error_code == Errors.NONE, answer
    return answer.offset


def test_unknown_topics_and_partitions(cluster) -> None:
    for broker in cluster.brokers:
        for topic, partition in (("no-such-topic", 0), (GOOD, 1), (GOOD, 1_000_000), (GOOD, -1)):
            answer = produce(cluster, broker, topic, batch_of([b"x"]), partition)
            assert answer.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION, (broker, topic, partition, answer)
            assert fetch(cluster, broker, topic, partition=partition).error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
            assert list_offset(cluster, broker, topic, partition).error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
        described = cluster.metadata(broker, ["no-such-topic"])
        assert described.topics[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_requests_to_brokers_that_do_not_lead(cluster, acknowledged) -> None:
    leader_epoch = cluster.metadata(A, [GOOD]).topics[0].partitions[0].leader_epoch
    # B follows the partition, C holds no replica of it: both name the leader.
    for broker in (B, C):
        refused = produce_values(cluster, broker, GOOD, [b"to a non-leader"])
        assert refused.error_code == Errors.NOT_LEADER_OR_FOLLOWER, refused
        assert (refused.current_leader_id, refused.current_leader_epoch) == (A, leader_epoch)
        fetched = fetch(cluster, broker, GOOD)
        assert fetched.error_code == Errors.NOT_LEADER_OR_FOLLOWER and not fetched.records, fetched
        assert (fetched.current_leader_id, fetched.current_leader_epoch) == (A, leader_epoch)
        assert list_offset(cluster, broker, GOOD).error_code == Errors.NOT_LEADER_OR_FOLLOWER
    assert log_end(cluster) == len(acknowledged)


def test_stale_and_future_leader_epochs(cluster) -> None:
    """A controlled shutdown of C moves EPOCHS to B in a new leader epoch;
    requests still carrying C's epoch are fenced."""
    first_epoch = cluster.metadata(C, [EPOCHS]).topics[0].partitions[0].leader_epoch
    assert produce_values(cluster, C, EPOCHS, [b"in the first epoch"]).error_code == Errors.NONE
    assert cluster.stop(C) == 0
    wait_until(lambda: leader_of(cluster, B, EPOCHS) == B, 30, "B leading epochs")
    epoch = cluster.metadata(B, [EPOCHS]).topics[0].partitions[0].leader_epoch
    assert epoch > first_epoch
    try:
        stale = fetch(cluster, B, EPOCHS, epoch=first_epoch)
        assert stale.error_code == Errors.FENCED_LEADER_EPOCH and not stale.records, stale
        assert list_offset(cluster, B, EPOCHS, epoch=first_epoch).error_code == Errors.FENCED_LEADER_EPOCH
        assert fetch(cluster, B, EPOCHS, epoch=epoch + 1).error_code == Errors.UNKNOWN_LEADER_EPOCH
        current = fetch(cluster, B, EPOCHS, epoch=epoch)
        assert current.error_code == Errors.NONE and current.high_watermark == 1, current
    finally:
        cluster.start(C)
        cluster.wait_for_brokers([C], among=[A, B, C])


def test_offsets_out_of_range_and_bad_list_offsets(cluster, acknowledged) -> None:
    end = log_end(cluster)
    assert fetch(cluster, A, GOOD, offset=end).error_code == Errors.NONE  # the log end: nothing yet
    for offset in (end + 1, end + 1000, -1):
        answer = fetch(cluster, A, GOOD, offset=offset)
        assert answer.error_code == Errors.OFFSET_OUT_OF_RANGE and not answer.records, (offset, answer)
    assert list_offset(cluster, A, GOOD, timestamp=-3).error_code == Errors.INVALID_REQUEST


def test_corrupt_truncated_and_malformed_batches_append_nothing(cluster, acknowledged) -> None:
    good = batch_of([b"a good record", b"and another"])
    in_value = bytearray(good)
    in_value[-3] ^= 0x01  # a record byte, covered by the CRC
    in_crc = bytearray(good)
    in_crc[b.CRC_OFFSET] ^= 0xFF
    end = log_end(cluster)
    for records, error in (
        (bytes(in_value), Errors.CORRUPT_MESSAGE),
        (bytes(in_crc), Errors.CORRUPT_MESSAGE),
        (good + bytes(in_value), Errors.CORRUPT_MESSAGE),  # one bad batch refuses the whole request
        (good[:-5], Errors.CORRUPT_MESSAGE),               # truncated records
        (good[:b.HEADER_SIZE - 10], Errors.CORRUPT_MESSAGE),  # truncated header
        (b"", Errors.INVALID_RECORD),                      # no batch at all
    ):
        answer = produce(cluster, A, GOOD, records)
        assert answer.error_code == error, (records, answer)
    assert produce(cluster, A, GOOD, good, acks=3).error_code == Errors.INVALID_REQUIRED_ACKS
    assert log_end(cluster) == end
    # The same batch unharmed is taken at the offset the refused ones did not use.
    answer = produce(cluster, A, GOOD, good)
    assert answer.error_code == Errors.NONE and answer.base_offset == end, answer
    acknowledged += [b"a good record", b"and another"]


def test_a_batch_over_max_message_bytes(cluster) -> None:
    refused = produce_values(cluster, A, SMALL, [b"x" * 2000])
    assert refused.error_code == Errors.MESSAGE_TOO_LARGE, refused
    assert log_end(cluster, SMALL) == 0
    assert produce_values(cluster, A, SMALL, [b"x" * 500]).error_code == Errors.NONE


def raw_call(c: LocalCluster, broker: int, method: str, payload: bytes, *, unlimited: bool = False) -> grpc.RpcError:
    """Call KafkaBroker/`method` with `payload` as the request bytes; the error it must end with."""
    options = [("grpc.max_send_message_length", -1)] if unlimited else []
    with grpc.insecure_channel(c.broker_addresses[broker], options=options) as channel:
        call: Callable[..., bytes] = channel.unary_unary(f"/kraftlog.broker.v1.KafkaBroker/{method}")
        with pytest.raises(grpc.RpcError) as failed:
            call(payload, timeout=20)
    return failed.value


def test_requests_over_the_size_limit_or_undecodable(cluster) -> None:
    too_big = bpb.ProduceRequest(acks=-1, timeout_ms=1000, topics=[bpb.ProduceRequest.TopicData(
        name=GOOD, partitions=[bpb.ProduceRequest.PartitionData(index=0, records=bytes(9 << 20))])])
    error = raw_call(cluster, A, "Produce", too_big.SerializeToString(), unlimited=True)
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error
    # A length-delimited field whose length runs past the end of the message.
    undecodable = b"\x1a\x40only a few bytes"
    for method in bpb.DESCRIPTOR.services_by_name["KafkaBroker"].methods:
        error = raw_call(cluster, B, method.name, undecodable)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, (method.name, error)
        assert method.input_type.name in error.details()


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "with space", "x" * 250, "ümlaut"])
def test_invalid_topic_names(cluster, name) -> None:
    result = create(cluster, name)
    assert result.error_code == Errors.INVALID_TOPIC_EXCEPTION, result
    assert result.error_message


@pytest.mark.parametrize("configs", [
    {"no.such.config": "1"},
    {"min.insync.replicas": "zero"},
    {"min.insync.replicas": "0"},
    {"max.message.bytes": "-5"},
    {"unclean.leader.election.enable": "maybe"},
    {"cleanup.policy": "shred"},
])
def test_invalid_topic_configs(cluster, configs) -> None:
    result = create(cluster, "configured", configs=configs)
    assert result.error_code == Errors.INVALID_CONFIG, result
    assert next(iter(configs)) in result.error_message
    assert cluster.metadata(A, ["configured"]).topics[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


def register(c: LocalCluster, request: cpb.BrokerRegistrationRequest) -> cpb.BrokerRegistrationResponse:
    """To the active controller, found through NOT_CONTROLLER answers."""
    def answered() -> Optional[cpb.BrokerRegistrationResponse]:
        for controller in c.controllers:
            response = c.controller_stub(controller).BrokerRegistration(request, timeout=10)
            if response.error_code != Errors.NOT_CONTROLLER:
                return response
        return None

    return wait_until(answered, 20, "an answer from the active controller", interval=0.2)


def test_a_second_broker_registering_with_a_live_brokers_id(cluster) -> None:
    port = int(cluster.broker_addresses[A].rsplit(":", 1)[1]) + 1
    impostor = cpb.BrokerRegistrationRequest(
        broker_id=A, cluster_id=CLUSTER_ID, incarnation_id="another-incarnation",
        listeners=[mpb.BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=port, security_protocol="PLAINTEXT")])
    answer = register(cluster, impostor)
    assert answer.error_code == Errors.DUPLICATE_BROKER_REGISTRATION, answer
    stranger = cpb.BrokerRegistrationRequest(broker_id=A, cluster_id="another-cluster", incarnation_id="x")
    assert register(cluster, stranger).error_code == Errors.INCONSISTENT_CLUSTER_ID
    # The real broker A keeps its registration and its address.
    seen = {broker.node_id: broker.port for broker in cluster.metadata(C).brokers}
    assert seen[A] == port - 1


def test_afterwards_every_node_runs_and_nothing_acknowledged_was_lost(cluster, acknowledged) -> None:
    nodes = (*cluster.controllers, *cluster.brokers)
    assert all(cluster.alive(node) for node in nodes)
    assert not [node for node in nodes if "Traceback" in cluster.log_text(node)]  # no handler failed
    cluster.wait_for_brokers()
    more = [b"after the bad input"]
    answer = produce_values(cluster, A, GOOD, more)
    assert answer.error_code == Errors.NONE and answer.base_offset == len(acknowledged), answer
    acknowledged += more
    values: list[bytes] = []
    offset = 0
    while offset < len(acknowledged):
        fetched = fetch(cluster, A, GOOD, offset)
        assert fetched.error_code == Errors.NONE and fetched.records, fetched
        for batch in iter_batches(fetched.records):
            values += [r.value for r in batch.records]
            offset = batch.header.last_offset + 1
    assert values == acknowledged
    assert fetched.high_watermark == len(acknowledged)
    # The brokers of the refused requests still serve: B and C name A as the leader.
    for broker in (B, C):
        assert leader_of(cluster, broker, GOOD) == A
