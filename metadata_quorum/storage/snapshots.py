"""KIP-630 snapshots: `<20-digit end offset>-<10-digit epoch>.checkpoint` in `__cluster_metadata-0`.

A snapshot file is a run of v2 record batches (partition_log's format),
numbered from offset 0, every batch carrying the snapshot's epoch as its
partitionLeaderEpoch:

    control batch   SNAPSHOT_HEADER (type 3): Version int16 = 0, LastContainedLogTimestamp int64,
                    no tagged fields
    control batch   KRAFT_VOTERS (type 6, KIP-853): the voter set in force at the
                    snapshot's end, Kafka's VotersRecord value; only when the
                    quorum is dynamic (raft/voters.py)
    data batches    one record each, key null, value = the next <= 1 MiB of the snapshot's bytes
    control batch   SNAPSHOT_FOOTER (type 4): Version int16 = 0, no tagged fields

CRCs catch damaged bytes; the footer, written last, tells a whole file from
a torn one. A file is written as `.checkpoint.part`, fsynced, renamed into
place and the directory fsynced, so a crash leaves at most a `.part` file,
which the next start deletes.
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path
from typing import Iterator, Optional

from metadata_quorum.raft import Snapshot, SnapshotId
from metadata_quorum.raft.voters import VoterSet
from kafka_protocol.batch import NO_TIMESTAMP
from partition_log.checkpoint import write_atomically
from kafka_protocol.errors import KafkaError, KafkaStorageError
from kafka_protocol.records import DecodedBatch, Record, encode_batch, iter_batches

from .control import KRAFT_VOTERS, SNAPSHOT_FOOTER, SNAPSHOT_HEADER, control_key, control_type
from .errors import CorruptSnapshotError, StorageError

SUFFIX = ".checkpoint"
PART_SUFFIX = SUFFIX + ".part"
CHUNK_BYTES = 1 << 20
_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_HEADER_VALUE = struct.Struct(">hqB")  # Version, LastContainedLogTimestamp, empty tagged fields
_FOOTER_VALUE = struct.Struct(">hB")  # Version, empty tagged fields
_RECORD_VERSION = 0


def snapshot_file_name(snapshot_id: SnapshotId) -> str:
    return f"{snapshot_id.end_offset:020d}-{snapshot_id.epoch:010d}{SUFFIX}"


def encode_snapshot(snapshot: Snapshot) -> Iterator[bytes]:
    """The batches of a snapshot file, in order."""
    epoch = snapshot.snapshot_id.epoch
    data = memoryview(snapshot.data)
    chunks = [bytes(data[i:i + CHUNK_BYTES]) for i in range(0, len(data), CHUNK_BYTES)]
    yield _control_batch(0, epoch, SNAPSHOT_HEADER, _HEADER_VALUE.pack(_RECORD_VERSION, NO_TIMESTAMP, 0))
    first = 1
    if snapshot.voters is not None:
        yield _control_batch(1, epoch, KRAFT_VOTERS, snapshot.voters.encode())
        first = 2
    for offset, chunk in enumerate(chunks, first):
        yield encode_batch([Record(None, chunk)], base_offset=offset, partition_leader_epoch=epoch)
    yield _control_batch(len(chunks) + first, epoch, SNAPSHOT_FOOTER, _FOOTER_VALUE.pack(_RECORD_VERSION, 0))


def decode_snapshot(path: Path, raw: bytes, snapshot_id: SnapshotId) -> Snapshot:
    """Check every batch of a snapshot file and return its data; CorruptSnapshotError naming `path` if any check fails."""
    try:
        batches = list(iter_batches(raw))
    except KafkaError as exc:
        raise CorruptSnapshotError(f"{path}: {exc.args[0] if exc.args else exc}") from None
    if not batches:
        raise CorruptSnapshotError(f"{path}: the file is empty")
    expected = 0
    for batch in batches:
        h = batch.header
        # baseOffset and partitionLeaderEpoch lie outside the CRC: check them here.
        if h.base_offset != expected or [r.offset for r in batch.records] != list(range(expected, h.next_offset)):
            raise CorruptSnapshotError(f"{path}: batch at offset {h.base_offset} does not follow offset {expected - 1}")
        if h.partition_leader_epoch != snapshot_id.epoch:
            raise CorruptSnapshotError(
                f"{path}: batch at offset {h.base_offset} has epoch {h.partition_leader_epoch}, "
                f"the file name says {snapshot_id.epoch}")
        expected = h.next_offset
    _check_control(path, batches[0], SNAPSHOT_HEADER, _HEADER_VALUE.size, "does not start with a SNAPSHOT_HEADER")
    _check_control(path, batches[-1], SNAPSHOT_FOOTER, _FOOTER_VALUE.size,
                   "does not end with a SNAPSHOT_FOOTER: the file is torn")
    chunks = []
    voters = None
    body = batches[1:-1]
    if body and body[0].header.is_control and len(body[0].records) == 1 \
            and control_type(body[0].records[0].key) == KRAFT_VOTERS:
        try:
            voters = VoterSet.decode(body[0].records[0].value or b"")
        except ValueError as exc:
            raise CorruptSnapshotError(f"{path}: {exc}") from None
        body = body[1:]
    for batch in body:
        if batch.header.is_control or any(r.value is None for r in batch.records):
            raise CorruptSnapshotError(f"{path}: batch at offset {batch.header.base_offset} is not snapshot data")
        chunks += [r.value for r in batch.records]
    return Snapshot(snapshot_id, b"".join(chunks), voters)  # type: ignore[arg-type]


def _control_batch(offset: int, epoch: int, kind: int, value: bytes) -> bytes:
    return encode_batch([Record(control_key(kind), value)], base_offset=offset,
                        partition_leader_epoch=epoch, control=True)


def _check_control(path: Path, batch: DecodedBatch, kind: int, value_size: int, problem: str) -> None:
    records = batch.records
    if not (batch.header.is_control and len(records) == 1 and control_type(records[0].key) == kind):
        raise CorruptSnapshotError(f"{path}: {problem}")
    value = records[0].value
    if value is None or len(value) != value_size or struct.unpack_from(">h", value)[0] != _RECORD_VERSION:
        raise CorruptSnapshotError(f"{path}: control record at offset {records[0].offset} has value {value!r}")


class SnapshotStore:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            for part in self.directory.glob("*" + PART_SUFFIX):
                part.unlink()  # a crash while writing it: the snapshot was never saved
        except OSError as exc:
            raise StorageError(f"{self.directory}: cannot clean up snapshot files: {exc.strerror}") from exc

    def path(self, snapshot_id: SnapshotId) -> Path:
        return self.directory / snapshot_file_name(snapshot_id)

    def ids(self) -> list[SnapshotId]:
        """Snapshots on disk, oldest first."""
        try:
            names = os.listdir(self.directory)
        except OSError as exc:
            raise StorageError(f"{self.directory}: cannot list snapshots: {exc.strerror}") from exc
        found = [_NAME.match(name) for name in names]
        return sorted(SnapshotId(int(m.group(1)), int(m.group(2))) for m in found if m)

    def latest(self) -> Optional[Snapshot]:
        """The newest snapshot, fully checked; None if there is none."""
        ids = self.ids()
        return self.read(ids[-1]) if ids else None

    def read(self, snapshot_id: SnapshotId) -> Snapshot:
        path = self.path(snapshot_id)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise StorageError(f"{path}: unreadable: {exc.strerror}") from exc
        return decode_snapshot(path, raw, snapshot_id)

    def save(self, snapshot: Snapshot) -> None:
        """Write durably under its final name, then delete older snapshots."""
        path = self.path(snapshot.snapshot_id)
        try:
            write_atomically(path, encode_snapshot(snapshot), temp_suffix=".part")  # -> <name>.checkpoint.part
        except KafkaStorageError as exc:
            raise StorageError(f"{path}: cannot write the snapshot: {exc}") from exc
        for older in self.ids():
            if older < snapshot.snapshot_id:
                try:
                    self.path(older).unlink(missing_ok=True)
                except OSError as exc:
                    raise StorageError(f"{self.path(older)}: cannot delete: {exc.strerror}") from exc

