"""The GroupCoordinator gRPC service of one broker listener: each RPC handed
to the broker's GroupCoordinator. FindCoordinator answers with this
listener's endpoint of the coordinator. Until the broker has caught up with
the metadata log at startup, every RPC is refused with gRPC UNAVAILABLE, as
KafkaBroker's data RPCs are.
"""
from __future__ import annotations

from typing import Callable

import grpc

from kraftlog_api import groups_pb2 as gpb
from kafka_protocol import grpc_serving

from .coordinator import GroupCoordinator

SERVICE = gpb.DESCRIPTOR.services_by_name["GroupCoordinator"]
SERVICE_NAMES = (SERVICE.full_name,)
CLIENT_ID_METADATA = "client-id"  # optional gRPC metadata: Kafka's client.id, shown by ConsumerGroupDescribe


class GroupCoordinatorService:
    def __init__(self, coordinator: GroupCoordinator, *, listener: str, ready: Callable[[], bool]) -> None:
        self.coordinator = coordinator
        self.listener = listener
        self.ready = ready

    async def _check_ready(self, context: grpc.aio.ServicerContext) -> None:
        if not self.ready():
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"broker {self.coordinator.broker_id} is starting: "
                                                             "not caught up with the metadata log")

    async def FindCoordinator(self, request: gpb.FindCoordinatorRequest,
                              context: grpc.aio.ServicerContext) -> gpb.FindCoordinatorResponse:
        await self._check_ready(context)
        return await self.coordinator.find_coordinator(request, self.listener)

    async def ConsumerGroupHeartbeat(self, request: gpb.ConsumerGroupHeartbeatRequest,
                                     context: grpc.aio.ServicerContext) -> gpb.ConsumerGroupHeartbeatResponse:
        await self._check_ready(context)
        metadata = dict(context.invocation_metadata() or ())
        return await self.coordinator.heartbeat(request, client_id=str(metadata.get(CLIENT_ID_METADATA, "")),
                                                client_host=context.peer() or "")

    async def OffsetCommit(self, request: gpb.OffsetCommitRequest,
                           context: grpc.aio.ServicerContext) -> gpb.OffsetCommitResponse:
        await self._check_ready(context)
        return await self.coordinator.commit(request)

    async def OffsetFetch(self, request: gpb.OffsetFetchRequest,
                          context: grpc.aio.ServicerContext) -> gpb.OffsetFetchResponse:
        await self._check_ready(context)
        return self.coordinator.fetch(request)

    async def ListGroups(self, request: gpb.ListGroupsRequest,
                         context: grpc.aio.ServicerContext) -> gpb.ListGroupsResponse:
        await self._check_ready(context)
        return self.coordinator.list_groups(request)

    async def ConsumerGroupDescribe(self, request: gpb.ConsumerGroupDescribeRequest,
                                    context: grpc.aio.ServicerContext) -> gpb.ConsumerGroupDescribeResponse:
        await self._check_ready(context)
        return self.coordinator.describe(request)

    async def DeleteGroups(self, request: gpb.DeleteGroupsRequest,
                           context: grpc.aio.ServicerContext) -> gpb.DeleteGroupsResponse:
        await self._check_ready(context)
        return await self.coordinator.delete(request)


def add_to_server(server: grpc.aio.Server, service: GroupCoordinatorService) -> None:
    grpc_serving.add_service(server, SERVICE, service)
