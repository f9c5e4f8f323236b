"""A Kafka-protocol listener on real brokers (1 controller, 2 brokers, each
with a gRPC listener and a Kafka one, CLIENTS), driven by kafka-python 3 -
a client nobody here wrote - and by raw frames for what a client would
never send: version negotiation, metadata per listener, records written
through one protocol and read through the other byte for byte, acks=0,
pipelining, the requests in the node's metrics. Hostile connections, which must leave the broker serving, are
tests/adversarial/test_hostile_kafka_connections.py."""
from __future__ import annotations

import struct
import time
import urllib.request
import uuid

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode
from prometheus_client.parser import text_string_to_metric_families

from client.producer import Producer
from devcluster.local_cluster import LocalCluster
from devcluster.read_back import read_back
from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.batch import iter_headers
from kafka_protocol.records import Record, encode_batch, iter_records
from kafka_protocol.wire import codec, versions
from kraftlog_server.server_config import KAFKA_PROTOCOL_LISTENERS
from tests.adversarial.kafka_wire import RawKafka, api_versions, kafka_address, request

IDLE_S = 10.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("kafka-listener"), controllers=1, brokers=2,
                      client_listener="PLAINTEXT",
                      properties={KAFKA_PROTOCOL_LISTENERS: "CLIENTS"}).running() as c:
        yield c


@pytest.fixture(scope="module")
def topic(cluster) -> str:
    cluster.create_topic("kafka-wire", 2, 2)
    cluster.wait_for_leaders("kafka-wire")
    return "kafka-wire"


# -- version negotiation and metadata ------------------------------------------------------

def test_kafka_python_negotiates_and_lists_topics(cluster, topic):
    admin = KafkaAdminClient(bootstrap_servers=cluster.client_bootstrap, request_timeout_ms=10000)
    try:
        negotiated = {int(key): value for key, value in admin.api_versions().items()}
        assert negotiated == {key: (r.min_version, r.max_version) for key, r in versions.ADVERTISED.items()}
        assert topic in admin.list_topics()
        (described,) = admin.describe_topics([topic])
        assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1]
        assert all(p["leader_id"] in cluster.brokers for p in described["partitions"])
    finally:
        admin.close()


def requests_served(cluster, request_name: str) -> float:
    """The brokers' kafka_network_requestmetrics_requests_total{request=request_name}, summed."""
    total = 0.0
    for broker in cluster.brokers:
        with urllib.request.urlopen(f"http://{cluster.metrics_addresses[broker]}/metrics", timeout=10) as answer:
            text = answer.read().decode()
        total += sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
                     if sample.name == "kafka_network_requestmetrics_requests_total"
                     and sample.labels["request"] == request_name)
    return total


def test_api_versions_at_every_version_and_past_the_last(cluster):
    served_before = requests_served(cluster, "ApiVersions")
    with RawKafka(kafka_address(cluster)) as raw:
        for version in range(5):
            answer = raw.call(api_versions(version), correlation_id=version)
            assert answer.error_code == ErrorCode.none
            assert {k.api_key for k in answer.api_keys} == set(versions.ADVERTISED)
            if version >= versions.FEATURES_FROM:  # KIP-584's tagged fields: the broker's feature levels
                assert [(f.name, f.max_version) for f in answer.supported_features] == [
                    ("metadata.version", 1), ("eligible.leader.replicas.version", 1)]
                assert [(f.name, f.max_version_level) for f in answer.finalized_features] == [("metadata.version", 1)]
                assert answer.finalized_features_epoch > 0
        # v5 does not exist (yet): UNSUPPORTED_VERSION in a v0 body, and the connection stays open
        frame = struct.pack(">hhih", versions.API_VERSIONS, 5, 99, -1) + b"\x00\x00"
        raw.send(struct.pack(">i", len(frame)) + frame)
        correlation_id, refused = raw.answer(ApiVersionsResponseV0)
        assert correlation_id == 99 and refused.error_code == ErrorCode.unsupported_version
        assert any(k.api_key == versions.API_VERSIONS and k.max_version == 4 for k in refused.api_keys)
        assert raw.call(api_versions(0), correlation_id=100).error_code == ErrorCode.none
    # The node's request metrics count a Kafka listener's requests as a gRPC listener's:
    # the six answered (a request of an unknown version is refused before it is one).
    assert requests_served(cluster, "ApiVersions") == served_before + 6


@pytest.mark.parametrize("version", [1, 8, 9, 12])
def test_metadata_lists_every_brokers_kafka_endpoint(cluster, topic, version):
    with RawKafka(kafka_address(cluster)) as raw:
        answer = raw.call(request(versions.METADATA, version, {
            "topics": None, "allow_auto_topic_creation": False, "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}))
    assert {(b.node_id, f"{b.host}:{b.port}") for b in answer.brokers} == set(cluster.client_addresses.items())
    (found,) = [t for t in answer.topics if t.name == topic]
    assert found.error_code == ErrorCode.none and len(found.partitions) == 2
    assert all(len(p.replica_nodes) == 2 for p in found.partitions)
    if version >= 10:
        grpc_topic = cluster.metadata(topics=[topic]).topics[0]
        assert found.topic_id.bytes == grpc_topic.topic_id


def test_metadata_by_topic_id_alone_is_unknown_topic_id(cluster):
    unknown = uuid.UUID(int=12345)
    with RawKafka(kafka_address(cluster)) as raw:
        answer = raw.call(request(versions.METADATA, 12, {
            "topics": [{"topic_id": unknown, "name": None}], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}))
    (found,) = answer.topics
    assert (found.error_code, found.name, found.topic_id) == (ErrorCode.unknown_topic_id, None, unknown)


# -- records through one protocol, read through the other ----------------------------------

RECORDS = [(f"key-{i}".encode(), f"value-{i}".encode() * (i % 7 + 1), [("h", str(i).encode())]) for i in range(60)]


def test_kafka_python_writes_and_the_grpc_consumer_reads_the_same_records(cluster, topic):
    producer = KafkaProducer(bootstrap_servers=cluster.client_bootstrap, acks="all", linger_ms=5,
                             request_timeout_ms=10000)  # idempotent by default: InitProducerId and sequences
    try:
        futures = [producer.send(topic, value=value, key=key, headers=headers, partition=i % 2)
                   for i, (key, value, headers) in enumerate(RECORDS)]
        producer.flush(timeout=30)
        sent = [f.get(timeout=30) for f in futures]
    finally:
        producer.close(timeout=10)
    assert {m.partition for m in sent} == {0, 1}
    got = read_back(cluster.bootstrap, topic, [0, 1], max_messages=len(RECORDS), idle_timeout_s=IDLE_S)
    by_offset = {(r.partition, r.offset): r for r in got}
    for (key, value, headers), meta in zip(RECORDS, sent):
        record = by_offset[(meta.partition, meta.offset)]
        assert (record.key, record.value, list(record.headers)) == (key, value, headers)
        assert record.timestamp == meta.timestamp


def test_the_grpc_producer_writes_and_kafka_python_reads_the_same_records(cluster):
    cluster.create_topic("grpc-to-kafka", 1, 2)
    cluster.wait_for_leaders("grpc-to-kafka")
    with Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"}) as producer:
        futures = [producer.produce("grpc-to-kafka", value, key=key, headers=headers, partition=0)
                   for key, value, headers in RECORDS]
        producer.flush()
        offsets = [f.result(timeout=30).offset for f in futures]
    consumer = KafkaConsumer(bootstrap_servers=cluster.client_bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=int(IDLE_S * 1000),
                             request_timeout_ms=10000)
    try:
        consumer.assign([TopicPartition("grpc-to-kafka", 0)])
        got = []
        for message in consumer:
            got.append(message)
            if len(got) == len(RECORDS):
                break
    finally:
        consumer.close()
    assert [m.offset for m in got] == offsets
    assert [(m.key, m.value, list(m.headers)) for m in got] == [(k, v, h) for k, v, h in RECORDS]


def test_kafka_python_consumes_through_incremental_fetch_sessions(cluster):
    """KIP-227 with a client nobody here wrote: kafka-python keeps a session
    per broker, and records produced after it went incremental still arrive."""
    cluster.create_topic("fetch-sessions", 2, 2)
    cluster.wait_for_leaders("fetch-sessions")
    producer = KafkaProducer(bootstrap_servers=cluster.client_bootstrap, acks="all", request_timeout_ms=10000)
    consumer = KafkaConsumer(bootstrap_servers=cluster.client_bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", fetch_max_wait_ms=200, request_timeout_ms=10000)
    try:
        consumer.assign([TopicPartition("fetch-sessions", p) for p in (0, 1)])

        def send_and_read(values: list[bytes]) -> list[bytes]:
            for i, value in enumerate(values):
                producer.send("fetch-sessions", value, partition=i % 2)
            producer.flush(timeout=30)
            got: list[bytes] = []
            deadline = time.monotonic() + 60
            while len(got) < len(values) and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=500).values():
                    got += [r.value for r in records]
            return got

        first = [b"before-%d" % i for i in range(20)]
        assert sorted(send_and_read(first)) == sorted(first)
        for _ in range(10):  # idle incremental fetches: nothing new on either partition
            consumer.poll(timeout_ms=200)
        sessions = consumer._fetcher._session_handlers  # the client's own state, nothing of ours
        assert sessions and all(h.next_metadata.session_id != 0 and h.next_metadata.epoch > 1
                                for h in sessions.values())
        second = [b"after-%d" % i for i in range(20)]
        assert sorted(send_and_read(second)) == sorted(second)
    finally:
        consumer.close()
        producer.close()


def grpc_fetch(cluster: LocalCluster, broker_id: int, topic: str, partition: int) -> bytes:
    answer = cluster.broker_stub(broker_id).Fetch(bpb.FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[bpb.FetchRequest.FetchTopic(
            topic=topic, partitions=[bpb.FetchRequest.FetchPartition(
                partition=partition, fetch_offset=0, current_leader_epoch=-1, last_fetched_epoch=-1,
                partition_max_bytes=1 << 20)])]), timeout=10)
    return bytes(answer.responses[0].partitions[0].records)


def test_kafka_pythons_batches_are_idempotent(cluster, topic):
    """kafka-python 3 is idempotent by default: InitProducerId gave it an id."""
    leader = next(p.leader_id for p in cluster.wait_for_leaders(topic).partitions if p.partition_index == 0)
    batches = [h for _, h in iter_headers(grpc_fetch(cluster, leader, topic, 0))]
    assert batches and all(h.producer_id >= 0 and h.base_sequence >= 0 for h in batches)


def test_fetch_answers_the_same_batch_bytes_on_both_listeners(cluster, topic):
    leader = next(p.leader_id for p in cluster.wait_for_leaders(topic).partitions if p.partition_index == 0)
    grpc_bytes = grpc_fetch(cluster, leader, topic, 0)
    assert grpc_bytes, "the earlier tests wrote records here"
    with RawKafka(kafka_address(cluster, leader)) as raw:
        for version in (4, 11, 12):
            answer = raw.call(request(versions.FETCH, version, {
                "replica_id": -1, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
                "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
                "topics": [{"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                            "fetch_offset": 0, "log_start_offset": -1,
                                                            "partition_max_bytes": 1 << 20}]}]}))
            partition = answer.responses[0].partitions[0]
            assert partition.error_code == ErrorCode.none and bytes(partition.records) == grpc_bytes


def test_list_offsets_earliest_and_latest(cluster, topic):
    leader = next(p.leader_id for p in cluster.wait_for_leaders(topic).partitions if p.partition_index == 1)
    with RawKafka(kafka_address(cluster, leader)) as raw:
        for version in (1, 5, 6):
            offsets = []
            for timestamp in (-2, -1):
                answer = raw.call(request(versions.LIST_OFFSETS, version, {
                    "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
                        {"partition_index": 1, "current_leader_epoch": -1, "timestamp": timestamp}]}]}))
                (partition,) = answer.topics[0].partitions
                assert partition.error_code == ErrorCode.none
                offsets.append(partition.offset)
            assert offsets == [0, len(RECORDS) // 2]


# -- acks=0, pipelining ----------------------------------------------------------------------

def produce_request(topic: str, acks: int, values: list[bytes], version: int = 9) -> object:
    now_ms = int(time.time() * 1000)
    batch = encode_batch([Record(None, v, now_ms) for v in values])
    return request(versions.PRODUCE, version, {"transactional_id": None, "acks": acks, "timeout": 10000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})


def test_acks_0_gets_no_answer_and_pipelined_requests_answer_in_order(cluster):
    cluster.create_topic("acks-zero", 1, 1)
    leader = cluster.wait_for_leaders("acks-zero").partitions[0].leader_id
    with RawKafka(kafka_address(cluster, leader)) as raw:
        # three requests in one write: Produce acks=0, ApiVersions, Produce acks=1
        acked = produce_request("acks-zero", 1, [b"c"])
        raw.send(codec.encode_request(produce_request("acks-zero", 0, [b"a", b"b"]), 1)
                 + codec.encode_request(api_versions(), 2)
                 + codec.encode_request(acked, 3))
        correlation_id, _ = raw.answer(codec.response_type(api_versions()))
        assert correlation_id == 2  # nothing came for 1
        correlation_id, produced = raw.answer(codec.response_type(acked))
        assert correlation_id == 3
        (partition,) = produced.responses[0].partition_responses
        assert partition.error_code == ErrorCode.none and partition.base_offset == 2  # after the acks=0 batch
    got = read_back(cluster.bootstrap, "acks-zero", [0], max_messages=3, idle_timeout_s=IDLE_S)
    assert [r.value for r in got] == [b"a", b"b", b"c"]


def test_records_written_through_kafka_are_the_batches_sent(cluster):
    """The batch bytes a Kafka client sends are stored as they are (but for
    the offsets and leader epoch the leader stamps outside the CRC)."""
    cluster.create_topic("kafka-bytes", 1, 1)
    leader = cluster.wait_for_leaders("kafka-bytes").partitions[0].leader_id
    values = [b"x" * 10, b"y" * 20]
    sent = produce_request("kafka-bytes", -1, values, version=3)
    with RawKafka(kafka_address(cluster, leader)) as raw:
        answer = raw.call(sent)
        assert answer.responses[0].partition_responses[0].error_code == ErrorCode.none
        fetched = raw.call(request(versions.FETCH, 11, {
            "replica_id": -1, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": "kafka-bytes", "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                                "fetch_offset": 0, "log_start_offset": -1,
                                                                "partition_max_bytes": 1 << 20}]}]}))
    stored = bytes(fetched.responses[0].partitions[0].records)
    original = sent.topic_data[0].partition_data[0].records
    # past baseOffset (8) and the length (4), the leader epoch (4) is stamped: the rest is what was sent
    assert len(stored) == len(original) and stored[16:] == original[16:] and stored[8:12] == original[8:12]
    assert [r.value for r in iter_records(stored)] == values


# -- requests a client may send but the broker refuses, per partition or per request -----------

def fetch_request(topic: str, session_id: int = 0) -> object:
    return request(versions.FETCH, 12, {
        "replica_id": -1, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": session_id, "session_epoch": 3 if session_id else -1, "forgotten_topics_data": [],
        "rack_id": "", "topics": [{"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                                   "fetch_offset": 0, "log_start_offset": -1,
                                                                   "partition_max_bytes": 1 << 20}]}]})


def test_refusals_answer_with_kafkas_codes_and_keep_the_connection(cluster):
    with RawKafka(kafka_address(cluster)) as raw:
        # a fetch session this broker never made
        assert raw.call(fetch_request("kafka-wire", session_id=42)).error_code == ErrorCode.fetch_session_id_not_found
        # clients may not write to an internal topic
        produced = raw.call(produce_request("__consumer_offsets", 1, [b"x"]))
        assert produced.responses[0].partition_responses[0].error_code == ErrorCode.invalid_topic_exception
        # a topic nobody made
        fetched = raw.call(fetch_request("no-such-topic"))
        assert fetched.responses[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition
        meta = raw.call(request(versions.METADATA, 12, {"topics": [{"topic_id": None, "name": "no-such-topic"}],
                                                        "allow_auto_topic_creation": True,
                                                        "include_topic_authorized_operations": False}))
        assert [(t.name, t.error_code) for t in meta.topics] == [("no-such-topic", ErrorCode.unknown_topic_or_partition)]
        assert raw.call(api_versions()).error_code == ErrorCode.none  # still open
