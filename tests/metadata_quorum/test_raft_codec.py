"""The quorum's messages survive the trip through protobuf bytes, and the codec refuses what the core must not see."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.admin import quorum_info
from kraftlog_api import quorum_pb2 as pb
from metadata_quorum import raft_codec
from metadata_quorum.raft import (
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
    Message,
    QUORUM_ERRORS,
    RaftCore,
    SnapshotId,
    VoteRequest,
    VoteResponse,
    is_request,
)

from .helpers import CLUSTER, drain, elect, fetch, make_core

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
NODE = st.integers(0, 2**31 - 1)
EPOCH = st.integers(0, 2**31 - 1)
OFFSET = st.integers(0, 2**63 - 1)
CORRELATION = st.integers(0, 2**40)
# Protobuf strings are UTF-8: no lone surrogates.
CLUSTER_ID = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
SNAPSHOT_ID = st.builds(SnapshotId, OFFSET, EPOCH)

ROUND_TRIPS = settings(max_examples=60, deadline=None)


def request(cls: type, sender: str, **fields: st.SearchStrategy) -> st.SearchStrategy:
    """Requests of `cls` from one node to another, the sender named in its `sender` field as on the wire."""

    def build(src: int, dst: int, correlation_id: int, **kw: Any) -> Message:
        return cls(src=src, dst=dst, correlation_id=correlation_id, **{sender: src}, **kw)

    return st.builds(build, NODE, NODE, CORRELATION, cluster_id=CLUSTER_ID, **fields).filter(lambda r: r.src != r.dst)


def response(cls: type, **fields: st.SearchStrategy) -> st.SearchStrategy:
    return st.builds(
        cls,
        src=NODE,
        dst=NODE,
        correlation_id=CORRELATION,
        error=st.sampled_from(sorted(QUORUM_ERRORS)),
        epoch=EPOCH,
        leader_id=st.none() | NODE,
        **fields,
    )


# Requests pass whatever numbers the core judges (it answers with Kafka
# errors), so they round-trip over the whole protobuf range.
REQUESTS = {
    "Vote": request(
        VoteRequest, "candidate_id", candidate_epoch=INT32, last_epoch=INT32, last_epoch_end_offset=INT64,
        pre_vote=st.booleans(),
    ),
    "BeginQuorumEpoch": request(BeginQuorumEpochRequest, "leader_id", leader_epoch=INT32),
    "EndQuorumEpoch": request(
        EndQuorumEpochRequest, "leader_id", leader_epoch=INT32,
        preferred_successors=st.lists(INT32, max_size=5).map(tuple),
    ),
    "Fetch": request(
        FetchRequest, "replica_id", epoch=INT32, fetch_offset=INT64, last_fetched_epoch=INT32, max_wait_ms=INT32
    ),
    "FetchSnapshot": request(
        FetchSnapshotRequest, "replica_id", epoch=INT32, snapshot_id=st.builds(SnapshotId, INT64, INT32),
        position=INT64, max_bytes=INT32,
    ),
}

RESPONSES = {
    "Vote": response(VoteResponse, vote_granted=st.booleans(), pre_vote=st.booleans()),
    "BeginQuorumEpoch": response(BeginQuorumEpochResponse),
    "EndQuorumEpoch": response(EndQuorumEpochResponse),
    "Fetch": response(
        FetchResponse,
        high_watermark=st.none() | OFFSET,
        log_start_offset=OFFSET,
        base_offset=OFFSET,
        records=st.lists(st.builds(Entry, EPOCH, st.binary(max_size=20), st.booleans()), max_size=4).map(tuple),
        diverging_epoch=st.none() | st.builds(EpochEndOffset, EPOCH, OFFSET),
        snapshot_id=st.none() | SNAPSHOT_ID,
    ),
    "FetchSnapshot": response(
        FetchSnapshotResponse, snapshot_id=st.none() | SNAPSHOT_ID, size=OFFSET, position=OFFSET,
        chunk=st.binary(max_size=50),
    ),
}


def over_the_wire(msg: Any) -> Any:
    """`msg` as the other side parses it."""
    return type(msg).FromString(msg.SerializeToString())


# --- round trips --------------------------------------------------------------


@pytest.mark.parametrize("method", list(raft_codec.METHODS))
@ROUND_TRIPS
@given(data=st.data())
def test_a_request_arrives_as_sent(method: str, data: st.DataObject) -> None:
    req = data.draw(REQUESTS[method])
    name, msg = raft_codec.request_to_proto(req)
    assert name == method and isinstance(msg, raft_codec.METHODS[method].request_pb)
    assert msg.destination_id == req.dst
    received = raft_codec.request_from_proto(method, over_the_wire(msg), req.dst, correlation_id=req.correlation_id)
    assert received == req


@pytest.mark.parametrize("method", list(raft_codec.METHODS))
@ROUND_TRIPS
@given(data=st.data())
def test_a_response_arrives_as_sent(method: str, data: st.DataObject) -> None:
    resp = data.draw(RESPONSES[method])
    # The request it answers, as the requester sent it.
    req = replace(data.draw(REQUESTS[method]), src=resp.dst, dst=resp.src, correlation_id=resp.correlation_id)
    msg = raft_codec.response_to_proto(resp)
    assert isinstance(msg, raft_codec.METHODS[method].response_pb)
    assert raft_codec.response_from_proto(over_the_wire(msg), req) == resp


def test_methods_name_matching_types() -> None:
    for name, spec in raft_codec.METHODS.items():
        assert spec.request_pb.__name__ == spec.request.__name__ == name + "Request"
        assert spec.response_pb.__name__ == spec.response.__name__ == name + "Response"


# --- requests the core must not see -------------------------------------------


def fetch_pb(**fields: Any) -> pb.FetchRequest:
    return pb.FetchRequest(**{"cluster_id": CLUSTER, "replica_id": 2, "current_leader_epoch": 1, **fields})


def test_a_request_for_another_node_is_misrouted() -> None:
    with pytest.raises(raft_codec.MisroutedRequest) as caught:
        raft_codec.request_from_proto("Fetch", fetch_pb(destination_id=3), receiver_id=1, correlation_id=1)
    assert (caught.value.destination_id, caught.value.receiver_id) == (3, 1)


def test_a_request_without_destination_is_for_whoever_got_it() -> None:
    req = raft_codec.request_from_proto("Fetch", fetch_pb(), receiver_id=1, correlation_id=7)
    assert (req.src, req.dst, req.correlation_id) == (2, 1, 7)


MALFORMED = [
    ("Vote", pb.VoteRequest(candidate_id=-1, candidate_epoch=2)),
    ("BeginQuorumEpoch", pb.BeginQuorumEpochRequest(leader_id=-5, leader_epoch=2)),
    ("EndQuorumEpoch", pb.EndQuorumEpochRequest(leader_id=-1, leader_epoch=2)),
    ("Fetch", fetch_pb(replica_id=-1)),
    ("FetchSnapshot", pb.FetchSnapshotRequest(replica_id=-1, snapshot_id=pb.SnapshotId(end_offset=1, epoch=1))),
    # The core drops a message from itself without an answer.
    ("Fetch", fetch_pb(replica_id=1)),
    ("Vote", pb.VoteRequest(candidate_id=1, destination_id=1)),
    ("FetchSnapshot", pb.FetchSnapshotRequest(replica_id=2, max_bytes=100)),
]


@pytest.mark.parametrize(
    "method,msg", MALFORMED, ids=["negative candidate", "negative leader (begin)", "negative leader (end)",
                                  "negative replica", "negative replica (snapshot)", "fetch from itself",
                                  "vote from itself", "no snapshot id"],
)
def test_malformed_request(method: str, msg: Any) -> None:
    with pytest.raises(raft_codec.MalformedRequest):
        raft_codec.request_from_proto(method, msg, receiver_id=1, correlation_id=1)


def test_numbers_the_core_judges_reach_it_and_get_a_kafka_error() -> None:
    core = make_core()
    elect(core)
    msg = fetch_pb(fetch_offset=-1, last_fetched_epoch=1, destination_id=1)
    core.step(raft_codec.request_from_proto("Fetch", msg, receiver_id=1, correlation_id=5), 0)
    (resp,) = [m for r in drain(core) for m in r.messages]
    answer = over_the_wire(raft_codec.response_to_proto(resp))
    assert isinstance(answer, pb.FetchResponse)
    assert (answer.error_code, answer.leader_id, answer.leader_epoch) == (Errors.INVALID_REQUEST.code, 1, 1)


def test_a_request_of_the_wrong_protobuf_type_is_a_programming_error() -> None:
    with pytest.raises(TypeError):
        raft_codec.request_from_proto("Vote", fetch_pb(), receiver_id=1, correlation_id=1)


# --- responses no correct node sends -------------------------------------------

A_FETCH = fetch(2, 1, epoch=1, offset=0, last_epoch=0)


@pytest.mark.parametrize(
    "msg",
    [
        pb.FetchResponse(error_code=12345),
        pb.FetchResponse(base_offset=-1),
        pb.FetchResponse(leader_epoch=-1),
        pb.FetchResponse(leader_id=-2),
        pb.FetchResponse(high_watermark=-2),
        pb.FetchResponse(log_start_offset=-3),
        pb.FetchResponse(records=[pb.Entry(epoch=1), pb.Entry(epoch=-1)]),
        pb.FetchResponse(diverging_epoch=pb.EpochEndOffset(epoch=1, end_offset=-1)),
        pb.FetchResponse(snapshot_id=pb.SnapshotId(end_offset=-1, epoch=1)),
    ],
    ids=["unknown error", "base offset", "epoch", "leader", "high watermark", "log start", "entry epoch",
         "diverging offset", "snapshot offset"],
)
def test_malformed_fetch_response(msg: pb.FetchResponse) -> None:
    with pytest.raises(raft_codec.MalformedResponse):
        raft_codec.response_from_proto(msg, A_FETCH)


def test_malformed_fetch_snapshot_response() -> None:
    req = FetchSnapshotRequest(2, 1, 3, CLUSTER, 2, 1, SnapshotId(5, 1), 0, 100)
    for msg in (pb.FetchSnapshotResponse(position=-1), pb.FetchSnapshotResponse(size=-1)):
        with pytest.raises(raft_codec.MalformedResponse):
            raft_codec.response_from_proto(msg, req)


def test_unknown_error_code_in_a_vote_response() -> None:
    req = VoteRequest(1, 2, 3, CLUSTER, 2, 1, 0, 0)
    with pytest.raises(raft_codec.MalformedResponse, match="unknown error code 7"):
        raft_codec.response_from_proto(pb.VoteResponse(error_code=7), req)


# --- error responses and DescribeQuorum ---------------------------------------


@pytest.mark.parametrize("method", [*raft_codec.METHODS, "DescribeQuorum"])
def test_error_response_fills_the_envelope(method: str) -> None:
    msg = over_the_wire(raft_codec.error_response(method, Errors.INCONSISTENT_VOTER_SET, epoch=4, leader_id=None))
    assert type(msg).__name__ == method + "Response"
    assert (msg.error_code, msg.leader_epoch, msg.leader_id) == (94, 4, -1)


def leader_with_an_observer() -> RaftCore:
    core = make_core(now=1_000)
    elect(core, now=1_000)
    core.step(fetch(9, 1, epoch=1, offset=0, last_epoch=0), 1_250)
    drain(core)
    return core


def test_describe_quorum_in_wall_clock_time() -> None:
    core = leader_with_an_observer()
    msg = raft_codec.describe_quorum_response(
        core.describe_quorum(), Errors.NONE, core.leader(), core.epoch(), wall_ms=lambda t: t + 1_700_000_000_000
    )
    info = quorum_info(over_the_wire(msg))  # as the CLI reads it
    assert json.loads(json.dumps(info)) == info
    assert info == {
        "leader_id": 1,
        "leader_epoch": 1,
        "high_watermark": -1,  # nobody has fetched the leader-change record yet
        "voters": [
            {"replica_id": 1, "directory_id": None, "log_end_offset": 1, "last_fetch_timestamp": 1_700_000_001_250,
             "last_caught_up_timestamp": 1_700_000_001_250},
            {"replica_id": 2, "directory_id": None, "log_end_offset": -1, "last_fetch_timestamp": -1,
             "last_caught_up_timestamp": -1},
            {"replica_id": 3, "directory_id": None, "log_end_offset": -1, "last_fetch_timestamp": -1,
             "last_caught_up_timestamp": -1},
        ],
        "observers": [
            {"replica_id": 9, "directory_id": None, "log_end_offset": 0, "last_fetch_timestamp": 1_700_000_001_250,
             "last_caught_up_timestamp": -1},
        ],
        "endpoints": {},  # the shell adds the voters' listeners
    }


def test_describe_quorum_refused() -> None:
    msg = raft_codec.describe_quorum_response(None, Errors.NOT_LEADER_OR_FOLLOWER, 2, 5, wall_ms=lambda t: t)
    assert (msg.error_code, msg.leader_id, msg.leader_epoch, msg.high_watermark) == (6, 2, 5, -1)
    assert not msg.current_voters and not msg.observers


# --- a quorum that talks only protobuf -----------------------------------------


class WireNetwork:
    """Cores exchanging serialized protobuf only, addressed the way two gRPC shells would do it."""

    def __init__(self, ids: tuple[int, ...]) -> None:
        self.cores = {i: make_core(node_id=i, seed=i) for i in ids}
        self.applied: dict[int, list[bytes]] = {i: [] for i in ids}
        # (receiver, requester, the receiver's correlation id) -> the request as its sender made it
        self.calls: dict[tuple[int, int, int], Message] = {}
        self.last_cid = 0
        self.now = 0

    def deliver(self) -> bool:
        """Carry out every node's Ready bundles; False when nothing was sent."""
        moved = False
        for node, core in self.cores.items():
            for ready in drain(core):
                if ready.committed is not None:
                    self.applied[node] += [e.data for e in ready.committed.entries if not e.control]
                for message in ready.messages:
                    moved = True
                    if is_request(message):
                        self.call(message)
                    else:
                        self.answer(node, message)
        return moved

    def call(self, req: Message) -> None:
        method, msg = raft_codec.request_to_proto(req)  # type: ignore[arg-type]
        self.last_cid += 1
        received = raft_codec.request_from_proto(method, over_the_wire(msg), req.dst, correlation_id=self.last_cid)
        self.calls[(req.dst, req.src, self.last_cid)] = req
        self.cores[req.dst].step(received, self.now)

    def answer(self, node: int, resp: Message) -> None:
        req = self.calls.pop((node, resp.dst, resp.correlation_id))
        received = raft_codec.response_from_proto(over_the_wire(raft_codec.response_to_proto(resp)), req)  # type: ignore[arg-type]
        self.cores[req.src].step(received, self.now)

    def run_until(self, done: Any, steps: int = 200) -> None:
        for _ in range(steps):
            if done():
                return
            if not self.deliver():
                self.now = int(min(core.next_deadline() for core in self.cores.values()))
                for core in self.cores.values():
                    core.tick(self.now)
        raise AssertionError("not done")


def test_a_quorum_talking_protobuf_elects_a_leader_and_commits() -> None:
    net = WireNetwork((1, 2, 3))
    net.cores[1].campaign()
    net.run_until(lambda: net.cores[1].is_leader())
    net.cores[1].append([b"hello"])
    net.run_until(lambda: all(applied == [b"hello"] for applied in net.applied.values()))
    assert all(core.leader() == 1 for core in net.cores.values())


# --- KIP-853: directory ids and voter changes ------------------------------------------

DIR = "AAAAAAAAAAAAAAAAAAAAAQ"


def test_directory_ids_cross_the_wire_and_unknown_is_empty() -> None:
    req = FetchRequest(1, 2, 3, CLUSTER, 1, 4, 10, 3, replica_directory_id=DIR)
    method, msg = raft_codec.request_to_proto(req)
    assert msg.replica_directory_id == DIR
    back = raft_codec.request_from_proto(method, msg, receiver_id=2, correlation_id=3)
    assert back == req
    plain = raft_codec.request_from_proto(method, raft_codec.request_to_proto(
        FetchRequest(1, 2, 3, CLUSTER, 1, 4, 10, 3))[1], receiver_id=2, correlation_id=3)
    assert plain.replica_directory_id is None  # type: ignore[union-attr]
    vote = VoteRequest(1, 2, 3, CLUSTER, 2, 1, 0, 0, candidate_directory_id=DIR, voter_directory_id=DIR)
    assert raft_codec.request_from_proto("Vote", raft_codec.request_to_proto(vote)[1], 2, 3) == vote


def test_a_request_to_a_bootstrap_server_names_no_destination() -> None:
    _, msg = raft_codec.request_to_proto(FetchRequest(5, -2, 3, CLUSTER, 5, 0, 0, 0))
    assert not msg.HasField("destination_id")


@pytest.mark.parametrize("bogus", ["x", "AAAAAAAAAAAAAAAAAAAAAA", "A" * 30])
def test_a_bogus_directory_id_is_a_malformed_request(bogus: str) -> None:
    msg = pb.FetchRequest(cluster_id=CLUSTER, replica_id=1, replica_directory_id=bogus)
    with pytest.raises(raft_codec.MalformedRequest, match="directory"):
        raft_codec.request_from_proto("Fetch", msg, receiver_id=2, correlation_id=1)


def test_voter_changes_from_the_wire() -> None:
    add = raft_codec.voter_change_from_proto("AddRaftVoter", pb.AddRaftVoterRequest(
        cluster_id=CLUSTER, timeout_ms=500, voter_id=4, voter_directory_id=DIR,
        listeners=[pb.VoterEndpoint(name="CONTROLLER", host="h4", port=9093)]), receiver_id=1, correlation_id=7)
    assert (add.src, add.dst, add.correlation_id, add.voter.key.id, add.voter.key.directory_id) == (-1, 1, 7, 4, DIR)
    assert add.timeout_ms == 500 and add.voter.endpoints[0].host == "h4"  # type: ignore[union-attr]
    remove = raft_codec.voter_change_from_proto("RemoveRaftVoter", pb.RemoveRaftVoterRequest(voter_id=2), 1, 8)
    assert remove.voter.directory_id is None  # the leader refuses a key without one


@pytest.mark.parametrize("method, msg, words", [
    ("RemoveRaftVoter", pb.RemoveRaftVoterRequest(voter_id=-3), "voter_id"),
    ("RemoveRaftVoter", pb.RemoveRaftVoterRequest(voter_id=1, voter_directory_id="nope"), "voter_directory_id"),
    ("AddRaftVoter", pb.AddRaftVoterRequest(voter_id=1, timeout_ms=-1), "timeout_ms"),
    ("AddRaftVoter", pb.AddRaftVoterRequest(voter_id=1, listeners=[pb.VoterEndpoint(name="C", host="", port=1)]),
     "listener"),
    ("UpdateRaftVoter", pb.UpdateRaftVoterRequest(voter_id=1, listeners=[
        pb.VoterEndpoint(name="C", host="h", port=70000)]), "listener"),
])
def test_hostile_voter_changes_are_malformed(method: str, msg: object, words: str) -> None:
    with pytest.raises(raft_codec.MalformedRequest, match=words):
        raft_codec.voter_change_from_proto(method, msg, receiver_id=1, correlation_id=1)  # type: ignore[arg-type]
