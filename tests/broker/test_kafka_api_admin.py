"""The admin and transaction adapters of broker/kafka_api without a cluster:
what each sends to the service method it adapts, and how the answer reads
in the Kafka version asked for, where the translation is more than a
renaming. (Served for real in tests/kafka_protocol/test_kafka_admin_txn.py.)"""
from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from broker.kafka_api import configs, topics_admin, transactions
from broker.kafka_api.context import KafkaCallContext
from kafka_protocol.config_values import parse_int
from kafka_protocol.errors import Errors, InvalidConfigError
from kafka_protocol.wire import codec, versions
from kafka_protocol.wire.entities import build
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import transactions_pb2 as tpb

CONTEXT = KafkaCallContext("127.0.0.1:1", "test")


class Service:
    """Answers each method with a fixed protobuf answer and keeps the requests it was sent."""

    def __init__(self, **answers: Any) -> None:
        self.answers = answers
        self.sent: dict[str, list[Any]] = {}

    def __getattr__(self, name: str) -> Any:
        if name not in self.answers:
            raise AttributeError(name)

        async def method(request: Any, context: Any) -> Any:
            self.sent.setdefault(name, []).append(request)
            return self.answers[name]
        return method


class Services:
    def __init__(self, broker: Service = Service(), transactions: Service = Service()) -> None:
        self.broker, self.transactions, self.groups = broker, transactions, Service()


def serve(adapter, services: Services, api_key: int, version: int, values: dict) -> Any:
    body = build(codec.request_type(api_key, version), values)
    answer = asyncio.run(adapter(services, body, CONTEXT))
    codec.encode_response(1, answer)  # every answer must also encode
    return answer


def test_create_topics_refuses_a_null_config_here_and_spreads_a_request_level_error():
    broker = Service(CreateTopics=cpb.CreateTopicsResponse(error_code=Errors.REQUEST_TIMED_OUT))
    answer = serve(topics_admin.create_topics, Services(broker), versions.CREATE_TOPICS, 7, {
        "timeout": 1000, "validate_only": False, "topics": [
            {"name": "a", "num_partitions": -1, "replication_factor": -1, "assignments": (), "configs": ()},
            {"name": "b", "num_partitions": 1, "replication_factor": 1, "assignments": (),
             "configs": [{"name": "retention.ms", "value": None}]}]})
    (sent,) = broker.sent["CreateTopics"]
    assert [(t.name, t.num_partitions, t.replication_factor) for t in sent.topics] == [("a", -1, -1)]
    assert [(t.name, t.error_code, t.num_partitions) for t in answer.topics] == [
        ("a", Errors.REQUEST_TIMED_OUT, -1), ("b", Errors.INVALID_CONFIG, -1)]


def test_delete_topics_v6_resolves_ids_and_refuses_a_topic_named_twice_over():
    known = uuid.UUID(int=7)
    broker = Service(
        Metadata=bpb.MetadataResponse(topics=[bpb.MetadataResponse.Topic(name="t", topic_id=known.bytes)]),
        DeleteTopics=cpb.DeleteTopicsResponse(topics=[cpb.DeleteTopicsResponse.Result(name="t")]))
    answer = serve(topics_admin.delete_topics, Services(broker), versions.DELETE_TOPICS, 6, {"timeout": 1000, "topics": [
        {"name": None, "topic_id": known}, {"name": "x", "topic_id": uuid.UUID(int=9)},
        {"name": None, "topic_id": uuid.UUID(int=8)}]})
    assert list(broker.sent["DeleteTopics"][0].names) == ["t"]
    assert [(r.name, r.error_code) for r in answer.responses] == [
        ("t", Errors.NONE), ("x", Errors.INVALID_REQUEST), (None, Errors.UNKNOWN_TOPIC_ID)]


def test_create_partitions_names_the_new_partitions_from_the_current_count():
    broker = Service(
        Metadata=bpb.MetadataResponse(topics=[bpb.MetadataResponse.Topic(
            name="t", partitions=[bpb.MetadataResponse.Partition(partition_index=i) for i in range(3)])]),
        CreatePartitions=cpb.CreatePartitionsResponse(topics=[cpb.CreatePartitionsResponse.Result(name="t")]))
    serve(topics_admin.create_partitions, Services(broker), versions.CREATE_PARTITIONS, 3, {
        "timeout": 1000, "validate_only": False, "topics": [
            {"name": "t", "count": 5, "assignments": [{"broker_ids": (1, 2)}, {"broker_ids": (2, 1)}]}]})
    (sent,) = broker.sent["CreatePartitions"][0].topics
    assert [(a.partition_index, list(a.broker_ids)) for a in sent.assignments] == [(3, [1, 2]), (4, [2, 1])]


def test_describe_configs_synonyms_name_the_setting_the_value_comes_from():
    Config = bpb.DescribeConfigsResponse.Config
    broker = Service(DescribeConfigs=bpb.DescribeConfigsResponse(results=[bpb.DescribeConfigsResponse.Result(
        resource_type=2, resource_name="t", configs=[
            Config(name="retention.ms", value="5", config_source=1),
            Config(name="segment.bytes", value="1073741824", config_source=5, is_default=True)])]))
    answer = serve(configs.describe_configs, Services(broker), versions.DESCRIBE_CONFIGS, 4, {
        "resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": None}],
        "include_synonyms": True, "include_documentation": True})
    synonyms = {c.name: [(s.name, s.source) for s in c.synonyms] for c in answer.results[0].configs}
    assert synonyms == {"retention.ms": [("retention.ms", 1)], "segment.bytes": [("log.segment.bytes", 5)]}


@pytest.mark.parametrize("code, version, seen", [
    (Errors.TRANSACTION_ABORTABLE, 3, Errors.PRODUCER_FENCED),
    (Errors.TRANSACTION_ABORTABLE, 0, Errors.INVALID_PRODUCER_EPOCH),
    (Errors.PRODUCER_FENCED, 1, Errors.INVALID_PRODUCER_EPOCH),
    (Errors.PRODUCER_FENCED, 2, Errors.PRODUCER_FENCED),
    (Errors.CONCURRENT_TRANSACTIONS, 0, Errors.CONCURRENT_TRANSACTIONS),
])
def test_transaction_errors_in_the_words_of_older_versions(code, version, seen):
    assert transactions.client_error(code, version) == seen


def test_end_txn_asks_for_transaction_version_1():
    txns = Service(EndTxn=tpb.EndTxnResponse(error_code=Errors.NONE, producer_id=5, producer_epoch=1))
    answer = serve(transactions.end_txn, Services(transactions=txns), versions.END_TXN, 1, {
        "transactional_id": "t", "producer_id": 5, "producer_epoch": 1, "committed": True})
    assert txns.sent["EndTxn"][0].keep_epoch and answer.error_code == Errors.NONE


def test_add_partitions_a_partition_the_answer_left_out_is_not_added():
    txns = Service(AddPartitionsToTxn=tpb.AddPartitionsToTxnResponse(error_code=Errors.COORDINATOR_NOT_AVAILABLE))
    answer = serve(transactions.add_partitions_to_txn, Services(transactions=txns), versions.ADD_PARTITIONS_TO_TXN, 0,
                   {"v3_and_below_transactional_id": "t", "v3_and_below_producer_id": 5,
                    "v3_and_below_producer_epoch": 0, "v3_and_below_topics": [{"name": "a", "partitions": (0, 1)}]})
    assert [p.partition_error_code for p in answer.results_by_topic_v3_and_below[0].results_by_partition] == [
        Errors.COORDINATOR_NOT_AVAILABLE] * 2


def test_describe_transactions_without_an_open_transaction_writes_kafkas_minus_one():
    txns = Service(DescribeTransactions=tpb.DescribeTransactionsResponse(transaction_states=[
        tpb.DescribeTransactionsResponse.TransactionState(transactional_id="t", transaction_state="Empty",
                                                          transaction_timeout_ms=1000, transaction_start_time_ms=-1,
                                                          producer_id=5, producer_epoch=0)]))
    answer = serve(transactions.describe_transactions, Services(transactions=txns), versions.DESCRIBE_TRANSACTIONS, 0,
                   {"transactional_ids": ("t",)})
    assert codec.encode_response(1, answer).find(b"\xff" * 8) > 0


def test_a_setting_past_a_java_long_is_invalid():
    assert parse_int("retention.ms", str(2**63 - 1)) == 2**63 - 1
    with pytest.raises(InvalidConfigError):
        parse_int("retention.ms", "9" * 100)


def test_a_refused_create_acls_or_alter_client_quotas_is_every_items_error():
    from broker.kafka_api import acls, user_admin
    broker = Service(CreateAcls=cpb.CreateAclsResponse(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED),
                     AlterClientQuotas=cpb.AlterClientQuotasResponse(error_code=Errors.REQUEST_TIMED_OUT))
    creation = {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3, "principal": "User:a",
                "host": "*", "operation": 3, "permission_type": 3}
    created = serve(acls.create_acls, Services(broker), versions.CREATE_ACLS, 1, {"creations": [creation] * 2})
    assert [r.error_code for r in created.results] == [Errors.CLUSTER_AUTHORIZATION_FAILED] * 2
    altered = serve(user_admin.alter_client_quotas, Services(broker), versions.ALTER_CLIENT_QUOTAS, 1, {
        "validate_only": False, "entries": [{"entity": [{"entity_type": "user", "entity_name": None}],
                                             "ops": [{"key": "producer_byte_rate", "value": 1.0, "remove": False}]}]})
    (entry,) = altered.entries
    assert entry.error_code == Errors.REQUEST_TIMED_OUT and entry.entity[0].entity_name is None
    (sent,) = broker.sent["AlterClientQuotas"][0].entries
    assert not sent.entity[0].HasField("entity_name")  # the default user, not a user named ""


def test_describe_acls_groups_bindings_by_resource_and_passes_null_filters_as_absent():
    from broker.kafka_api import acls
    binding = dict(resource_type=2, resource_name="t", pattern_type=3, host="*", operation=3, permission_type=3)
    broker = Service(DescribeAcls=bpb.DescribeAclsResponse(acls=[
        cpb.AclBinding(principal="User:a", **binding), cpb.AclBinding(principal="User:b", **binding)]))
    answer = serve(acls.describe_acls, Services(broker), versions.DESCRIBE_ACLS, 3, {
        "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
        "principal_filter": None, "host_filter": "*", "operation": 1, "permission_type": 1})
    sent = broker.sent["DescribeAcls"][0].filter
    assert not sent.HasField("resource_name") and not sent.HasField("principal") and sent.host == "*"
    (resource,) = answer.resources
    assert [a.principal for a in resource.acls] == ["User:a", "User:b"]


def test_alter_partition_reassignments_passes_null_as_a_cancel_and_kip_860s_flag():
    from broker.kafka_api import reassignments
    broker = Service(AlterPartitionReassignments=cpb.AlterPartitionReassignmentsResponse(responses=[
        cpb.AlterPartitionReassignmentsResponse.TopicResult(name="t", partitions=[
            cpb.AlterPartitionReassignmentsResponse.PartitionResult(partition_index=0),
            cpb.AlterPartitionReassignmentsResponse.PartitionResult(
                partition_index=1, error_code=Errors.NO_REASSIGNMENT_IN_PROGRESS)])]))
    answer = serve(reassignments.alter_partition_reassignments, Services(broker),
                   versions.ALTER_PARTITION_REASSIGNMENTS, 1, {
                       "timeout": 1000, "allow_replication_factor_change": False, "topics": [
                           {"name": "t", "partitions": [{"partition_index": 0, "replicas": (2, 3)},
                                                        {"partition_index": 1, "replicas": None}]}]})
    (sent,) = broker.sent["AlterPartitionReassignments"]
    assert sent.HasField("allow_replication_factor_change") and not sent.allow_replication_factor_change
    assert [(p.partition_index, p.HasField("replicas"), list(p.replicas.ids)) for p in sent.topics[0].partitions] == [
        (0, True, [2, 3]), (1, False, [])]
    assert answer.allow_replication_factor_change is False
    assert [(p.partition_index, p.error_code) for p in answer.responses[0].partitions] == [
        (0, Errors.NONE), (1, Errors.NO_REASSIGNMENT_IN_PROGRESS)]
    v0 = serve(reassignments.alter_partition_reassignments, Services(broker), versions.ALTER_PARTITION_REASSIGNMENTS,
               0, {"timeout": 1000, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": (1,)}]}]})
    assert not broker.sent["AlterPartitionReassignments"][1].HasField("allow_replication_factor_change")
    assert v0.error_code == Errors.NONE


def test_list_partition_reassignments_null_is_every_partition_and_empty_is_none():
    from broker.kafka_api import reassignments
    broker = Service(ListPartitionReassignments=cpb.ListPartitionReassignmentsResponse(
        error_code=Errors.CLUSTER_AUTHORIZATION_FAILED))
    everything = serve(reassignments.list_partition_reassignments, Services(broker),
                       versions.LIST_PARTITION_REASSIGNMENTS, 0, {"timeout": 1000, "topics": None})
    assert list(broker.sent["ListPartitionReassignments"][0].topics) == []
    assert everything.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    nothing = serve(reassignments.list_partition_reassignments, Services(broker),
                    versions.LIST_PARTITION_REASSIGNMENTS, 0, {"timeout": 1000, "topics": ()})
    assert len(broker.sent["ListPartitionReassignments"]) == 1  # not asked
    assert nothing.error_code == Errors.NONE and nothing.topics == ()
