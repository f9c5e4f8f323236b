"""Zig-zag variable-length integers as Kafka's record format uses them.

Signed values are zig-zag mapped then written 7 bits at a time, low group
first, the high bit of each byte saying "more follows" (protobuf's sint32/64).
"""
from __future__ import annotations

from .errors import CorruptRecordError

_MAX_VARLONG_BYTES = 10


def zigzag_size(value: int) -> int:
    """Bytes needed to encode `value` as a zig-zag varint."""
    v = (value << 1) ^ (value >> 63)
    size = 1
    while v >= 0x80:
        v >>= 7
        size += 1
    return size


def write_zigzag(out: bytearray, value: int) -> None:
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def read_zigzag(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zig-zag varint at `pos`; returns (value, next position)."""
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(_MAX_VARLONG_BYTES):
        if pos >= end:
            raise CorruptRecordError("varint runs past the end of the record")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return ((result & 0xFFFFFFFFFFFFFFFF) >> 1) ^ -(result & 1), pos  # 64 bits, as Java's readVarlong
        shift += 7
    raise CorruptRecordError("varint longer than 10 bytes")
