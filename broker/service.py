"""The KafkaBroker gRPC service of one broker listener.

Produce, Fetch, ListOffsets, Metadata, OffsetForLeaderEpoch, InitProducerId,
DescribeCluster, DescribeConfigs, DescribeAcls, DescribeUserScramCredentials,
DescribeClientQuotas, WriteTxnMarkers, DescribeProducers, DeleteRecords
(broker/delete_records.py) and DescribeFeatures (broker/features.py) are answered
here by the broker's handlers (InitProducerId with a transactional id by
the transaction coordinator, broker/transactions/);
CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders,
IncrementalAlterConfigs, CreateAcls, DeleteAcls, AlterUserScramCredentials,
AlterClientQuotas, UpdateFeatures, AlterPartitionReassignments,
ListPartitionReassignments and UnregisterBroker are
forwarded to the active controller, and its answer is
returned as it is (REQUEST_TIMED_OUT at the request level when no
controller answered in time).

Client quotas (client_quota_manager.py): a client's Produce and Fetch are
measured against its producer_byte_rate and consumer_byte_rate; one over
its quota is served all the same, and its answer carries throttle_time_ms,
bounded by the measured span; as Kafka mutes the channel (KIP-219), the
connection's next request waits until that time has passed (request_quota.py,
which also measures every request against request_percentage), and the
clients send nothing to the broker meanwhile. The client is the session's principal name
(none outside a session) and the `client-id` call metadata.

Until the broker has caught up with the metadata log at startup, the data
RPCs are refused with gRPC UNAVAILABLE: the broker is not serving yet, as
a Kafka broker does not open its listeners before its initial catch-up.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable, Iterable, Optional

import grpc
from google.protobuf.message import Message

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kafka_protocol.internal_topics import is_client_forbidden
from kafka_protocol import grpc_serving
from kafka_protocol.fetch_framing import throttle_time_field
from security.acl import AclOperation, ResourceType
from security.authorization import NodeAuthorizer
from security.request_context import current_session

from . import access as acl
from .client_quota_manager import ClientQuotaManager, ClientQuotas
from .client_quotas_admin import describe_client_quotas
from .delete_records import delete_records
from .admin_info import TOPIC as CONFIG_RESOURCE_TOPIC, describe_cluster, describe_configs
from .controller_client import ControllerClient, ControllerUnavailable
from .errors import Error
from .features import describe_features
from .fetch import handle_fetch
from .metadata import metadata_response
from .offsets import handle_list_offsets, handle_offset_for_leader_epoch
from .produce import handle_produce
from .producer_ids import ProducerIdManager, handle_init_producer_id
from .request_quota import note_answer_throttle, record_and_mute
from .replica_manager import ReplicaManager
from .security_admin import describe_acls, describe_user_scram_credentials
from .transactions.coordinator import TransactionCoordinator
from .txn_markers import describe_producers, write_txn_markers

# Kafka's strings are int16-length: a transactional id longer than this is no
# TransactionLogKey (and no request of Kafka's protocol).
MAX_TRANSACTIONAL_ID_BYTES = 2**15 - 1

SERVICE = bpb.DESCRIPTOR.services_by_name["KafkaBroker"]
# KafkaBroker's Fetch and Produce, carried in order on one stream each (grpc_serving's in-order streams):
# the followers' fetch loops and the producer's sender use them.
FETCH_STREAM = bpb.DESCRIPTOR.services_by_name["FetchStream"]
PRODUCE_STREAM = bpb.DESCRIPTOR.services_by_name["ProduceStream"]
SERVICE_NAMES = (SERVICE.full_name, FETCH_STREAM.full_name, PRODUCE_STREAM.full_name)
FORWARDED = {
    "CreateTopics": cpb.CreateTopicsResponse,
    "DeleteTopics": cpb.DeleteTopicsResponse,
    "CreatePartitions": cpb.CreatePartitionsResponse,
    "ElectLeaders": cpb.ElectLeadersResponse,
    "IncrementalAlterConfigs": cpb.IncrementalAlterConfigsResponse,
    "CreateAcls": cpb.CreateAclsResponse,
    "DeleteAcls": cpb.DeleteAclsResponse,
    "AlterUserScramCredentials": cpb.AlterUserScramCredentialsResponse,
    "AlterClientQuotas": cpb.AlterClientQuotasResponse,
    "UpdateFeatures": cpb.UpdateFeaturesResponse,
    "AlterPartitionReassignments": cpb.AlterPartitionReassignmentsResponse,
    "ListPartitionReassignments": cpb.ListPartitionReassignmentsResponse,
    "UnregisterBroker": cpb.UnregisterBrokerResponse,
}


class KafkaBrokerService:
    def __init__(self, replicas: ReplicaManager, controllers: ControllerClient, *, cluster_id: str, listener: str,
                 ready: Callable[[], bool], controller_id: Callable[[], int], forward_timeout_s: float,
                 producer_ids: Optional[ProducerIdManager] = None,
                 access: Optional[NodeAuthorizer] = None, quotas: Optional[ClientQuotas] = None,
                 transactions: Optional[TransactionCoordinator] = None, txn_request_timeout_ms: int = 30000,
                 metadata_offset: Optional[Callable[[], int]] = None) -> None:
        self.replicas = replicas
        self.metadata_offset = metadata_offset or (lambda: replicas.image.offset)
        self.transactions = transactions
        self.txn_request_timeout_ms = txn_request_timeout_ms  # how long a marker waits for replication
        self.quotas = quotas or ClientQuotas()
        self.access = access or NodeAuthorizer.allow_all()
        self.producer_ids = producer_ids
        self.controllers = controllers
        self.cluster_id = cluster_id
        self.listener = listener
        self.ready = ready
        self.controller_id = controller_id
        self.forward_timeout_s = forward_timeout_s

    async def _check_ready(self, context: grpc.aio.ServicerContext) -> None:
        if not self.ready():
            await context.abort(grpc.StatusCode.UNAVAILABLE,
                                f"broker {self.replicas.broker_id} is starting: not caught up with the metadata log")

    def _throttle(self, manager: ClientQuotaManager, size: Callable[[], int],
                  context: grpc.aio.ServicerContext) -> int:
        """Record `size()` bytes for the calling client; the throttle time its
        quota asks for (0 when within it), for which its connection is muted.
        The size is asked for only under a quota: a Produce request's ByteSize()
        encodes it whole, batches included."""
        quotas = self.replicas.image.client_quotas
        if not quotas:
            return 0  # no quota set anywhere: nothing to measure
        throttle_ms = record_and_mute(self.quotas, manager, quotas, context, size())
        note_answer_throttle(throttle_ms)  # the request quota around this call answers the larger one
        return throttle_ms

    async def Produce(self, request: bpb.ProduceRequest, context: grpc.aio.ServicerContext) -> bpb.ProduceResponse:
        await self._check_ready(context)
        if request.transactional_id and not self.access.allows(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                                               request.transactional_id):
            return acl.refuse_all(request, acl.PRODUCE, Error.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        denied = acl.denied_topics(self.access, AclOperation.WRITE, acl.topic_names(request, acl.PRODUCE))
        if not denied:
            response = await handle_produce(self.replicas, request)
        else:
            allowed, refused = acl.split_topics(request, acl.PRODUCE, denied)
            response = await handle_produce(self.replicas, allowed) if allowed.topics else bpb.ProduceResponse()
            response.MergeFrom(refused)
        response.throttle_time_ms = self._throttle(self.quotas.produce, request.ByteSize, context)
        return response

    async def Fetch(self, request: bpb.FetchRequest, context: grpc.aio.ServicerContext) -> bytes:
        await self._check_ready(context)
        if request.replica_id >= 0:
            # A follower's fetch moves the high watermark and the ISR: only nodes may send one.
            # (Replication is not a client's traffic: no client quota applies.)
            if not self.access.allows_cluster(AclOperation.CLUSTER_ACTION):
                return acl.refuse_all(request, acl.FETCH, Error.CLUSTER_AUTHORIZATION_FAILED).SerializeToString()
            return await handle_fetch(self.replicas, request, _principal())
        denied = acl.denied_topics(self.access, AclOperation.READ, acl.topic_names(request, acl.FETCH))
        if not denied:
            answer = await handle_fetch(self.replicas, request, _principal())
        else:
            allowed, refused = acl.split_topics(request, acl.FETCH, denied)
            # The answer is already encoded (record batches spliced in); repeated
            # fields of concatenated encodings append, so the refusals go after it.
            # (An incremental fetch without topics still reads its session.)
            answer = (await handle_fetch(self.replicas, allowed, _principal())
                      if allowed.topics or allowed.HasField("session_epoch") else b"") + refused.SerializeToString()
        # The same holds for the throttle time: its field appended sets it.
        return answer + throttle_time_field(self._throttle(self.quotas.fetch, answer.__len__, context))

    async def ListOffsets(self, request: bpb.ListOffsetsRequest,
                          context: grpc.aio.ServicerContext) -> bpb.ListOffsetsResponse:
        await self._check_ready(context)
        denied = acl.denied_topics(self.access, AclOperation.DESCRIBE, acl.topic_names(request, acl.LIST_OFFSETS))
        if not denied:
            return handle_list_offsets(self.replicas, request)
        allowed, refused = acl.split_topics(request, acl.LIST_OFFSETS, denied)
        response = handle_list_offsets(self.replicas, allowed)
        response.MergeFrom(refused)
        return response

    async def OffsetForLeaderEpoch(self, request: bpb.OffsetForLeaderEpochRequest,
                                   context: grpc.aio.ServicerContext) -> bpb.OffsetForLeaderEpochResponse:
        await self._check_ready(context)
        shape = acl.OFFSET_FOR_LEADER_EPOCH
        if request.replica_id >= 0:
            if not self.access.allows_cluster(AclOperation.CLUSTER_ACTION):
                return acl.refuse_all(request, shape, Error.CLUSTER_AUTHORIZATION_FAILED)
            return handle_offset_for_leader_epoch(self.replicas, request)
        denied = acl.denied_topics(self.access, AclOperation.DESCRIBE, acl.topic_names(request, shape))
        if not denied:
            return handle_offset_for_leader_epoch(self.replicas, request)
        allowed, refused = acl.split_topics(request, shape, denied)
        response = handle_offset_for_leader_epoch(self.replicas, allowed)
        response.MergeFrom(refused)
        return response

    async def Metadata(self, request: bpb.MetadataRequest, context: grpc.aio.ServicerContext) -> bpb.MetadataResponse:
        await self._check_ready(context)
        return metadata_response(self.replicas.image, request, cluster_id=self.cluster_id,
                                 controller_id=self.controller_id(), listener=self.listener,
                                 may_describe=lambda name: self.access.allows(AclOperation.DESCRIBE,
                                                                              ResourceType.TOPIC, name))

    async def InitProducerId(self, request: bpb.InitProducerIdRequest,
                             context: grpc.aio.ServicerContext) -> bpb.InitProducerIdResponse:
        await self._check_ready(context)
        if self.producer_ids is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "this service hands out no producer ids")
        if request.transactional_id:
            if not self.access.allows(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
                return bpb.InitProducerIdResponse(error_code=Error.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                                  producer_id=-1, producer_epoch=-1, ongoing_txn_producer_id=-1,
                                                  ongoing_txn_producer_epoch=-1)
            if len(request.transactional_id.encode()) > MAX_TRANSACTIONAL_ID_BYTES:
                # Kafka's request could not even carry it; __transaction_state's key cannot hold it.
                return bpb.InitProducerIdResponse(error_code=Error.INVALID_REQUEST, producer_id=-1,
                                                  producer_epoch=-1, ongoing_txn_producer_id=-1,
                                                  ongoing_txn_producer_epoch=-1, error_message=(
                                                      f"a transactional id is at most {MAX_TRANSACTIONAL_ID_BYTES} "
                                                      "bytes of UTF-8"))
            if self.transactions is not None:
                return await self.transactions.init_producer_id(request)
        elif not self.access.may_init_producer_id():
            return bpb.InitProducerIdResponse(error_code=Error.CLUSTER_AUTHORIZATION_FAILED, producer_id=-1,
                                              producer_epoch=-1, error_message="IdempotentWrite on the cluster "
                                              "or Write on a topic is needed for a producer id")
        return await handle_init_producer_id(self.producer_ids, request)

    async def WriteTxnMarkers(self, request: bpb.WriteTxnMarkersRequest,
                              context: grpc.aio.ServicerContext) -> bpb.WriteTxnMarkersResponse:
        await self._check_ready(context)
        if not self.access.allows_cluster(AclOperation.CLUSTER_ACTION):
            response = bpb.WriteTxnMarkersResponse()
            for marker in request.markers:
                out = response.markers.add(producer_id=marker.producer_id)
                for topic in marker.topics:
                    out.topics.add(name=topic.name, partitions=[bpb.WriteTxnMarkersResponse.Partition(
                        partition_index=i, error_code=Error.CLUSTER_AUTHORIZATION_FAILED)
                        for i in topic.partition_indexes])
            return response
        return await write_txn_markers(self.replicas, request, self.txn_request_timeout_ms)

    async def DescribeProducers(self, request: bpb.DescribeProducersRequest,
                                context: grpc.aio.ServicerContext) -> bpb.DescribeProducersResponse:
        await self._check_ready(context)
        denied = acl.denied_topics(self.access, AclOperation.READ, (t.name for t in request.topics))
        if not denied:
            return describe_producers(self.replicas, request)
        allowed = bpb.DescribeProducersRequest(topics=[t for t in request.topics if t.name not in denied])
        found = describe_producers(self.replicas, allowed) if allowed.topics else bpb.DescribeProducersResponse()
        for topic in request.topics:
            if topic.name in denied:
                found.topics.add(name=topic.name, partitions=[bpb.DescribeProducersResponse.Partition(
                    partition_index=i, error_code=Error.TOPIC_AUTHORIZATION_FAILED)
                    for i in topic.partition_indexes])
        return found

    async def DeleteRecords(self, request: bpb.DeleteRecordsRequest,
                            context: grpc.aio.ServicerContext) -> bpb.DeleteRecordsResponse:
        """Delete on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions)."""
        await self._check_ready(context)
        denied = acl.denied_topics(self.access, AclOperation.DELETE, (t.name for t in request.topics))
        allowed = bpb.DeleteRecordsRequest(timeout_ms=request.timeout_ms,
                                           topics=[t for t in request.topics if t.name not in denied])
        answers = iter((await delete_records(self.replicas, allowed)).topics)  # one per allowed topic, in order
        response = bpb.DeleteRecordsResponse()
        for topic in request.topics:
            if topic.name in denied:
                response.topics.add(name=topic.name, partitions=[bpb.DeleteRecordsResponse.Partition(
                    partition_index=p.partition_index, low_watermark=-1,
                    error_code=Error.TOPIC_AUTHORIZATION_FAILED) for p in topic.partitions])
            else:
                response.topics.append(next(answers))
        return response

    async def DescribeCluster(self, request: bpb.DescribeClusterRequest,
                              context: grpc.aio.ServicerContext) -> bpb.DescribeClusterResponse:
        await self._check_ready(context)
        if not self.access.allows_cluster(AclOperation.DESCRIBE):
            return bpb.DescribeClusterResponse(error_code=Error.CLUSTER_AUTHORIZATION_FAILED, controller_id=-1)
        return describe_cluster(self.replicas.image, cluster_id=self.cluster_id,
                                controller_id=self.controller_id(), listener=self.listener,
                                metadata_offset=self.metadata_offset())

    async def DescribeConfigs(self, request: bpb.DescribeConfigsRequest,
                              context: grpc.aio.ServicerContext) -> bpb.DescribeConfigsResponse:
        await self._check_ready(context)
        return describe_configs(self.replicas.image, request, broker_id=self.replicas.broker_id,
                                config=self.replicas.config, may_describe=self._may_describe_configs)

    def _may_describe_configs(self, resource_type: int, name: str) -> int:
        """NONE, or the authorization error for DescribeConfigs of one resource
        (topics by name; every broker resource is the cluster's)."""
        if resource_type == CONFIG_RESOURCE_TOPIC:
            allowed = self.access.allows(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name)
            return Error.NONE if allowed else Error.TOPIC_AUTHORIZATION_FAILED
        allowed = self.access.allows_cluster(AclOperation.DESCRIBE_CONFIGS)
        return Error.NONE if allowed else Error.CLUSTER_AUTHORIZATION_FAILED

    async def DescribeAcls(self, request: bpb.DescribeAclsRequest,
                           context: grpc.aio.ServicerContext) -> bpb.DescribeAclsResponse:
        await self._check_ready(context)
        if not self.access.allows_cluster(AclOperation.DESCRIBE):
            return bpb.DescribeAclsResponse(error_code=Error.CLUSTER_AUTHORIZATION_FAILED)
        return describe_acls(self.replicas.image, request)

    async def DescribeUserScramCredentials(self, request: bpb.DescribeUserScramCredentialsRequest,
                                           context: grpc.aio.ServicerContext
                                           ) -> bpb.DescribeUserScramCredentialsResponse:
        await self._check_ready(context)
        if not self.access.allows_cluster(AclOperation.DESCRIBE):
            return bpb.DescribeUserScramCredentialsResponse(error_code=Error.CLUSTER_AUTHORIZATION_FAILED)
        return describe_user_scram_credentials(self.replicas.image, request)

    async def _forward(self, rpc_name: str, request: Message) -> Message:
        try:
            return await self.controllers.call(rpc_name, request, timeout_s=self.forward_timeout_s)
        except ControllerUnavailable:
            return FORWARDED[rpc_name](error_code=Error.REQUEST_TIMED_OUT, controller_id=-1)

    async def _forward_items(self, rpc_name: str, request: Message, *, items: str, key: Callable[[Message], Any],
                             refused: dict[Any, tuple[int, str]], answers: str,
                             answer_key: Callable[[Message], Any],
                             refusal: Callable[[Any, int, str], Message]) -> Message:
        """Forward `request` without its items refused here (key -> (error, message)),
        and answer those in the controller's answer, in request order."""
        if not refused:
            return await self._forward(rpc_name, request)
        allowed = type(request)()
        allowed.CopyFrom(request)
        allowed.ClearField(items)
        getattr(allowed, items).extend(i for i in getattr(request, items) if key(i) not in refused)
        response = (await self._forward(rpc_name, allowed) if getattr(allowed, items)
                    else FORWARDED[rpc_name](controller_id=self.controller_id()))
        merged = FORWARDED[rpc_name](error_code=response.error_code, controller_id=response.controller_id)
        getattr(merged, answers).extend(acl.in_request_order(
            [key(i) for i in getattr(request, items)], refused, {answer_key(r): r for r in getattr(response, answers)},
            lambda k: refusal(k, *refused[k])))
        return merged

    def _refused_topics(self, operation: AclOperation, names: Iterable[str]) -> dict[str, tuple[int, str]]:
        return {name: (Error.TOPIC_AUTHORIZATION_FAILED, "")
                for name in acl.denied_topics(self.access, operation, names)}

    async def CreateTopics(self, request: cpb.CreateTopicsRequest, context: grpc.aio.ServicerContext) -> Message:
        """Create on the cluster or on the topic. Internal topics are refused
        here: only the brokers create them, and they ask the controller
        directly (the controller itself refuses the reserved name from anyone)."""
        names = [t.name for t in request.topics]
        refused = ({} if self.access.allows_cluster(AclOperation.CREATE)
                   else self._refused_topics(AclOperation.CREATE, names))
        for name in names:
            if name not in refused and is_client_forbidden(name):
                refused[name] = (Error.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
        return await self._forward_items(
            "CreateTopics", request, items="topics", key=lambda t: t.name, refused=refused, answers="topics",
            answer_key=lambda r: r.name,
            refusal=lambda name, code, message: cpb.CreateTopicsResponse.Result(
                name=name, error_code=code, error_message=message))

    async def DeleteTopics(self, request: cpb.DeleteTopicsRequest, context: grpc.aio.ServicerContext) -> Message:
        return await self._forward_items(
            "DeleteTopics", request, items="names", key=lambda name: name,
            refused=self._refused_topics(AclOperation.DELETE, request.names), answers="topics",
            answer_key=lambda r: r.name,
            refusal=lambda name, code, message: cpb.DeleteTopicsResponse.Result(name=name, error_code=code))

    async def CreatePartitions(self, request: cpb.CreatePartitionsRequest,
                               context: grpc.aio.ServicerContext) -> Message:
        return await self._forward_items(
            "CreatePartitions", request, items="topics", key=lambda t: t.name,
            refused=self._refused_topics(AclOperation.ALTER, (t.name for t in request.topics)), answers="topics",
            answer_key=lambda r: r.name,
            refusal=lambda name, code, message: cpb.CreatePartitionsResponse.Result(name=name, error_code=code))

    async def ElectLeaders(self, request: cpb.ElectLeadersRequest, context: grpc.aio.ServicerContext) -> Message:
        if not self.access.allows_cluster(AclOperation.ALTER):
            return cpb.ElectLeadersResponse(error_code=Error.CLUSTER_AUTHORIZATION_FAILED,
                                            controller_id=self.controller_id())
        return await self._forward("ElectLeaders", request)

    async def IncrementalAlterConfigs(self, request: cpb.IncrementalAlterConfigsRequest,
                                      context: grpc.aio.ServicerContext) -> Message:
        """AlterConfigs on the topic, or on the cluster for broker resources."""
        refused = {}
        for resource in request.resources:
            if resource.resource_type == CONFIG_RESOURCE_TOPIC:
                if not self.access.allows(AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, resource.resource_name):
                    refused[(resource.resource_type, resource.resource_name)] = (Error.TOPIC_AUTHORIZATION_FAILED, "")
            elif not self.access.allows_cluster(AclOperation.ALTER_CONFIGS):
                refused[(resource.resource_type, resource.resource_name)] = (Error.CLUSTER_AUTHORIZATION_FAILED, "")
        return await self._forward_items(
            "IncrementalAlterConfigs", request, items="resources", key=lambda r: (r.resource_type, r.resource_name),
            refused=refused, answers="results", answer_key=lambda r: (r.resource_type, r.resource_name),
            refusal=lambda resource, code, message: cpb.IncrementalAlterConfigsResponse.Result(
                resource_type=resource[0], resource_name=resource[1], error_code=code))

    async def DescribeClientQuotas(self, request: bpb.DescribeClientQuotasRequest,
                                   context: grpc.aio.ServicerContext) -> bpb.DescribeClientQuotasResponse:
        """DescribeConfigs on the cluster, as Kafka asks for it."""
        await self._check_ready(context)
        if not self.access.allows_cluster(AclOperation.DESCRIBE_CONFIGS):
            return bpb.DescribeClientQuotasResponse(error_code=Error.CLUSTER_AUTHORIZATION_FAILED)
        return describe_client_quotas(self.replicas.image, request)

    async def _forward_cluster_alter(self, rpc_name: str, request: Message,
                                     operation: AclOperation = AclOperation.ALTER) -> Message:
        """ACLs and SCRAM credentials change who may do what: Alter on the
        cluster; client quotas are cluster configs: AlterConfigs on it;
        `operation` says which."""
        if not self.access.allows_cluster(operation):
            return FORWARDED[rpc_name](error_code=Error.CLUSTER_AUTHORIZATION_FAILED,
                                       controller_id=self.controller_id())
        return await self._forward(rpc_name, request)

    async def CreateAcls(self, request: cpb.CreateAclsRequest, context: grpc.aio.ServicerContext) -> Message:
        return await self._forward_cluster_alter("CreateAcls", request)

    async def DeleteAcls(self, request: cpb.DeleteAclsRequest, context: grpc.aio.ServicerContext) -> Message:
        return await self._forward_cluster_alter("DeleteAcls", request)

    async def AlterUserScramCredentials(self, request: cpb.AlterUserScramCredentialsRequest,
                                        context: grpc.aio.ServicerContext) -> Message:
        return await self._forward_cluster_alter("AlterUserScramCredentials", request)

    async def AlterClientQuotas(self, request: cpb.AlterClientQuotasRequest,
                                context: grpc.aio.ServicerContext) -> Message:
        return await self._forward_cluster_alter("AlterClientQuotas", request, AclOperation.ALTER_CONFIGS)

    async def DescribeFeatures(self, request: bpb.DescribeFeaturesRequest,
                               context: grpc.aio.ServicerContext) -> bpb.DescribeFeaturesResponse:
        """As Kafka's ApiVersions, which carries them: no ACL."""
        await self._check_ready(context)
        return describe_features(self.replicas.image)

    async def UpdateFeatures(self, request: cpb.UpdateFeaturesRequest, context: grpc.aio.ServicerContext) -> Message:
        """Alter on the cluster, as Kafka asks for it."""
        return await self._forward_cluster_alter("UpdateFeatures", request)

    # Reassignments and decommissioning: Alter on the cluster, listing Describe on it, as Kafka checks them.
    async def AlterPartitionReassignments(self, request: cpb.AlterPartitionReassignmentsRequest,
                                          context: grpc.aio.ServicerContext) -> Message:
        return await self._forward_cluster_alter("AlterPartitionReassignments", request)

    async def ListPartitionReassignments(self, request: cpb.ListPartitionReassignmentsRequest,
                                         context: grpc.aio.ServicerContext) -> Message:
        return await self._forward_cluster_alter("ListPartitionReassignments", request, AclOperation.DESCRIBE)

    async def UnregisterBroker(self, request: cpb.UnregisterBrokerRequest,
                               context: grpc.aio.ServicerContext) -> Message:
        return await self._forward_cluster_alter("UnregisterBroker", request)


def _principal() -> str:
    """The calling principal, to whom a fetch session belongs ("" without security)."""
    session = current_session()
    return str(session.principal) if session is not None else ""


def add_to_server(server: grpc.aio.Server, service: Any) -> None:
    """Serve a KafkaBrokerService, or its methods as RequestQuota.metered wraps them;
    and its Fetch and Produce on the FetchStream and ProduceStream services, each
    streamed request answered as that Fetch or Produce."""
    grpc_serving.add_service(server, SERVICE, service)
    grpc_serving.add_service(server, FETCH_STREAM, SimpleNamespace(Fetch=service.Fetch))
    grpc_serving.add_service(server, PRODUCE_STREAM, SimpleNamespace(Produce=service.Produce))
