"""Kafka's CreateAcls and DeleteAcls as controller decisions.

CreateAcls: each creation is checked as Kafka's controller checks a new
ACL (no UNKNOWN, ANY or MATCH values, a TYPE:NAME principal, a non-empty
resource name) and refused on its own with INVALID_REQUEST; a good one
becomes an AccessControlEntryRecord under a fresh id. An ACL that exists
already (or twice in one request) is accepted and written once, as Kafka
does.

DeleteAcls: each filter (refused when a field is UNKNOWN) removes every
ACL it matches, and its result lists them; an ACL two filters match is
listed by both and removed once.
"""
from __future__ import annotations

from typing import Callable

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image import MetadataImage
from metadata_quorum.image.security_records import acl_record, remove_acl_record
from security.acl import InvalidAclError, validate_binding
from security.acl_proto import binding_from_proto, binding_to_proto, filter_from_proto

from .errors import Error
from .result import ControllerResult

NewAclId = Callable[[set[bytes]], bytes]


def create_acls(image: MetadataImage, request: cpb.CreateAclsRequest, new_id: NewAclId,
                node_id: int) -> ControllerResult:
    response = cpb.CreateAclsResponse(controller_id=node_id)
    existing = set(image.acls.values())
    taken: set[bytes] = set()
    records: list[mpb.MetadataRecord] = []
    for creation in request.creations:
        result = response.results.add()
        binding = binding_from_proto(creation)
        try:
            validate_binding(binding)
        except InvalidAclError as exc:
            result.error_code = Error.INVALID_REQUEST
            result.error_message = str(exc)
            continue
        if binding in existing:
            continue
        existing.add(binding)
        acl_id = new_id(taken)
        taken.add(acl_id)
        records.append(acl_record(acl_id, binding))
    return ControllerResult(records, response)


def delete_acls(image: MetadataImage, request: cpb.DeleteAclsRequest, node_id: int) -> ControllerResult:
    response = cpb.DeleteAclsResponse(controller_id=node_id)
    removed: set[bytes] = set()
    records: list[mpb.MetadataRecord] = []
    for message in request.filters:
        result = response.filter_results.add()
        acl_filter = filter_from_proto(message)
        unknown = acl_filter.unknown_field()
        if unknown is not None:
            result.error_code = Error.INVALID_REQUEST
            result.error_message = f"The filter's {unknown} is UNKNOWN"
            continue
        matching = sorted((binding, acl_id) for acl_id, binding in image.acls.items() if acl_filter.matches(binding))
        for binding, acl_id in matching:
            result.matching_acls.append(binding_to_proto(binding))
            if acl_id not in removed:
                removed.add(acl_id)
                records.append(remove_acl_record(acl_id))
    return ControllerResult(records, response)
