"""Variable-length integers: Kafka's record format and protobuf's framing.

An unsigned varint is written 7 bits at a time, low group first, the high
bit of each byte saying "more follows" (protobuf's varint, and Kafka's
UNSIGNED_VARINT in flexible protocol versions). Kafka's records zig-zag map
signed values first (protobuf's sint32/64).

Speed matters here: clients encode and decode several varints per record.
Almost all of them (lengths, offset and timestamp deltas) fit in one or two
bytes, so those take a table look-up or a couple of integer operations and
only longer ones go through the general byte loop.
"""
from __future__ import annotations

from .errors import CorruptRecordError

_MAX_VARLONG_BYTES = 10
_UINT64 = 0xFFFFFFFFFFFFFFFF

# Values in [-TABLE_BIAS, TABLE_BIAS) zig-zag below 2**14, so they take one or
# two bytes; their encodings are precomputed, indexed by value + TABLE_BIAS.
TABLE_BIAS = 1 << 13


def _zigzag(value: int) -> int:
    return ((value << 1) ^ (value >> 63)) & _UINT64


def _encode_long(value: int) -> bytes:
    return unsigned_varint_bytes(_zigzag(value))


def _small_encoding(u: int) -> bytes:
    """One or two varint bytes of a zig-zag value below 2**14."""
    return bytes((u,)) if u < 0x80 else bytes(((u & 0x7F) | 0x80, u >> 7))


SMALL_ZIGZAG: tuple[bytes, ...] = tuple(map(_small_encoding, map(_zigzag, range(-TABLE_BIAS, TABLE_BIAS))))


def zigzag_bytes(value: int) -> bytes:
    """The encoding of `value` (hot loops inline the table look-up themselves)."""
    if -TABLE_BIAS <= value < TABLE_BIAS:
        return SMALL_ZIGZAG[value + TABLE_BIAS]
    return _encode_long(value)


def zigzag_size(value: int) -> int:
    """Bytes needed to encode `value` as a zig-zag varint."""
    return (max(_zigzag(value).bit_length(), 1) + 6) // 7


def write_zigzag(out: bytearray, value: int) -> None:
    out += zigzag_bytes(value)


def read_zigzag(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zig-zag varint at `pos`; returns (value, next position)."""
    end = len(buf)
    if pos + 1 < end:
        b0 = buf[pos]
        if b0 < 0x80:
            return (b0 >> 1) ^ -(b0 & 1), pos + 1
        b1 = buf[pos + 1]
        if b1 < 0x80:
            u = (b0 & 0x7F) | (b1 << 7)
            return (u >> 1) ^ -(u & 1), pos + 2
    return _read_long(buf, pos, end)


def _read_long(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    u, pos = read_unsigned_varint(buf, pos, end)
    u &= _UINT64  # 64 bits, as Java's readVarlong
    return (u >> 1) ^ -(u & 1), pos


def unsigned_varint_bytes(value: int) -> bytes:
    """The unsigned varint encoding of `value` (>= 0)."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_unsigned_varint(buf: bytes | memoryview, pos: int, end: int | None = None) -> tuple[int, int]:
    """Decode an unsigned varint of at most 10 bytes at `pos` (reading no
    further than `end`); returns (value, next position). CorruptRecordError
    when it runs past `end` or is longer."""
    end = len(buf) if end is None else end
    result = 0
    shift = 0
    for _ in range(_MAX_VARLONG_BYTES):
        if pos >= end:
            raise CorruptRecordError("varint runs past the end of the record")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
    raise CorruptRecordError("varint longer than 10 bytes")
