"""What can be wrong with a quorum node's files.

Every message names the file (or directory) and what is wrong with it, so
that a node refusing to start can say why in one line on stderr.
"""

from __future__ import annotations

from pathlib import Path

from partition_log.checkpoint import write_atomically
from kafka_protocol.errors import KafkaStorageError


class StorageError(KafkaStorageError):
    """The metadata log directory cannot be used as it is: unreadable, unwritable or inconsistent."""


class CorruptQuorumStateError(StorageError):
    """quorum-state is unparsable or contradicts itself. Never start fresh over it: that could vote twice."""


class CorruptSnapshotError(StorageError):
    """A snapshot file fails its checks (CRC, structure, missing footer)."""


class InconsistentClusterIdError(StorageError):
    """meta.properties or quorum-state belongs to another cluster."""

    name, code = "INCONSISTENT_CLUSTER_ID", 104


def replace_file(path: Path, data: bytes) -> None:
    """partition_log's crash-safe write (temp file, fsync, rename, fsync dir), failing as a StorageError."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"{path.parent}: cannot create the directory: {exc.strerror}") from exc
    try:
        write_atomically(path, data)
    except KafkaStorageError as exc:
        raise StorageError(exc.args[0] if exc.args else f"cannot write {path}") from exc
