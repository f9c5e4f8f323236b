"""Request headers v0-v2 and response headers v0-v1.

Every request header starts with api key (int16), api version (int16) and
correlation id (int32); v1 adds the client id (a nullable int16-length
string, even in v2, as Kafka keeps it), v2 the tagged fields of flexible
versions. Which version a request uses follows from its API and version
(kio's `__header_schema__`); v0 is only ControlledShutdown v0's, which no
client sends, but it reads. A response header is the correlation id (v0),
then tagged fields (v1), except that ApiVersions always answers with v0 so
that a client that sent a version the broker does not know can read it.
"""
from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Optional

import kio.schema.request_header.v1 as request_header_v1
import kio.schema.request_header.v2 as request_header_v2
import kio.schema.response_header.v0 as response_header_v0
import kio.schema.response_header.v1 as response_header_v1
from kio.serial import entity_reader, entity_writer

from .errors import WireError
from .framing import BytesLike

FIXED = struct.Struct(">hhi")  # api key, api version, correlation id: every header starts so

_REQUEST_HEADERS = {1: request_header_v1.RequestHeader, 2: request_header_v2.RequestHeader}
_RESPONSE_HEADERS = {0: response_header_v0.ResponseHeader, 1: response_header_v1.ResponseHeader}


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: Optional[str]  # None: v0, or a null string
    version: int  # the header's own version, 0-2


def peek(frame: BytesLike) -> tuple[int, int, int]:
    """(api key, api version, correlation id) of a request frame, read
    before anything else is known about it."""
    if len(frame) < FIXED.size:
        raise WireError(f"a request header is at least {FIXED.size} bytes, got {len(frame)}")
    return FIXED.unpack_from(frame)


def decode_request_header(frame: BytesLike, version: int) -> tuple[RequestHeader, int]:
    """The header of `frame` in header `version`, and its size in bytes."""
    api_key, api_version, correlation_id = peek(frame)
    if version == 0:
        return RequestHeader(api_key, api_version, correlation_id, None, 0), FIXED.size
    kind = _REQUEST_HEADERS.get(version)
    if kind is None:
        raise ValueError(f"request header version {version} does not exist")  # our bug, not the client's
    try:
        header, size = entity_reader(kind)(frame, 0)
    except Exception as exc:  # noqa: BLE001 - kio's reader fails in many ways on hostile bytes
        raise WireError(f"malformed request header v{version}: {exc}") from None
    return RequestHeader(api_key, api_version, correlation_id, header.client_id, version), size


def encode_response_header(buffer: io.BytesIO, correlation_id: int, version: int) -> None:
    kind = _RESPONSE_HEADERS[version]
    entity_writer(kind)(buffer, kind(correlation_id=correlation_id))
