"""The quorum's RPCs on the wire: the Raft core's dataclasses <-> kraftlog_api protobuf.

The wire carries no `src`, `dst` or `correlation_id`. The sender is named in
the request body, as in Kafka (Vote: candidate_id; Begin/EndQuorumEpoch:
leader_id; Fetch/FetchSnapshot: replica_id). The receiver is whoever got
the RPC; the sender writes its intended receiver in `destination_id`, so a
request that reached the wrong node is refused instead of acted upon. gRPC
pairs each response with its request, so the receiving shell makes up a
correlation id of its own, and the sending shell restores addressing from
the request it sent.

Directory ids (KIP-853) are Kafka's base64url text on the wire, "" for
unknown (None in the core). A request to a bootstrap server, whose id is
not known (the core names it by a negative id), carries no destination_id.
AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter come from operators'
tools, not from peers: `voter_change_from_proto` makes them core requests
from client id -1.

Checks here are only for what the core cannot be handed at all: a sender
that is no node id, a FetchSnapshot naming no snapshot, a directory id that
is no UUID. Whatever the core
can judge (cluster id, voter set, epochs, offsets, sizes) it answers with a
Kafka error code, so it is passed through untouched.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

from google.protobuf.message import Message as PbMessage

from kraftlog_api import quorum_pb2 as pb
from metadata_quorum.raft.messages import (
    AddVoterRequest,
    RemoveVoterRequest,
    UpdateVoterRequest,
    VOTER_CHANGE_ERRORS,
    VoterChangeResponse,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Entry,
    EpochEndOffset,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    QUORUM_ERRORS,
    QuorumInfo,
    ReplicaState,
    Request,
    Response,
    SnapshotId,
    VoteRequest,
    VoteResponse,
)
from metadata_quorum.raft.voters import Endpoint, ReplicaKey, Voter, check_directory_id

# Kafka's "none" for a node id or an offset not known yet (leader_id, high_watermark).
ABSENT = -1


class MalformedRequest(ValueError):
    """A request the core must never see; the shell fails the RPC with INVALID_ARGUMENT."""


class MisroutedRequest(ValueError):
    """A request meant for another node; the shell answers INCONSISTENT_VOTER_SET."""

    def __init__(self, destination_id: int, receiver_id: int) -> None:
        super().__init__(f"request for node {destination_id} reached node {receiver_id}")
        self.destination_id = destination_id
        self.receiver_id = receiver_id


class MalformedResponse(ValueError):
    """A response no correct node sends; the shell drops it and the core retries on its timer."""


class Method(NamedTuple):
    request_pb: type[PbMessage]
    response_pb: type[PbMessage]
    request: type
    response: type


# The RPCs the core serves and sends. DescribeQuorum is left out: the shell
# answers it itself (describe_quorum_response below).
METHODS: dict[str, Method] = {
    "Vote": Method(pb.VoteRequest, pb.VoteResponse, VoteRequest, VoteResponse),
    "BeginQuorumEpoch": Method(
        pb.BeginQuorumEpochRequest, pb.BeginQuorumEpochResponse, BeginQuorumEpochRequest, BeginQuorumEpochResponse
    ),
    "EndQuorumEpoch": Method(
        pb.EndQuorumEpochRequest, pb.EndQuorumEpochResponse, EndQuorumEpochRequest, EndQuorumEpochResponse
    ),
    "Fetch": Method(pb.FetchRequest, pb.FetchResponse, FetchRequest, FetchResponse),
    "FetchSnapshot": Method(
        pb.FetchSnapshotRequest, pb.FetchSnapshotResponse, FetchSnapshotRequest, FetchSnapshotResponse
    ),
}

# The request field that names the sender.
_SENDER = {
    "Vote": "candidate_id",
    "BeginQuorumEpoch": "leader_id",
    "EndQuorumEpoch": "leader_id",
    "Fetch": "replica_id",
    "FetchSnapshot": "replica_id",
}

_METHOD_OF = {cls: name for name, m in METHODS.items() for cls in (m.request, m.response)}


def _same(*names: str) -> dict[str, str]:
    return {name: name for name in names}


# Body fields copied as they are: dataclass field -> protobuf field (Kafka's
# name, where the core's differs). The envelope (addressing, cluster_id,
# error, epoch, leader_id) and the fields that need converting are not here.
_SCALARS: dict[type, dict[str, str]] = {
    VoteRequest: {
        **_same("candidate_epoch", "candidate_id", "pre_vote"),
        "last_epoch": "last_offset_epoch",
        "last_epoch_end_offset": "last_offset",
    },
    VoteResponse: _same("vote_granted", "pre_vote"),
    BeginQuorumEpochRequest: _same("leader_epoch", "leader_id"),
    BeginQuorumEpochResponse: {},
    EndQuorumEpochRequest: _same("leader_epoch", "leader_id"),
    EndQuorumEpochResponse: {},
    FetchRequest: {
        **_same("replica_id", "fetch_offset", "last_fetched_epoch", "max_wait_ms"),
        "epoch": "current_leader_epoch",
    },
    FetchResponse: _same("log_start_offset", "base_offset"),
    FetchSnapshotRequest: {**_same("replica_id", "position", "max_bytes"), "epoch": "current_leader_epoch"},
    FetchSnapshotResponse: {**_same("size", "position"), "chunk": "unaligned_records"},
}


# Directory ids: None in the core, "" on the wire.
_DIRECTORY_FIELDS: dict[type, tuple[str, ...]] = {
    VoteRequest: ("candidate_directory_id", "voter_directory_id"),
    BeginQuorumEpochRequest: ("voter_directory_id",),
    FetchRequest: ("replica_directory_id",),
    FetchSnapshotRequest: ("replica_directory_id",),
}


def directory_id_from_pb(text: str, field: str = "directory id") -> Optional[str]:
    """A wire directory id as the core's (None for ""); MalformedRequest if it is no UUID."""
    if not text:
        return None
    try:
        return check_directory_id(text)
    except ValueError as exc:
        raise MalformedRequest(f"{field}: {exc}") from None


# --- fields that need converting ----------------------------------------------


def _absent_to_pb(value: Optional[int]) -> int:
    return ABSENT if value is None else value


def _absent_from_pb(value: int, field: str) -> Optional[int]:
    if value < ABSENT:
        raise MalformedResponse(f"impossible {field} {value}")
    return None if value == ABSENT else value


def _snapshot_id_to_pb(snapshot_id: Optional[SnapshotId]) -> Optional[pb.SnapshotId]:
    if snapshot_id is None:
        return None  # the constructor leaves a message field given None unset
    return pb.SnapshotId(end_offset=snapshot_id.end_offset, epoch=snapshot_id.epoch)


def _snapshot_id_from_pb(msg: Any) -> Optional[SnapshotId]:
    """`msg.snapshot_id`, or None when the sender left it out."""
    if not msg.HasField("snapshot_id"):
        return None
    return SnapshotId(msg.snapshot_id.end_offset, msg.snapshot_id.epoch)


def _end_quorum_epoch_request_to_pb(req: EndQuorumEpochRequest) -> dict[str, Any]:
    return {"preferred_successors": req.preferred_successors}


def _end_quorum_epoch_request_from_pb(msg: pb.EndQuorumEpochRequest) -> dict[str, Any]:
    return {"preferred_successors": tuple(msg.preferred_successors)}


def _fetch_snapshot_request_from_pb(msg: pb.FetchSnapshotRequest) -> dict[str, Any]:
    snapshot_id = _snapshot_id_from_pb(msg)
    if snapshot_id is None:
        raise MalformedRequest("FetchSnapshot names no snapshot_id")
    return {"snapshot_id": snapshot_id}


def _snapshot_id_field_to_pb(msg: FetchSnapshotRequest | FetchSnapshotResponse) -> dict[str, Any]:
    return {"snapshot_id": _snapshot_id_to_pb(msg.snapshot_id)}


def _snapshot_id_field_from_pb(msg: pb.FetchSnapshotResponse) -> dict[str, Any]:
    return {"snapshot_id": _snapshot_id_from_pb(msg)}


def _fetch_response_to_pb(resp: FetchResponse) -> dict[str, Any]:
    div = resp.diverging_epoch
    return {
        "high_watermark": _absent_to_pb(resp.high_watermark),
        "records": [pb.Entry(epoch=e.epoch, data=e.data, control=e.control) for e in resp.records],
        "diverging_epoch": None if div is None else pb.EpochEndOffset(epoch=div.epoch, end_offset=div.end_offset),
        "snapshot_id": _snapshot_id_to_pb(resp.snapshot_id),
    }


def _fetch_response_from_pb(msg: pb.FetchResponse) -> dict[str, Any]:
    diverging = msg.diverging_epoch
    return {
        "high_watermark": _absent_from_pb(msg.high_watermark, "high_watermark"),
        "records": tuple(Entry(e.epoch, e.data, e.control) for e in msg.records),
        "diverging_epoch": EpochEndOffset(diverging.epoch, diverging.end_offset)
        if msg.HasField("diverging_epoch")
        else None,
        "snapshot_id": _snapshot_id_from_pb(msg),
    }


# Per message type: (to protobuf, from protobuf) for the fields _SCALARS leaves out.
_CONVERTED: dict[type, tuple[Callable[[Any], dict[str, Any]], Callable[[Any], dict[str, Any]]]] = {
    EndQuorumEpochRequest: (_end_quorum_epoch_request_to_pb, _end_quorum_epoch_request_from_pb),
    FetchResponse: (_fetch_response_to_pb, _fetch_response_from_pb),
    FetchSnapshotRequest: (_snapshot_id_field_to_pb, _fetch_snapshot_request_from_pb),
    FetchSnapshotResponse: (_snapshot_id_field_to_pb, _snapshot_id_field_from_pb),
}


def _body_to_pb(message: Request | Response) -> dict[str, Any]:
    """The protobuf fields of `message` other than its envelope."""
    cls = type(message)
    fields = {pb_name: getattr(message, name) for name, pb_name in _SCALARS[cls].items()}
    for name in _DIRECTORY_FIELDS.get(cls, ()):
        fields[name] = getattr(message, name) or ""
    if cls in _CONVERTED:
        fields.update(_CONVERTED[cls][0](message))
    return fields


def _body_from_pb(cls: type, msg: PbMessage) -> dict[str, Any]:
    """The dataclass fields of a `cls` other than its envelope."""
    fields = {name: getattr(msg, pb_name) for name, pb_name in _SCALARS[cls].items()}
    for name in _DIRECTORY_FIELDS.get(cls, ()):
        fields[name] = directory_id_from_pb(getattr(msg, name), name)
    if cls in _CONVERTED:
        fields.update(_CONVERTED[cls][1](msg))
    return fields


def _method_of(cls: type) -> str:
    try:
        return _METHOD_OF[cls]
    except KeyError:
        raise TypeError(f"{cls.__name__} does not travel between quorum nodes") from None


def _expect(msg: PbMessage, cls: type[PbMessage]) -> None:
    if not isinstance(msg, cls):
        raise TypeError(f"expected {cls.__name__}, got {type(msg).__name__}")


# --- requests ---------------------------------------------------------------


def request_to_proto(req: Request) -> tuple[str, PbMessage]:
    """The RPC method and protobuf request for a request the core wants sent to `req.dst`."""
    method = _method_of(type(req))
    msg = METHODS[method].request_pb(
        cluster_id=req.cluster_id,  # type: ignore[union-attr]
        # A bootstrap server's id is not known (negative here): name no destination.
        destination_id=req.dst if req.dst >= 0 else None,
        **_body_to_pb(req),
    )
    return method, msg


def request_from_proto(method: str, pb_req: PbMessage, receiver_id: int, correlation_id: int) -> Request:
    """The core's request for an RPC `method` that reached node `receiver_id`.

    Raises MisroutedRequest when it names another destination, and
    MalformedRequest when the core could not be handed it.
    """
    spec = METHODS[method]
    _expect(pb_req, spec.request_pb)
    if pb_req.HasField("destination_id") and pb_req.destination_id != receiver_id:  # type: ignore[attr-defined]
        raise MisroutedRequest(pb_req.destination_id, receiver_id)  # type: ignore[attr-defined]
    sender_field = _SENDER[method]
    sender = getattr(pb_req, sender_field)
    if sender < 0:
        raise MalformedRequest(f"{sender_field} {sender} is not a node id")
    if sender == receiver_id:
        # The core drops a message from itself unanswered; the RPC would hang.
        raise MalformedRequest(f"{sender_field} {sender} is the receiver's own id")
    return spec.request(  # type: ignore[no-any-return]
        src=sender,
        dst=receiver_id,
        correlation_id=correlation_id,
        cluster_id=pb_req.cluster_id,  # type: ignore[attr-defined]
        **_body_from_pb(spec.request, pb_req),
    )


# --- responses --------------------------------------------------------------


def _envelope_to_pb(error: Errors, epoch: int, leader_id: Optional[int]) -> dict[str, Any]:
    return {"error_code": error.code, "leader_epoch": epoch, "leader_id": _absent_to_pb(leader_id)}


def error_response(method: str, error: Errors, epoch: int, leader_id: Optional[int]) -> PbMessage:
    """The protobuf response to `method` carrying only the error, our epoch and the leader we know.

    `method` may also be "DescribeQuorum".
    """
    cls = pb.DescribeQuorumResponse if method == "DescribeQuorum" else METHODS[method].response_pb
    return cls(**_envelope_to_pb(error, epoch, leader_id))


def response_to_proto(resp: Response) -> PbMessage:
    """The protobuf answer to the RPC that `resp` (from the core) responds to."""
    method = _method_of(type(resp))
    return METHODS[method].response_pb(
        **_envelope_to_pb(resp.error, resp.epoch, resp.leader_id),
        **_body_to_pb(resp),
    )


def _has_negative(value: object) -> bool:
    """Whether a number in `value`, or in the tuples it holds (records, snapshot id, diverging epoch), is below zero."""
    if isinstance(value, tuple):
        return any(_has_negative(v) for v in value)
    return isinstance(value, int) and not isinstance(value, bool) and value < 0


def response_from_proto(pb_resp: PbMessage, req: Request) -> Response:
    """The core's response to `req`, which this node sent and `pb_resp` answers.

    Raises MalformedResponse for an unknown error code or a field no correct
    node sends.
    """
    spec = METHODS[_method_of(type(req))]
    _expect(pb_resp, spec.response_pb)
    code = pb_resp.error_code  # type: ignore[attr-defined]
    if code not in QUORUM_ERRORS:
        raise MalformedResponse(f"unknown error code {code}")
    error = Errors(code)
    fields = {
        "epoch": pb_resp.leader_epoch,  # type: ignore[attr-defined]
        "leader_id": _absent_from_pb(pb_resp.leader_id, "leader_id"),  # type: ignore[attr-defined]
        **_body_from_pb(spec.response, pb_resp),
    }
    # Every number left in a response is an epoch, offset, size or position;
    # the -1s meaning "unknown" were turned into None above.
    negative = [name for name, value in fields.items() if _has_negative(value)]
    if negative:
        raise MalformedResponse(f"negative {', '.join(negative)}")
    return spec.response(  # type: ignore[no-any-return]
        src=req.dst, dst=req.src, correlation_id=req.correlation_id, error=error, **fields
    )


# --- DescribeQuorum -----------------------------------------------------------


def _wall(timestamp: int, wall_ms: Callable[[int], int]) -> int:
    return timestamp if timestamp == ABSENT else wall_ms(timestamp)


def _replica_to_pb(replica: ReplicaState, wall_ms: Callable[[int], int]) -> pb.ReplicaState:
    return pb.ReplicaState(
        replica_id=replica.replica_id,
        log_end_offset=replica.log_end_offset,
        last_fetch_timestamp=_wall(replica.last_fetch_timestamp, wall_ms),
        last_caught_up_timestamp=_wall(replica.last_caught_up_timestamp, wall_ms),
        replica_directory_id=replica.directory_id or "",
    )


def describe_quorum_response(
    info: Optional[QuorumInfo],
    error: Errors,
    leader_id: Optional[int],
    epoch: int,
    wall_ms: Callable[[int], int],
) -> pb.DescribeQuorumResponse:
    """The shell's answer to DescribeQuorum: `info` from the leader's core, or None with an error.

    The core's timestamps are on its own clock; `wall_ms` turns one into
    wall-clock ms for operators (-1, unknown, stays -1). Clients read the
    answer back with client.admin.quorum_info.
    """
    resp = error_response("DescribeQuorum", error, epoch, leader_id)
    assert isinstance(resp, pb.DescribeQuorumResponse)
    if info is None:
        resp.high_watermark = ABSENT
        return resp
    resp.high_watermark = info.high_watermark
    resp.current_voters.extend(_replica_to_pb(r, wall_ms) for r in info.voters)
    resp.observers.extend(_replica_to_pb(r, wall_ms) for r in info.observers)
    return resp



# --- AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter (KIP-853) -------------------

VOTER_CHANGE_METHODS = ("AddRaftVoter", "RemoveRaftVoter", "UpdateRaftVoter")
CLIENT_ID = -1  # the core's src for a request from an operator's tool


def _endpoints_from_pb(listeners: Any) -> tuple[Endpoint, ...]:
    endpoints = []
    for listener in listeners:
        if not listener.name or not listener.host or not 0 < listener.port < 65536:
            raise MalformedRequest(f"listener {listener.name!r} {listener.host!r}:{listener.port} is not an endpoint")
        endpoints.append(Endpoint(listener.name, listener.host, listener.port))
    return tuple(endpoints)


def endpoints_to_pb(endpoints: tuple[Endpoint, ...]) -> list[pb.VoterEndpoint]:
    return [pb.VoterEndpoint(name=e.name, host=e.host, port=e.port) for e in endpoints]


def voter_change_from_proto(
    method: str, pb_req: PbMessage, receiver_id: int, correlation_id: int
) -> AddVoterRequest | RemoveVoterRequest | UpdateVoterRequest:
    """The core's request for a voter change that reached node `receiver_id`.

    MalformedRequest for what no correct tool sends (a negative voter id, a
    directory id that is no UUID, an endpoint without a host or port); the
    rest (an unknown voter, a missing directory id) the leader judges.
    """
    voter_id = pb_req.voter_id  # type: ignore[attr-defined]
    if voter_id < 0:
        raise MalformedRequest(f"voter_id {voter_id} is not a node id")
    key = ReplicaKey(voter_id, directory_id_from_pb(pb_req.voter_directory_id, "voter_directory_id"))  # type: ignore[attr-defined]
    envelope = dict(src=CLIENT_ID, dst=receiver_id, correlation_id=correlation_id,
                    cluster_id=pb_req.cluster_id)  # type: ignore[attr-defined]
    if method == "RemoveRaftVoter":
        _expect(pb_req, pb.RemoveRaftVoterRequest)
        return RemoveVoterRequest(voter=key, **envelope)  # type: ignore[arg-type]
    voter = Voter(key, _endpoints_from_pb(pb_req.listeners))  # type: ignore[attr-defined]
    if method == "AddRaftVoter":
        _expect(pb_req, pb.AddRaftVoterRequest)
        timeout = pb_req.timeout_ms  # type: ignore[attr-defined]
        if timeout < 0:
            raise MalformedRequest(f"timeout_ms {timeout} is negative")
        return AddVoterRequest(voter=voter, timeout_ms=timeout, **envelope)  # type: ignore[arg-type]
    _expect(pb_req, pb.UpdateRaftVoterRequest)
    return UpdateVoterRequest(voter=voter, **envelope)  # type: ignore[arg-type]


def voter_change_response_to_proto(resp: VoterChangeResponse) -> pb.RaftVoterChangeResponse:
    assert resp.error in VOTER_CHANGE_ERRORS, resp.error
    return pb.RaftVoterChangeResponse(
        error_code=resp.error.code, error_message=resp.error_message,
        leader_id=_absent_to_pb(resp.leader_id), leader_epoch=resp.epoch,
    )
