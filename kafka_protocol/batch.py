"""Record batch v2 (magic 2) headers: Kafka's layout, byte for byte.

This is the broker's hot path: it reads and checks the 61-byte header and the
CRC-32C, and stamps baseOffset and partitionLeaderEpoch (both outside the CRC's
range) into the bytes. It never decodes records.

    0  baseOffset int64        27 baseTimestamp int64
    8  batchLength int32       35 maxTimestamp int64
   12  partitionLeaderEpoch    43 producerId int64
   16  magic int8              51 producerEpoch int16
   17  crc uint32 (CRC-32C over attributes..end)
   21  attributes int16        53 baseSequence int32
   23  lastOffsetDelta int32   57 recordsCount int32, records from 61
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterator

import crc32c

from .errors import CorruptRecordError, InvalidRecordError, UnsupportedForMessageFormatError

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the part batchLength does not count
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
MAGIC = 2
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
PARTITION_LEADER_EPOCH_OFFSET = 12
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
MAX_PRODUCER_EPOCH = 2**15 - 1  # the header's int16 producerEpoch
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1


def epoch_exhausted(producer_epoch: int) -> bool:
    """As Kafka: the last producer epoch is kept back, so a bump never reaches Short.MAX_VALUE;
    an exhausted epoch takes a new producer id instead (the broker's and the producer's rule)."""
    return producer_epoch >= MAX_PRODUCER_EPOCH - 1

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # 0 = CreateTime, 1 = LogAppendTime
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40  # KIP-534: baseTimestamp holds the delete horizon

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
# baseOffset, batchLength, (partitionLeaderEpoch, magic skipped), crc: all a reader walking
# stored batches needs, without building a BatchHeader (a frozen dataclass, a few µs a batch).
BOUNDS = struct.Struct(">qi5xI")
# baseOffset, batchLength, lastOffsetDelta, recordsCount: where a reader of raw batches goes next.
EXTENT = struct.Struct(">qi11xi30xi")


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch takes in a log file."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def codec(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def delete_horizon_ms(self) -> int:
        return self.base_timestamp if self.attributes & DELETE_HORIZON_MASK else NO_TIMESTAMP

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Read a batch header at `pos` without checking the CRC."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError(
            f"batch header at byte {pos} is truncated: {len(buf) - pos} of {HEADER_SIZE} bytes"
        )
    return BatchHeader(*HEADER.unpack_from(buf, pos))


def check_header(h: BatchHeader, available: int, pos: int = 0) -> None:
    """Structural checks that need no CRC: magic, lengths, offset delta."""
    if h.magic != MAGIC:
        if 0 <= h.magic < MAGIC:  # Kafka's older formats (v0, v1): real, but not ours
            raise UnsupportedForMessageFormatError(
                f"batch at byte {pos} has magic {h.magic}, only magic 2 is supported")
        raise CorruptRecordError(f"batch at byte {pos} has magic {h.magic}, which no Kafka format has")
    if h.batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"batch at byte {pos} has batchLength {h.batch_length} < {MIN_BATCH_LENGTH}")
    if h.size > available:
        raise CorruptRecordError(
            f"batch at byte {pos} is truncated: batchLength says {h.size} bytes, {available} present"
        )
    if h.last_offset_delta < 0 or h.records_count < 0:
        raise CorruptRecordError(
            f"batch at byte {pos} has lastOffsetDelta {h.last_offset_delta}, recordsCount {h.records_count}"
        )
    if h.records_count > h.last_offset_delta + 1:
        raise CorruptRecordError(
            f"batch at byte {pos} holds {h.records_count} records in {h.last_offset_delta + 1} offsets"
        )


def compute_crc(buf: bytes | bytearray | memoryview, pos: int, size: int) -> int:
    view = memoryview(buf)[pos + ATTRIBUTES_OFFSET:pos + size]
    return crc32c.crc32c(view)


def validate_batch(buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None,
                   *, require_dense: bool = False) -> BatchHeader:
    """Check one batch at `pos`: header, lengths and CRC-32C.

    `require_dense` is for batches straight from producers, which must number
    their records 0..n-1; compacted batches may have gaps.
    """
    end = len(buf) if end is None else end
    h = parse_header(buf, pos)
    if require_dense and h.magic == MAGIC:
        # Kafka's checks of a client's batch, INVALID_RECORD: at least one
        # record, and one offset per record.
        if h.records_count <= 0 or h.last_offset_delta < 0:
            raise InvalidRecordError(f"batch at byte {pos} has recordsCount {h.records_count} and "
                                     f"lastOffsetDelta {h.last_offset_delta}: a batch holds at least one record")
        if h.records_count != h.last_offset_delta + 1:
            raise InvalidRecordError(f"batch at byte {pos}: recordsCount {h.records_count} does not match "
                                     f"lastOffsetDelta {h.last_offset_delta}")
    check_header(h, end - pos, pos)
    actual = compute_crc(buf, pos, h.size)
    if actual != h.crc:
        raise CorruptRecordError(f"batch at byte {pos} fails its CRC: stored {h.crc:#010x}, computed {actual:#010x}")
    return h


def iter_headers(buf: bytes | bytearray | memoryview, *, validate: bool = True,
                 require_dense: bool = False) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) for each batch of concatenated batches."""
    pos, end = 0, len(buf)
    while pos < end:
        if validate:
            h = validate_batch(buf, pos, end, require_dense=require_dense)
        else:
            h = parse_header(buf, pos)
            check_header(h, end - pos, pos)
        yield pos, h
        pos += h.size


def end_offset(buf: bytes | bytearray | memoryview) -> int:
    """The offset after the last of concatenated batches: where the next read starts."""
    last = None
    for _, h in iter_headers(buf, validate=False):
        last = h
    if last is None:
        raise CorruptRecordError("no batch to take an end offset from")
    return last.next_offset


def batch_extent(buf: bytes | bytearray | memoryview) -> tuple[int, int]:
    """(records, offset after the last batch) of concatenated batches, from
    four header fields each (EXTENT): a raw reader's walk, with the framing
    checks it needs to go on (each batchLength at least a header's and within
    the buffer), none of the record or CRC checks. Raises CorruptRecordError."""
    pos, end, records, next_offset = 0, len(buf), 0, -1
    if not end:
        raise CorruptRecordError("no batch to take an end offset from")
    extent = EXTENT.unpack_from
    while pos < end:
        if end - pos < HEADER_SIZE:
            raise CorruptRecordError(f"batch header at byte {pos} is truncated: {end - pos} of {HEADER_SIZE} bytes")
        base_offset, length, last_offset_delta, count = extent(buf, pos)
        if length < MIN_BATCH_LENGTH or length + LOG_OVERHEAD > end - pos:
            raise CorruptRecordError(f"batch at byte {pos} has batchLength {length}, {end - pos} bytes present")
        records += count
        next_offset = base_offset + last_offset_delta + 1
        pos += length + LOG_OVERHEAD
    return records, next_offset


def stamp(buf: bytearray, pos: int, base_offset: int, partition_leader_epoch: int) -> None:
    """Write baseOffset and partitionLeaderEpoch in place; the CRC stays valid."""
    _INT64.pack_into(buf, pos, base_offset)
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, partition_leader_epoch)
