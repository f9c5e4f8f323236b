"""The restart path: open a node's metadata log directory and make its parts agree.

    <metadata.log.dir>/meta.properties
    <metadata.log.dir>/__cluster_metadata-0/quorum-state
                                           /<20 digits>-<10 digits>.checkpoint   snapshots
                                           /<20 digits>.log, .index, .timeindex  log segments
                                           /leader-epoch-checkpoint
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from kafka_protocol.internal_topics import CLUSTER_METADATA_TOPIC
from metadata_quorum.raft import DurableState, Entry, QuorumStateData, Snapshot

from .errors import StorageError
from .meta_properties import MetaProperties
from .metadata_log import MetadataLog
from .quorum_state import QuorumStateFile
from .snapshots import SnapshotStore

log = logging.getLogger(__name__)

METADATA_PARTITION_DIR = f"{CLUSTER_METADATA_TOPIC}-0"
QUORUM_STATE_FILE = "quorum-state"


@dataclass
class MetadataStorage:
    meta_dir: Path
    quorum_state: QuorumStateFile
    snapshots: SnapshotStore
    log: MetadataLog
    durable: DurableState
    directory_id: Optional[str] = None  # meta.properties' directory.id (KIP-853)


def open_metadata_storage(metadata_log_dir: Path, *, cluster_id: str, node_id: int,
                          voters: Optional[Iterable[int]], segment_bytes: int = 1 << 30) -> MetadataStorage:
    """`voters`: the static voter ids; None for a dynamic quorum (KIP-853)."""
    meta_dir = Path(metadata_log_dir)
    meta = MetaProperties.ensure(meta_dir, cluster_id, node_id)
    partition_dir = meta_dir / METADATA_PARTITION_DIR
    quorum_state = QuorumStateFile(partition_dir / QUORUM_STATE_FILE, cluster_id, voters)
    state = quorum_state.read()
    snapshots = SnapshotStore(partition_dir)
    snapshot = snapshots.latest()
    metadata_log = MetadataLog(partition_dir, segment_bytes=segment_bytes)
    try:
        start = _follow_snapshot(metadata_log, snapshot)
        entries = metadata_log.read_entries(start)
        _check_epochs(quorum_state.path, state, snapshot, start, entries)
    except BaseException:
        metadata_log.close()
        raise
    return MetadataStorage(meta_dir, quorum_state, snapshots, metadata_log,
                           DurableState(state, snapshot, start, entries), meta.directory_id)


def _follow_snapshot(metadata_log: MetadataLog, snapshot: Optional[Snapshot]) -> int:
    """Make the log start at the snapshot's end (0 without one); returns that offset."""
    if snapshot is None:
        if metadata_log.start_offset != 0:
            raise StorageError(f"{metadata_log.directory}: the log starts at offset {metadata_log.start_offset}, "
                               "but no snapshot covers the offsets below it")
        return 0
    end, epoch = snapshot.snapshot_id
    stale = metadata_log.end_offset < end or (
        metadata_log.start_offset < end and metadata_log.epoch_of(end - 1) != epoch)
    if stale:
        # A crash between installing the snapshot and resetting the log.
        log.warning("%s: the log does not lead up to snapshot %s; starting it afresh at %d",
                    metadata_log.directory, snapshot.snapshot_id, end)
        metadata_log.reset_to(end)
    if metadata_log.start_offset > end:
        raise StorageError(f"{metadata_log.directory}: the log starts at offset {metadata_log.start_offset}, "
                           f"after the end of snapshot {snapshot.snapshot_id}: offsets in between are lost")
    metadata_log.delete_below(end)
    return end


def _check_epochs(quorum_state_path: Path, state: Optional[QuorumStateData], snapshot: Optional[Snapshot],
                  start: int, entries: list[Entry]) -> None:
    last = snapshot.snapshot_id.epoch if snapshot else 0
    for offset, entry in enumerate(entries, start):
        if entry.epoch < last:
            raise StorageError(f"{quorum_state_path.parent}: the entry at offset {offset} has epoch {entry.epoch}, "
                               f"after epoch {last}: the log is out of order")
        last = entry.epoch
    promised = state.epoch if state else 0
    if last > promised:
        found = f"says epoch {promised}" if state else "is missing"
        raise StorageError(f"{quorum_state_path}: {found}, but the log holds epoch {last}: "
                           "the node could vote again in an epoch it has seen")
