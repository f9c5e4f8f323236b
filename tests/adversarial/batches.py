"""Hostile record batches whose CRC is right: the broker cannot refuse them
for a checksum, only for what they say (lying lengths and counts, codecs
that do not exist, control or transactional bits a client may not set).

Offsets in Kafka's v2 header (kafka_protocol/batch.py draws the layout):
batchLength 8, magic 16, crc 17, attributes 21, producerId 43,
producerEpoch 51, baseSequence 53, recordsCount 57; the CRC-32C covers
attributes to the end.
"""
from __future__ import annotations

import struct

import crc32c

from kafka_protocol import batch as b
from kafka_protocol.records import Record, encode_batch

BATCH_LENGTH, MAGIC, PRODUCER_ID, PRODUCER_EPOCH, RECORDS_COUNT = 8, 16, 43, 51, 57


def good(values: tuple[bytes, ...] = (b"one", b"two")) -> bytes:
    return encode_batch([Record(None, v, 1_700_000_000_000 + i) for i, v in enumerate(values)])


def with_crc(data: bytearray) -> bytes:
    """The bytes with the CRC field recomputed over attributes..end."""
    struct.pack_into(">I", data, b.CRC_OFFSET, crc32c.crc32c(bytes(data[b.ATTRIBUTES_OFFSET:])))
    return bytes(data)


def patched(offset: int, fmt: str, value: int, base: bytes = b"") -> bytes:
    data = bytearray(base or good())
    struct.pack_into(fmt, data, offset, value)
    return with_crc(data)


def garbage_body() -> bytes:
    """A header that is fine followed by records that are noise."""
    data = bytearray(good())
    data[b.HEADER_SIZE:] = bytes(range(7, 7 + len(data) - b.HEADER_SIZE))
    return with_crc(data)


def attributes(bits: int) -> bytes:
    data = bytearray(good())
    struct.pack_into(">h", data, b.ATTRIBUTES_OFFSET, bits)
    return with_crc(data)


def transactional_without_producer() -> bytes:
    return attributes(b.TRANSACTIONAL_MASK)  # producer id stays -1


def record_with_lying_key_length(length_varint: bytes) -> bytes:
    """One record whose key length says `length_varint` (zigzag varint bytes)."""
    data = bytearray(good((b"v",)))
    # records start at 61: length varint, attributes byte, timestampDelta, offsetDelta, keyLength
    record_start = b.HEADER_SIZE
    key_length_at = record_start + 1 + 1 + 1 + 1
    data[key_length_at:key_length_at + 1] = length_varint
    struct.pack_into(">i", data, BATCH_LENGTH, len(data) - b.LOG_OVERHEAD)
    return with_crc(data)


# name -> bytes. Every one must be refused whole (CORRUPT_MESSAGE,
# INVALID_RECORD or UNSUPPORTED_COMPRESSION_TYPE) and append nothing.
HOSTILE = {
    "garbage-records-valid-crc": garbage_body(),
    "codec-7": attributes(7),
    "codec-5": attributes(5),
    "control-bit-from-client": attributes(b.CONTROL_MASK),
    "transactional-producer-id--1": transactional_without_producer(),
    "batch-length-past-the-end": patched(BATCH_LENGTH, ">i", 1 << 20),
    "batch-length-short": patched(BATCH_LENGTH, ">i", b.MIN_BATCH_LENGTH + 1),
    "batch-length-negative": patched(BATCH_LENGTH, ">i", -1),
    "batch-length-int32-max": patched(BATCH_LENGTH, ">i", 2**31 - 1),
    "records-count-1000": patched(RECORDS_COUNT, ">i", 1000),
    "records-count-0": patched(RECORDS_COUNT, ">i", 0),
    "records-count-negative": patched(RECORDS_COUNT, ">i", -1),
    "records-count-int32-min": patched(RECORDS_COUNT, ">i", -2**31),
    "magic-0": patched(MAGIC, ">b", 0),
    "magic-1": patched(MAGIC, ">b", 1),
    "magic-3": patched(MAGIC, ">b", 3),
    "magic--1": patched(MAGIC, ">b", -1),
    "key-length-huge": record_with_lying_key_length(b"\xfe\xff\xff\xff\x0f"),
    "key-length--5": record_with_lying_key_length(b"\x09"),
    "varint-never-ends": record_with_lying_key_length(b"\xff" * 12),
    "header-only": good()[:b.HEADER_SIZE],
    "one-byte": b"\x00",
    "good-then-garbage": good() + garbage_body(),
}
