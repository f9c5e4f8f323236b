"""The GroupCoordinator gRPC service of one broker listener: each RPC handed
to the broker's GroupCoordinator. FindCoordinator answers with this
listener's endpoint of the coordinator; with key_type 1 (a transactional id)
the broker's TransactionCoordinator answers it. Until the broker has caught up with
the metadata log at startup, every RPC is refused with gRPC UNAVAILABLE, as
KafkaBroker's data RPCs are.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import grpc

from kraftlog_api import groups_pb2 as gpb
from kafka_protocol import grpc_serving
from kafka_protocol.errors import Errors
from kafka_protocol.grpc_serving import CLIENT_ID_METADATA
from security.acl import AclOperation, ResourceType
from security.authorization import NodeAuthorizer

from .. import access as acl
from ..transactions.coordinator import TransactionCoordinator
from .coordinator import TXN_OFFSET_COMMIT, GroupCoordinator

# Where OffsetCommit and OffsetFetch keep topics: per-partition refusals.
OFFSET_COMMIT = acl.TopicShape(gpb.OffsetCommitResponse, "topics", "name", "partition_index",
                               "topics", "name", "partition_index")

# Kafka's operations on a group resource, for a describe's authorized_operations bit set.
GROUP_OPERATIONS = (AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS,
                    AclOperation.ALTER_CONFIGS)
NOT_ASKED = -2147483648  # Kafka's INT32_MIN: authorized operations not asked for

SERVICE = gpb.DESCRIPTOR.services_by_name["GroupCoordinator"]
SERVICE_NAMES = (SERVICE.full_name,)


class GroupCoordinatorService:
    def __init__(self, coordinator: GroupCoordinator, *, listener: str, ready: Callable[[], bool],
                 access: Optional[NodeAuthorizer] = None,
                 transactions: Optional[TransactionCoordinator] = None) -> None:
        self.coordinator = coordinator
        self.transactions = transactions
        self.access = access or NodeAuthorizer.allow_all()
        self.listener = listener
        self.ready = ready

    async def _check_ready(self, context: grpc.aio.ServicerContext) -> None:
        if not self.ready():
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"broker {self.coordinator.broker_id} is starting: "
                                                             "not caught up with the metadata log")

    async def FindCoordinator(self, request: gpb.FindCoordinatorRequest,
                              context: grpc.aio.ServicerContext) -> gpb.FindCoordinatorResponse:
        await self._check_ready(context)
        # Checked before anything else: finding a coordinator may create the
        # internal topic it lives in, which a refused caller must not cause.
        resource, refusal = ((ResourceType.GROUP, Errors.GROUP_AUTHORIZATION_FAILED) if request.key_type == 0
                             else (ResourceType.TRANSACTIONAL_ID, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
        denied = self.access.denied(AclOperation.DESCRIBE, resource, request.keys)
        finder = self.transactions if request.key_type == 1 and self.transactions is not None else self.coordinator
        if not denied:
            return await finder.find_coordinator(request, self.listener)
        allowed = gpb.FindCoordinatorRequest(key_type=request.key_type,
                                             keys=[k for k in request.keys if k not in denied])
        found = await finder.find_coordinator(allowed, self.listener) if allowed.keys else None
        answers = {c.key: c for c in found.coordinators} if found is not None else {}
        return gpb.FindCoordinatorResponse(coordinators=acl.in_request_order(
            request.keys, denied, answers, lambda key: gpb.FindCoordinatorResponse.Coordinator(
                key=key, node_id=-1, error_code=refusal)))

    async def ConsumerGroupHeartbeat(self, request: gpb.ConsumerGroupHeartbeatRequest,
                                     context: grpc.aio.ServicerContext) -> gpb.ConsumerGroupHeartbeatResponse:
        await self._check_ready(context)
        if not self.access.allows(AclOperation.READ, ResourceType.GROUP, request.group_id):
            return gpb.ConsumerGroupHeartbeatResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED,
                                                      member_epoch=request.member_epoch)
        if request.HasField("subscribed_topic_names"):
            hidden = acl.denied_topics(self.access, AclOperation.DESCRIBE, request.subscribed_topic_names.names)
            if hidden:
                return gpb.ConsumerGroupHeartbeatResponse(
                    error_code=Errors.TOPIC_AUTHORIZATION_FAILED, member_epoch=request.member_epoch,
                    error_message=f"not authorized to describe {len(hidden)} subscribed topic(s)")
        metadata = dict(context.invocation_metadata() or ())
        return await self.coordinator.heartbeat(request, client_id=str(metadata.get(CLIENT_ID_METADATA, "")),
                                                client_host=context.peer() or "")

    # -- the classic group protocol: Read on the group, as Kafka checks -------------------------
    async def JoinGroup(self, request: gpb.JoinGroupRequest,
                        context: grpc.aio.ServicerContext) -> gpb.JoinGroupResponse:
        await self._check_ready(context)
        if not self.access.allows(AclOperation.READ, ResourceType.GROUP, request.group_id):
            return gpb.JoinGroupResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED, generation_id=-1)
        metadata = dict(context.invocation_metadata() or ())
        return await self.coordinator.join_group(request, client_id=str(metadata.get(CLIENT_ID_METADATA, "")),
                                                 client_host=context.peer() or "")

    async def SyncGroup(self, request: gpb.SyncGroupRequest,
                        context: grpc.aio.ServicerContext) -> gpb.SyncGroupResponse:
        await self._check_ready(context)
        if not self.access.allows(AclOperation.READ, ResourceType.GROUP, request.group_id):
            return gpb.SyncGroupResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
        return await self.coordinator.sync_group(request)

    async def Heartbeat(self, request: gpb.HeartbeatRequest,
                        context: grpc.aio.ServicerContext) -> gpb.HeartbeatResponse:
        await self._check_ready(context)
        if not self.access.allows(AclOperation.READ, ResourceType.GROUP, request.group_id):
            return gpb.HeartbeatResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
        return self.coordinator.heartbeat_classic(request)

    async def LeaveGroup(self, request: gpb.LeaveGroupRequest,
                         context: grpc.aio.ServicerContext) -> gpb.LeaveGroupResponse:
        await self._check_ready(context)
        if not self.access.allows(AclOperation.READ, ResourceType.GROUP, request.group_id):
            return gpb.LeaveGroupResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
        return await self.coordinator.leave_group(request)

    async def OffsetCommit(self, request: gpb.OffsetCommitRequest,
                           context: grpc.aio.ServicerContext) -> gpb.OffsetCommitResponse:
        await self._check_ready(context)
        if not self.access.allows(AclOperation.READ, ResourceType.GROUP, request.group_id):
            return gpb.OffsetCommitResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
        return await self._readable_topics(request, OFFSET_COMMIT, self.coordinator.commit)

    async def TxnOffsetCommit(self, request: gpb.TxnOffsetCommitRequest,
                              context: grpc.aio.ServicerContext) -> gpb.TxnOffsetCommitResponse:
        """Kafka's checks, in its order: Write on the transactional id, Read
        on the group (both refuse every partition), Read on each topic."""
        await self._check_ready(context)
        if not self.access.allows(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
            return acl.refuse_all(request, TXN_OFFSET_COMMIT, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if not self.access.allows(AclOperation.READ, ResourceType.GROUP, request.group_id):
            return acl.refuse_all(request, TXN_OFFSET_COMMIT, Errors.GROUP_AUTHORIZATION_FAILED)
        return await self._readable_topics(request, TXN_OFFSET_COMMIT, self.coordinator.txn_offset_commit)

    async def _readable_topics(self, request, shape: acl.TopicShape, handle):
        """`handle` the topics the caller may read; the others answer
        TOPIC_AUTHORIZATION_FAILED on each of their partitions."""
        denied = acl.denied_topics(self.access, AclOperation.READ, acl.topic_names(request, shape))
        if not denied:
            return await handle(request)
        allowed, refused = acl.split_topics(request, shape, denied)
        response = await handle(allowed) if getattr(allowed, shape.request_topics) else shape.response()
        response.MergeFrom(refused)
        return response

    async def OffsetFetch(self, request: gpb.OffsetFetchRequest,
                          context: grpc.aio.ServicerContext) -> gpb.OffsetFetchResponse:
        await self._check_ready(context)
        if not self.access.allows(AclOperation.DESCRIBE, ResourceType.GROUP, request.group_id):
            return gpb.OffsetFetchResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
        response = self.coordinator.fetch(request)
        if not self.access.enabled:
            return response
        # As Kafka: topics the caller may not describe answer TOPIC_AUTHORIZATION_FAILED
        # when asked for by name, and are left out of an "every partition" answer.
        denied = acl.denied_topics(self.access, AclOperation.DESCRIBE, (t.name for t in response.topics))
        if denied:
            kept = [t for t in response.topics if t.name not in denied]
            del response.topics[:]
            response.topics.extend(kept)
            for topic in request.topics:
                if topic.topic in denied:
                    answer = response.topics.add(name=topic.topic)
                    for index in topic.partitions:
                        answer.partitions.add(partition_index=index, committed_offset=-1,
                                              error_code=Errors.TOPIC_AUTHORIZATION_FAILED)
        return response

    async def ListGroups(self, request: gpb.ListGroupsRequest,
                         context: grpc.aio.ServicerContext) -> gpb.ListGroupsResponse:
        await self._check_ready(context)
        response = self.coordinator.list_groups(request)
        if self.access.allows_cluster(AclOperation.DESCRIBE):
            return response
        denied = self._denied_groups(AclOperation.DESCRIBE, (g.group_id for g in response.groups))
        kept = [g for g in response.groups if g.group_id not in denied]
        del response.groups[:]
        response.groups.extend(kept)
        return response

    async def ConsumerGroupDescribe(self, request: gpb.ConsumerGroupDescribeRequest,
                                    context: grpc.aio.ServicerContext) -> gpb.ConsumerGroupDescribeResponse:
        await self._check_ready(context)
        return self._describe(request, self.coordinator.describe, gpb.ConsumerGroupDescribeResponse)

    async def DescribeGroups(self, request: gpb.DescribeGroupsRequest,
                             context: grpc.aio.ServicerContext) -> gpb.DescribeGroupsResponse:
        await self._check_ready(context)
        return self._describe(request, self.coordinator.describe_groups, gpb.DescribeGroupsResponse)

    def _describe(self, request, describe, kind):
        """Either describe: the groups the caller may describe, with the
        operations it may do on each when asked (Kafka's bit set)."""
        denied = self._denied_groups(AclOperation.DESCRIBE, request.group_ids)
        allowed = [g for g in request.group_ids if g not in denied]
        found = describe(type(request)(group_ids=allowed)) if allowed else None
        answers = {g.group_id: g for g in found.groups} if found is not None else {}
        for group_id, group in answers.items():
            group.authorized_operations = (self._operations(group_id) if request.include_authorized_operations
                                           else NOT_ASKED)
        return kind(groups=acl.in_request_order(request.group_ids, denied, answers, lambda group_id: kind.Group(
            group_id=group_id, error_code=Errors.GROUP_AUTHORIZATION_FAILED, authorized_operations=NOT_ASKED)))

    def _operations(self, group_id: str) -> int:
        return sum(1 << op for op in GROUP_OPERATIONS if self.access.allows(op, ResourceType.GROUP, group_id))

    async def DeleteGroups(self, request: gpb.DeleteGroupsRequest,
                           context: grpc.aio.ServicerContext) -> gpb.DeleteGroupsResponse:
        await self._check_ready(context)
        denied = self._denied_groups(AclOperation.DELETE, request.group_ids)
        if not denied:
            return await self.coordinator.delete(request)
        allowed = [g for g in request.group_ids if g not in denied]
        found = await self.coordinator.delete(gpb.DeleteGroupsRequest(group_ids=allowed)) if allowed else None
        answers = {r.group_id: r for r in found.results} if found is not None else {}
        return gpb.DeleteGroupsResponse(results=acl.in_request_order(
            request.group_ids, denied, answers, lambda group_id: gpb.DeleteGroupsResponse.Result(
                group_id=group_id, error_code=Errors.GROUP_AUTHORIZATION_FAILED)))

    def _denied_groups(self, operation: AclOperation, group_ids) -> set[str]:
        return self.access.denied(operation, ResourceType.GROUP, group_ids)


def add_to_server(server: grpc.aio.Server, service: Any) -> None:
    """Serve a GroupCoordinatorService, or its methods as RequestQuota.metered wraps them."""
    grpc_serving.add_service(server, SERVICE, service)
