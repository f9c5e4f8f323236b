"""Leader election as pure functions: clean, unclean, offline, preferred; and minimal change records."""

from __future__ import annotations

import pytest

from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import NO_LEADER, ControllerError, Election, Error, elect_leader, preferred_leader
from metadata_quorum.controller import without_brokers
from metadata_quorum.controller.elections import change_record, elections_in
from metadata_quorum.image import PartitionState


def partition(replicas: tuple[int, ...], isr: tuple[int, ...], leader: int,
              recovery: int = mpb.RECOVERED) -> PartitionState:
    return PartitionState(replicas=replicas, isr=isr, leader=leader, leader_epoch=4, partition_epoch=9,
                          leader_recovery_state=recovery)


def live(*ids: int):  # type: ignore[no-untyped-def]
    return set(ids).__contains__


def test_a_live_leader_in_the_isr_keeps_leading() -> None:
    state = partition((1, 2, 3), (1, 2, 3), 2)
    assert elect_leader(state, live(1, 2, 3), False) == Election(2, (1, 2, 3), mpb.RECOVERED, mpb.ELECTION_NONE)


def test_clean_election_picks_the_first_live_isr_member_in_replica_order() -> None:
    state = partition((1, 2, 3), (3, 2), NO_LEADER)
    election = elect_leader(state, live(2, 3), False)
    assert (election.leader, election.kind) == (2, mpb.ELECTION_CLEAN)
    assert election.isr == (3, 2)


def test_without_unclean_election_a_dead_isr_means_offline() -> None:
    state = partition((1, 2, 3), (1,), 1)
    election = without_brokers(state, {1}, live(2, 3), unclean_allowed=False)
    assert election.leader == NO_LEADER
    assert election.isr == (1,)  # the last ISR member stays: it can come back cleanly


def test_unclean_election_picks_a_live_replica_outside_the_isr_and_marks_it_recovering() -> None:
    state = partition((1, 2, 3), (1,), 1)
    election = without_brokers(state, {1}, live(2, 3), unclean_allowed=True)
    assert election == Election(2, (2,), mpb.RECOVERING, mpb.ELECTION_UNCLEAN)


def test_unclean_election_still_prefers_a_live_isr_member() -> None:
    state = partition((1, 2, 3), (1, 3), NO_LEADER)
    election = elect_leader(state, live(2, 3), unclean_allowed=True)
    assert (election.leader, election.kind, election.isr) == (3, mpb.ELECTION_CLEAN, (1, 3))


def test_nobody_live_is_offline_even_with_unclean_allowed() -> None:
    state = partition((1, 2), (1,), 1)
    assert without_brokers(state, {1}, live(), unclean_allowed=True).leader == NO_LEADER


def test_a_leaving_follower_leaves_the_isr_and_the_leader_stays() -> None:
    state = partition((1, 2, 3), (1, 2, 3), 1)
    assert without_brokers(state, {2}, live(1, 3), False) == Election(1, (1, 3), mpb.RECOVERED)


def test_a_leaving_leader_is_replaced_from_the_rest_of_the_isr() -> None:
    state = partition((1, 2, 3), (1, 2, 3), 1)
    assert without_brokers(state, {1}, live(2, 3), False) == Election(2, (2, 3), mpb.RECOVERED, mpb.ELECTION_CLEAN)


def test_several_leaving_at_once_keep_the_whole_isr_when_it_would_empty() -> None:
    state = partition((1, 2, 3), (1, 2), 1)
    assert without_brokers(state, {1, 2}, live(3), False) == Election(NO_LEADER, (1, 2), mpb.RECOVERED)


def test_preferred_leader() -> None:
    assert preferred_leader(partition((1, 2), (1, 2), 2), live(1, 2)) == 1
    cases = [
        (partition((1, 2), (1, 2), 1), live(1, 2), Error.ELECTION_NOT_NEEDED),
        (partition((1, 2), (2,), 2), live(1, 2), Error.PREFERRED_LEADER_NOT_AVAILABLE),
        (partition((1, 2), (1, 2), 2), live(2), Error.PREFERRED_LEADER_NOT_AVAILABLE),
    ]
    for state, is_live, error in cases:
        with pytest.raises(ControllerError) as info:
            preferred_leader(state, is_live)
        assert info.value.error is error


def test_a_change_record_carries_only_what_changed() -> None:
    state = partition((1, 2, 3), (1, 2, 3), 1)
    assert change_record(b"t" * 16, 0, state, Election(1, (1, 2, 3), mpb.RECOVERED)) is None
    isr_only = change_record(b"t" * 16, 0, state, Election(1, (1, 3), mpb.RECOVERED))
    assert isr_only is not None
    change = isr_only.partition_change
    assert list(change.isr.ids) == [1, 3] and not change.HasField("leader")
    assert not change.HasField("leader_recovery_state") and change.election == mpb.ELECTION_NONE
    unclean = change_record(b"t" * 16, 0, state, Election(3, (3,), mpb.RECOVERING, mpb.ELECTION_UNCLEAN))
    assert unclean is not None
    change = unclean.partition_change
    assert (change.leader, change.election, change.leader_recovery_state) == (3, mpb.ELECTION_UNCLEAN, mpb.RECOVERING)


def test_elections_are_counted_by_kind_from_the_change_records() -> None:
    state = partition((1, 2, 3), (1, 2, 3), 1)
    records = [change_record(b"t" * 16, i, state, election) for i, election in enumerate((
        Election(2, (2, 3), mpb.RECOVERED, mpb.ELECTION_CLEAN),
        Election(3, (3,), mpb.RECOVERING, mpb.ELECTION_UNCLEAN),
        Election(2, (1, 2, 3), mpb.RECOVERED, mpb.ELECTION_CLEAN),
        Election(1, (1, 3), mpb.RECOVERED),  # an ISR change only: no election
    ))]
    others = [mpb.MetadataRecord(topic=mpb.TopicRecord(name="t", topic_id=b"t" * 16))]
    counted = elections_in([*others, *records])
    assert counted == {mpb.ELECTION_CLEAN: 2, mpb.ELECTION_UNCLEAN: 1}
    assert not elections_in(others)
