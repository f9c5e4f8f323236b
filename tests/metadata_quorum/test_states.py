"""Each election state on its own, driven by hand-made messages."""

from __future__ import annotations

import pytest

from metadata_quorum.raft import (
    BeginQuorumEpochRequest,
    DurableState,
    EndQuorumEpochRequest,
    Entry,
    EpochEndOffset,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    NotLeaderError,
    QuorumStateData,
    Snapshot,
    SnapshotId,
    VoteRequest,
    VoteResponse,
)
from metadata_quorum.raft.leader import Leader
from metadata_quorum.raft.states import Candidate, Follower, Prospective, Resigned, Unattached

from .helpers import (
    CLUSTER,
    drain,
    elect,
    fetch,
    follow,
    make_core,
    of_type,
    records_response,
    sent,
    vote_response,
)


def vote_request(src: int, dst: int, epoch: int, last=(0, 0), pre_vote: bool = False, cid: int = 5) -> VoteRequest:
    return VoteRequest(src, dst, cid, CLUSTER, epoch, src, last[0], last[1], pre_vote)


# --- Unattached --------------------------------------------------------------


def test_a_fresh_voter_is_unattached_and_persists_epoch_zero() -> None:
    core = make_core()
    assert isinstance(core.state, Unattached)
    (ready,) = drain(core)
    assert ready.quorum_state == QuorumStateData(0, None, None)


def test_election_timeout_starts_a_pre_vote_without_bumping_the_epoch() -> None:
    core = make_core()
    drain(core)
    deadline = core.next_deadline()
    assert 1000 <= deadline < 2000  # election timeout plus random jitter
    core.tick(int(deadline) - 1)
    assert isinstance(core.state, Unattached)
    core.tick(int(deadline))
    assert isinstance(core.state, Prospective)
    bundles = drain(core)
    assert all(r.quorum_state is None for r in bundles), "a pre-vote persists nothing"
    requests = of_type([m for r in bundles for m in r.messages], VoteRequest)
    assert sorted(r.dst for r in requests) == [2, 3]
    assert all(r.pre_vote and r.candidate_epoch == 1 for r in requests)
    assert core.epoch() == 0


def test_a_granted_vote_is_persisted_in_the_same_bundle_before_the_answer() -> None:
    core = make_core(node_id=2)
    drain(core)
    core.step(vote_request(1, 2, epoch=1), 10)
    (ready,) = drain(core)
    assert ready.quorum_state == QuorumStateData(1, None, 1)
    (resp,) = ready.messages
    assert isinstance(resp, VoteResponse) and resp.vote_granted and resp.epoch == 1
    # One vote per epoch.
    core.step(vote_request(3, 2, epoch=1, cid=6), 11)
    (resp,) = sent(core)
    assert not resp.vote_granted


def test_a_vote_needs_a_log_at_least_as_up_to_date() -> None:
    core = make_core(node_id=2, durable=DurableState(QuorumStateData(3, None, None), None, 0, [Entry(3, b"a")]))
    drain(core)
    core.step(vote_request(1, 2, epoch=4, last=(2, 5)), 0)  # older last epoch, longer log: refused
    (resp,) = sent(core)
    assert not resp.vote_granted and core.epoch() == 4  # the epoch still moves
    core.step(vote_request(3, 2, epoch=4, last=(3, 1), cid=7), 0)
    (resp,) = sent(core)
    assert resp.vote_granted


# --- Prospective ----------------------------------------------------------------


def test_majority_of_pre_votes_makes_a_candidate_that_votes_for_itself() -> None:
    core = make_core()
    drain(core)
    core.campaign()
    requests = of_type(sent(core), VoteRequest)
    core.step(vote_response(requests[0]), 5)
    assert isinstance(core.state, Candidate) and core.epoch() == 1
    bundles = drain(core)
    assert bundles[0].quorum_state == QuorumStateData(1, None, 1)
    votes = of_type(bundles[0].messages, VoteRequest)
    assert all(not v.pre_vote and v.candidate_epoch == 1 for v in votes)


def test_pre_vote_refused_with_a_live_leader_makes_the_prospective_follow_it() -> None:
    core = make_core(node_id=3)
    follow(core, leader=1, epoch=2)
    core.campaign()
    requests = of_type(sent(core), VoteRequest)
    core.step(vote_response(requests[0], granted=False, epoch=2, leader=1), 5)
    assert isinstance(core.state, Follower) and core.leader() == 1 and core.epoch() == 2


def test_a_higher_epoch_in_a_pre_vote_answer_ends_the_pre_vote() -> None:
    core = make_core()
    drain(core)
    core.campaign()
    requests = of_type(sent(core), VoteRequest)
    core.step(vote_response(requests[0], granted=False, epoch=7, leader=None), 5)
    assert isinstance(core.state, Unattached) and core.epoch() == 7


def test_answers_to_an_old_round_are_ignored() -> None:
    core = make_core()
    drain(core)
    core.campaign()
    old = of_type(sent(core), VoteRequest)
    core.campaign()  # a new round
    sent(core)
    core.step(vote_response(old[0]), 5)
    assert isinstance(core.state, Prospective)


# --- Candidate ------------------------------------------------------------------


def test_candidate_wins_and_the_leader_appends_a_leader_change_record() -> None:
    core = make_core()
    elect(core)
    assert isinstance(core.state, Leader) and core.leader() == 1
    assert core.log.entry(0).control and core.log.entry(0).epoch == 1


def test_candidate_that_times_out_goes_back_to_pre_vote() -> None:
    core = make_core()
    drain(core)
    core.campaign()
    (req, _) = of_type(sent(core), VoteRequest)
    core.step(vote_response(req), 0)
    assert isinstance(core.state, Candidate)
    drain(core)
    core.tick(int(core.next_deadline()))
    assert isinstance(core.state, Prospective) and core.epoch() == 1


def test_a_single_voter_elects_itself_and_commits_alone() -> None:
    core = make_core(voters=(1,))
    drain(core)
    core.campaign()
    assert core.is_leader()
    core.append([b"a"])
    committed = [e for r in drain(core) if r.committed for e in r.committed.entries]
    assert [e.data for e in committed if not e.control] == [b"a"]


# --- Leader ---------------------------------------------------------------------


def leader_with_followers() -> "object":
    core = make_core()
    elect(core)
    return core


def test_high_watermark_needs_a_majority_and_an_entry_of_this_epoch() -> None:
    core = leader_with_followers()
    assert core.state.high_watermark is None
    core.step(fetch(2, 1, epoch=1, offset=0, last_epoch=0), 0)
    assert core.state.high_watermark is None  # follower 2 holds nothing yet
    core.step(fetch(2, 1, epoch=1, offset=1, last_epoch=1, cid=2), 0)
    assert core.state.high_watermark == 1  # leader + 2 hold the leader-change record
    committed = [r.committed for r in drain(core) if r.committed]
    assert committed[0].base_offset == 0 and committed[0].entries[0].control


def test_the_leader_counts_its_own_log_only_once_flushed() -> None:
    core = leader_with_followers()
    core.step(fetch(2, 1, epoch=1, offset=1, last_epoch=1), 0)
    drain(core)
    core.append([b"a", b"b"])
    drain(core, flush=False)  # written, not yet flushed
    core.step(fetch(2, 1, epoch=1, offset=3, last_epoch=1, cid=2), 0)
    # Follower 2 flushed up to 3; the leader only up to 1: two of three
    # voters hold offset 1 durably, not 3.
    assert core.state.high_watermark == 1
    core.advance(3)
    assert core.state.high_watermark == 3


def test_long_poll_answers_when_data_arrives_or_the_wait_expires() -> None:
    core = leader_with_followers()
    core.step(fetch(2, 1, epoch=1, offset=1, last_epoch=1, max_wait_ms=500, cid=3), 100)
    parked = of_type(sent(core), FetchResponse)
    assert parked == [] or parked[0].correlation_id != 3
    core.tick(599)
    assert not [m for m in sent(core) if isinstance(m, FetchResponse) and m.correlation_id == 3]
    core.tick(600)
    (resp,) = [m for m in sent(core) if isinstance(m, FetchResponse) and m.correlation_id == 3]
    assert resp.records == ()
    core.step(fetch(2, 1, epoch=1, offset=1, last_epoch=1, max_wait_ms=500, cid=4), 700)
    sent(core)
    core.append([b"x"])
    (resp,) = [m for m in sent(core) if isinstance(m, FetchResponse) and m.correlation_id == 4]
    assert [e.data for e in resp.records] == [b"x"]


def test_a_diverged_follower_is_told_where_the_epochs_part() -> None:
    core = make_core(durable=DurableState(QuorumStateData(2, None, None), None, 0, [Entry(1, b"a"), Entry(2, b"b")]))
    elect(core)  # epoch 3, log: 0:1 1:2 2:3(leader-change)
    core.step(fetch(2, 1, epoch=3, offset=4, last_epoch=1), 0)
    (resp,) = of_type(sent(core), FetchResponse)
    assert resp.diverging_epoch == EpochEndOffset(1, 1)


def test_follower_truncates_on_divergence_but_never_below_what_is_committed() -> None:
    core = make_core(node_id=2, durable=DurableState(QuorumStateData(1, 1, None), None, 0, [Entry(1, b"a"), Entry(1, b"b"), Entry(1, b"c")]))
    requests = follow(core, leader=3, epoch=2)
    req = of_type(requests, FetchRequest)[-1]
    assert req.dst == 3
    assert (req.fetch_offset, req.last_fetched_epoch) == (3, 1)
    resp = FetchResponse(3, 2, req.correlation_id, Errors.NONE, 2, 3, high_watermark=1, base_offset=3,
                         diverging_epoch=EpochEndOffset(1, 1))
    core.step(resp, 10)
    bundles = drain(core)
    assert bundles[0].truncate_to == 1 and core.log.end_offset == 1
    (req,) = of_type([m for r in bundles for m in r.messages], FetchRequest)
    assert (req.fetch_offset, req.last_fetched_epoch) == (1, 1)


def test_check_quorum_resigns_a_leader_that_hears_from_no_majority() -> None:
    core = leader_with_followers()
    core.tick(1999)
    assert core.is_leader()
    core.tick(2000)
    assert isinstance(core.state, Resigned)
    ends = of_type(sent(core), EndQuorumEpochRequest)
    assert sorted(m.dst for m in ends) == [2, 3]


def test_fetches_from_a_majority_keep_the_leader() -> None:
    core = leader_with_followers()
    for t in range(500, 6000, 500):
        core.step(fetch(2, 1, epoch=1, offset=1, last_epoch=1, cid=t), t)
        core.tick(t)
    assert core.is_leader()


def test_resign_names_successors_by_log_end_offset() -> None:
    core = leader_with_followers()
    core.append([b"a"])
    drain(core)
    core.step(fetch(2, 1, epoch=1, offset=1, last_epoch=1), 0)
    core.step(fetch(3, 1, epoch=1, offset=2, last_epoch=1), 0)
    drain(core)
    core.resign()
    (end, _) = of_type(sent(core), EndQuorumEpochRequest)
    assert end.preferred_successors == (3, 2)


def test_append_and_describe_need_the_leader() -> None:
    core = make_core()
    with pytest.raises(NotLeaderError):
        core.append([b"x"])
    with pytest.raises(NotLeaderError):
        core.describe_quorum()
    elect(core)
    with pytest.raises(ValueError):
        core.append([])
    assert core.append([b"a", b"b"]) == 2


def test_observers_fetch_but_do_not_count_toward_the_high_watermark() -> None:
    core = leader_with_followers()
    core.step(fetch(7, 1, epoch=1, offset=1, last_epoch=1), 0)
    assert core.state.high_watermark is None
    info = core.describe_quorum()
    assert [o.replica_id for o in info.observers] == [7]
    assert info.high_watermark == -1


def test_leader_with_appends_lingers_before_writing() -> None:
    from metadata_quorum.raft import QuorumConfig

    core = make_core(config=QuorumConfig(append_linger_ms=25))
    elect(core)
    core.append([b"a"])
    assert core.log.end_offset == 1  # still in the accumulator
    assert core.next_deadline() == 25
    core.tick(25)
    assert core.log.end_offset == 2


# --- Follower --------------------------------------------------------------------


def test_follower_fetches_again_only_after_flushing() -> None:
    core = make_core(node_id=2)
    (req,) = of_type(follow(core, leader=1, epoch=1), FetchRequest)
    core.step(records_response(req, [Entry(1, b"lc", True), Entry(1, b"a")], hw=None, epoch=1), 5)
    bundles = drain(core, flush=False)
    assert bundles[0].entries and not of_type(bundles[0].messages, FetchRequest)
    core.advance(2)
    (req,) = of_type(sent(core), FetchRequest)
    assert req.fetch_offset == 2


def test_follower_applies_only_up_to_the_high_watermark_it_is_told() -> None:
    core = make_core(node_id=2)
    (req,) = of_type(follow(core, leader=1, epoch=1), FetchRequest)
    core.step(records_response(req, [Entry(1, b"lc", True), Entry(1, b"a")], hw=1, epoch=1), 5)
    committed = [r.committed for r in drain(core) if r.committed]
    assert committed[0].base_offset == 0 and len(committed[0].entries) == 1


def test_follower_refuses_pre_votes_while_it_hears_from_its_leader() -> None:
    core = make_core(node_id=2)
    follow(core, leader=1, epoch=1)
    core.step(vote_request(3, 2, epoch=2, pre_vote=True), 100)
    (resp,) = of_type(sent(core), VoteResponse)
    assert not resp.vote_granted and resp.leader_id == 1
    core.tick(2000)  # fetch timeout: no word from the leader
    assert isinstance(core.state, Prospective)
    core.step(vote_request(3, 2, epoch=2, pre_vote=True, cid=9), 2001)
    (resp,) = of_type(sent(core), VoteResponse)
    assert resp.vote_granted and core.epoch() == 1


def test_end_quorum_epoch_makes_the_first_successor_campaign_at_once() -> None:
    core = make_core(node_id=2)
    follow(core, leader=1, epoch=1)
    core.step(EndQuorumEpochRequest(1, 2, 4, CLUSTER, 1, 1, (2, 3)), 50)
    sent(core)
    assert core.next_deadline() == 50
    core.tick(50)
    assert isinstance(core.state, Prospective)


def test_follower_downloads_and_installs_a_snapshot_in_chunks() -> None:
    core = make_core(node_id=2)
    (req,) = of_type(follow(core, leader=1, epoch=3), FetchRequest)
    sid = SnapshotId(10, 2)
    core.step(FetchResponse(1, 2, req.correlation_id, Errors.NONE, 3, 1, 10, 10, 0, snapshot_id=sid), 1)
    data = b"0123456789abcdef!"
    for _ in range(3):
        (snap_req,) = of_type(sent(core), FetchSnapshotRequest)
        pos = snap_req.position
        chunk = data[pos : pos + 8]
        core.step(FetchSnapshotResponse(1, 2, snap_req.correlation_id, Errors.NONE, 3, 1, sid, len(data), pos, chunk), 2)
    bundles = drain(core)
    install = [r.snapshot_to_install for r in bundles if r.snapshot_to_install]
    assert install == [Snapshot(sid, data)]
    assert (core.log.start_offset, core.log.last_epoch, core.high_watermark) == (10, 2, 10)
    (req,) = of_type([m for r in bundles for m in r.messages], FetchRequest)
    assert (req.fetch_offset, req.last_fetched_epoch) == (10, 2)


def test_leader_below_its_log_start_points_to_the_snapshot() -> None:
    core = leader_with_followers()
    core.append([b"a", b"b"])
    drain(core)
    core.step(fetch(2, 1, epoch=1, offset=3, last_epoch=1), 0)
    drain(core)
    sid = core.create_snapshot(3, b"state")
    (ready,) = drain(core)
    assert ready.snapshot_to_save == Snapshot(sid, b"state") and ready.log_start_offset == 3
    core.step(fetch(3, 1, epoch=1, offset=1, last_epoch=1, cid=8), 0)
    (resp,) = of_type(sent(core), FetchResponse)
    assert resp.snapshot_id == SnapshotId(3, 1)


def test_create_snapshot_needs_applied_entries() -> None:
    core = leader_with_followers()
    with pytest.raises(ValueError):
        core.create_snapshot(1, b"")  # nothing committed yet


# --- Resigned and restarts --------------------------------------------------------


def test_a_restarted_leader_comes_back_resigned_and_never_votes_in_its_epoch() -> None:
    durable = DurableState(QuorumStateData(4, 1, 1), None, 0, [Entry(4, b"lc", True)])
    core = make_core(durable=durable)
    assert isinstance(core.state, Resigned)
    assert all(r.quorum_state is None for r in drain(core))
    core.step(vote_request(2, 1, epoch=4, last=(4, 1)), 0)
    (resp,) = of_type(sent(core), VoteResponse)
    assert not resp.vote_granted
    core.tick(int(core.next_deadline()))
    assert isinstance(core.state, Prospective)


def test_a_restarted_voter_keeps_its_vote() -> None:
    core = make_core(node_id=3, durable=DurableState(QuorumStateData(5, None, 1), None, 0, []))
    assert isinstance(core.state, Unattached) and core.quorum_state().voted_for == 1
    core.step(vote_request(2, 3, epoch=5), 0)
    (resp,) = of_type(sent(core), VoteResponse)
    assert not resp.vote_granted


def test_restart_from_a_snapshot_and_the_log_after_it() -> None:
    snap = Snapshot(SnapshotId(5, 2), b"s")
    core = make_core(node_id=3, durable=DurableState(QuorumStateData(2, 1, None), snap, 5, [Entry(2, b"f")]))
    assert (core.log.start_offset, core.log.end_offset, core.high_watermark) == (5, 6, 5)
    assert isinstance(core.state, Follower)


def test_begin_quorum_epoch_from_a_new_leader_is_followed() -> None:
    core = make_core(node_id=2)
    drain(core)
    core.step(BeginQuorumEpochRequest(3, 2, 1, CLUSTER, 4, 3), 0)
    bundles = drain(core)
    assert bundles[0].quorum_state == QuorumStateData(4, 3, None)
    assert isinstance(core.state, Follower) and core.leader() == 3


# --- Regressions for what the simulator found -------------------------------------


def test_the_leader_refuses_pre_votes() -> None:
    core = leader_with_followers()
    core.step(vote_request(3, 1, epoch=2, last=(1, 9), pre_vote=True), 10)
    (resp,) = of_type(sent(core), VoteResponse)
    assert not resp.vote_granted and resp.leader_id == 1


def test_a_granted_pre_vote_that_names_a_leader_does_not_end_the_campaign() -> None:
    # The voter still calls node 3 its leader but has not heard from it: it
    # grants, and the campaign goes on (it used to make us follow 3 again,
    # and voters bounced each other back to a dead leader for ever).
    core = make_core(node_id=2)
    follow(core, leader=3, epoch=1)
    core.campaign()
    requests = of_type(sent(core), VoteRequest)
    core.step(vote_response(requests[0], granted=True, epoch=1, leader=3), 5)
    assert isinstance(core.state, Candidate)


def test_a_follower_that_only_heard_of_its_leader_does_not_refuse_pre_votes() -> None:
    core = make_core(node_id=2, durable=DurableState(QuorumStateData(1, None, None), None, 0, []))
    drain(core)
    core.campaign()
    requests = of_type(sent(core), VoteRequest)
    # Voter 1 refuses, naming leader 3: we follow 3 but have not fetched from it.
    core.step(vote_response(requests[0], granted=False, epoch=1, leader=3), 5)
    assert isinstance(core.state, Follower) and core.leader() == 3
    sent(core)
    core.step(vote_request(1, 2, epoch=2, pre_vote=True), 6)
    (resp,) = of_type(sent(core), VoteResponse)
    assert resp.vote_granted


def test_a_longer_divergent_log_is_replaced_by_the_leaders_snapshot() -> None:
    old = [Entry(1, b"a")] * 6
    core = make_core(node_id=2, durable=DurableState(QuorumStateData(1, 1, None), None, 0, old))
    req = of_type(follow(core, leader=3, epoch=3), FetchRequest)[-1]
    assert (req.fetch_offset, req.last_fetched_epoch) == (6, 1)
    sid = SnapshotId(4, 3)  # shorter than our log, but from an epoch we never saw
    core.step(FetchResponse(3, 2, req.correlation_id, Errors.NONE, 3, 3, 4, 4, 6, snapshot_id=sid), 1)
    (snap_req,) = of_type(sent(core), FetchSnapshotRequest)
    core.step(FetchSnapshotResponse(3, 2, snap_req.correlation_id, Errors.NONE, 3, 3, sid, 2, 0, b"ok"), 2)
    bundles = drain(core)
    assert [r.snapshot_to_install.snapshot_id for r in bundles if r.snapshot_to_install] == [sid]
    assert (core.log.start_offset, core.log.end_offset, core.log.last_epoch) == (4, 4, 3)
