"""The KafkaBroker gRPC service of one broker listener.

Produce, Fetch, ListOffsets, Metadata, OffsetForLeaderEpoch, InitProducerId,
DescribeCluster, DescribeConfigs, DescribeAcls and DescribeUserScramCredentials
are answered here by the broker's handlers; CreateTopics, DeleteTopics,
CreatePartitions, ElectLeaders, IncrementalAlterConfigs, CreateAcls,
DeleteAcls and AlterUserScramCredentials are
forwarded to the active controller, and its answer is
returned as it is (REQUEST_TIMED_OUT at the request level when no
controller answered in time).

Until the broker has caught up with the metadata log at startup, the data
RPCs are refused with gRPC UNAVAILABLE: the broker is not serving yet, as
a Kafka broker does not open its listeners before its initial catch-up.
"""
from __future__ import annotations

from typing import Callable, Optional

import grpc
from google.protobuf.message import Message

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kafka_protocol.internal_topics import is_client_forbidden
from kafka_protocol import grpc_serving

from .admin_info import describe_cluster, describe_configs
from .controller_client import ControllerClient, ControllerUnavailable
from .errors import Error
from .fetch import handle_fetch
from .metadata import metadata_response
from .offsets import handle_list_offsets, handle_offset_for_leader_epoch
from .produce import handle_produce
from .producer_ids import ProducerIdManager, handle_init_producer_id
from .replica_manager import ReplicaManager
from .security_admin import describe_acls, describe_user_scram_credentials

SERVICE = bpb.DESCRIPTOR.services_by_name["KafkaBroker"]
SERVICE_NAMES = (SERVICE.full_name,)
FORWARDED = {
    "CreateTopics": cpb.CreateTopicsResponse,
    "DeleteTopics": cpb.DeleteTopicsResponse,
    "CreatePartitions": cpb.CreatePartitionsResponse,
    "ElectLeaders": cpb.ElectLeadersResponse,
    "IncrementalAlterConfigs": cpb.IncrementalAlterConfigsResponse,
    "CreateAcls": cpb.CreateAclsResponse,
    "DeleteAcls": cpb.DeleteAclsResponse,
    "AlterUserScramCredentials": cpb.AlterUserScramCredentialsResponse,
}


class KafkaBrokerService:
    def __init__(self, replicas: ReplicaManager, controllers: ControllerClient, *, cluster_id: str, listener: str,
                 ready: Callable[[], bool], controller_id: Callable[[], int], forward_timeout_s: float,
                 producer_ids: Optional[ProducerIdManager] = None) -> None:
        self.replicas = replicas
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

    async def Produce(self, request: bpb.ProduceRequest, context: grpc.aio.ServicerContext) -> bpb.ProduceResponse:
        await self._check_ready(context)
        return await handle_produce(self.replicas, request)

    async def Fetch(self, request: bpb.FetchRequest, context: grpc.aio.ServicerContext) -> bytes:
        await self._check_ready(context)
        return await handle_fetch(self.replicas, request)

    async def ListOffsets(self, request: bpb.ListOffsetsRequest,
                          context: grpc.aio.ServicerContext) -> bpb.ListOffsetsResponse:
        await self._check_ready(context)
        return handle_list_offsets(self.replicas, request)

    async def OffsetForLeaderEpoch(self, request: bpb.OffsetForLeaderEpochRequest,
                                   context: grpc.aio.ServicerContext) -> bpb.OffsetForLeaderEpochResponse:
        await self._check_ready(context)
        return handle_offset_for_leader_epoch(self.replicas, request)

    async def Metadata(self, request: bpb.MetadataRequest, context: grpc.aio.ServicerContext) -> bpb.MetadataResponse:
        await self._check_ready(context)
        return metadata_response(self.replicas.image, request, cluster_id=self.cluster_id,
                                 controller_id=self.controller_id(), listener=self.listener)

    async def InitProducerId(self, request: bpb.InitProducerIdRequest,
                             context: grpc.aio.ServicerContext) -> bpb.InitProducerIdResponse:
        await self._check_ready(context)
        if self.producer_ids is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "this service hands out no producer ids")
        return await handle_init_producer_id(self.producer_ids, request)

    async def DescribeCluster(self, request: bpb.DescribeClusterRequest,
                              context: grpc.aio.ServicerContext) -> bpb.DescribeClusterResponse:
        await self._check_ready(context)
        return describe_cluster(self.replicas.image, cluster_id=self.cluster_id,
                                controller_id=self.controller_id(), listener=self.listener)

    async def DescribeConfigs(self, request: bpb.DescribeConfigsRequest,
                              context: grpc.aio.ServicerContext) -> bpb.DescribeConfigsResponse:
        await self._check_ready(context)
        return describe_configs(self.replicas.image, request, broker_id=self.replicas.broker_id,
                                config=self.replicas.config)

    async def DescribeAcls(self, request: bpb.DescribeAclsRequest,
                           context: grpc.aio.ServicerContext) -> bpb.DescribeAclsResponse:
        await self._check_ready(context)
        return describe_acls(self.replicas.image, request)

    async def DescribeUserScramCredentials(self, request: bpb.DescribeUserScramCredentialsRequest,
                                           context: grpc.aio.ServicerContext
                                           ) -> bpb.DescribeUserScramCredentialsResponse:
        await self._check_ready(context)
        return describe_user_scram_credentials(self.replicas.image, request)

    async def _forward(self, rpc_name: str, request: Message) -> Message:
        try:
            return await self.controllers.call(rpc_name, request, timeout_s=self.forward_timeout_s)
        except ControllerUnavailable:
            return FORWARDED[rpc_name](error_code=Error.REQUEST_TIMED_OUT, controller_id=-1)

    async def CreateTopics(self, request: cpb.CreateTopicsRequest, context: grpc.aio.ServicerContext) -> Message:
        """Internal topics are refused here: only the brokers create them, and
        they ask the controller directly (the controller itself refuses the
        reserved name from anyone)."""
        forbidden = [t.name for t in request.topics if is_client_forbidden(t.name)]
        if not forbidden:
            return await self._forward("CreateTopics", request)
        allowed = cpb.CreateTopicsRequest(validate_only=request.validate_only,
                                          topics=[t for t in request.topics if not is_client_forbidden(t.name)])
        response = (await self._forward("CreateTopics", allowed) if allowed.topics
                    else cpb.CreateTopicsResponse(controller_id=self.controller_id()))
        results = {r.name: r for r in response.topics}
        answered = cpb.CreateTopicsResponse(error_code=response.error_code, controller_id=response.controller_id)
        for topic in request.topics:  # in request order, as the controller answers
            if is_client_forbidden(topic.name):
                answered.topics.add(name=topic.name, error_code=Error.INVALID_REQUEST,
                                    error_message=f"Creation of internal topic {topic.name} is prohibited.")
            elif topic.name in results:
                answered.topics.append(results[topic.name])
        return answered

    async def DeleteTopics(self, request: cpb.DeleteTopicsRequest, context: grpc.aio.ServicerContext) -> Message:
        return await self._forward("DeleteTopics", request)

    async def CreatePartitions(self, request: cpb.CreatePartitionsRequest,
                               context: grpc.aio.ServicerContext) -> Message:
        return await self._forward("CreatePartitions", request)

    async def ElectLeaders(self, request: cpb.ElectLeadersRequest, context: grpc.aio.ServicerContext) -> Message:
        return await self._forward("ElectLeaders", request)

    async def IncrementalAlterConfigs(self, request: cpb.IncrementalAlterConfigsRequest,
                                      context: grpc.aio.ServicerContext) -> Message:
        return await self._forward("IncrementalAlterConfigs", request)

    async def CreateAcls(self, request: cpb.CreateAclsRequest, context: grpc.aio.ServicerContext) -> Message:
        return await self._forward("CreateAcls", request)

    async def DeleteAcls(self, request: cpb.DeleteAclsRequest, context: grpc.aio.ServicerContext) -> Message:
        return await self._forward("DeleteAcls", request)

    async def AlterUserScramCredentials(self, request: cpb.AlterUserScramCredentialsRequest,
                                        context: grpc.aio.ServicerContext) -> Message:
        return await self._forward("AlterUserScramCredentials", request)


def add_to_server(server: grpc.aio.Server, service: KafkaBrokerService) -> None:
    grpc_serving.add_service(server, SERVICE, service)
