"""Producer state snapshots: `<20-digit offset>.snapshot` in a partition's directory.

Kafka's ProducerStateManager file, version 1, byte for byte (big-endian):

    version int16 (1)
    crc     uint32   CRC-32C of every byte after this field
    count   int32
    count x (producer_id int64, epoch int16, last_sequence int32,
             last_offset int64, offset_delta int32, timestamp int64,
             coordinator_epoch int32, current_txn_first_offset int64)

A snapshot holds the producer state as of `offset` (the state after every
batch below it). This module only reads and writes the files; what goes in
them is the broker's producer state. A file that does not parse (size,
version, CRC) raises CorruptSnapshotError: the caller deletes it and replays
the log instead.
"""
from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

import crc32c

from kafka_protocol.errors import KafkaStorageError

from .checkpoint import write_atomically
from .segment import segment_name

VERSION = 1
SUFFIX = ".snapshot"
_HEAD = struct.Struct(">hI")  # version, crc
_COUNT = struct.Struct(">i")
ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = ENTRY.size  # 46
_NAME = re.compile(r"^(\d{20})\.snapshot$")


class CorruptSnapshotError(Exception):
    """A snapshot file is damaged: wrong size, unknown version or a CRC mismatch."""


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1  # -1: no open transaction


def snapshot_path(directory: Path, offset: int) -> Path:
    return Path(directory) / f"{segment_name(offset)}{SUFFIX}"


def encode_snapshot(entries: list[SnapshotEntry]) -> bytes:
    body = bytearray(_COUNT.pack(len(entries)))
    for e in entries:
        body += ENTRY.pack(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta,
                           e.timestamp, e.coordinator_epoch, e.current_txn_first_offset)
    return _HEAD.pack(VERSION, crc32c.crc32c(body)) + bytes(body)


def decode_snapshot(data: bytes, source: object = "snapshot") -> list[SnapshotEntry]:
    if len(data) < _HEAD.size + _COUNT.size:
        raise CorruptSnapshotError(f"{source}: {len(data)} bytes is shorter than a snapshot header")
    version, crc = _HEAD.unpack_from(data)
    if version != VERSION:
        raise CorruptSnapshotError(f"{source}: unknown snapshot version {version}")
    (count,) = _COUNT.unpack_from(data, _HEAD.size)
    expected = _HEAD.size + _COUNT.size + count * ENTRY_SIZE
    if count < 0 or len(data) != expected:
        raise CorruptSnapshotError(f"{source}: {len(data)} bytes does not hold {count} producer entries")
    actual = crc32c.crc32c(memoryview(data)[_HEAD.size:])
    if actual != crc:
        raise CorruptSnapshotError(f"{source}: CRC-32C {actual:#010x} does not match the stored {crc:#010x}")
    start = _HEAD.size + _COUNT.size
    return [SnapshotEntry(*fields) for fields in ENTRY.iter_unpack(memoryview(data)[start:])]


def write_snapshot(directory: Path, offset: int, entries: list[SnapshotEntry]) -> Path:
    """Write (crash-safely, replacing any older file of that offset) the snapshot at `offset`."""
    path = snapshot_path(directory, offset)
    write_atomically(path, encode_snapshot(entries))
    return path


def read_snapshot(path: Path) -> list[SnapshotEntry]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise KafkaStorageError(f"cannot read {path}: {exc.strerror}") from exc
    return decode_snapshot(data, path)


def snapshot_offsets(directory: Path) -> list[int]:
    """The offsets of the snapshot files in `directory`, sorted."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(int(m.group(1)) for m in map(_NAME.match, names) if m)


def delete_snapshot(directory: Path, offset: int) -> None:
    snapshot_path(directory, offset).unlink(missing_ok=True)
