"""AlterPartition guards and ElectLeaders (preferred and unclean, on request)."""

from __future__ import annotations

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import NO_LEADER, Error

from .test_controller_harness import Harness, kinds


def three_brokers_one_partition() -> tuple[Harness, int, list[int]]:
    h = Harness()
    h.brokers(3)
    h.create("t", rf=3)
    state = h.state("t")
    return h, state.leader, [b for b in state.replicas if b != state.leader]


def error(response: cpb.AlterPartitionResponse) -> int:
    return response.error_code or response.topics[0].partitions[0].error_code


# --- AlterPartition -------------------------------------------------------------------------------

def test_the_leader_shrinks_and_expands_the_isr() -> None:
    h, leader, (f1, f2) = three_brokers_one_partition()
    shrunk = h.alter("t", 0, [leader, f1])
    assert error(shrunk) == Error.NONE
    assert kinds(h.last) == ["partition_change"]
    answer = shrunk.topics[0].partitions[0]
    state = h.state("t")
    assert state.isr == (leader, f1) and state.leader_epoch == 0
    assert (answer.leader_id, answer.leader_epoch, list(answer.isr), answer.partition_epoch) == (
        leader, 0, [leader, f1], state.partition_epoch) == (leader, 0, [leader, f1], 1)
    expanded = h.alter("t", 0, [leader, f1, f2])
    assert error(expanded) == Error.NONE and h.state("t").isr == (leader, f1, f2)
    assert h.state("t").partition_epoch == 2


def test_an_unchanged_isr_writes_nothing() -> None:
    h, leader, followers = three_brokers_one_partition()
    response = h.alter("t", 0, list(h.state("t").isr))
    assert error(response) == Error.NONE and not h.last.records  # type: ignore[union-attr]
    assert response.topics[0].partitions[0].partition_epoch == 0


def test_only_the_current_leader_with_its_current_epochs_may_change_the_isr() -> None:
    h, leader, (f1, f2) = three_brokers_one_partition()
    cases = [
        (dict(broker_id=f1), Error.NOT_LEADER_OR_FOLLOWER),
        (dict(leader_epoch=-1), Error.FENCED_LEADER_EPOCH),
        (dict(leader_epoch=1), Error.FENCED_LEADER_EPOCH),
        (dict(partition_epoch=7), Error.INVALID_UPDATE_VERSION),
        (dict(broker_epoch=12345), Error.STALE_BROKER_EPOCH),
    ]
    for overrides, expected in cases:
        broker_id = overrides.pop("broker_id", leader)
        isr = [broker_id] + [b for b in (leader, f1) if b != broker_id]
        response = h.alter("t", 0, isr, broker_id=broker_id, **overrides)
        assert error(response) == expected, overrides
        assert not h.last.records  # type: ignore[union-attr]
    assert h.state("t").isr == (leader, f1, f2)


def test_an_isr_change_built_on_an_old_partition_epoch_is_refused() -> None:
    h, leader, (f1, f2) = three_brokers_one_partition()
    old = h.state("t")
    h.alter("t", 0, [leader, f1])  # partition epoch 0 -> 1
    request = cpb.AlterPartitionRequest(broker_id=leader, broker_epoch=h.epochs[leader], topics=[
        cpb.AlterPartitionRequest.TopicData(topic_id=h.topic_id("t"), partitions=[
            cpb.AlterPartitionRequest.PartitionData(partition_index=0, leader_epoch=old.leader_epoch,
                                                    new_isr=[leader, f2], partition_epoch=old.partition_epoch)])])
    assert error(h.apply(h.controller.handle_alter_partition(request))) == Error.INVALID_UPDATE_VERSION


def test_an_unknown_broker_cannot_alter_partitions() -> None:
    h, leader, followers = three_brokers_one_partition()
    assert error(h.alter("t", 0, [9], broker_id=9, broker_epoch=0)) == Error.BROKER_ID_NOT_REGISTERED


def test_malformed_isrs_are_invalid_requests() -> None:
    h, leader, (f1, f2) = three_brokers_one_partition()
    for isr in ([], [f1, f2], [leader, 7], [leader, leader]):
        assert error(h.alter("t", 0, isr)) == Error.INVALID_REQUEST, isr
    assert error(h.alter("t", 0, [leader], leader_recovery_state=5)) == Error.INVALID_REQUEST
    assert error(h.alter("t", 0, [leader], leader_recovery_state=mpb.RECOVERING)) == Error.INVALID_REQUEST


def test_only_live_brokers_may_join_the_isr() -> None:
    h, leader, (f1, f2) = three_brokers_one_partition()
    h.alter("t", 0, [leader, f1])
    h.heartbeat(f2, want_fence=True)
    assert error(h.alter("t", 0, [leader, f1, f2])) == Error.INELIGIBLE_REPLICA
    h.heartbeat(f2)  # unfenced again
    h.heartbeat(f1, want_shut_down=True)  # leaves the ISR, shutting down
    assert f1 not in h.state("t").isr
    assert error(h.alter("t", 0, [leader, f1])) == Error.INELIGIBLE_REPLICA
    assert error(h.alter("t", 0, [leader, f2])) == Error.NONE


def test_a_new_member_fetching_with_an_old_broker_epoch_is_ineligible() -> None:
    """KIP-903: the leader's proposal carries the broker epoch each new member
    fetched with; an incarnation older than the registration may not join."""
    h, leader, (f1, f2) = three_brokers_one_partition()
    h.alter("t", 0, [leader, f1])
    old_epoch = h.epochs[f2]
    h.heartbeat(f2, want_fence=True)  # it stops ...
    assert h.register(f2, incarnation="restarted").error_code == Error.NONE  # ... and comes back: a new epoch
    assert h.epochs[f2] > old_epoch
    assert h.state("t").isr == (leader, f1)
    refused = h.alter("t", 0, [leader, f1, f2], isr_epochs={f2: old_epoch})
    assert error(refused) == Error.INELIGIBLE_REPLICA and not h.last.records  # type: ignore[union-attr]
    # Existing members are not re-checked; -1 (unknown) is not checked; the current epoch joins.
    assert error(h.alter("t", 0, [leader, f1, f2], isr_epochs={f1: 1, f2: -1})) == Error.NONE
    h.alter("t", 0, [leader, f1])
    assert error(h.alter("t", 0, [leader, f1, f2], isr_epochs={f2: h.epochs[f2]})) == Error.NONE
    assert h.state("t").isr == (leader, f1, f2)


def test_epochs_that_do_not_list_the_new_isr_are_an_invalid_request() -> None:
    h, leader, (f1, f2) = three_brokers_one_partition()
    h.alter("t", 0, [leader, f1])
    state = h.state("t")
    data = cpb.AlterPartitionRequest.PartitionData(
        partition_index=0, leader_epoch=state.leader_epoch, new_isr=[leader, f1, f2],
        partition_epoch=state.partition_epoch,
        new_isr_with_epochs=[cpb.AlterPartitionRequest.BrokerState(broker_id=leader, broker_epoch=-1),
                             cpb.AlterPartitionRequest.BrokerState(broker_id=f2, broker_epoch=h.epochs[f2])])
    request = cpb.AlterPartitionRequest(broker_id=leader, broker_epoch=h.epochs[leader], topics=[
        cpb.AlterPartitionRequest.TopicData(topic_id=h.topic_id("t"), partitions=[data])])
    assert error(h.apply(h.controller.handle_alter_partition(request))) == Error.INVALID_REQUEST


def test_unknown_topics_and_partitions() -> None:
    h, leader, followers = three_brokers_one_partition()
    assert error(h.alter("t", 0, [leader], partition_index=5)) == Error.UNKNOWN_TOPIC_OR_PARTITION
    request = cpb.AlterPartitionRequest(broker_id=leader, broker_epoch=h.epochs[leader], topics=[
        cpb.AlterPartitionRequest.TopicData(topic_id=b"\x01" * 16, partitions=[
            cpb.AlterPartitionRequest.PartitionData(partition_index=0, new_isr=[leader])])])
    assert error(h.apply(h.controller.handle_alter_partition(request))) == Error.UNKNOWN_TOPIC_OR_PARTITION


def test_a_partition_listed_twice_is_refused_both_times() -> None:
    h, leader, (f1, f2) = three_brokers_one_partition()
    state = h.state("t")
    data = cpb.AlterPartitionRequest.PartitionData(partition_index=0, leader_epoch=state.leader_epoch,
                                                   new_isr=[leader], partition_epoch=state.partition_epoch)
    request = cpb.AlterPartitionRequest(broker_id=leader, broker_epoch=h.epochs[leader], topics=[
        cpb.AlterPartitionRequest.TopicData(topic_id=h.topic_id("t"), partitions=[data, data])])
    response = h.apply(h.controller.handle_alter_partition(request))
    assert [p.error_code for p in response.topics[0].partitions] == [Error.INVALID_REQUEST] * 2


def test_an_uncleanly_elected_leader_reports_recovery_before_the_isr_grows() -> None:
    h = Harness()
    h.cluster_config("unclean.leader.election.enable", "true")
    h.brokers(2)
    h.create("t", rf=2)
    a, b = h.state("t").replicas
    h.alter("t", 0, [a])
    h.heartbeat(a, want_fence=True)
    assert h.state("t").leader == b and h.state("t").leader_recovery_state == mpb.RECOVERING
    h.heartbeat(a)  # a is back
    assert error(h.alter("t", 0, [b, a], leader_recovery_state=mpb.RECOVERING)) == Error.INVALID_REQUEST
    assert error(h.alter("t", 0, [b], leader_recovery_state=mpb.RECOVERED)) == Error.NONE
    assert h.state("t").leader_recovery_state == mpb.RECOVERED
    assert error(h.alter("t", 0, [b, a])) == Error.NONE


# --- ElectLeaders -------------------------------------------------------------------------------

def _leader_moved_away() -> tuple[Harness, int]:
    h, leader, followers = three_brokers_one_partition()
    h.heartbeat(leader, want_fence=True)
    h.heartbeat(leader)
    h.alter("t", 0, list(h.state("t").isr) + [leader])
    return h, leader


def test_preferred_election_moves_leadership_back() -> None:
    h, preferred = _leader_moved_away()
    response = h.elect(cpb.PREFERRED, {"t": [0]})
    assert response.results[0].topic == "t" and response.results[0].partitions[0].error_code == Error.NONE
    assert h.state("t").leader == preferred
    assert h.last.records[0].partition_change.election == mpb.ELECTION_PREFERRED  # type: ignore[union-attr]
    again = h.elect(cpb.PREFERRED, {"t": [0]})
    assert again.results[0].partitions[0].error_code == Error.ELECTION_NOT_NEEDED


def test_preferred_election_needs_the_preferred_replica_live_and_in_sync() -> None:
    h, leader, followers = three_brokers_one_partition()
    h.heartbeat(leader, want_fence=True)
    response = h.elect(cpb.PREFERRED, {"t": [0]})
    assert response.results[0].partitions[0].error_code == Error.PREFERRED_LEADER_NOT_AVAILABLE
    h.heartbeat(leader)  # live again, but not yet back in the ISR
    response = h.elect(cpb.PREFERRED, {"t": [0]})
    assert response.results[0].partitions[0].error_code == Error.PREFERRED_LEADER_NOT_AVAILABLE
    assert "ISR" in response.results[0].partitions[0].error_message


def test_electing_every_partition_reports_only_what_happened() -> None:
    h, preferred = _leader_moved_away()
    h.create("calm", partitions=2, rf=1)
    response = h.elect(cpb.PREFERRED)
    assert [(r.topic, [p.partition_id for p in r.partitions]) for r in response.results] == [("t", [0])]
    assert not h.elect(cpb.PREFERRED).results


def test_unknown_partitions_in_an_election() -> None:
    h, leader, followers = three_brokers_one_partition()
    response = h.elect(cpb.PREFERRED, {"t": [3], "nope": [0]})
    assert [(r.topic, r.partitions[0].error_code) for r in response.results] == [
        ("t", Error.UNKNOWN_TOPIC_OR_PARTITION), ("nope", Error.UNKNOWN_TOPIC_OR_PARTITION)]


def test_an_unknown_election_type_is_an_invalid_request() -> None:
    h, leader, followers = three_brokers_one_partition()
    assert h.elect(7, {"t": [0]}).error_code == Error.INVALID_REQUEST


def _offline_with_a_live_out_of_sync_replica() -> tuple[Harness, int, int]:
    h = Harness()
    h.brokers(2)
    h.create("t", rf=2)
    a, b = h.state("t").replicas
    h.alter("t", 0, [a])
    h.heartbeat(a, want_fence=True)
    assert h.state("t").leader == NO_LEADER
    return h, a, b


def test_unclean_election_on_request_even_when_the_config_disables_it() -> None:
    h, a, b = _offline_with_a_live_out_of_sync_replica()
    response = h.elect(cpb.UNCLEAN, {"t": [0]})
    assert response.results[0].partitions[0].error_code == Error.NONE
    state = h.state("t")
    assert (state.leader, state.isr, state.leader_recovery_state) == (b, (b,), mpb.RECOVERING)
    assert h.last.records[0].partition_change.election == mpb.ELECTION_UNCLEAN  # type: ignore[union-attr]


def test_unclean_election_on_request_needs_a_leaderless_partition_and_a_live_replica() -> None:
    h, leader, followers = three_brokers_one_partition()
    assert h.elect(cpb.UNCLEAN, {"t": [0]}).results[0].partitions[0].error_code == Error.ELECTION_NOT_NEEDED
    h, a, b = _offline_with_a_live_out_of_sync_replica()
    h.heartbeat(b, want_fence=True)
    response = h.elect(cpb.UNCLEAN, {"t": [0]})
    assert response.results[0].partitions[0].error_code == Error.ELIGIBLE_LEADERS_NOT_AVAILABLE
    assert not h.last.records  # type: ignore[union-attr]
