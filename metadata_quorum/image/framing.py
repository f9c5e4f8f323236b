"""The byte layout of an image snapshot (MetadataImage.snapshot / from_snapshot).

    magic       4 bytes  b"KLMI"
    version     1 byte   1
    offset      8 bytes  signed big-endian: the offset of the last record the image applied (-1: none)
    count       4 bytes  unsigned big-endian: how many records follow
    records     count x (uvarint length, serialized MetadataRecord)
    crc         4 bytes  unsigned big-endian: zlib CRC-32 of every byte before it

The storage layer (storage/snapshots.py) checksums the file as well; the CRC
here makes the image bytes self-checking wherever they travel. Any
difference from this layout is reported as a FramingError.
"""

from __future__ import annotations

import struct
import zlib
from typing import Iterable

from kafka_protocol.errors import CorruptRecordError
from kafka_protocol.varint import read_unsigned_varint, unsigned_varint_bytes

MAGIC = b"KLMI"
VERSION = 1
_HEADER = struct.Struct(">4sBqI")
_CRC = struct.Struct(">I")


class FramingError(ValueError):
    """The bytes are not an image snapshot (truncated, damaged, or something else)."""


def encode(offset: int, records: Iterable[bytes]) -> bytes:
    body = bytearray()
    count = 0
    for data in records:
        body += unsigned_varint_bytes(len(data))
        body += data
        count += 1
    out = bytearray(_HEADER.pack(MAGIC, VERSION, offset, count))
    out += body
    out += _CRC.pack(zlib.crc32(out))
    return bytes(out)


def decode(data: bytes) -> tuple[int, list[memoryview]]:
    """(offset, the serialized records) of a snapshot; FramingError if it is not one."""
    view = memoryview(data)
    if len(view) < _HEADER.size + _CRC.size:
        raise FramingError(f"{len(view)} bytes is too short for an image snapshot")
    magic, version, offset, count = _HEADER.unpack_from(view)
    if magic != MAGIC:
        raise FramingError(f"bad magic {bytes(magic)!r}, expected {MAGIC!r}")
    if version != VERSION:
        raise FramingError(f"unknown snapshot version {version}")
    end = len(view) - _CRC.size
    (crc,) = _CRC.unpack_from(view, end)
    if zlib.crc32(view[:end]) != crc:
        raise FramingError("CRC mismatch: the snapshot is damaged or truncated")
    records = []
    pos = _HEADER.size
    for i in range(count):
        # Inline fast path: almost every record is shorter than 128 bytes.
        if pos >= end:
            raise FramingError(f"record {i} of {count} is missing")
        length = view[pos]
        pos += 1
        if length & 0x80:
            try:
                length, pos = read_unsigned_varint(view, pos - 1, end)
            except CorruptRecordError:
                raise FramingError(f"record {i} of {count}: bad record length") from None
        if pos + length > end:
            raise FramingError(f"record {i} of {count} ({length} bytes) runs past the end")
        records.append(view[pos:pos + length])
        pos += length
    if pos != end:
        raise FramingError(f"{end - pos} bytes after the last of {count} records")
    return offset, records

