"""The durable state of a quorum node, on disk in Kafka's KRaft layout.

    <metadata.log.dir>/meta.properties                 version=1, cluster.id, node.id
    <metadata.log.dir>/__cluster_metadata-0/
        quorum-state                                   Kafka's JSON (epoch, leader, vote, voters)
        <end offset:20>-<epoch:10>.checkpoint          KIP-630 snapshots, record batches
        <base offset:20>.log / .index / .timeindex     the Raft log, a partition_log Log
        leader-epoch-checkpoint

The Raft core (metadata_quorum.raft) never touches files: its shell carries
out each `Ready` bundle with these classes, and restarts through
`open_metadata_storage`, which hands back the `DurableState` the core is
built from. Failures to start raise `StorageError` (or a subclass) whose
message names the file and the fault; I/O failures while running raise
partition_log's `KafkaStorageError`, its parent.
"""

from .errors import CorruptQuorumStateError, CorruptSnapshotError, InconsistentClusterIdError, StorageError
from .meta_properties import MetaProperties
from .metadata_log import MetadataLog, PendingFlush
from .quorum_state import QuorumStateFile
from .snapshots import SnapshotStore
from .startup import MetadataStorage, open_metadata_storage

__all__ = [
    "CorruptQuorumStateError",
    "CorruptSnapshotError",
    "InconsistentClusterIdError",
    "MetaProperties",
    "MetadataLog",
    "MetadataStorage",
    "PendingFlush",
    "QuorumStateFile",
    "SnapshotStore",
    "StorageError",
    "open_metadata_storage",
]
