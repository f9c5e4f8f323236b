"""`<metadata.log.dir>/bootstrap.checkpoint`: the records a first start appends
(Kafka's file of the same name, written by `kafka-storage format`).

The layout is a snapshot file's (snapshots.py), under snapshot id (0, 0) as
Kafka's bootstrap snapshot: SNAPSHOT_HEADER, data batches, SNAPSHOT_FOOTER,
every batch CRC-checked. The data is an image snapshot's framing
(image/framing.py: magic, offset -1, the serialized MetadataRecords, CRC),
so the file reads back through the same two checks as any snapshot.

Which records it holds, and when they are appended, is the controller's
business (controller/bootstrap.py); this module only writes and reads them.
A missing file is no bootstrap records (a broker never reads it).

A dynamic quorum's initial voters (`storage format --initial-controllers |
--standalone`, KIP-853) are in the same file, as the KRAFT_VOTERS control
record a snapshot carries (snapshots.py); a controller formatted to join
has none and learns the voters from the leader.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from google.protobuf.message import DecodeError

from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image import framing
from metadata_quorum.raft import Snapshot, SnapshotId
from metadata_quorum.raft.voters import VoterSet
from partition_log.checkpoint import write_atomically
from kafka_protocol.errors import KafkaStorageError

from .errors import CorruptSnapshotError, StorageError
from .snapshots import decode_snapshot, encode_snapshot

FILE_NAME = "bootstrap.checkpoint"
BOOTSTRAP_SNAPSHOT_ID = SnapshotId(0, 0)


def write_bootstrap_checkpoint(metadata_log_dir: Path, records: Sequence[mpb.MetadataRecord],
                               voters: Optional[VoterSet] = None) -> Path:
    """Write the file crash-safely (temp file, fsync, rename); its path."""
    path = Path(metadata_log_dir) / FILE_NAME
    data = framing.encode(-1, (record.SerializeToString() for record in records))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, encode_snapshot(Snapshot(BOOTSTRAP_SNAPSHOT_ID, data, voters)))
    except OSError as exc:
        raise StorageError(f"{path}: cannot write: {exc.strerror}") from exc
    except KafkaStorageError as exc:
        raise StorageError(f"{path}: cannot write: {exc}") from exc
    return path


def read_bootstrap_checkpoint(metadata_log_dir: Path) -> Optional[list[mpb.MetadataRecord]]:
    """The file's records; None without a file; CorruptSnapshotError naming it if it fails a check."""
    snapshot = _read(metadata_log_dir)
    if snapshot is None:
        return None
    path = Path(metadata_log_dir) / FILE_NAME
    try:
        _, serialized = framing.decode(snapshot.data)
        return [mpb.MetadataRecord.FromString(bytes(data)) for data in serialized]
    except (framing.FramingError, DecodeError) as exc:
        raise CorruptSnapshotError(f"{path}: {exc}") from None


def read_bootstrap_voters(metadata_log_dir: Path) -> Optional[VoterSet]:
    """The initial voters the file holds; None without a file or without voters."""
    snapshot = _read(metadata_log_dir)
    return None if snapshot is None else snapshot.voters


def _read(metadata_log_dir: Path) -> Optional[Snapshot]:
    path = Path(metadata_log_dir) / FILE_NAME
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"{path}: unreadable: {exc.strerror}") from exc
    return decode_snapshot(path, raw, BOOTSTRAP_SNAPSHOT_ID)
