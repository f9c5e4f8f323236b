"""The quorum RPCs of KIP-595 (plus KIP-996 pre-vote and KIP-630 snapshots) as plain values.

Every message names its sender (`src`) and receiver (`dst`) by node id and
carries a `correlation_id` chosen by the requester and echoed by the
responder, as in Kafka's request header. The shell translates these to and
from protobuf one field at a time; nothing here knows about the wire.

Entries are opaque `(epoch, data)` records. `control=True` marks records
the quorum writes for itself (the leader-change record each new leader
appends); the state machine above skips them but they take an offset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional, Union

from kafka_protocol.errors import Errors

from .voters import ReplicaKey, Voter


class Entry(NamedTuple):
    epoch: int
    data: bytes
    control: bool = False


# The only codes a quorum RPC answers with; the wire refuses a response with
# any other (a peer sending one is broken, not merely unlucky).
QUORUM_ERRORS = frozenset({
    Errors.NONE, Errors.OFFSET_OUT_OF_RANGE, Errors.NOT_LEADER_OR_FOLLOWER, Errors.INVALID_REQUEST,
    Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH, Errors.INCONSISTENT_VOTER_SET,
    Errors.SNAPSHOT_NOT_FOUND, Errors.POSITION_OUT_OF_RANGE, Errors.INCONSISTENT_CLUSTER_ID,
    Errors.INVALID_VOTER_KEY,  # KIP-853: a request meant for another directory of this node id
})
# What AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter answer with, besides those.
VOTER_CHANGE_ERRORS = QUORUM_ERRORS | frozenset({
    Errors.DUPLICATE_VOTER, Errors.VOTER_NOT_FOUND, Errors.REQUEST_TIMED_OUT, Errors.UNSUPPORTED_VERSION,
})


class SnapshotId(NamedTuple):
    """A snapshot holds every entry below `end_offset`; `epoch` is that of entry end_offset - 1."""

    end_offset: int
    epoch: int


class EpochEndOffset(NamedTuple):
    epoch: int
    end_offset: int


# --- Vote (KIP-595, pre_vote from KIP-996) ---------------------------------


@dataclass(frozen=True, slots=True)
class VoteRequest:
    src: int
    dst: int
    correlation_id: int
    cluster_id: str
    # For a real vote: the candidate's (new) epoch. For a pre-vote: the epoch
    # the prospective node would campaign in, its current epoch + 1; a
    # pre-vote changes nothing on the receiver.
    candidate_epoch: int
    candidate_id: int
    last_epoch: int
    last_epoch_end_offset: int
    pre_vote: bool = False
    # KIP-853: the candidate's directory, and the directory of the voter the
    # request is meant for (None: unknown; a static quorum names ids only).
    candidate_directory_id: Optional[str] = None
    voter_directory_id: Optional[str] = None


@dataclass(frozen=True, slots=True)
class VoteResponse:
    src: int
    dst: int
    correlation_id: int
    error: Errors
    epoch: int
    leader_id: Optional[int]
    vote_granted: bool
    pre_vote: bool = False


# --- BeginQuorumEpoch / EndQuorumEpoch -------------------------------------


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    src: int
    dst: int
    correlation_id: int
    cluster_id: str
    leader_epoch: int
    leader_id: int
    voter_directory_id: Optional[str] = None  # KIP-853: the receiver's directory, as the leader knows it


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    src: int
    dst: int
    correlation_id: int
    error: Errors
    epoch: int
    leader_id: Optional[int]


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    src: int
    dst: int
    correlation_id: int
    cluster_id: str
    leader_epoch: int
    leader_id: int
    # Voters ordered by log end offset, most caught-up first: the first one
    # campaigns at once, the others back off by their position.
    preferred_successors: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    src: int
    dst: int
    correlation_id: int
    error: Errors
    epoch: int
    leader_id: Optional[int]


# --- Fetch ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FetchRequest:
    src: int
    dst: int
    correlation_id: int
    cluster_id: str
    replica_id: int
    epoch: int  # the fetcher's current leader epoch
    fetch_offset: int  # the fetcher holds (flushed) every entry below this
    last_fetched_epoch: int  # epoch of entry fetch_offset - 1 (0 for an empty log)
    max_wait_ms: int = 0
    # KIP-853: the fetcher's directory; it counts as a voter only if its key matches one.
    replica_directory_id: Optional[str] = None


@dataclass(frozen=True, slots=True)
class FetchResponse:
    src: int
    dst: int
    correlation_id: int
    error: Errors
    epoch: int
    leader_id: Optional[int]
    high_watermark: Optional[int] = None  # None: the leader does not know it yet
    log_start_offset: int = 0
    base_offset: int = 0  # offset of records[0]; equals the request's fetch_offset
    records: tuple[Entry, ...] = ()
    # Set when the fetcher's log diverged: truncate to at most end_offset.
    diverging_epoch: Optional[EpochEndOffset] = None
    # Set when fetch_offset is below the leader's log start: fetch this snapshot.
    snapshot_id: Optional[SnapshotId] = None


# --- FetchSnapshot (KIP-630) ------------------------------------------------


@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    src: int
    dst: int
    correlation_id: int
    cluster_id: str
    replica_id: int
    epoch: int
    snapshot_id: SnapshotId
    position: int
    max_bytes: int
    replica_directory_id: Optional[str] = None


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    src: int
    dst: int
    correlation_id: int
    error: Errors
    epoch: int
    leader_id: Optional[int]
    snapshot_id: Optional[SnapshotId] = None
    size: int = 0
    position: int = 0
    chunk: bytes = b""


# --- DescribeQuorum ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplicaState:
    replica_id: int
    log_end_offset: int  # -1 when the leader has not heard from it this epoch
    last_fetch_timestamp: int  # ms, -1 when unknown
    last_caught_up_timestamp: int  # ms, -1 when unknown
    directory_id: Optional[str] = None  # KIP-853; None when unknown


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    leader_id: int
    leader_epoch: int
    high_watermark: int  # -1 until the new leader has committed its first entry
    voters: tuple[ReplicaState, ...]
    observers: tuple[ReplicaState, ...]


@dataclass(frozen=True, slots=True)
class DescribeQuorumRequest:
    src: int
    dst: int
    correlation_id: int


@dataclass(frozen=True, slots=True)
class DescribeQuorumResponse:
    src: int
    dst: int
    correlation_id: int
    error: Errors
    epoch: int
    leader_id: Optional[int]
    info: Optional[QuorumInfo] = None


# --- AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter (KIP-853) ---------------
# Sent to the leader by an operator's tool (src: any id that is not a quorum
# node's, the shell uses -1) or, UpdateVoter, by a voter about itself. The
# leader answers once the new voter set commits, or with the error that
# stopped it; see leader.py for the rules.


@dataclass(frozen=True, slots=True)
class AddVoterRequest:
    src: int
    dst: int
    correlation_id: int
    cluster_id: str
    voter: Voter  # key (id and directory) and endpoints of the replica to add
    timeout_ms: int = 0  # 0: the quorum's request timeout


@dataclass(frozen=True, slots=True)
class RemoveVoterRequest:
    src: int
    dst: int
    correlation_id: int
    cluster_id: str
    voter: ReplicaKey


@dataclass(frozen=True, slots=True)
class UpdateVoterRequest:
    src: int
    dst: int
    correlation_id: int
    cluster_id: str
    voter: Voter  # the voter's key and its new endpoints


@dataclass(frozen=True, slots=True)
class VoterChangeResponse:
    """The answer to AddVoter, RemoveVoter and UpdateVoter (they carry the same fields)."""

    src: int
    dst: int
    correlation_id: int
    error: Errors
    epoch: int
    leader_id: Optional[int]
    error_message: str = ""


VoterChangeRequest = Union[AddVoterRequest, RemoveVoterRequest, UpdateVoterRequest]


Request = Union[
    VoteRequest,
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchSnapshotRequest,
    DescribeQuorumRequest,
    AddVoterRequest,
    RemoveVoterRequest,
    UpdateVoterRequest,
]
Response = Union[
    VoteResponse,
    BeginQuorumEpochResponse,
    EndQuorumEpochResponse,
    FetchResponse,
    FetchSnapshotResponse,
    DescribeQuorumResponse,
    VoterChangeResponse,
]
Message = Union[Request, Response]

REQUEST_TYPES = (
    VoteRequest,
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchSnapshotRequest,
    DescribeQuorumRequest,
    AddVoterRequest,
    RemoveVoterRequest,
    UpdateVoterRequest,
)


def is_request(message: Message) -> bool:
    return isinstance(message, REQUEST_TYPES)
