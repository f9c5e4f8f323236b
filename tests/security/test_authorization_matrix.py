"""Every RPC the project has, called by each principal of a secured cluster:
the calls that succeed must be exactly those the ACLs allow.

The cluster: three combined nodes, mTLS between nodes (SSL on the broker and
controller listeners, the nodes' certificate subjects in `super.users`), and a
SASL_SSL listener for users. SCRAM users alice, bob and carol log in there;
`admin` is a SCRAM super user. The ACLs are set through the CLI's admin calls
as the launcher's mTLS admin certificate (CN=admin, the same super user).

The oracle is the hand-written table EXPECTED_ALLOWED below, read from
Kafka's rules (docs/security.md), not computed by our authorizer. A call is
"refused" when its answer carries TOPIC_, GROUP_, CLUSTER_ or
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (or, for the node-only services, when
the caller is not a node), "allowed" otherwise: other errors (an unknown
topic, a stale epoch) still mean the request got past authorization. The
test counts both and asserts that no unauthorized call succeeded and no
authorized one was refused. Every call is harmless when allowed
(validate_only, unknown names, wrong cluster ids; the transactional calls
name a producer id no coordinator handed out, InitProducerId a timeout over
the maximum), so the shared cluster is the same after each principal's run.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.message import Message

from client.cluster import Cluster
from client.channels import CHANNEL_OPTIONS, open_channel
from devcluster.local_cluster import LocalCluster
from devcluster.secured import wait_enforced
from kafka_protocol.errors import Errors
from kafka_protocol.records import Record, encode_batch
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import broker_pb2_grpc as bpb_grpc
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import controller_pb2_grpc as cpb_grpc
from kraftlog_api import groups_pb2 as gpb
from kraftlog_api import groups_pb2_grpc as gpb_grpc
from kraftlog_api import quorum_pb2 as qpb
from kraftlog_api import quorum_pb2_grpc as qpb_grpc
from kraftlog_api import transactions_pb2 as tpb
from kraftlog_api import transactions_pb2_grpc as tpb_grpc
from security import certs
from security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from security.client_security import ClientSecurity
from security.sasl_client import authenticate
from security.sasl_protocol import SESSION_METADATA_KEY
from security.scram_credentials import ScramMechanism
from security.tls import open_sync_channel

from .secured_cluster import secured_cluster
from .secured_cluster import user_settings as shared_user_settings

TOPIC = "orders"
GROUP = "g1"
TXN = "alice-txn"  # a transactional id: alice may write it, bob may describe it
PASSWORDS = {"admin": "admin-Secret-1", "alice": "alice-Secret-2", "bob": "bob-Secret-3", "carol": "carol-Secret-4"}
AUTHORIZATION_ERRORS = {Errors.TOPIC_AUTHORIZATION_FAILED, Errors.GROUP_AUTHORIZATION_FAILED,
                        Errors.CLUSTER_AUTHORIZATION_FAILED, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}


def acl(principal: str, operation: AclOperation, resource_type: ResourceType, name: str,
        pattern: PatternType = PatternType.LITERAL,
        permission: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, "*", operation, permission)


ACLS = [
    # alice: a producer and consumer of `orders` in group g1
    acl("User:alice", AclOperation.WRITE, ResourceType.TOPIC, TOPIC),
    acl("User:alice", AclOperation.READ, ResourceType.TOPIC, TOPIC),
    acl("User:alice", AclOperation.READ, ResourceType.GROUP, GROUP),
    # bob: everything on topics starting "ord" but no writes to orders itself, cluster describe,
    # delete on groups starting "g"
    acl("User:bob", AclOperation.ALL, ResourceType.TOPIC, "ord", PatternType.PREFIXED),
    acl("User:bob", AclOperation.WRITE, ResourceType.TOPIC, TOPIC, permission=AclPermissionType.DENY),
    acl("User:bob", AclOperation.DESCRIBE, ResourceType.CLUSTER, "kafka-cluster"),
    acl("User:bob", AclOperation.DELETE, ResourceType.GROUP, "g", PatternType.PREFIXED),
    # alice's transactional id is hers to write; bob may only describe ids starting "alice-"
    acl("User:alice", AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, TXN),
    acl("User:bob", AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, "alice-", PatternType.PREFIXED),
    # carol: nothing at all
]


# -- the calls -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Call:
    name: str
    service: str  # "broker", "groups", "txn" (broker listeners); "controller", "quorum" (controller listener)
    invoke: Callable[..., Message]


def _produce(stub):
    batch = encode_batch([Record(None, b"matrix")])
    return stub.Produce(bpb.ProduceRequest(acks=1, timeout_ms=5000, topics=[
        bpb.ProduceRequest.TopicData(name=TOPIC, partitions=[bpb.ProduceRequest.PartitionData(index=0,
                                                                                             records=batch)])]))


def _produce_transactional(stub):
    """A transactional batch of a producer id the coordinator never gave TXN:
    its verification fails (INVALID_TXN_STATE), nothing is appended."""
    batch = encode_batch([Record(None, b"matrix-txn")], producer_id=MADE_UP_PRODUCER, producer_epoch=0,
                         base_sequence=0, transactional=True)
    return stub.Produce(bpb.ProduceRequest(acks=1, timeout_ms=5000, transactional_id=TXN, topics=[
        bpb.ProduceRequest.TopicData(name=TOPIC, partitions=[bpb.ProduceRequest.PartitionData(index=0,
                                                                                             records=batch)])]))


# A producer id no coordinator handed out: every transactional call naming it is
# refused after authorization (INVALID_PRODUCER_ID_MAPPING, NOT_COORDINATOR, ...).
MADE_UP_PRODUCER = 4_000_000_000


def _fetch(replica_id: int):
    def call(stub):
        return stub.Fetch(bpb.FetchRequest(replica_id=replica_id, replica_epoch=-1, max_wait_ms=0, min_bytes=0,
                                           max_bytes=1 << 20, topics=[bpb.FetchRequest.FetchTopic(
                                               topic=TOPIC, partitions=[bpb.FetchRequest.FetchPartition(
                                                   partition=0, current_leader_epoch=-1, fetch_offset=1 << 40,
                                                   last_fetched_epoch=-1, log_start_offset=-1,
                                                   partition_max_bytes=1024)])]))
    return call


BROKER_CALLS = [
    Call("Metadata", "broker", lambda s: s.Metadata(bpb.MetadataRequest(topics=[TOPIC]))),
    Call("Produce", "broker", _produce),
    Call("Fetch", "broker", _fetch(-1)),
    Call("Fetch(follower)", "broker", _fetch(1)),
    Call("ListOffsets", "broker", lambda s: s.ListOffsets(bpb.ListOffsetsRequest(replica_id=-1, topics=[
        bpb.ListOffsetsRequest.ListOffsetsTopic(name=TOPIC, partitions=[
            bpb.ListOffsetsRequest.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1,
                                                        timestamp=-1)])]))),
    Call("OffsetForLeaderEpoch", "broker", lambda s: s.OffsetForLeaderEpoch(bpb.OffsetForLeaderEpochRequest(
        replica_id=-1, topics=[bpb.OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=TOPIC, partitions=[
            bpb.OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1,
                                                                     leader_epoch=0)])]))),
    Call("OffsetForLeaderEpoch(follower)", "broker", lambda s: s.OffsetForLeaderEpoch(
        bpb.OffsetForLeaderEpochRequest(replica_id=1, topics=[bpb.OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
            topic=TOPIC, partitions=[bpb.OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                partition=0, current_leader_epoch=-1, leader_epoch=0)])]))),
    Call("InitProducerId", "broker", lambda s: s.InitProducerId(bpb.InitProducerIdRequest(
        transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1))),
    # A timeout over transaction.max.timeout.ms: INVALID_TRANSACTION_TIMEOUT (or NOT_COORDINATOR), no id made.
    Call("InitProducerId(transactional)", "broker", lambda s: s.InitProducerId(bpb.InitProducerIdRequest(
        transactional_id=TXN, transaction_timeout_ms=2**31 - 1, producer_id=-1, producer_epoch=-1))),
    Call("Produce(transactional)", "broker", _produce_transactional),
    Call("DescribeProducers", "broker", lambda s: s.DescribeProducers(bpb.DescribeProducersRequest(topics=[
        bpb.DescribeProducersRequest.Topic(name=TOPIC, partition_indexes=[0])]))),
    Call("WriteTxnMarkers", "broker", lambda s: s.WriteTxnMarkers(_ghost_markers())),
    Call("DescribeCluster", "broker", lambda s: s.DescribeCluster(bpb.DescribeClusterRequest())),
    Call("DescribeConfigs", "broker", lambda s: s.DescribeConfigs(bpb.DescribeConfigsRequest(resources=[
        bpb.DescribeConfigsRequest.Resource(resource_type=2, resource_name=TOPIC)]))),
    Call("CreateTopics", "broker", lambda s: s.CreateTopics(cpb.CreateTopicsRequest(validate_only=True, topics=[
        cpb.CreateTopicsRequest.CreatableTopic(name="orders-new", num_partitions=1, replication_factor=1)]))),
    Call("DeleteTopics", "broker", lambda s: s.DeleteTopics(cpb.DeleteTopicsRequest(names=["orders-ghost"]))),
    Call("CreatePartitions", "broker", lambda s: s.CreatePartitions(cpb.CreatePartitionsRequest(
        validate_only=True, topics=[cpb.CreatePartitionsRequest.Topic(name=TOPIC, count=5)]))),
    Call("ElectLeaders", "broker", lambda s: s.ElectLeaders(cpb.ElectLeadersRequest(topic_partitions=[
        cpb.TopicPartitions(topic="orders-ghost", partitions=[0])]))),
    Call("IncrementalAlterConfigs", "broker", lambda s: s.IncrementalAlterConfigs(
        cpb.IncrementalAlterConfigsRequest(validate_only=True, resources=[
            cpb.IncrementalAlterConfigsRequest.Resource(resource_type=2, resource_name=TOPIC, configs=[
                cpb.AlterableConfig(name="retention.ms", op=0, value="86400000")])]))),
    Call("DescribeAcls", "broker", lambda s: s.DescribeAcls(bpb.DescribeAclsRequest(filter=cpb.AclBindingFilter(
        resource_type=1, pattern_type=1, operation=1, permission_type=1)))),
    Call("CreateAcls", "broker", lambda s: s.CreateAcls(cpb.CreateAclsRequest())),
    Call("DeleteAcls", "broker", lambda s: s.DeleteAcls(cpb.DeleteAclsRequest())),
    Call("AlterUserScramCredentials", "broker", lambda s: s.AlterUserScramCredentials(
        cpb.AlterUserScramCredentialsRequest(deletions=[cpb.AlterUserScramCredentialsRequest.Deletion(
            name="nobody", mechanism=ScramMechanism.SCRAM_SHA_256)]))),
    Call("DescribeUserScramCredentials", "broker", lambda s: s.DescribeUserScramCredentials(
        bpb.DescribeUserScramCredentialsRequest(users=["alice"]))),
    Call("AlterClientQuotas", "broker", lambda s: s.AlterClientQuotas(cpb.AlterClientQuotasRequest(
        validate_only=True, entries=[cpb.AlterClientQuotasRequest.Entry(
            entity=[cpb.ClientQuotaEntityData(entity_type="client-id", entity_name="matrix")],
            ops=[cpb.AlterClientQuotasRequest.Op(key="producer_byte_rate", value=1e6)])]))),
    Call("DescribeClientQuotas", "broker", lambda s: s.DescribeClientQuotas(bpb.DescribeClientQuotasRequest())),
    Call("UpdateFeatures", "broker", lambda s: s.UpdateFeatures(cpb.UpdateFeaturesRequest(
        validate_only=True, feature_updates=[cpb.UpdateFeaturesRequest.FeatureUpdate(
            feature="metadata.version", max_version_level=1, upgrade_type=1)]))),
    Call("DescribeFeatures", "broker", lambda s: s.DescribeFeatures(bpb.DescribeFeaturesRequest())),
    # A cancel of a topic that does not exist; an unknown broker: harmless when allowed.
    Call("AlterPartitionReassignments", "broker", lambda s: s.AlterPartitionReassignments(
        cpb.AlterPartitionReassignmentsRequest(topics=[cpb.AlterPartitionReassignmentsRequest.ReassignableTopic(
            name="orders-ghost", partitions=[
                cpb.AlterPartitionReassignmentsRequest.ReassignablePartition(partition_index=0)])]))),
    Call("ListPartitionReassignments", "broker", lambda s: s.ListPartitionReassignments(
        cpb.ListPartitionReassignmentsRequest())),
    Call("UnregisterBroker", "broker", lambda s: s.UnregisterBroker(cpb.UnregisterBrokerRequest(broker_id=99))),
]
GROUP_CALLS = [
    Call("FindCoordinator", "groups", lambda s: s.FindCoordinator(gpb.FindCoordinatorRequest(keys=[GROUP]))),
    Call("FindCoordinator(transaction)", "groups", lambda s: s.FindCoordinator(gpb.FindCoordinatorRequest(
        key_type=1, keys=[TXN]))),
    Call("TxnOffsetCommit", "groups", lambda s: s.TxnOffsetCommit(gpb.TxnOffsetCommitRequest(
        transactional_id=TXN, group_id=GROUP, producer_id=MADE_UP_PRODUCER, producer_epoch=0, generation_id=-1,
        topics=[gpb.TxnOffsetCommitRequest.Topic(name=TOPIC, partitions=[gpb.TxnOffsetCommitRequest.Partition(
            partition_index=0, committed_offset=0, committed_leader_epoch=-1)])]))),
    Call("ConsumerGroupHeartbeat", "groups", lambda s: s.ConsumerGroupHeartbeat(gpb.ConsumerGroupHeartbeatRequest(
        group_id=GROUP, member_epoch=-1, member_id="nobody-here", rebalance_timeout_ms=30000,
        subscribed_topic_names=gpb.SubscribedTopics(names=[TOPIC])))),
    Call("OffsetCommit", "groups", lambda s: s.OffsetCommit(gpb.OffsetCommitRequest(
        group_id=GROUP, member_epoch=-1, topics=[gpb.OffsetCommitRequest.Topic(name=TOPIC, partitions=[
            gpb.OffsetCommitRequest.Partition(partition_index=0, committed_offset=0,
                                              committed_leader_epoch=-1)])]))),
    Call("OffsetFetch", "groups", lambda s: s.OffsetFetch(gpb.OffsetFetchRequest(
        group_id=GROUP, member_epoch=-1, topics=[gpb.TopicPartitions(topic=TOPIC, partitions=[0])]))),
    Call("ConsumerGroupDescribe", "groups", lambda s: s.ConsumerGroupDescribe(
        gpb.ConsumerGroupDescribeRequest(group_ids=[GROUP]))),
    Call("DeleteGroups", "groups", lambda s: s.DeleteGroups(gpb.DeleteGroupsRequest(group_ids=["g-ghost"]))),
]


def _ghost_markers() -> bpb.WriteTxnMarkersRequest:
    """A marker for a topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION once allowed."""
    return bpb.WriteTxnMarkersRequest(markers=[bpb.WriteTxnMarkersRequest.Marker(
        producer_id=MADE_UP_PRODUCER, producer_epoch=0, transaction_result=False, coordinator_epoch=0,
        topics=[bpb.WriteTxnMarkersRequest.Topic(name="orders-ghost", partition_indexes=[0])])])


def _add_partitions(verify_only: bool):
    return lambda s: s.AddPartitionsToTxn(tpb.AddPartitionsToTxnRequest(
        transactional_id=TXN, producer_id=MADE_UP_PRODUCER, producer_epoch=0, verify_only=verify_only,
        topics=[tpb.TxnTopic(name=TOPIC, partitions=[0])]))


TXN_CALLS = [
    Call("AddPartitionsToTxn", "txn", _add_partitions(False)),
    Call("AddOffsetsToTxn", "txn", lambda s: s.AddOffsetsToTxn(tpb.AddOffsetsToTxnRequest(
        transactional_id=TXN, producer_id=MADE_UP_PRODUCER, producer_epoch=0, group_id=GROUP))),
    Call("EndTxn", "txn", lambda s: s.EndTxn(tpb.EndTxnRequest(
        transactional_id=TXN, producer_id=MADE_UP_PRODUCER, producer_epoch=0, committed=False))),
    Call("DescribeTransactions", "txn", lambda s: s.DescribeTransactions(tpb.DescribeTransactionsRequest(
        transactional_ids=[TXN]))),
    Call("ListTransactions", "txn", lambda s: s.ListTransactions(tpb.ListTransactionsRequest())),
    Call("AddPartitionsToTxn(verify_only)", "txn", _add_partitions(True)),
]
# Harmless when allowed: an unknown broker, a wrong cluster id.
NODE_CALLS = [
    Call("BrokerHeartbeat", "controller", lambda s: s.BrokerHeartbeat(cpb.BrokerHeartbeatRequest(
        broker_id=99, broker_epoch=-1, current_metadata_offset=0))),
    Call("AllocateProducerIds", "controller", lambda s: s.AllocateProducerIds(cpb.AllocateProducerIdsRequest(
        broker_id=99, broker_epoch=-1))),
    Call("Vote", "quorum", lambda s: s.Vote(qpb.VoteRequest(cluster_id="not-this-cluster", candidate_epoch=1,
                                                           candidate_id=99, pre_vote=True))),
    Call("DescribeQuorum", "quorum", lambda s: s.DescribeQuorum(qpb.DescribeQuorumRequest())),
    # the inter-broker ones, over a broker listener's mTLS (a transaction coordinator's calls)
    Call("WriteTxnMarkers", "broker", lambda s: s.WriteTxnMarkers(_ghost_markers())),
    Call("AddPartitionsToTxn(verify_only)", "txn", _add_partitions(True)),
]
CLIENT_CALLS = BROKER_CALLS + GROUP_CALLS + TXN_CALLS

# -- the oracle: what Kafka's rules allow each principal, by hand ------------------------------

EVERY_CLIENT_CALL = {c.name for c in CLIENT_CALLS}
EXPECTED_ALLOWED = {
    "admin": EVERY_CLIENT_CALL,  # a super user
    # Write+Read on orders (Describe implied), Read on g1; InitProducerId by Write on a topic.
    # Write on TXN (Describe implied): every transactional call but the node-only ones
    # (WriteTxnMarkers, verify_only: ClusterAction); DescribeProducers by Read on orders.
    "alice": {"Metadata", "Produce", "Fetch", "ListOffsets", "OffsetForLeaderEpoch", "InitProducerId",
              "FindCoordinator", "ConsumerGroupHeartbeat", "OffsetCommit", "OffsetFetch", "ConsumerGroupDescribe",
              "InitProducerId(transactional)", "Produce(transactional)", "DescribeProducers",
              "FindCoordinator(transaction)", "TxnOffsetCommit", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn",
              "DescribeTransactions", "ListTransactions", "DescribeFeatures"},
    # ALL on prefixed "ord" minus Write on orders; Describe on the cluster; Delete (so Describe) on "g*".
    # Describe on "alice-*" ids: finds and describes TXN, writes nothing of it; Read on orders: DescribeProducers.
    "bob": {"Metadata", "Fetch", "ListOffsets", "OffsetForLeaderEpoch", "InitProducerId", "DescribeConfigs",
            "CreateTopics", "DeleteTopics", "CreatePartitions", "IncrementalAlterConfigs", "DescribeCluster",
            "DescribeAcls", "DescribeUserScramCredentials", "ListPartitionReassignments", "FindCoordinator",
            "OffsetFetch",
            "ConsumerGroupDescribe", "DeleteGroups", "DescribeProducers", "FindCoordinator(transaction)",
            "DescribeTransactions", "ListTransactions", "DescribeFeatures"},
    # ListTransactions is never refused: it lists only the ids the caller may describe (none here);
    # DescribeFeatures needs nothing, as Kafka's ApiVersions.
    "carol": {"ListTransactions", "DescribeFeatures"},
}
# The node-only services, over the controller listener's mTLS: a node's certificate
# (a super user) is let through, any other certificate of the same CA is not.
EXPECTED_NODE_ALLOWED = {"node": {c.name for c in NODE_CALLS}, "mallory": set()}


def error_codes(message: Message) -> set[int]:
    """Every error_code anywhere in an answer."""
    codes = set()
    for field, value in message.ListFields():
        if field.name == "error_code":
            codes.add(value)
        elif field.message_type is not None:
            items = value if field.is_repeated else [value]
            for item in items:
                codes |= error_codes(item)
    return codes


def outcome(call: Call, stub) -> str:
    try:
        answer = call.invoke(stub)
    except grpc.RpcError as exc:  # transport refusals (UNAUTHENTICATED, ...) are refusals too
        return f"refused:{exc.code().name}"
    refused = error_codes(answer) & AUTHORIZATION_ERRORS
    return "refused" if refused else "allowed"


# -- the cluster -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    # __transaction_state is created by the first allowed FindCoordinator(1): a few partitions, not 50
    with secured_cluster(tmp_path_factory.mktemp("secured"), PASSWORDS, ACLS,
                         {"transaction.state.log.num.partitions": 3}) as c:
        c.create_topic(TOPIC, partitions=1, replication_factor=3)
        c.wait_for_leaders(TOPIC)
        yield c


def user_security(cluster: LocalCluster, user: str) -> ClientSecurity:
    return ClientSecurity.from_config(shared_user_settings(cluster, user, PASSWORDS[user]))


def wait_until_every_broker_enforces(cluster: LocalCluster) -> None:
    """The ACLs and credentials reach each broker's image a moment after they
    commit: wait until alice is allowed to describe `orders` on every broker."""
    for address in cluster.client_addresses.values():
        wait_enforced(address, user_security(cluster, "alice"), TOPIC, "User:alice")


def test_a_refused_find_coordinator_creates_nothing(secured):
    """Finding a group's (a transactional id's) coordinator creates
    __consumer_offsets (__transaction_state) when it is missing: a caller
    refused the group (the id) must not get that far (a Kafka-
    compatible broker once answered FindCoordinator before its ACL check)."""
    wait_until_every_broker_enforces(secured)
    with open_channel(secured.client_bootstrap.split(",")[0], user_security(secured, "carol")) as channel:
        stub = gpb_grpc.GroupCoordinatorStub(channel)
        for key_type, error in ((0, Errors.GROUP_AUTHORIZATION_FAILED),
                                (1, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)):
            answer = stub.FindCoordinator(gpb.FindCoordinatorRequest(key_type=key_type, keys=["g-new"]), timeout=10)
            assert [c.error_code for c in answer.coordinators] == [error]
    time.sleep(1)  # a creation the call had set off would be in the metadata by now
    with Cluster(secured.bootstrap, secured.security) as admin:
        assert not {"__consumer_offsets", "__transaction_state"} & {t.name for t in admin.refresh(None).topics}
        # and the premise: an allowed FindCoordinator does create it
        with open_channel(secured.client_bootstrap.split(",")[0], user_security(secured, "alice")) as channel:
            gpb_grpc.GroupCoordinatorStub(channel).FindCoordinator(gpb.FindCoordinatorRequest(keys=[GROUP]),
                                                                   timeout=30)
        deadline = time.monotonic() + 30
        while "__consumer_offsets" not in {t.name for t in admin.refresh(None).topics}:
            assert time.monotonic() < deadline, "an allowed FindCoordinator did not create __consumer_offsets"
            time.sleep(0.2)


def test_each_principal_may_call_exactly_what_its_acls_allow(secured):
    wait_until_every_broker_enforces(secured)
    counts: Counter[str] = Counter()
    wrong: list[str] = []
    leader = next(iter(secured.client_addresses.values()))
    for user, expected in EXPECTED_ALLOWED.items():
        with open_channel(leader, user_security(secured, user)) as channel:
            stubs = {"broker": bpb_grpc.KafkaBrokerStub(channel), "groups": gpb_grpc.GroupCoordinatorStub(channel),
                     "txn": tpb_grpc.TransactionCoordinatorStub(channel)}
            for call in CLIENT_CALLS:
                got = outcome(call, stubs[call.service])
                allowed = got == "allowed"
                should = call.name in expected
                counts[("authorized " if should else "unauthorized ") + ("allowed" if allowed else "refused")] += 1
                if allowed != should:
                    wrong.append(f"{user} {call.name}: {got}, expected {'allowed' if should else 'refused'}")
    print(dict(counts))
    assert not wrong, "\n".join(wrong)
    assert counts["unauthorized allowed"] == 0 and counts["authorized refused"] == 0
    assert counts["authorized allowed"] > 0 and counts["unauthorized refused"] > 0


# The in-order streams carry KafkaBroker's Produce and Fetch (grpc_serving): each request on them
# must be authorized exactly as the same unary call. SASL clients send unary calls (their login
# interceptor is unary-only), so a stream is a hostile client's way round it if it is not.
STREAMED = {"ProduceStream": "Produce", "FetchStream": "Fetch"}  # stream service -> its unary call (BROKER_CALLS)


class _OneRequestStub:
    """A stub whose call opens the in-order stream, sends the request alone and reads its answer."""

    def __init__(self, channel: grpc.Channel, service: str, credential: bytes) -> None:
        method = bpb.DESCRIPTOR.services_by_name[service].methods_by_name[STREAMED[service]]
        self._open = channel.stream_stream(
            f"/{method.containing_service.full_name}/{method.name}",
            request_serializer=lambda request: request.SerializeToString(),
            response_deserializer=message_factory.GetMessageClass(method.output_type).FromString)
        self._metadata = ((SESSION_METADATA_KEY, credential),)
        setattr(self, method.name, self._call)

    def _call(self, request: Message) -> Message:
        answers = self._open(iter([request]), metadata=self._metadata, timeout=30)
        [answer] = list(answers)
        return answer


def test_requests_on_the_in_order_streams_are_authorized_as_their_unary_calls(secured):
    """alice may produce to and fetch `orders`, bob may fetch it but is denied writes, carol
    neither: the same outcome on ProduceStream and FetchStream as on the unary calls, for a
    client that logs in and opens the stream itself."""
    wait_until_every_broker_enforces(secured)
    leader = next(iter(secured.client_addresses.values()))
    unary_calls = {c.name: c for c in BROKER_CALLS}
    wrong, seen = [], Counter()
    for user, expected in EXPECTED_ALLOWED.items():
        security = user_security(secured, user)
        with open_sync_channel(leader, CHANNEL_OPTIONS, security.ssl) as channel:
            credential = authenticate(channel, security.sasl).credential
            for service, unary in STREAMED.items():
                got = outcome(unary_calls[unary], _OneRequestStub(channel, service, credential))
                seen[got] += 1
                if (got == "allowed") != (unary in expected):
                    wrong.append(f"{user} {service}: {got}, expected {'allowed' if unary in expected else 'refused'}")
    assert not wrong, "\n".join(wrong)
    # admin and alice both, bob Fetch; bob Produce, carol both - each refused by its ACLs, not its session
    assert seen == Counter(allowed=5, refused=3), seen
    # and without a session the stream is not served at all
    with open_sync_channel(leader, CHANNEL_OPTIONS, user_security(secured, "alice").ssl) as channel:
        with pytest.raises(grpc.RpcError) as caught:
            _OneRequestStub(channel, "ProduceStream", b"forged-session").Produce(
                bpb.ProduceRequest(acks=1, timeout_ms=5000))
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_node_rpcs_need_a_node_certificate(secured, tmp_path):
    certs_dir = Path(str(secured.security.ssl.truststore_location)).parent
    certs.issue(certs_dir, "mallory", client=True)  # a valid certificate of the cluster's CA, not a node's
    identities = {
        "node": ClientSecurity.from_config({"security.protocol": "SSL",
                                            "ssl.keystore.location": str(certs_dir / "node-1.pem"),
                                            "ssl.truststore.location": str(certs_dir / certs.CA_CERT)}),
        "mallory": ClientSecurity.from_config({"security.protocol": "SSL",
                                               "ssl.keystore.location": str(certs_dir / "mallory.pem"),
                                               "ssl.truststore.location": str(certs_dir / certs.CA_CERT)}),
    }
    counts: Counter[str] = Counter()
    wrong: list[str] = []
    controller = next(iter(secured.controller_addresses.values()))
    broker = next(iter(secured.broker_addresses.values()))  # the inter-broker listener, mTLS
    for who, security in identities.items():
        with open_channel(controller, security) as to_controller, open_channel(broker, security) as to_broker:
            stubs = {"controller": cpb_grpc.KRaftControllerStub(to_controller),
                     "quorum": qpb_grpc.KRaftQuorumStub(to_controller),
                     "broker": bpb_grpc.KafkaBrokerStub(to_broker),
                     "txn": tpb_grpc.TransactionCoordinatorStub(to_broker)}
            for call in NODE_CALLS:
                got = outcome(call, stubs[call.service])
                should = call.name in EXPECTED_NODE_ALLOWED[who]
                counts[("authorized " if should else "unauthorized ") + got.split(":")[0]] += 1
                if (got == "allowed") != should:
                    wrong.append(f"{who} {call.name}: {got}")
    print(dict(counts))
    assert not wrong, "\n".join(wrong)


def scrape(address: str) -> str:
    import urllib.request
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as page:
        return page.read().decode()


def test_logins_and_decisions_are_counted(secured):
    with Cluster(secured.client_bootstrap, user_security(secured, "carol")) as client:
        client.refresh([TOPIC])  # one more login and one more decision, whatever ran before
    wrong = ClientSecurity.from_config({**{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                           "sasl.username": "carol", "sasl.password": "not-carols-password"},
                                        "ssl.truststore.location": str(secured.security.ssl.truststore_location)})
    with Cluster(secured.client_bootstrap, wrong) as client:
        with pytest.raises(Exception):
            client.refresh([TOPIC])
    pages = "".join(scrape(address) for address in secured.metrics_addresses.values())
    def total(prefix: str) -> float:
        return sum(float(line.rsplit(" ", 1)[1]) for line in pages.splitlines()
                   if line.startswith(prefix) and not line.startswith("#"))
    assert total('kafka_server_socket_server_metrics_successful_authentication_total{mechanism="SCRAM-SHA-512"}') >= 1
    assert total('kafka_server_socket_server_metrics_failed_authentication_total{mechanism="SCRAM-SHA-512"}') >= 1
    assert total("kraftlog_authorizer_decisions_total") > 0
    assert 'result="denied"' in pages and 'result="allowed"' in pages
    assert total("kafka_server_authorizer_metrics_acls_total_count") == 3 * len(ACLS)  # each node sees them all


def test_no_password_is_anywhere_after_the_secured_run(secured):
    """Logs, metadata log segments, snapshots, partition segments, checkpoints
    and metrics pages: none holds any password used in this module."""
    secrets = [p.encode() for p in PASSWORDS.values()] + [b"not-carols-password"]
    found = []
    files = 0
    for path in Path(secured.directory).rglob("*"):
        if not path.is_file():
            continue
        files += 1
        data = path.read_bytes()
        found += [f"{path}: {s.decode()}" for s in secrets if s in data]
    for address in secured.metrics_addresses.values():
        page = scrape(address).encode()
        found += [f"metrics {address}: {s.decode()}" for s in secrets if s in page]
    assert files > 20  # the scan saw the cluster's logs and data
    assert not found, "\n".join(found)


def user_settings(cluster: LocalCluster, user: str) -> dict:
    return {"bootstrap.servers": cluster.client_bootstrap, **shared_user_settings(cluster, user, PASSWORDS[user])}


def test_alice_produces_and_consumes_in_her_group_and_carol_is_refused(secured):
    from client.consumer import Consumer
    from client.producer import Producer

    wait_until_every_broker_enforces(secured)
    values = [f"order-{i}".encode() for i in range(50)]
    with Producer({**user_settings(secured, "alice"), "acks": "all"}) as producer:
        futures = [producer.produce(TOPIC, v) for v in values]
        producer.flush(60)
    assert all(f.exception() is None for f in futures)
    got = []
    with Consumer({**user_settings(secured, "alice"), "group.id": GROUP, "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 60
        while not set(values) <= {r.value for r in got} and time.monotonic() < deadline:
            got += consumer.poll(0.5)
        consumer.commit()
    assert set(values) <= {r.value for r in got}
    with Producer({**user_settings(secured, "carol"), "acks": "all", "delivery.timeout.ms": 20000,
                   "request.timeout.ms": 5000, "max.block.ms": 5000}) as producer:
        future = producer.produce(TOPIC, b"not allowed")
        producer.flush(30)
    assert getattr(future.exception(), "name", "") == "TOPIC_AUTHORIZATION_FAILED", future.exception()
