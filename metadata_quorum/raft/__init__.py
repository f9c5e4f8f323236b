"""The KRaft quorum protocol (KIP-595 with KIP-996 pre-vote and KIP-630 snapshots) as a pure core.

See core.py for the interface and ready.py for the order in which a shell
must carry out what the core asks.
"""

from .config import QuorumConfig
from .core import NotLeaderError, RaftCore
from .log import RaftLog
from .messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Entry,
    EpochEndOffset,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    QUORUM_ERRORS,
    QuorumInfo,
    ReplicaState,
    SnapshotId,
    VoteRequest,
    VoteResponse,
    is_request,
)
from .ready import CommittedEntries, DurableState, QuorumStateData, Ready, Snapshot

__all__ = [
    "BeginQuorumEpochRequest",
    "BeginQuorumEpochResponse",
    "CommittedEntries",
    "DescribeQuorumRequest",
    "DescribeQuorumResponse",
    "DurableState",
    "EndQuorumEpochRequest",
    "EndQuorumEpochResponse",
    "Entry",
    "EpochEndOffset",
    "Errors",
    "FetchRequest",
    "FetchResponse",
    "FetchSnapshotRequest",
    "FetchSnapshotResponse",
    "Message",
    "NotLeaderError",
    "QUORUM_ERRORS",
    "QuorumConfig",
    "QuorumInfo",
    "QuorumStateData",
    "RaftCore",
    "RaftLog",
    "Ready",
    "ReplicaState",
    "Snapshot",
    "SnapshotId",
    "VoteRequest",
    "VoteResponse",
    "is_request",
]
