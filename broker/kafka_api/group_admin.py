"""ListGroups (v0-v5), DescribeGroups (v0-v5) and DeleteGroups (v0-v2)
through the GroupCoordinator service's methods of the same names.

ListGroups lists classic and KIP-848 groups alike (v4 filters by state,
v5 by type: "classic" or "consumer", both case-insensitive as in Kafka).
DescribeGroups is the classic protocol's describe: a KIP-848 group is
answered there as Kafka 4 does below v6, Dead with no members."""
from __future__ import annotations

from typing import Any

from kraftlog_api import groups_pb2 as gpb
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build

from .context import KafkaCallContext


async def serve_list(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.groups.ListGroups(gpb.ListGroupsRequest(
        states_filter=getattr(request, "states_filter", ())), context)
    types = {t.lower() for t in getattr(request, "types_filter", ())}
    return build(response_type(request), {"throttle_time": 0, "error_code": answer.error_code, "groups": [
        {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.group_state,
         "group_type": g.group_type} for g in answer.groups if not types or g.group_type.lower() in types]})


async def serve_describe(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.groups.DescribeGroups(gpb.DescribeGroupsRequest(
        group_ids=request.groups,
        include_authorized_operations=getattr(request, "include_authorized_operations", False)), context)
    return build(response_type(request), {"throttle_time": 0, "groups": [
        {"error_code": g.error_code, "error_message": g.error_message or None, "group_id": g.group_id,
         "group_state": g.group_state, "protocol_type": g.protocol_type, "protocol_data": g.protocol_data,
         "authorized_operations": g.authorized_operations,
         "members": [{"member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
                      "group_instance_id": m.group_instance_id if m.HasField("group_instance_id") else None,
                      "member_metadata": m.member_metadata, "member_assignment": m.member_assignment}
                     for m in g.members]} for g in answer.groups]})


async def serve_delete(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.groups.DeleteGroups(gpb.DeleteGroupsRequest(group_ids=request.groups_names), context)
    return build(response_type(request), {"throttle_time": 0, "results": [
        {"group_id": r.group_id, "error_code": r.error_code} for r in answer.results]})
