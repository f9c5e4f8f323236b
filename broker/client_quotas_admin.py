"""DescribeClientQuotas, answered from the broker's metadata image (the
write, AlterClientQuotas, is forwarded to the controller).

Kafka's filter: each component names an entity type once, matched EXACT
(that name), DEFAULT (the type's default entity) or SPECIFIED (any named
entity of the type); strict keeps only entities with no other types. A
malformed filter is refused whole with INVALID_REQUEST (UNSUPPORTED_VERSION
for an unknown entity type or match type), as Kafka's ClientQuotasImage.
"""
from __future__ import annotations

from typing import Optional

from kraftlog_api import broker_pb2 as bpb
from metadata_quorum.image import MetadataImage
from security.client_quotas import ENTITY_TYPES, QuotaEntity, entity_parts

from .errors import Error

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
_ANY_NAME = object()  # SPECIFIED: any name but the default

Response = bpb.DescribeClientQuotasResponse


class _BadFilter(Exception):
    def __init__(self, error: Error, message: str) -> None:
        super().__init__(message)
        self.error = error


def _wanted(request: bpb.DescribeClientQuotasRequest) -> dict[str, object]:
    """entity type -> the name it must have (None: the default; _ANY_NAME: any name)."""
    wanted: dict[str, object] = {}
    for component in request.components:
        kind = component.entity_type
        match: Optional[str] = component.match if component.HasField("match") else None
        if not kind:
            raise _BadFilter(Error.INVALID_REQUEST, "Invalid empty entity type.")
        if kind in wanted:
            raise _BadFilter(Error.INVALID_REQUEST, f"Entity type {kind[:32]} cannot appear more than once in the filter.")
        if kind not in ENTITY_TYPES:
            raise _BadFilter(Error.UNSUPPORTED_VERSION, f"Unsupported entity type {kind[:32]!r}")
        if component.match_type == MATCH_EXACT:
            if match is None:
                raise _BadFilter(Error.INVALID_REQUEST,
                                 "Request specified MATCH_TYPE_EXACT, but set match string to null.")
            wanted[kind] = match
        elif component.match_type in (MATCH_DEFAULT, MATCH_SPECIFIED):
            if match is not None:
                raise _BadFilter(Error.INVALID_REQUEST, "Request specified MATCH_TYPE_"
                                 f"{'DEFAULT' if component.match_type == MATCH_DEFAULT else 'SPECIFIED'}, "
                                 "but also specified a match string.")
            wanted[kind] = None if component.match_type == MATCH_DEFAULT else _ANY_NAME
        else:
            raise _BadFilter(Error.UNSUPPORTED_VERSION, f"Unknown match type {component.match_type}")
    return wanted


def _matches(entity: QuotaEntity, wanted: dict[str, object], strict: bool) -> bool:
    names = dict(entity)
    if strict and len(names) != len(wanted):
        return False
    for kind, name in wanted.items():
        if kind not in names:
            return False
        if name is _ANY_NAME:
            if names[kind] is None:
                return False
        elif names[kind] != name:
            return False
    return True


def describe_client_quotas(image: MetadataImage, request: bpb.DescribeClientQuotasRequest) -> Response:
    try:
        wanted = _wanted(request)
    except _BadFilter as exc:
        return Response(error_code=exc.error, error_message=str(exc))
    response = Response()
    for entity, quotas in sorted(image.client_quotas.items(), key=lambda item: repr(item[0])):
        if _matches(entity, wanted, request.strict):
            response.entries.add(entity=entity_parts(entity),
                                 values=[Response.Value(key=k, value=v) for k, v in sorted(quotas.items())])
    return response
