"""A request frame to (header, request message); an answer to its frame
(and the client's side of both, for tests and tools).

Only requests of served APIs and versions (versions.py) are decoded; the
body must fill the frame exactly. The messages are kio's; the header
versions follow from them (`__header_schema__`), which also gives
ApiVersions its v0 response header.
"""
from __future__ import annotations

import io
from functools import lru_cache
from typing import Any, NamedTuple, Optional

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from .errors import UnsupportedRequest, WireError
from .framing import SIZE_BYTES, BytesLike, size_prefix
from .headers import RequestHeader, decode_request_header, encode_response_header, peek
from .tagged_fields import check_array_lengths, drop_unknown_tags
from .versions import API_VERSIONS, UNSUPPORTED_VERSION, api_versions_response, is_served


class Request(NamedTuple):
    header: RequestHeader
    body: Any  # the kio request message


def decode_request(frame: BytesLike) -> Request:
    """The request in one frame (its size prefix taken off). Raises
    UnsupportedRequest for an API or version not served, WireError for
    anything that does not read as the request it says it is."""
    frame = _read_only(frame)
    api_key, api_version, correlation_id = peek(frame)
    if not is_served(api_key, api_version):
        raise UnsupportedRequest(api_key, api_version, correlation_id)
    kind = request_type(api_key, api_version)
    header, offset = decode_request_header(frame, kind.__header_schema__.__version__)
    # kio's native readers make room for the entries an array says it has
    # before reading any, and a failed allocation aborts the process: the
    # lengths are checked against the frame first (tagged_fields.py).
    check_array_lengths(kind, frame, offset)
    try:
        return Request(header, _whole_body(kind, frame, offset))
    except WireError:
        if not kind.__flexible__:
            raise
        # kio refuses tagged fields its schema does not declare; KIP-482 skips them
        # (tagged_fields.py). Only a request kio refused pays for this second walk.
        known = drop_unknown_tags(kind, frame, offset)
        if len(known) == len(frame) - offset:
            raise  # nothing was dropped: the first answer stands
        return Request(header, _whole_body(kind, known, 0))


def _read_only(frame: BytesLike) -> BytesLike:
    """`frame` as kio's (native) reader takes it: it refuses a writable buffer
    (a bytearray, or a view of one) as if the request were malformed. A
    read-only view, not a copy."""
    return frame if isinstance(frame, bytes) else memoryview(frame).toreadonly()


def _whole_body(kind: type, buf: BytesLike, offset: int) -> Any:
    """The `kind` message at `offset`, which must fill the rest of `buf`."""
    try:
        body, size = _reader(kind)(buf, offset)
    except Exception as exc:  # noqa: BLE001 - kio's reader fails in many ways on hostile bytes
        raise WireError(f"malformed {kind.__name__} v{kind.__version__}: {exc}") from None
    if offset + size != len(buf) and not _known_quirk(kind.__api_key__, kind.__version__, buf[offset + size:]):
        raise WireError(f"{kind.__name__} v{kind.__version__} leaves {len(buf) - offset - size} bytes of its frame unread")
    return body


# (api key, version) -> the bytes a client nobody here wrote may leave after
# a request of that version, accepted (Kafka's broker ignores what follows a
# request in its frame); any other leftover is refused.
# - librdkafka (2.x, up to 2.16) ends its AlterUserScramCredentials v0 with
#   a second empty tagged-field buffer.
# - librdkafka's all-topics Metadata from v9 on leaves its topic array's
#   4-byte count placeholder unfinalized: Kafka (and kio) read its first
#   byte as a null array (all topics) and the next three as
#   allow_auto_topic_creation, include_topic_authorized_operations and the
#   tagged fields, all false or empty, so the real three (two booleans and
#   an empty tag buffer) are left over. Seen with librdkafka 2.16's
#   Producer.list_topics(); this listener serves Metadata up to v12, and only
#   v11-12 have that layout (v9-10 carry a fourth field and fail to parse).
_BOOLS = (b"\x00", b"\x01")
KNOWN_TRAILERS: dict[tuple[int, int], frozenset[bytes]] = {
    (51, 0): frozenset({b"\x00"}),  # AlterUserScramCredentials
    **{(3, version): frozenset(auto + authorized + b"\x00" for auto in _BOOLS for authorized in _BOOLS)
       for version in (11, 12)},  # Metadata
}


def _known_quirk(api_key: int, api_version: int, rest: BytesLike) -> bool:
    return bytes(rest) in KNOWN_TRAILERS.get((api_key, api_version), ())


class EncodedResponse(NamedTuple):
    """A response body already in wire form, in pieces (a hand-framed fast
    path, fetch_response.py); `kind`: the kio response class it is encoded
    as, whose header version it gets."""
    kind: type
    parts: list[BytesLike]


def encode_response(correlation_id: int, response: Any) -> bytes:
    """The frame (size prefix included) of `response`, a kio response message
    or an EncodedResponse."""
    if isinstance(response, EncodedResponse):
        header = io.BytesIO()
        encode_response_header(header, correlation_id, response.kind.__header_schema__.__version__)
        size = header.tell() + sum(len(part) for part in response.parts)
        return b"".join([size_prefix(size), header.getvalue(), *response.parts])
    buffer = io.BytesIO()
    buffer.write(bytes(SIZE_BYTES))  # the size, once known
    encode_response_header(buffer, correlation_id, response.__header_schema__.__version__)
    entity_writer(type(response))(buffer, response)
    return _with_size(buffer)


def _with_size(buffer: io.BytesIO) -> bytes:
    """The frame in `buffer`, its size written into the 4 bytes kept for it."""
    size = buffer.tell() - SIZE_BYTES
    buffer.seek(0)
    buffer.write(size_prefix(size))
    return buffer.getvalue()


def encode_request(body: Any, correlation_id: int, client_id: Optional[str] = None) -> bytes:
    """The client's side: the frame of `body`, a kio request message (tests, tools)."""
    buffer = io.BytesIO()
    buffer.write(bytes(SIZE_BYTES))
    header = body.__header_schema__
    entity_writer(header)(buffer, header(request_api_key=body.__api_key__, request_api_version=body.__version__,
                                         correlation_id=correlation_id, client_id=client_id))
    entity_writer(type(body))(buffer, body)
    return _with_size(buffer)


def decode_response(frame: BytesLike, kind: type) -> tuple[int, Any]:
    """The client's side: (correlation id, message) of a response frame
    (its size prefix taken off) holding a `kind` message."""
    header_kind = kind.__header_schema__
    frame = _read_only(frame)
    try:
        header, offset = entity_reader(header_kind)(frame, 0)
        body, size = _reader(kind)(frame, offset)
    except Exception as exc:  # noqa: BLE001 - kio's reader fails in many ways on bad bytes
        raise WireError(f"malformed {kind.__name__} v{kind.__version__}: {exc}") from None
    if offset + size != len(frame):
        raise WireError(f"{kind.__name__} leaves {len(frame) - offset - size} bytes of its frame unread")
    return header.correlation_id, body


def unsupported_api_versions(correlation_id: int) -> bytes:
    """The answer to ApiVersions at a version not served: UNSUPPORTED_VERSION,
    in v0 (which every client reads), with the versions that are."""
    return encode_response(correlation_id, api_versions_response(0, UNSUPPORTED_VERSION))


def response_type(request: Any) -> type:
    """The kio response class answering `request` (a kio request message)."""
    return load_response_schema(request.__api_key__, request.__version__)


@lru_cache(maxsize=None)
def request_type(api_key: int, api_version: int) -> type:
    return load_request_schema(api_key, api_version)


@lru_cache(maxsize=None)
def _reader(kind: type) -> Any:
    return entity_reader(kind)


__all__ = ["API_VERSIONS", "EncodedResponse", "Request", "decode_request", "decode_response", "encode_request",
           "encode_response", "response_type", "unsupported_api_versions"]
