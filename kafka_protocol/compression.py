"""Compression codecs of Kafka's record batch (attributes bits 0-2).

All codecs are C-backed. Snappy and LZ4 use the framings Kafka's Java client
writes (xerial-framed snappy, LZ4 frame format), so batches interoperate.
"""
from __future__ import annotations

import enum
import gzip
import struct
import zlib

import cramjam
import lz4.frame
import zstandard

from .errors import CorruptRecordError, UnsupportedCompressionTypeError


class Codec(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @classmethod
    def from_name(cls, name: str) -> "Codec":
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise UnsupportedCompressionTypeError(
                f"unknown compression.type {name!r}; one of none, gzip, snappy, lz4, zstd"
            ) from None

    @property
    def label(self) -> str:
        return self.name.lower()


# snappy-java's stream header: magic, then version 1 and compatible version 1.
_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_ZSTD_COMPRESSOR = zstandard.ZstdCompressor(level=3)
_ZSTD_DECOMPRESSOR = zstandard.ZstdDecompressor()
# A decompressed batch larger than this is refused rather than allocated: it
# bounds what a hostile "zip bomb" batch can make the reader allocate.
MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024


def compress(codec: Codec, data: bytes) -> bytes:
    if codec == Codec.NONE:
        return data
    if codec == Codec.GZIP:
        return gzip.compress(data, compresslevel=6, mtime=0)
    if codec == Codec.SNAPPY:
        return _xerial_compress(data)
    if codec == Codec.LZ4:
        return lz4.frame.compress(data)
    if codec == Codec.ZSTD:
        return _ZSTD_COMPRESSOR.compress(data)
    raise UnsupportedCompressionTypeError(f"compression codec id {int(codec)}")


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    try:
        if codec == Codec.NONE:
            return bytes(data)
        if codec == Codec.GZIP:
            return _gunzip(bytes(data))
        if codec == Codec.SNAPPY:
            return _snappy_decompress(bytes(data))
        if codec == Codec.LZ4:
            return _lz4_decompress(bytes(data))
        if codec == Codec.ZSTD:
            return _zstd_decompress(bytes(data))
    except CorruptRecordError:
        raise
    except Exception as exc:  # each library raises its own types for bad input
        raise CorruptRecordError(f"{Codec(codec).label} data does not decompress: {exc}") from exc
    raise UnsupportedCompressionTypeError(f"compression codec id {codec}")


def _zstd_decompress(data: bytes) -> bytes:
    # Streamed in chunks: a frame header may claim any content size, and a
    # producer may write several frames; neither may make us allocate blindly.
    out = bytearray()
    with _ZSTD_DECOMPRESSOR.stream_reader(data, read_across_frames=True) as reader:
        while chunk := reader.read(1 << 20):
            out += chunk
            if len(out) > MAX_DECOMPRESSED_BYTES:
                raise CorruptRecordError("decompressed batch exceeds the size limit")
    return bytes(out)


def _lz4_decompress(data: bytes) -> bytes:
    # In rounds of a growing size, not one call allowed the whole limit: the
    # library allocates the max_length it is given up front, which cost ten
    # times the decompression itself (Kafka's frames carry no content size).
    decompressor = lz4.frame.LZ4FrameDecompressor()
    room = min(max(4 * len(data), 1 << 16), MAX_DECOMPRESSED_BYTES + 1)
    parts = [decompressor.decompress(data, max_length=room)]
    total = len(parts[0])
    while not decompressor.eof and not decompressor.needs_input and total <= MAX_DECOMPRESSED_BYTES:
        room = min(2 * room, MAX_DECOMPRESSED_BYTES + 1 - total)
        parts.append(decompressor.decompress(b"", max_length=room))
        total += len(parts[-1])
    if total > MAX_DECOMPRESSED_BYTES:
        raise CorruptRecordError("decompressed batch exceeds the size limit")
    if not decompressor.eof:
        raise CorruptRecordError("lz4 frame is truncated")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _snappy_block(block: bytes, room: int) -> bytes:
    # cramjam allocates whatever length the block claims: check the claim first.
    if cramjam.snappy.decompress_raw_len(block) > room:
        raise CorruptRecordError("decompressed batch exceeds the size limit")
    return bytes(cramjam.snappy.decompress_raw(block))


def _gunzip(data: bytes) -> bytes:
    # zlib directly, member by member as gzip.GzipFile reads them (a gzip
    # stream may hold several); GzipFile cost six times as much a batch.
    parts: list[bytes] = []
    total = 0
    while True:
        member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        parts.append(member.decompress(data, MAX_DECOMPRESSED_BYTES + 1 - total))
        total += len(parts[-1])
        if total > MAX_DECOMPRESSED_BYTES or member.unconsumed_tail:
            raise CorruptRecordError("decompressed batch exceeds the size limit")
        if not member.eof:
            raise CorruptRecordError("gzip data is truncated")
        data = member.unused_data.lstrip(b"\x00")  # as GzipFile: zero padding after a member is allowed
        if not data:
            return parts[0] if len(parts) == 1 else b"".join(parts)


def _xerial_compress(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER)
    view = memoryview(data)
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[start:start + _XERIAL_BLOCK]))
        out += struct.pack(">i", len(block))
        out += block
    return bytes(out)


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_HEADER[:8]):
        return _snappy_block(data, MAX_DECOMPRESSED_BYTES)
    out = bytearray()
    pos = len(_XERIAL_HEADER)
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecordError("truncated xerial snappy block length")
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise CorruptRecordError("xerial snappy block runs past the end")
        out += _snappy_block(data[pos:pos + size], MAX_DECOMPRESSED_BYTES - len(out))
        pos += size
    return bytes(out)


__all__ = ["Codec", "compress", "decompress", "MAX_DECOMPRESSED_BYTES"]
