"""Kafka's framing: every request and response is an int32 size, then that
many bytes. A broker refuses a request larger than
`socket.request.max.bytes` before reading it (Kafka's
InvalidReceiveException), so a client cannot make it buffer more."""
from __future__ import annotations

import struct
from typing import Union

from .errors import WireError

SIZE_BYTES = 4
DEFAULT_MAX_REQUEST_BYTES = 104857600  # socket.request.max.bytes
_SIZE = struct.Struct(">i")

BytesLike = Union[bytes, bytearray, memoryview]


def frame_size(prefix: BytesLike, max_bytes: int, setting: str = "socket.request.max.bytes") -> int:
    """The size a frame's 4-byte prefix announces; WireError when it is
    negative, empty or over `max_bytes` (the value of `setting`)."""
    if len(prefix) != SIZE_BYTES:
        raise WireError(f"a frame starts with {SIZE_BYTES} size bytes, got {len(prefix)}")
    (size,) = _SIZE.unpack(prefix)
    if size <= 0:
        raise WireError(f"invalid frame size {size}")
    if size > max_bytes:
        raise WireError(f"frame of {size} bytes is larger than {setting} ({max_bytes})")
    return size


def size_prefix(size: int) -> bytes:
    """The 4 bytes in front of a frame of `size` bytes."""
    return _SIZE.pack(size)
