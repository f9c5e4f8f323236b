"""Request headers v0-v2 and response headers v0-v1.

Every request header starts with api key (int16), api version (int16) and
correlation id (int32); v1 adds the client id (a nullable int16-length
string, even in v2, as Kafka keeps it), v2 the tagged fields of flexible
versions. Which version a request uses follows from its API and version
(kio's `__header_schema__`); v0 is only ControlledShutdown v0's, which no
client sends, but it reads. A response header is the correlation id (v0),
then tagged fields (v1), except that ApiVersions always answers with v0 so
that a client that sent a version the broker does not know can read it.

Request headers are read here rather than by kio's reader: kio 0.6.5 refuses
a tagged field it does not know, where KIP-482 has the receiver skip it
(that is how a newer client adds header fields an older broker ignores).
"""
from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Optional

import kio.schema.response_header.v0 as response_header_v0
import kio.schema.response_header.v1 as response_header_v1
from kio.serial import entity_writer

from ..errors import CorruptRecordError
from ..varint import read_unsigned_varint
from .errors import WireError
from .framing import BytesLike

FIXED = struct.Struct(">hhi")  # api key, api version, correlation id: every header starts so
_STRING_SIZE = struct.Struct(">h")

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
    if version not in (0, 1, 2):
        raise ValueError(f"request header version {version} does not exist")  # our bug, not the client's
    api_key, api_version, correlation_id = peek(frame)
    client_id, pos = None, FIXED.size
    if version >= 1:
        client_id, pos = _client_id(frame, pos)
    if version >= 2:
        pos = _skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id, version), pos


def _client_id(frame: BytesLike, pos: int) -> tuple[Optional[str], int]:
    """The nullable int16-length UTF-8 string at `pos`, and the position after it."""
    if pos + _STRING_SIZE.size > len(frame):
        raise WireError("request header ends before its client id")
    (size,) = _STRING_SIZE.unpack_from(frame, pos)
    pos += _STRING_SIZE.size
    if size == -1:
        return None, pos
    if size < 0 or pos + size > len(frame):
        raise WireError(f"request header's client id of {size} bytes does not fit its frame")
    try:
        return bytes(frame[pos:pos + size]).decode("utf-8"), pos + size
    except UnicodeDecodeError:
        raise WireError("request header's client id is not UTF-8") from None


def _skip_tagged_fields(frame: BytesLike, pos: int) -> int:
    """Past the tagged fields at `pos` (a count, then tag, size and bytes each):
    the header has none that a broker reads."""
    try:
        count, pos = read_unsigned_varint(frame, pos)
        for _ in range(count):
            _, pos = read_unsigned_varint(frame, pos)
            size, pos = read_unsigned_varint(frame, pos)
            pos += size
            if pos > len(frame):
                raise WireError("a tagged field of the request header runs past its frame")
    except CorruptRecordError:
        raise WireError("the request header's tagged fields end too soon") from None
    return pos


def encode_response_header(buffer: io.BytesIO, correlation_id: int, version: int) -> None:
    kind = _RESPONSE_HEADERS[version]
    entity_writer(kind)(buffer, kind(correlation_id=correlation_id))
