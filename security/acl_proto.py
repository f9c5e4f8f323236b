"""ACL bindings and filters to and from their gRPC messages (kraftlog_api's
AclBinding and AclBindingFilter), for the controller, the brokers and the
admin client alike. Unknown codes become UNKNOWN, as Kafka's fromCode does;
deciding whether that is acceptable is the caller's business."""
from __future__ import annotations

from kraftlog_api import controller_pb2 as cpb

from .acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourceType


def binding_from_proto(message: cpb.AclBinding) -> AclBinding:
    return AclBinding(
        ResourceType.from_code(message.resource_type), message.resource_name,
        PatternType.from_code(message.pattern_type), message.principal, message.host,
        AclOperation.from_code(message.operation), AclPermissionType.from_code(message.permission_type))


def binding_to_proto(binding: AclBinding) -> cpb.AclBinding:
    return cpb.AclBinding(
        resource_type=binding.resource_type, resource_name=binding.resource_name,
        pattern_type=binding.pattern_type, principal=binding.principal, host=binding.host,
        operation=binding.operation, permission_type=binding.permission_type)


def filter_from_proto(message: cpb.AclBindingFilter) -> AclBindingFilter:
    return AclBindingFilter(
        resource_type=ResourceType.from_code(message.resource_type),
        resource_name=message.resource_name if message.HasField("resource_name") else None,
        pattern_type=PatternType.from_code(message.pattern_type),
        principal=message.principal if message.HasField("principal") else None,
        host=message.host if message.HasField("host") else None,
        operation=AclOperation.from_code(message.operation),
        permission_type=AclPermissionType.from_code(message.permission_type))


def filter_to_proto(acl_filter: AclBindingFilter) -> cpb.AclBindingFilter:
    message = cpb.AclBindingFilter(
        resource_type=acl_filter.resource_type, pattern_type=acl_filter.pattern_type,
        operation=acl_filter.operation, permission_type=acl_filter.permission_type)
    for name in ("resource_name", "principal", "host"):
        value = getattr(acl_filter, name)
        if value is not None:
            setattr(message, name, value)
    return message
