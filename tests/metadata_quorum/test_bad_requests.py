"""A bad request gets a named Kafka error and changes nothing."""

from __future__ import annotations

from typing import Callable

import pytest

from metadata_quorum.raft import (
    BeginQuorumEpochRequest,
    DescribeQuorumRequest,
    EndQuorumEpochRequest,
    Errors,
    FetchSnapshotRequest,
    Message,
    RaftCore,
    SnapshotId,
    VoteRequest,
)

from .helpers import CLUSTER, drain, elect, fetch, follow, make_core, sent


def snapshot_of(core: RaftCore) -> tuple:
    """Everything a request could corrupt."""
    return (
        core.quorum_state(),
        repr(core.state),
        core.log.start_offset,
        core.log.end_offset,
        core.high_watermark,
        core.flushed_end,
        getattr(core.state, "high_watermark", None),
    )


def leader() -> RaftCore:
    core = make_core()
    elect(core)
    core.append([b"a", b"b"])
    core.step(fetch(2, 1, epoch=1, offset=3, last_epoch=1), 0)
    drain(core)
    return core


def follower() -> RaftCore:
    core = make_core(node_id=2)
    follow(core, leader=1, epoch=3)
    return core


def observer() -> RaftCore:
    core = make_core(node_id=9)
    drain(core)
    return core


def vote(src: int, dst: int, epoch: int, **kw) -> VoteRequest:
    fields = dict(src=src, dst=dst, correlation_id=3, cluster_id=CLUSTER, candidate_epoch=epoch, candidate_id=src,
                  last_epoch=1, last_epoch_end_offset=5, pre_vote=False)
    fields.update(kw)
    return VoteRequest(**fields)


CASES: list[tuple[str, Callable[[], RaftCore], Message, Errors]] = [
    # Unknown voters.
    ("vote from a non-voter", follower, vote(9, 2, 5), Errors.INCONSISTENT_VOTER_SET),
    ("vote sent to an observer", observer, vote(1, 9, 5), Errors.INCONSISTENT_VOTER_SET),
    ("BeginQuorumEpoch from a non-voter", follower,
     BeginQuorumEpochRequest(9, 2, 3, CLUSTER, 5, 9), Errors.INCONSISTENT_VOTER_SET),
    ("EndQuorumEpoch naming a non-voter successor", follower,
     EndQuorumEpochRequest(1, 2, 3, CLUSTER, 3, 1, (2, 9)), Errors.INCONSISTENT_VOTER_SET),
    # Wrong cluster.
    ("vote from another cluster", follower, vote(3, 2, 5, cluster_id="other"), Errors.INCONSISTENT_CLUSTER_ID),
    ("fetch from another cluster", leader, fetch(2, 1, 1, 3, 1, cluster_id="other"), Errors.INCONSISTENT_CLUSTER_ID),
    ("BeginQuorumEpoch from another cluster", follower,
     BeginQuorumEpochRequest(3, 2, 3, "other", 5, 3), Errors.INCONSISTENT_CLUSTER_ID),
    ("FetchSnapshot from another cluster", leader,
     FetchSnapshotRequest(2, 1, 3, "other", 2, 1, SnapshotId(1, 1), 0, 100), Errors.INCONSISTENT_CLUSTER_ID),
    # Epochs.
    ("fetch in a future epoch", leader, fetch(2, 1, epoch=7, offset=3, last_epoch=1), Errors.UNKNOWN_LEADER_EPOCH),
    ("fetch in a past epoch", leader, fetch(2, 1, epoch=0, offset=0, last_epoch=0), Errors.FENCED_LEADER_EPOCH),
    ("vote for a past epoch", follower, vote(3, 2, 2), Errors.FENCED_LEADER_EPOCH),
    ("BeginQuorumEpoch for a past epoch", follower,
     BeginQuorumEpochRequest(3, 2, 3, CLUSTER, 2, 3), Errors.FENCED_LEADER_EPOCH),
    ("a second leader for the same epoch", follower,
     BeginQuorumEpochRequest(3, 2, 3, CLUSTER, 3, 3), Errors.INVALID_REQUEST),
    # Offsets.
    ("fetch past the end of the leader's own epoch", leader, fetch(2, 1, 1, offset=9, last_epoch=1),
     Errors.OFFSET_OUT_OF_RANGE),
    ("negative fetch offset", leader, fetch(2, 1, 1, offset=-1, last_epoch=1), Errors.INVALID_REQUEST),
    ("last fetched epoch beyond the request's epoch", leader, fetch(2, 1, 1, offset=3, last_epoch=2),
     Errors.INVALID_REQUEST),
    ("offset without an epoch", leader, fetch(2, 1, 1, offset=3, last_epoch=0), Errors.INVALID_REQUEST),
    ("FetchSnapshot for an unknown snapshot", leader,
     FetchSnapshotRequest(2, 1, 3, CLUSTER, 2, 1, SnapshotId(2, 1), 0, 100), Errors.SNAPSHOT_NOT_FOUND),
    # Malformed.
    ("vote whose candidate is not the sender", follower, vote(3, 2, 5, candidate_id=1), Errors.INVALID_REQUEST),
    ("vote claiming entries of its own new epoch", follower, vote(3, 2, 5, last_epoch=5), Errors.INVALID_REQUEST),
    ("fetch whose replica id is not the sender", leader,
     fetch(2, 1, 1, 3, 1).__class__(2, 1, 1, CLUSTER, 3, 1, 3, 1, 0), Errors.INVALID_REQUEST),
    ("FetchSnapshot asking for no bytes", leader,
     FetchSnapshotRequest(2, 1, 3, CLUSTER, 2, 1, SnapshotId(1, 1), 0, 0), Errors.INVALID_REQUEST),
    # Wrong node.
    ("fetch sent to a follower", follower, fetch(3, 2, 3, 1, 1), Errors.NOT_LEADER_OR_FOLLOWER),
    ("DescribeQuorum sent to a follower", follower, DescribeQuorumRequest(3, 2, 3), Errors.NOT_LEADER_OR_FOLLOWER),
]


@pytest.mark.parametrize("name,make,request_,error", CASES, ids=[c[0] for c in CASES])
def test_bad_request_is_refused_by_name_and_changes_nothing(name, make, request_, error) -> None:
    core = make()
    before = snapshot_of(core)
    core.step(request_, 0)
    bundles = drain(core)
    responses = [m for r in bundles for m in r.messages if m.dst == request_.src]
    assert len(responses) == 1, responses
    assert responses[0].error is error
    assert responses[0].correlation_id == request_.correlation_id
    assert all(r.quorum_state is None and not r.entries and r.truncate_to is None for r in bundles)
    assert snapshot_of(core) == before


def test_fenced_answers_tell_the_sender_the_current_epoch_and_leader() -> None:
    core = leader()
    core.step(fetch(2, 1, epoch=0, offset=0, last_epoch=0), 0)
    (resp,) = sent(core)
    assert (resp.epoch, resp.leader_id) == (1, 1)


def test_snapshot_position_out_of_range() -> None:
    core = leader()
    sid = core.create_snapshot(1, b"abc")
    drain(core)
    before = snapshot_of(core)
    core.step(FetchSnapshotRequest(2, 1, 3, CLUSTER, 2, 1, sid, 4, 100), 0)
    (resp,) = sent(core)
    assert resp.error is Errors.POSITION_OUT_OF_RANGE
    assert snapshot_of(core) == before


def test_misrouted_messages_are_ignored() -> None:
    core = leader()
    before = snapshot_of(core)
    core.step(fetch(2, 5, 1, 3, 1), 0)
    assert sent(core) == []
    assert snapshot_of(core) == before


def test_a_bogus_fetch_response_does_not_corrupt_the_log() -> None:
    from metadata_quorum.raft import Entry, FetchRequest, FetchResponse

    core = follower()
    before = snapshot_of(core)
    # Not an answer to anything we asked.
    core.step(FetchResponse(1, 2, 999, Errors.NONE, 3, 1, 5, 0, 0, (Entry(1, b"x"),)), 0)
    assert snapshot_of(core) == before
    # An answer to our fetch, but with entries of an epoch from the future.
    core2 = make_core(node_id=2)
    msgs = follow(core2, leader=1, epoch=3)
    (req,) = [m for m in msgs if isinstance(m, FetchRequest)]
    before2 = snapshot_of(core2)
    core2.step(FetchResponse(1, 2, req.correlation_id, Errors.NONE, 3, 1, 5, 0, 0, (Entry(9, b"x"),)), 0)
    drain(core2)
    assert snapshot_of(core2)[:6] == before2[:6]
