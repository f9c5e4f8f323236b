"""KIP-853 in the pure core: voter keys, the voter set in the log, AddVoter/RemoveVoter/UpdateVoter.

Clusters run in the deterministic simulator with a clean network (no faults:
those are the random schedules' job), so each test states one rule.
"""

from __future__ import annotations

import random
from typing import Callable

import pytest

from metadata_quorum.raft import (
    BeginQuorumEpochRequest,
    DurableState,
    Entry,
    EpochEndOffset,
    Errors,
    QuorumConfig,
    RaftCore,
    VoteRequest,
)
from metadata_quorum.raft.leader import Leader
from metadata_quorum.raft.messages import (
    AddVoterRequest,
    RemoveVoterRequest,
    UpdateVoterRequest,
    VoterChangeResponse,
)
from metadata_quorum.raft.states import Follower, ObserverFollower
from metadata_quorum.raft.voters import (
    Endpoint,
    ReplicaKey,
    Voter,
    VoterSet,
    split_snapshot_payload,
    snapshot_payload,
    uuid_bytes,
    uuid_text,
    voters_entry_data,
    voters_of_entry,
)
from metadata_quorum.sim.cluster import SimCluster, SimNode

from .helpers import CLUSTER, drain, follow, of_type, sent

CONFIG = QuorumConfig(append_linger_ms=0)
DIR_A = "AAAAAAAAAAAAAAAAAAAAAQ"
DIR_B = "AAAAAAAAAAAAAAAAAAAAAg"


# --- the cluster under test ------------------------------------------------------------


def dynamic_cluster(voters: int = 3, observers: int = 0) -> SimCluster:
    c = SimCluster(11, voters, observers, CONFIG, dynamic=True)
    for nid in sorted(c.nodes):
        c.start(nid)
    assert wait(c, lambda: leader(c) is not None and leader(c).core.state.high_watermark is not None)  # type: ignore[union-attr]
    return c


def wait(c: SimCluster, condition: Callable[[], bool], ms: int = 20_000) -> bool:
    return c.run_until(c.now + ms, stop=condition) or condition()


def leader(c: SimCluster) -> SimNode | None:
    leaders = c.leaders()
    return leaders[0] if leaders else None


def ask(c: SimCluster, nid: int, build: Callable[..., object], **fields: object) -> VoterChangeResponse:
    """Send a voter change to node `nid` as a client and wait for its answer."""
    cid = len(c.client_responses) + 1000 + int(c.now)
    c.client_request(nid, build(src=-1, dst=nid, correlation_id=cid, cluster_id=c.cluster_id, **fields))  # type: ignore[arg-type]
    assert wait(c, lambda: any(r.correlation_id == cid for r in c.client_responses), 10_000)
    return next(r for r in c.client_responses if r.correlation_id == cid)


def joined(c: SimCluster) -> SimNode:
    """A new node, started, that has caught up as an observer."""
    nid = c.add_node()
    c.start(nid)
    node = c.nodes[nid]
    lead = leader(c)
    assert lead is not None
    assert wait(c, lambda: node.sm.applied_end >= lead.core.high_watermark)  # type: ignore[union-attr]
    c.run_until(c.now + 200)  # a fetch or two more, so the leader sees it caught up
    return node


def everyone_agrees(c: SimCluster) -> VoterSet:
    sets = {n.core.voter_set for n in c.nodes.values() if n.core is not None}
    assert len(sets) == 1, sets
    return sets.pop()


# --- the values ---------------------------------------------------------------------------


def test_a_voters_record_round_trips_in_kafkas_layout() -> None:
    voters = VoterSet([
        Voter(ReplicaKey(1, DIR_A), (Endpoint("CONTROLLER", "10.0.0.1", 9093),)),
        Voter(ReplicaKey(2, DIR_B), (Endpoint("CONTROLLER", "h2", 65535),)),
    ])
    value = voters.encode()
    # Version 0, then a compact array of two (length + 1 = 3).
    assert value[:3] == b"\x00\x00\x03"
    assert VoterSet.decode(value) == voters
    assert voters_of_entry(voters_entry_data(voters)) == voters
    assert voters_of_entry(b"LeaderChange(leader=1)") is None
    with pytest.raises(ValueError):
        VoterSet.decode(value[:-3])
    with pytest.raises(ValueError):
        VoterSet.decode(value + b"\x00")
    data, got = split_snapshot_payload(snapshot_payload(b"state", voters))
    assert (data, got) == (b"state", voters)
    assert split_snapshot_payload(b"state") == (b"state", None)


def test_directory_ids_are_kafkas_base64url_uuids() -> None:
    raw = bytes(range(16))
    text = uuid_text(raw)
    assert text is not None and len(text) == 22 and uuid_bytes(text) == raw
    assert uuid_text(bytes(16)) is None  # the zero UUID: unknown
    for bogus in ("", "x", "A" * 21, "!" * 22, "A" * 23, "AAAAAAAAAAAAAAAAAAAAA/"):
        with pytest.raises(ValueError):
            uuid_bytes(bogus)
    with pytest.raises(ValueError):
        RaftCore(1, VoterSet(), CLUSTER, random.Random(1), CONFIG, directory_id="AAAAAAAAAAAAAAAAAAAAAA")


def test_a_key_without_directory_matches_any_directory_of_its_id() -> None:
    assert ReplicaKey(1).matches(ReplicaKey(1, DIR_A))
    assert not ReplicaKey(1, DIR_A).matches(ReplicaKey(1, DIR_B))
    assert not ReplicaKey(1).matches(ReplicaKey(2))
    with pytest.raises(ValueError):
        VoterSet([Voter(ReplicaKey(1)), Voter(ReplicaKey(1, DIR_A))])


# --- the voter set in the log -----------------------------------------------------------------


def test_the_first_leader_writes_the_bootstrap_voters_into_the_log() -> None:
    c = dynamic_cluster()
    lead = leader(c)
    assert lead is not None and lead.core is not None
    first = lead.core.log.entry(lead.core.log.start_offset)
    assert voters_of_entry(first.data) == c.bootstrap_voters
    assert wait(c, lambda: all(n.sm.applied_end >= 2 for n in c.nodes.values()))
    assert everyone_agrees(c) == c.bootstrap_voters


def test_truncation_reverts_the_voter_set() -> None:
    voters = VoterSet([Voter(ReplicaKey(i, uuid_text(bytes([i]) * 16))) for i in (1, 2, 3)])
    core = RaftCore(3, voters, CLUSTER, random.Random(1), CONFIG, directory_id=voters.key_of(3).directory_id)  # type: ignore[union-attr]
    bigger = voters.added(Voter(ReplicaKey(4, DIR_A)))
    follow(core, 1, 1)
    core.append_as_follower([Entry(1, voters_entry_data(voters), True), Entry(1, b"x"), Entry(1, voters_entry_data(bigger), True)], None)
    assert core.voter_set == bigger and core.majority == 3  # in force before it commits
    assert core.truncate_diverged(EpochEndOffset(1, 2))
    assert core.voter_set == voters and core.majority == 2


def test_a_restarted_core_reads_its_voters_from_the_log_and_snapshot() -> None:
    voters = VoterSet([Voter(ReplicaKey(i, uuid_text(bytes([i]) * 16))) for i in (1, 2)])
    later = voters.removed(2)
    durable = DurableState(entries=[Entry(1, voters_entry_data(voters), True), Entry(1, voters_entry_data(later), True)])
    core = RaftCore(2, VoterSet(), CLUSTER, random.Random(1), CONFIG, durable=durable,
                    directory_id=voters.key_of(2).directory_id)  # type: ignore[union-attr]
    assert core.voter_set == later
    # Removed, but the removal is not known to be committed: it still acts as a voter.
    assert not core.in_voters and core.is_voter


# --- adding and removing -----------------------------------------------------------------------


def test_add_a_caught_up_observer_then_remove_a_voter() -> None:
    c = dynamic_cluster()
    lead = leader(c)
    assert lead is not None
    new = joined(c)
    assert isinstance(new.core.state, ObserverFollower)  # type: ignore[union-attr]
    answer = ask(c, lead.node_id, AddVoterRequest, voter=Voter(new.key, (Endpoint("CONTROLLER", "h", 1),)))
    assert answer.error is Errors.NONE, answer
    assert wait(c, lambda: all(n.core.voter_set.has_key(new.key) for n in c.nodes.values()))  # type: ignore[union-attr]
    assert isinstance(new.core.state, Follower) and new.core.is_voter  # type: ignore[union-attr]
    assert len(everyone_agrees(c)) == 4 and lead.core.majority == 3  # type: ignore[union-attr]
    victim = next(n for n in c.nodes.values() if n is not lead and n is not new)
    answer = ask(c, lead.node_id, RemoveVoterRequest, voter=victim.key)
    assert answer.error is Errors.NONE, answer
    assert wait(c, lambda: isinstance(victim.core.state, ObserverFollower))  # type: ignore[union-attr]
    info = lead.core.describe_quorum()  # type: ignore[union-attr]
    assert [r.replica_id for r in info.voters] == sorted(n.node_id for n in c.nodes.values() if n is not victim)
    assert [(r.replica_id, r.directory_id) for r in info.observers] == [(victim.node_id, victim.directory_id)]
    assert all(r.directory_id is not None for r in info.voters)


def test_a_removed_leader_resigns_once_the_removal_commits() -> None:
    c = dynamic_cluster()
    lead = leader(c)
    assert lead is not None
    answer = ask(c, lead.node_id, RemoveVoterRequest, voter=lead.key)
    assert answer.error is Errors.NONE, answer
    assert wait(c, lambda: (leader(c) is not None and leader(c) is not lead
                            and leader(c).core.state.high_watermark is not None))  # type: ignore[union-attr]
    assert isinstance(lead.core.state, (ObserverFollower,)) or not lead.core.is_voter  # type: ignore[union-attr]
    # It still follows the log, as an observer.
    new_leader = leader(c)
    assert new_leader is not None
    new_leader.core.append([b"after"])  # type: ignore[union-attr]
    c.process(new_leader)
    assert wait(c, lambda: lead.sm.applied_end == new_leader.core.log.end_offset)  # type: ignore[union-attr]


def test_update_voter_changes_a_voters_endpoints() -> None:
    c = dynamic_cluster()
    lead = leader(c)
    assert lead is not None
    other = next(n for n in c.nodes.values() if n is not lead)
    endpoint = Endpoint("CONTROLLER", "moved.example", 19093)
    answer = ask(c, lead.node_id, UpdateVoterRequest, voter=Voter(other.key, (endpoint,)))
    assert answer.error is Errors.NONE, answer
    assert wait(c, lambda: other.core.voter_set.endpoint(other.node_id) == endpoint)  # type: ignore[union-attr]


def test_a_joining_node_learns_the_voters_from_a_snapshot() -> None:
    c = dynamic_cluster()
    lead = leader(c)
    assert lead is not None and lead.core is not None
    lead.core.append([b"a", b"b"])
    c.process(lead)
    assert wait(c, lambda: lead.sm.applied_end == lead.core.log.end_offset)  # type: ignore[union-attr]
    assert c.take_snapshot(lead)
    c.process(lead)
    assert lead.core.snapshot is not None and lead.core.snapshot.voters == c.bootstrap_voters
    new = joined(c)
    assert new.core is not None and new.core.snapshot is not None  # installed, not fetched from offset 0
    assert new.core.voter_set == c.bootstrap_voters and not new.core.is_voter


# --- hostile and wrong-state requests ------------------------------------------------------------


def test_hostile_voter_changes_are_refused_with_kafkas_errors() -> None:
    c = dynamic_cluster()
    lead = leader(c)
    assert lead is not None
    follower = next(n for n in c.nodes.values() if n is not lead)
    some_voter = follower.key
    cases = [
        # Adding a replica whose id already votes.
        (lead.node_id, AddVoterRequest, dict(voter=Voter(ReplicaKey(follower.node_id, DIR_A))), Errors.DUPLICATE_VOTER),
        # No directory id: the key would match any disk of that id.
        (lead.node_id, AddVoterRequest, dict(voter=Voter(ReplicaKey(9))), Errors.INVALID_REQUEST),
        (lead.node_id, AddVoterRequest, dict(voter=Voter(ReplicaKey(-5, DIR_A))), Errors.INVALID_REQUEST),
        # A replica that never fetched: not caught up.
        (lead.node_id, AddVoterRequest, dict(voter=Voter(ReplicaKey(9, DIR_A))), Errors.REQUEST_TIMED_OUT),
        # Removing a replica that does not vote, or a voter's id with another directory.
        (lead.node_id, RemoveVoterRequest, dict(voter=ReplicaKey(9, DIR_A)), Errors.VOTER_NOT_FOUND),
        (lead.node_id, RemoveVoterRequest, dict(voter=ReplicaKey(follower.node_id, DIR_A)), Errors.VOTER_NOT_FOUND),
        (lead.node_id, UpdateVoterRequest, dict(voter=Voter(ReplicaKey(9, DIR_A))), Errors.VOTER_NOT_FOUND),
        # Sent to a follower.
        (follower.node_id, RemoveVoterRequest, dict(voter=some_voter), Errors.NOT_LEADER_OR_FOLLOWER),
        (follower.node_id, AddVoterRequest, dict(voter=Voter(ReplicaKey(9, DIR_A))), Errors.NOT_LEADER_OR_FOLLOWER),
    ]
    for nid, build, fields, error in cases:
        answer = ask(c, nid, build, **fields)
        assert answer.error is error, (build.__name__, fields, answer)
    cid = 77
    c.client_request(lead.node_id, RemoveVoterRequest(-1, lead.node_id, cid, "another-cluster", some_voter))
    assert c.client_responses[-1].error is Errors.INCONSISTENT_CLUSTER_ID
    assert everyone_agrees(c) == c.bootstrap_voters


def test_a_second_change_while_one_is_in_flight_is_refused() -> None:
    c = dynamic_cluster()
    lead = leader(c)
    assert lead is not None
    others = [n for n in c.nodes.values() if n is not lead]
    c.client_request(lead.node_id, RemoveVoterRequest(-1, lead.node_id, 1, c.cluster_id, others[0].key))
    c.client_request(lead.node_id, RemoveVoterRequest(-1, lead.node_id, 2, c.cluster_id, others[1].key))
    assert [r.error for r in c.client_responses if r.correlation_id == 2] == [Errors.REQUEST_TIMED_OUT]
    assert wait(c, lambda: any(r.correlation_id == 1 for r in c.client_responses))
    assert next(r for r in c.client_responses if r.correlation_id == 1).error is Errors.NONE


def test_the_last_voter_cannot_be_removed() -> None:
    c = dynamic_cluster(voters=1)
    lead = leader(c)
    assert lead is not None
    answer = ask(c, lead.node_id, RemoveVoterRequest, voter=lead.key)
    assert answer.error is Errors.INVALID_REQUEST and "last voter" in answer.error_message


def test_a_static_quorum_refuses_voter_changes() -> None:
    c = SimCluster(3, 3, 0, CONFIG)
    for nid in sorted(c.nodes):
        c.start(nid)
    assert wait(c, lambda: leader(c) is not None and leader(c).core.state.high_watermark is not None)  # type: ignore[union-attr]
    lead = leader(c)
    assert lead is not None
    answer = ask(c, lead.node_id, RemoveVoterRequest, voter=ReplicaKey(2, DIR_A))
    assert answer.error is Errors.UNSUPPORTED_VERSION


def test_requests_for_another_directory_of_this_node_are_refused() -> None:
    voters = VoterSet([Voter(ReplicaKey(i, uuid_text(bytes([i]) * 16))) for i in (1, 2, 3)])
    core = RaftCore(2, voters, CLUSTER, random.Random(1), CONFIG, directory_id=voters.key_of(2).directory_id)  # type: ignore[union-attr]
    drain(core)
    core.step(VoteRequest(1, 2, 1, CLUSTER, 1, 1, 0, 0, voter_directory_id=DIR_A), 0)
    core.step(BeginQuorumEpochRequest(1, 2, 2, CLUSTER, 1, 1, voter_directory_id=DIR_A), 0)
    answers = sent(core)
    assert [m.error for m in answers] == [Errors.INVALID_VOTER_KEY, Errors.INVALID_VOTER_KEY]
    assert core.epoch() == 0  # neither changed anything


def test_a_reformatted_voter_fetches_as_an_observer() -> None:
    voters = VoterSet([Voter(ReplicaKey(i, uuid_text(bytes([i]) * 16))) for i in (1, 2, 3)])
    c = SimCluster(5, 3, 0, CONFIG, dynamic=True)
    c.bootstrap_voters = voters
    for nid, node in c.nodes.items():
        node.directory_id = voters.key_of(nid).directory_id  # type: ignore[union-attr]
    c.checker.voters = voters
    for nid in sorted(c.nodes):
        c.start(nid)
    assert wait(c, lambda: leader(c) is not None and leader(c).core.state.high_watermark is not None)  # type: ignore[union-attr]
    lead = leader(c)
    assert lead is not None and lead.core is not None
    victim = next(n for n in c.nodes.values() if n is not lead)
    c.crash(victim.node_id)
    c.reformat(victim.node_id)  # the same id on a wiped disk: a new replica
    c.start(victim.node_id)
    assert wait(c, lambda: any(r.replica_id == victim.node_id for r in lead.core.describe_quorum().observers))  # type: ignore[union-attr]
    info = lead.core.describe_quorum()
    assert (victim.node_id, victim.directory_id) in [(r.replica_id, r.directory_id) for r in info.observers]
    assert not victim.core.is_voter  # type: ignore[union-attr]
    assert isinstance(lead.core.state, Leader)
    assert of_type([], VoteRequest) == []
