"""Admin and transaction APIs over the Kafka listener, driven by clients
nobody here wrote: confluent-kafka's AdminClient (librdkafka) and
kafka-python 3's KafkaAdminClient against one cluster (1 controller, 2
brokers, each with a gRPC listener and a Kafka one), plus raw frames for
what a client would not send."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic,
                                   ResourcePatternType, ResourceType, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType
from kafka.admin import NewPartitions as KpNewPartitions
from kafka.admin import NewTopic as KpNewTopic
from kio.schema.errors import ErrorCode

from devcluster.local_cluster import LocalCluster
from devcluster.read_back import read_back
from kafka_protocol.wire import versions
from kraftlog_server.server_config import KAFKA_PROTOCOL_LISTENERS
from tests.adversarial.kafka_wire import RawKafka, kafka_address, request

WAIT_S = 30.0  # bounds every client call; never part of an assert
PROPERTIES = {KAFKA_PROTOCOL_LISTENERS: "CLIENTS", "num.partitions": 3, "default.replication.factor": 2,
              "transaction.state.log.num.partitions": 3, "transaction.state.log.replication.factor": 2,
              "transaction.state.log.min.isr": 1}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("kafka-admin"), controllers=1, brokers=2,
                      client_listener="PLAINTEXT", properties=PROPERTIES).running() as c:
        yield c


@pytest.fixture(scope="module")
def admin(cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.client_bootstrap, "socket.timeout.ms": 10000})


def outcome(future) -> int:
    """The Kafka error code a confluent-kafka admin future ended with (0: done)."""
    try:
        future.result(timeout=WAIT_S)
        return 0
    except KafkaException as exc:
        return exc.args[0].code()


def partitions_of(cluster: LocalCluster, topic: str, count: int) -> int:
    """The partition count once it reaches `count` (bounded wait); what it is then."""
    deadline = time.monotonic() + WAIT_S
    while True:
        found = cluster.metadata(topics=[topic]).topics[0]
        if len(found.partitions) >= count or time.monotonic() > deadline:
            return len(found.partitions)
        time.sleep(0.1)


# -- confluent-kafka's AdminClient -------------------------------------------------------------

def test_create_topics_with_defaults_assignments_configs_and_validate_only(cluster, admin):
    futures = admin.create_topics([
        NewTopic("ck-defaults"),  # -1 / -1: num.partitions and default.replication.factor
        NewTopic("ck-placed", 2, replica_assignment=[[cluster.brokers[1], cluster.brokers[0]],
                                                [cluster.brokers[0], cluster.brokers[1]]]),
        NewTopic("ck-configured", 2, 2, config={"retention.ms": "3600000", "cleanup.policy": "compact"}),
    ], operation_timeout=10)
    assert {name: outcome(f) for name, f in futures.items()} == {"ck-defaults": 0, "ck-placed": 0,
                                                                 "ck-configured": 0}
    defaults = cluster.wait_for_leaders("ck-defaults")
    assert len(defaults.partitions) == 3 and all(len(p.replica_nodes) == 2 for p in defaults.partitions)
    placed = {p.partition_index: list(p.replica_nodes) for p in cluster.wait_for_leaders("ck-placed").partitions}
    assert placed == {0: [cluster.brokers[1], cluster.brokers[0]], 1: [cluster.brokers[0], cluster.brokers[1]]}
    checked = admin.create_topics([NewTopic("ck-validated", 1, 1)], validate_only=True)
    assert outcome(checked["ck-validated"]) == 0
    assert cluster.metadata(topics=["ck-validated"]).topics[0].error_code == KafkaError.UNKNOWN_TOPIC_OR_PART


@pytest.mark.parametrize("name, partitions, factor, code", [
    ("__cluster_metadata", 1, 1, KafkaError.INVALID_REQUEST),       # reserved: refused by the broker
    ("__consumer_offsets", 1, 1, KafkaError.INVALID_REQUEST),       # the brokers' own topic
    ("bad name!", 1, 1, KafkaError.TOPIC_EXCEPTION),                # not a legal topic name
    ("x" * 250, 1, 1, KafkaError.TOPIC_EXCEPTION),                  # too long
    ("ck-too-many-replicas", 1, 5, KafkaError.INVALID_REPLICATION_FACTOR),
    ("ck-zero-partitions", 0, 1, KafkaError.INVALID_PARTITIONS),
])
def test_create_topics_refusals(admin, name, partitions, factor, code):
    (future,) = admin.create_topics([NewTopic(name, partitions, factor)], operation_timeout=10).values()
    assert outcome(future) == code


def test_create_topics_refuses_a_huge_or_unknown_config(admin):
    futures = admin.create_topics([NewTopic("ck-huge-config", 1, 1, config={"retention.ms": "9" * 100}),
                                   NewTopic("ck-unknown-config", 1, 1, config={"no.such.setting": "1"})])
    assert {name: outcome(f) for name, f in futures.items()} == {
        "ck-huge-config": KafkaError.INVALID_CONFIG, "ck-unknown-config": KafkaError.INVALID_CONFIG}


def test_create_partitions_and_its_refusals(cluster, admin):
    cluster.create_topic("ck-grow", 1, 2)
    futures = admin.create_partitions([NewPartitions("ck-grow", 3)])
    assert outcome(futures["ck-grow"]) == 0
    assert partitions_of(cluster, "ck-grow", 3) == 3
    placed = admin.create_partitions([NewPartitions("ck-grow", 4, replica_assignment=[
        [cluster.brokers[1], cluster.brokers[0]]])])
    assert outcome(placed["ck-grow"]) == 0
    assert partitions_of(cluster, "ck-grow", 4) == 4
    grown = {p.partition_index: list(p.replica_nodes) for p in cluster.wait_for_leaders("ck-grow").partitions}
    assert grown[3] == [cluster.brokers[1], cluster.brokers[0]]
    refused = admin.create_partitions([NewPartitions("ck-grow", 2), NewPartitions("ck-no-such-topic", 2)])
    assert {name: outcome(f) for name, f in refused.items()} == {
        "ck-grow": KafkaError.INVALID_PARTITIONS, "ck-no-such-topic": KafkaError.UNKNOWN_TOPIC_OR_PART}


def test_describe_and_incrementally_alter_topic_configs(cluster, admin):
    cluster.create_topic("ck-configs", 1, 1)
    cluster.wait_for_leaders("ck-configs")
    resource = ConfigResource(ConfigResource.Type.TOPIC, "ck-configs")
    before = admin.describe_configs([resource])[resource].result(timeout=WAIT_S)
    assert before["retention.ms"].value == "604800000" and before["retention.ms"].is_default
    altered = admin.incremental_alter_configs([ConfigResource(ConfigResource.Type.TOPIC, "ck-configs",
                                                              incremental_configs=[
        ConfigEntry("retention.ms", "12345", incremental_operation=AlterConfigOpType.SET)])])
    assert outcome(next(iter(altered.values()))) == 0
    deadline = time.monotonic() + WAIT_S
    while True:  # the broker answers from its metadata image, which follows the controller
        after = admin.describe_configs([resource])[resource].result(timeout=WAIT_S)
        if after["retention.ms"].value == "12345" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert after["retention.ms"].value == "12345"
    assert after["retention.ms"].source == ConfigResource.Type.TOPIC.value - 1  # DYNAMIC_TOPIC_CONFIG (1)
    assert not after["retention.ms"].is_default
    bad = admin.incremental_alter_configs([ConfigResource(ConfigResource.Type.TOPIC, "ck-configs",
                                                          incremental_configs=[
        ConfigEntry("retention.ms", "not-a-number", incremental_operation=AlterConfigOpType.SET)])])
    assert outcome(next(iter(bad.values()))) == KafkaError.INVALID_CONFIG


def test_describe_broker_configs(cluster, admin):
    broker = cluster.brokers[0]
    resource = ConfigResource(ConfigResource.Type.BROKER, str(broker))
    configs = admin.describe_configs([resource])[resource].result(timeout=WAIT_S)
    assert configs["transaction.state.log.num.partitions"].value == "3"
    assert configs["log.retention.ms"].value is not None


def test_describe_configs_of_a_missing_topic_or_unknown_resource_type(admin):
    missing = ConfigResource(ConfigResource.Type.TOPIC, "ck-no-such-topic")
    assert outcome(admin.describe_configs([missing])[missing]) == KafkaError.UNKNOWN_TOPIC_OR_PART
    group = ConfigResource(ConfigResource.Type.GROUP, "some-group")
    assert outcome(admin.describe_configs([group])[group]) == KafkaError.INVALID_REQUEST


def test_describe_cluster(cluster, admin):
    described = admin.describe_cluster(request_timeout=WAIT_S).result(timeout=WAIT_S)
    assert described.cluster_id == cluster.metadata().cluster_id
    assert {(n.id, f"{n.host}:{n.port}") for n in described.nodes} == set(cluster.client_addresses.items())
    assert described.controller.id in cluster.brokers


def test_delete_topics(cluster, admin):
    cluster.create_topic("ck-doomed", 1, 1)
    futures = admin.delete_topics(["ck-doomed", "ck-never-was", "__cluster_metadata"], operation_timeout=10)
    codes = {name: outcome(f) for name, f in futures.items()}
    assert codes["ck-doomed"] == 0 and codes["ck-never-was"] == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert codes["__cluster_metadata"] != 0


# -- kafka-python 3's KafkaAdminClient (the newest versions of each message) -------------------

def test_kafka_python_creates_grows_describes_and_deletes(cluster):
    admin = KafkaAdminClient(bootstrap_servers=cluster.client_bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([KpNewTopic("kp-topic", 2, 2, topic_configs={"retention.ms": "7200000"})])
        assert len(cluster.wait_for_leaders("kp-topic").partitions) == 2
        admin.create_partitions({"kp-topic": KpNewPartitions(3)})
        assert partitions_of(cluster, "kp-topic", 3) == 3
        described = admin.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, "kp-topic")])
        assert described["topic"]["kp-topic"]["retention.ms"]["value"] == "7200000"
        cluster_info = admin.describe_cluster()
        assert {b["broker_id"] for b in cluster_info["brokers"]} == set(cluster.brokers)
        admin.delete_topics(["kp-topic"])
    finally:
        admin.close()
    deadline = time.monotonic() + WAIT_S
    while cluster.metadata(topics=["kp-topic"]).topics[0].error_code == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cluster.metadata(topics=["kp-topic"]).topics[0].error_code != 0


# -- raw frames ------------------------------------------------------------------------------

def test_delete_topics_v6_by_id_and_by_unknown_id(cluster):
    cluster.create_topic("raw-by-id", 1, 1)
    topic_id = uuid.UUID(bytes=cluster.wait_for_leaders("raw-by-id").topic_id)
    unknown = uuid.UUID(int=4242)
    with RawKafka(kafka_address(cluster)) as raw:
        answer = raw.call(request(versions.DELETE_TOPICS, 6, {"timeout": 10000, "topics": [
            {"name": None, "topic_id": topic_id}, {"name": None, "topic_id": unknown}]}))
    assert [(r.name, r.error_code) for r in answer.responses] == [
        ("raw-by-id", ErrorCode.none), (None, ErrorCode.unknown_topic_id)]


def test_offset_for_leader_epoch(cluster):
    cluster.create_topic("raw-epochs", 1, 2)
    leader = cluster.wait_for_leaders("raw-epochs").partitions[0]
    with RawKafka(kafka_address(cluster, leader.leader_id)) as raw:
        answer = raw.call(request(versions.OFFSET_FOR_LEADER_EPOCH, 4, {"replica_id": -1, "topics": [
            {"topic": "raw-epochs", "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                    "leader_epoch": leader.leader_epoch}]}]}))
    (partition,) = answer.topics[0].partitions
    assert partition.error_code == ErrorCode.none and partition.end_offset == 0
    assert partition.leader_epoch == leader.leader_epoch


def test_hostile_admin_requests(cluster):
    """What librdkafka's own checks would stop before sending: answered per item, the connection kept."""
    topic = {"assignments": (), "configs": ()}
    with RawKafka(kafka_address(cluster)) as raw:
        created = raw.call(request(versions.CREATE_TOPICS, 4, {"timeout": 5000, "validate_only": False, "topics": [
            {**topic, "name": "raw-neg-partitions", "num_partitions": -5, "replication_factor": 1},
            {**topic, "name": "raw-neg-factor", "num_partitions": 1, "replication_factor": -5},
            {**topic, "name": "raw-twice", "num_partitions": 1, "replication_factor": 1},
            {**topic, "name": "raw-twice", "num_partitions": 1, "replication_factor": 1},
            {"name": "raw-huge-config", "num_partitions": 1, "replication_factor": 1, "assignments": (),
             "configs": [{"name": "cleanup.policy", "value": "x" * 30_000}]}]}))
        assert [(t.name, t.error_code) for t in created.topics] == [
            ("raw-neg-partitions", ErrorCode.invalid_partitions),
            ("raw-neg-factor", ErrorCode.invalid_replication_factor),
            ("raw-twice", ErrorCode.invalid_request), ("raw-twice", ErrorCode.invalid_request),
            ("raw-huge-config", ErrorCode.invalid_config)]
        grown = raw.call(request(versions.CREATE_PARTITIONS, 1, {"timeout": 5000, "validate_only": False, "topics": [
            {"name": "__consumer_offsets", "count": 100, "assignments": None},
            {"name": "raw-nowhere", "count": -1, "assignments": None}]}))
        assert [r.error_code for r in grown.results][1] in (ErrorCode.unknown_topic_or_partition,
                                                             ErrorCode.invalid_partitions)
        assert grown.results[0].error_code != ErrorCode.none
        altered = raw.call(request(versions.INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": False, "resources": [
            {"resource_type": 99, "resource_name": "x", "configs": [
                {"name": "retention.ms", "config_operation": 0, "value": "1"}]},
            {"resource_type": 2, "resource_name": "__cluster_metadata", "configs": [
                {"name": "retention.ms", "config_operation": 0, "value": "1"}]},
            {"resource_type": 4, "resource_name": "", "configs": [
                {"name": "log.retention.ms", "config_operation": 9, "value": "1"}]}]}))
        assert all(r.error_code != ErrorCode.none for r in altered.responses)
        assert altered.responses[0].error_code == ErrorCode.invalid_request
        described = raw.call(request(versions.DESCRIBE_CONFIGS, 4, {"include_synonyms": True,
                                                                    "include_documentation": True, "resources": [
            {"resource_type": 4, "resource_name": "999", "configuration_keys": None},
            {"resource_type": 2, "resource_name": "__cluster_metadata", "configuration_keys": None}]}))
        assert [r.error_code for r in described.results] == [ErrorCode.invalid_request,
                                                              ErrorCode.unknown_topic_or_partition]
        assert raw.call(request(versions.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": True}
                                )).error_code == ErrorCode.none  # still open


def test_describe_cluster_of_controllers_is_unsupported(cluster):
    with RawKafka(kafka_address(cluster)) as raw:
        answer = raw.call(request(versions.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False,
                                                                "endpoint_type": 2}))
    assert answer.error_code == ErrorCode.unsupported_endpoint_type and answer.brokers == ()


# -- transactions: librdkafka's transactional producer, read_committed readers ---------------

TXN_RECORDS = 5


def consume_committed(cluster: LocalCluster, topic: str, expected: int) -> list[bytes]:
    """Every value an assign()-based read_committed confluent-kafka consumer sees (bounded)."""
    consumer = Consumer({"bootstrap.servers": cluster.client_bootstrap, "group.id": "ck-txn-reader",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    values: list[bytes] = []
    try:
        consumer.assign([ConfluentTopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF and len(values) >= expected:
                    break
                continue
            values.append(message.value())
    finally:
        consumer.close()
    return values


def test_a_committed_and_an_aborted_transaction_read_committed(cluster):
    cluster.create_topic("ck-txn", 1, 2)
    cluster.wait_for_leaders("ck-txn")
    producer = ConfluentProducer({"bootstrap.servers": cluster.client_bootstrap, "transactional.id": "ck-txn-id",
                                  "transaction.timeout.ms": 30000})
    producer.init_transactions(WAIT_S)
    for outcome_name in ("commit", "abort", "commit"):
        producer.begin_transaction()
        for i in range(TXN_RECORDS):
            producer.produce("ck-txn", f"{outcome_name}-{i}".encode(), partition=0)
        producer.flush(WAIT_S)
        if outcome_name == "commit":
            producer.commit_transaction(WAIT_S)
        else:
            producer.abort_transaction(WAIT_S)
    expected = [f"commit-{i}".encode() for i in range(TXN_RECORDS)] * 2
    assert consume_committed(cluster, "ck-txn", len(expected)) == expected
    grpc_read = read_back(cluster.bootstrap, "ck-txn", [0], max_messages=len(expected), idle_timeout_s=5.0,
                          settings={"isolation.level": "read_committed"})
    assert [r.value for r in grpc_read] == expected


def find_txn_coordinator(cluster: LocalCluster, transactional_id: str):
    """FindCoordinator v3 until the coordinator is known (the first call creates __transaction_state)."""
    deadline = time.monotonic() + WAIT_S
    with RawKafka(kafka_address(cluster)) as raw:
        while True:
            found = raw.call(request(versions.FIND_COORDINATOR, 3, {"key": transactional_id, "key_type": 1}))
            if found.error_code != ErrorCode.coordinator_not_available or time.monotonic() > deadline:
                assert found.error_code == ErrorCode.none
                return found
            time.sleep(0.2)


def test_kafka_pythons_transactional_producer_commits_after_an_abort(cluster):
    """kafka-python 3, too, keeps its epoch from one transaction to the next (transaction version 1)."""
    cluster.create_topic("kp-txn", 1, 2)
    cluster.wait_for_leaders("kp-txn")
    producer = KafkaProducer(bootstrap_servers=cluster.client_bootstrap, transactional_id="kp-txn-id",
                             request_timeout_ms=10000)
    try:
        producer.init_transactions()
        for outcome_name in ("abort", "commit"):
            producer.begin_transaction()
            for i in range(TXN_RECORDS):
                producer.send("kp-txn", f"{outcome_name}-{i}".encode(), partition=0)
            producer.flush(timeout=WAIT_S)
            producer.commit_transaction() if outcome_name == "commit" else producer.abort_transaction()
    finally:
        producer.close(timeout=10)
    expected = [f"commit-{i}".encode() for i in range(TXN_RECORDS)]
    assert consume_committed(cluster, "kp-txn", len(expected)) == expected


def test_an_open_transaction_described_listed_and_its_producer_seen(cluster):
    topic = "ck-txn-open"
    cluster.create_topic(topic, 1, 2)
    leader = cluster.wait_for_leaders(topic).partitions[0].leader_id
    producer = ConfluentProducer({"bootstrap.servers": cluster.client_bootstrap, "transactional.id": "ck-open-txn"})
    producer.init_transactions(WAIT_S)
    producer.begin_transaction()
    producer.produce(topic, b"pending", partition=0)
    assert producer.flush(WAIT_S) == 0
    try:
        found = find_txn_coordinator(cluster, "ck-open-txn")
        with RawKafka(f"{found.host}:{found.port}") as raw:
            (state,) = raw.call(request(versions.DESCRIBE_TRANSACTIONS, 0, {
                "transactional_ids": ["ck-open-txn"]})).transaction_states
            listed = raw.call(request(versions.LIST_TRANSACTIONS, 1, {
                "state_filters": ["Ongoing"], "producer_id_filters": [], "duration_filter": -1}))
        assert (state.error_code, state.transaction_state) == (ErrorCode.none, "Ongoing")
        assert [(t.topic, t.partitions) for t in state.topics] == [(topic, (0,))]
        assert ("ck-open-txn", state.producer_id) in {(t.transactional_id, t.producer_id)
                                                      for t in listed.transaction_states}
        with RawKafka(kafka_address(cluster, leader)) as raw:
            described = raw.call(request(versions.DESCRIBE_PRODUCERS, 0, {
                "topics": [{"name": topic, "partition_indexes": [0]}]}))
        (partition,) = described.topics[0].partitions
        assert partition.error_code == ErrorCode.none
        assert [(p.producer_id, p.current_txn_start_offset) for p in partition.active_producers] == [
            (state.producer_id, 0)]
    finally:
        producer.abort_transaction(WAIT_S)


def test_end_txn_in_the_wrong_state_and_an_unknown_producer(cluster):
    found = find_txn_coordinator(cluster, "raw-txn")
    with RawKafka(f"{found.host}:{found.port}") as raw:
        init = raw.call(request(versions.INIT_PRODUCER_ID, 1, {"transactional_id": "raw-txn",
                                                               "transaction_timeout": 30000}))
        assert init.error_code == ErrorCode.none
        ids = {"transactional_id": "raw-txn", "producer_id": init.producer_id, "producer_epoch": init.producer_epoch}
        # nothing open: EndTxn(commit) and EndTxn(abort) are INVALID_TXN_STATE (transaction version 1)
        for committed in (True, False):
            ended = raw.call(request(versions.END_TXN, 3, {**ids, "committed": committed}))
            assert ended.error_code == ErrorCode.invalid_txn_state
        stranger = raw.call(request(versions.END_TXN, 3, {**ids, "producer_id": init.producer_id + 999,
                                                          "committed": True}))
        assert stranger.error_code == ErrorCode.invalid_producer_id_mapping
        # a second InitProducerId bumps the epoch: the first one is fenced, in each version's words
        again = raw.call(request(versions.INIT_PRODUCER_ID, 1, {"transactional_id": "raw-txn",
                                                                "transaction_timeout": 30000}))
        assert (again.producer_id, again.producer_epoch) == (init.producer_id, init.producer_epoch + 1)
        for version, code in ((1, ErrorCode.invalid_producer_epoch), (3, ErrorCode.producer_fenced)):
            stale = raw.call(request(versions.END_TXN, version, {**ids, "committed": False}))
            assert stale.error_code == code
        ids["producer_epoch"] = again.producer_epoch
        added = raw.call(request(versions.ADD_PARTITIONS_TO_TXN, 3, {
            "v3_and_below_transactional_id": "raw-txn", "v3_and_below_producer_id": init.producer_id,
            "v3_and_below_producer_epoch": init.producer_epoch,
            "v3_and_below_topics": [{"name": "__cluster_metadata", "partitions": [0]},
                                    {"name": "raw-no-such-topic", "partitions": [0]}]}))
        codes = {t.name: t.results_by_partition[0].partition_error_code for t in added.results_by_topic_v3_and_below}
        assert codes["__cluster_metadata"] != ErrorCode.none and codes["raw-no-such-topic"] != ErrorCode.none
        listed = raw.call(request(versions.LIST_TRANSACTIONS, 1, {"state_filters": ["NoSuchState"],
                                                                 "producer_id_filters": [], "duration_filter": -1}))
        assert listed.unknown_state_filters == ("NoSuchState",)


# -- ACLs, SCRAM credentials, client quotas ----------------------------------------------------

def test_acls_created_described_and_deleted(admin):
    binding = AclBinding(ResourceType.TOPIC, "ck-acl", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    prefixed = AclBinding(ResourceType.GROUP, "ck-acl-", ResourcePatternType.PREFIXED, "User:bob", "*",
                          AclOperation.DESCRIBE, AclPermissionType.DENY)
    created = admin.create_acls([binding, prefixed], request_timeout=WAIT_S)
    assert [outcome(created[b]) for b in (binding, prefixed)] == [0, 0]
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    deadline = time.monotonic() + WAIT_S
    while True:  # DescribeAcls answers from the broker's image, which follows the controller
        described = admin.describe_acls(everything, request_timeout=WAIT_S).result(timeout=WAIT_S)
        if len(described) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert set(described) == {binding, prefixed}
    only_alice = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    deleted = admin.delete_acls([only_alice], request_timeout=WAIT_S)[only_alice].result(timeout=WAIT_S)
    assert deleted == [binding]


def test_a_hostile_acl_is_refused(cluster):
    with RawKafka(kafka_address(cluster)) as raw:
        answer = raw.call(request(versions.CREATE_ACLS, 3, {"creations": [
            # ANY is a filter's, not an ACL's; a principal without its type; an unknown operation
            {"resource_type": 1, "resource_name": "x", "resource_pattern_type": 3, "principal": "User:a",
             "host": "*", "operation": 3, "permission_type": 3},
            {"resource_type": 2, "resource_name": "x", "resource_pattern_type": 3, "principal": "alice",
             "host": "*", "operation": 3, "permission_type": 3},
            {"resource_type": 2, "resource_name": "x", "resource_pattern_type": 3, "principal": "User:a",
             "host": "*", "operation": 99, "permission_type": 3}]}))
    assert [r.error_code for r in answer.results] == [ErrorCode.invalid_request] * 3


def test_scram_credentials_upserted_described_and_refused(admin):
    upsert = UserScramCredentialUpsertion("ck-alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                                          b"secret", b"salt-salt-salt")
    assert outcome(admin.alter_user_scram_credentials([upsert])["ck-alice"]) == 0
    deadline = time.monotonic() + WAIT_S
    while True:
        found = admin.describe_user_scram_credentials(["ck-alice"])["ck-alice"]
        try:
            described = found.result(timeout=WAIT_S)
            break
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_256, 8192)]
    too_few = UserScramCredentialUpsertion("ck-bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 10),
                                           b"secret")
    assert outcome(admin.alter_user_scram_credentials([too_few])["ck-bob"]) == KafkaError.UNACCEPTABLE_CREDENTIAL
    missing = admin.describe_user_scram_credentials(["ck-nobody"])["ck-nobody"]
    assert outcome(missing) == KafkaError.RESOURCE_NOT_FOUND


def test_client_quotas_altered_and_described(cluster):
    entity = [{"entity_type": "user", "entity_name": "ck-quota-user"}]
    with RawKafka(kafka_address(cluster)) as raw:
        for key, code in (("no_such_quota", ErrorCode.invalid_request), ("producer_byte_rate", ErrorCode.none)):
            altered = raw.call(request(versions.ALTER_CLIENT_QUOTAS, 1, {"validate_only": False, "entries": [
                {"entity": entity, "ops": [{"key": key, "value": 1048576.0, "remove": False}]}]}))
            assert [e.error_code for e in altered.entries] == [code]
        deadline = time.monotonic() + WAIT_S
        while True:
            described = raw.call(request(versions.DESCRIBE_CLIENT_QUOTAS, 1, {"strict": False, "components": [
                {"entity_type": "user", "match_type": 0, "match": "ck-quota-user"}]}))
            if described.entries or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert described.error_code == ErrorCode.none
    (entry,) = described.entries
    assert [(v.key, v.value) for v in entry.values] == [("producer_byte_rate", 1048576.0)]



# -- DeleteRecords -----------------------------------------------------------------------------

def test_delete_records_moves_every_in_sync_replicas_log_start(cluster, admin):
    cluster.create_topic("ck-trim", 1, 2)
    cluster.wait_for_leaders("ck-trim")
    producer = ConfluentProducer({"bootstrap.servers": cluster.client_bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce("ck-trim", f"r{i}".encode(), partition=0)
    assert producer.flush(WAIT_S) == 0
    trimmed = admin.delete_records([ConfluentTopicPartition("ck-trim", 0, 4)], operation_timeout=WAIT_S)
    (future,) = trimmed.values()
    # the low watermark counts the follower too: both replicas start at 4
    assert future.result(timeout=WAIT_S).low_watermark == 4
    low, high = admin_watermarks(cluster, "ck-trim")
    assert (low, high) == (4, 10)
    refused = admin.delete_records([ConfluentTopicPartition("ck-trim", 0, 11)], operation_timeout=WAIT_S)
    assert outcome(next(iter(refused.values()))) == KafkaError.OFFSET_OUT_OF_RANGE
    internal = admin.delete_records([ConfluentTopicPartition("__consumer_offsets", 0, 0)], operation_timeout=5)
    assert outcome(next(iter(internal.values()))) != 0


def admin_watermarks(cluster: LocalCluster, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": cluster.client_bootstrap, "group.id": "ck-watermarks"})
    try:
        return consumer.get_watermark_offsets(ConfluentTopicPartition(topic, 0), timeout=WAIT_S)
    finally:
        consumer.close()


def test_init_producer_id_bumps_a_named_epoch_from_v3(cluster):
    """KIP-360: a transactional producer that names its id and epoch keeps its
    id with the epoch bumped (librdkafka's way on after an abortable error); a
    stale epoch is fenced, PRODUCER_FENCED from v4 and INVALID_PRODUCER_EPOCH
    below. An idempotent producer naming its id gets a new id at epoch 0, as
    Kafka answers without a transactional id (no one owns an idempotent id, so
    a bump would let anyone fence it)."""
    with RawKafka(kafka_address(cluster)) as raw:
        idempotent = {"transactional_id": None, "transaction_timeout": 60000}
        first = raw.call(request(versions.INIT_PRODUCER_ID, 3, {**idempotent, "producer_id": -1, "producer_epoch": -1}))
        assert first.error_code == ErrorCode.none and first.producer_epoch == 0
        renewed = raw.call(request(versions.INIT_PRODUCER_ID, 4, {**idempotent, "producer_id": first.producer_id,
                                                                  "producer_epoch": first.producer_epoch}))
        assert (renewed.error_code, renewed.producer_epoch) == (ErrorCode.none, 0)
        assert renewed.producer_id != first.producer_id
    found = find_txn_coordinator(cluster, "raw-kip360")
    with RawKafka(f"{found.host}:{found.port}") as raw:
        txn = {"transactional_id": "raw-kip360", "transaction_timeout": 30000}
        init = raw.call(request(versions.INIT_PRODUCER_ID, 4, {**txn, "producer_id": -1, "producer_epoch": -1}))
        assert init.error_code == ErrorCode.none
        named = {**txn, "producer_id": init.producer_id, "producer_epoch": init.producer_epoch}
        bumped = raw.call(request(versions.INIT_PRODUCER_ID, 4, named))
        assert (bumped.error_code, bumped.producer_id, bumped.producer_epoch) == (
            ErrorCode.none, init.producer_id, init.producer_epoch + 1)
        # the epoch it had is no longer the producer's: fenced, in each version's words
        for version, code in ((3, ErrorCode.invalid_producer_epoch), (4, ErrorCode.producer_fenced)):
            stale = raw.call(request(versions.INIT_PRODUCER_ID, version, named))
            assert stale.error_code == code, version
