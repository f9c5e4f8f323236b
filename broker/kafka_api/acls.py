"""DescribeAcls, CreateAcls and DeleteAcls (v1-v3) through KafkaBrokerService's
methods of the same names (Kafka's enum codes on both sides: resource
types, pattern types, operations, permission types). DescribeAcls is
answered from the broker's metadata image, the other two by the active
controller; a request-level refusal (no Alter on the cluster, no controller
in time) becomes every creation's or filter's error.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kafka_protocol.errors import Errors
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build

from .context import KafkaCallContext


def _filter(f: Any) -> cpb.AclBindingFilter:
    """A Kafka ACL filter (DescribeAcls' request, DeleteAcls' filters): a null string matches any value."""
    return cpb.AclBindingFilter(resource_type=f.resource_type_filter, resource_name=f.resource_name_filter,
                                pattern_type=f.pattern_type_filter, principal=f.principal_filter,
                                host=f.host_filter, operation=f.operation, permission_type=f.permission_type)


def _request_error(answer: Any) -> tuple[int, Any]:
    return answer.error_code or Errors.UNKNOWN_SERVER_ERROR, answer.error_message or None


async def describe_acls(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.DescribeAcls(bpb.DescribeAclsRequest(filter=_filter(request)), context)
    resources: dict[tuple[int, str, int], list[dict[str, Any]]] = defaultdict(list)
    for acl in answer.acls:
        resources[(acl.resource_type, acl.resource_name, acl.pattern_type)].append(
            {"principal": acl.principal, "host": acl.host, "operation": acl.operation,
             "permission_type": acl.permission_type})
    return build(response_type(request), {
        "throttle_time": 0, "error_code": answer.error_code, "error_message": answer.error_message or None,
        "resources": [{"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
                      for (t, n, p), acls in resources.items()]})


async def create_acls(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.CreateAcls(cpb.CreateAclsRequest(creations=[
        cpb.AclBinding(resource_type=c.resource_type, resource_name=c.resource_name,
                       pattern_type=c.resource_pattern_type, principal=c.principal, host=c.host,
                       operation=c.operation, permission_type=c.permission_type) for c in request.creations]),
        context)
    if len(answer.results) == len(request.creations):
        results = [{"error_code": r.error_code, "error_message": r.error_message or None} for r in answer.results]
    else:
        code, message = _request_error(answer)
        results = [{"error_code": code, "error_message": message}] * len(request.creations)
    return build(response_type(request), {"throttle_time": 0, "results": results})


async def delete_acls(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.DeleteAcls(cpb.DeleteAclsRequest(filters=[_filter(f) for f in request.filters]),
                                              context)
    if len(answer.filter_results) == len(request.filters):
        results = [{"error_code": r.error_code, "error_message": r.error_message or None, "matching_acls": [
            {"error_code": 0, "error_message": None, "resource_type": a.resource_type,
             "resource_name": a.resource_name, "pattern_type": a.pattern_type, "principal": a.principal,
             "host": a.host, "operation": a.operation, "permission_type": a.permission_type}
            for a in r.matching_acls]} for r in answer.filter_results]
    else:
        code, message = _request_error(answer)
        results = [{"error_code": code, "error_message": message, "matching_acls": ()}] * len(request.filters)
    return build(response_type(request), {"throttle_time": 0, "filter_results": results})
