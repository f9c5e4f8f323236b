"""The classic group protocol - JoinGroup (v0-v9), SyncGroup (v0-v5),
Heartbeat (v0-v4), LeaveGroup (v0-v5) - through the GroupCoordinator
service's methods of the same names (broker/groups/classic.py has the rules).

A JoinGroup is answered when the group's join phase completes (every known
member rejoined, or the rebalance timeout passed), a SyncGroup when the
leader brought the assignment: the connection waits meanwhile, as a Kafka
broker's does. JoinGroup v4+ requires a known member id: a new member
first gets MEMBER_ID_REQUIRED with its id (KIP-394). LeaveGroup v0-v2 name
one member, v3+ a batch (KIP-345)."""
from __future__ import annotations

from typing import Any, Optional

from kraftlog_api import groups_pb2 as gpb
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build, millis

from .context import KafkaCallContext

KNOWN_MEMBER_ID_VERSION = 4
BATCHED_LEAVE_VERSION = 3
NO_REBALANCE_TIMEOUT = -1  # v0: the session timeout is the rebalance timeout too


def _optional(message: Any, field: str) -> Optional[str]:
    return getattr(message, field) if message.HasField(field) else None


async def serve_join(services: Any, request: Any, context: KafkaCallContext) -> Any:
    pb = gpb.JoinGroupRequest(
        group_id=request.group_id, session_timeout_ms=millis(request.session_timeout),
        rebalance_timeout_ms=millis(getattr(request, "rebalance_timeout", NO_REBALANCE_TIMEOUT)),
        member_id=request.member_id, protocol_type=request.protocol_type,
        protocols=[gpb.ClassicProtocol(name=p.name, metadata=p.metadata) for p in request.protocols],
        reason=getattr(request, "reason", None) or "",
        require_known_member_id=request.__version__ >= KNOWN_MEMBER_ID_VERSION)
    instance = getattr(request, "group_instance_id", None)
    if instance is not None:
        pb.group_instance_id = instance
    answer = await services.groups.JoinGroup(pb, context)
    return build(response_type(request), {
        "throttle_time": 0, "error_code": answer.error_code, "generation_id": answer.generation_id,
        "protocol_type": _optional(answer, "protocol_type"),
        # v0-v6 have a non-null protocol name: "" where v7 has null
        "protocol_name": _optional(answer, "protocol_name") if request.__version__ >= 7
        else answer.protocol_name,
        "leader": answer.leader, "skip_assignment": answer.skip_assignment, "member_id": answer.member_id,
        "members": [{"member_id": m.member_id, "group_instance_id": _optional(m, "group_instance_id"),
                     "metadata": m.metadata} for m in answer.members]})


async def serve_sync(services: Any, request: Any, context: KafkaCallContext) -> Any:
    pb = gpb.SyncGroupRequest(
        group_id=request.group_id, generation_id=request.generation_id, member_id=request.member_id,
        assignments=[gpb.SyncGroupRequest.Assignment(member_id=a.member_id, assignment=a.assignment)
                     for a in request.assignments])
    for field in ("group_instance_id", "protocol_type", "protocol_name"):
        value = getattr(request, field, None)
        if value is not None:
            setattr(pb, field, value)
    answer = await services.groups.SyncGroup(pb, context)
    return build(response_type(request), {
        "throttle_time": 0, "error_code": answer.error_code, "protocol_type": _optional(answer, "protocol_type"),
        "protocol_name": _optional(answer, "protocol_name"), "assignment": answer.assignment})


async def serve_heartbeat(services: Any, request: Any, context: KafkaCallContext) -> Any:
    pb = gpb.HeartbeatRequest(group_id=request.group_id, generation_id=request.generation_id,
                              member_id=request.member_id)
    instance = getattr(request, "group_instance_id", None)
    if instance is not None:
        pb.group_instance_id = instance
    answer = await services.groups.Heartbeat(pb, context)
    return build(response_type(request), {"throttle_time": 0, "error_code": answer.error_code})


async def serve_leave(services: Any, request: Any, context: KafkaCallContext) -> Any:
    batched = request.__version__ >= BATCHED_LEAVE_VERSION
    members = ([gpb.LeaveGroupRequest.Member(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                             reason=getattr(m, "reason", None) or "")
                if m.group_instance_id is not None else
                gpb.LeaveGroupRequest.Member(member_id=m.member_id, reason=getattr(m, "reason", None) or "")
                for m in request.members] if batched else [gpb.LeaveGroupRequest.Member(member_id=request.member_id)])
    answer = await services.groups.LeaveGroup(gpb.LeaveGroupRequest(group_id=request.group_id, members=members),
                                              context)
    error = answer.error_code
    if not batched and not error and answer.members:
        error = answer.members[0].error_code  # v0-v2: the one member's outcome is the answer's
    return build(response_type(request), {"throttle_time": 0, "error_code": error, "members": [
        {"member_id": m.member_id, "group_instance_id": _optional(m, "group_instance_id"), "error_code": m.error_code}
        for m in answer.members]})
