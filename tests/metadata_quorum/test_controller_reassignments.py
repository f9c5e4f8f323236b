"""AlterPartitionReassignments, ListPartitionReassignments (KIP-455) and UnregisterBroker, on the pure controller."""

from __future__ import annotations

from typing import Optional, Sequence

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import Error, reassignments
from metadata_quorum.image import MetadataImage, PartitionState

from .test_controller_harness import Harness, kinds

Reassign = cpb.AlterPartitionReassignmentsRequest


def reassign(h: Harness, targets: dict[tuple[str, int], Optional[Sequence[int]]],
             allow_factor_change: Optional[bool] = None) -> dict[tuple[str, int], int]:
    """(topic, partition) -> target replicas (None: cancel); the error code of each, by (topic, partition)."""
    request = Reassign()
    if allow_factor_change is not None:
        request.allow_replication_factor_change = allow_factor_change
    topics: dict[str, Reassign.ReassignableTopic] = {}
    for (name, partition), target in targets.items():
        topic = topics.get(name) or topics.setdefault(name, request.topics.add(name=name))
        item = topic.partitions.add(partition_index=partition)
        if target is not None:
            item.replicas.SetInParent()
            item.replicas.ids.extend(target)
    response = h.apply(h.controller.handle_alter_partition_reassignments(request))
    assert response.error_code == Error.NONE
    return {(t.name, p.partition_index): p.error_code for t in response.responses for p in t.partitions}


def listed(h: Harness, wanted: Optional[dict[str, list[int]]] = None) -> dict[tuple[str, int], tuple]:
    request = cpb.ListPartitionReassignmentsRequest(
        topics=[cpb.TopicPartitions(topic=t, partitions=p) for t, p in (wanted or {}).items()])
    response = h.apply(h.controller.handle_list_partition_reassignments(request))
    assert not h.last.records  # type: ignore[union-attr]
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in response.topics for p in t.partitions}


def cluster(brokers: int = 4) -> Harness:
    """Brokers 0..brokers-1 and topic "t" of one partition on [0, 1] led by 0."""
    h = Harness()
    h.brokers(brokers)
    h.create("t", assignments=[[0, 1]])
    assert h.state("t").leader == 0
    return h


def test_a_move_records_the_target_then_completes_when_the_new_replicas_join_the_isr() -> None:
    h = cluster()
    assert reassign(h, {("t", 0): [1, 2]}) == {("t", 0): Error.NONE}
    state = h.state("t")
    assert (state.replicas, state.adding_replicas, state.removing_replicas) == ((1, 2, 0), (2,), (0,))
    assert state.isr == (0, 1) and state.leader == 0  # the removed leader leads until the move completes
    assert listed(h) == {("t", 0): ([1, 2, 0], [2], [0])}
    # The new replica catches up and the leader adds it: the move completes in the same record,
    # and leadership moves off the removed replica to the first target replica in the ISR.
    answer = h.alter("t", 0, [0, 1, 2])
    assert answer.topics[0].partitions[0].error_code == Error.NEW_LEADER_ELECTED
    assert kinds(h.last) == ["partition_change"]
    state = h.state("t")
    assert (state.replicas, state.isr, state.adding_replicas, state.removing_replicas) == ((1, 2), (1, 2), (), ())
    assert state.leader == 1 and state.leader_epoch == 1
    assert listed(h) == {}


def test_a_completion_that_keeps_the_leader_answers_the_new_isr() -> None:
    h = cluster()
    reassign(h, {("t", 0): [0, 2]})
    answer = h.alter("t", 0, [0, 1, 2]).topics[0].partitions[0]
    state = h.state("t")
    assert answer.error_code == Error.NONE
    assert list(answer.isr) == [0, 2] and answer.partition_epoch == state.partition_epoch
    assert (state.replicas, state.isr, state.leader) == ((0, 2), (0, 2), 0)


def test_a_target_already_in_the_isr_completes_at_once() -> None:
    h = Harness()
    h.brokers(3)
    h.create("t", assignments=[[0, 1, 2]])
    assert reassign(h, {("t", 0): [2, 1]}) == {("t", 0): Error.NONE}
    state = h.state("t")
    assert (state.replicas, state.isr, state.leader) == ((2, 1), (1, 2), 2)
    assert not state.adding_replicas and not state.removing_replicas
    assert listed(h) == {}


def test_reordering_the_replicas_changes_only_the_order() -> None:
    h = cluster()
    reassign(h, {("t", 0): [1, 0]})
    state = h.state("t")
    assert (state.replicas, state.isr, state.leader, state.adding_replicas) == ((1, 0), (0, 1), 0, ())


def test_the_same_replicas_write_nothing() -> None:
    h = cluster()
    assert reassign(h, {("t", 0): [0, 1]}) == {("t", 0): Error.NONE}
    assert not h.last.records  # type: ignore[union-attr]


def test_a_cancel_reverts_to_the_original_replicas() -> None:
    h = cluster()
    reassign(h, {("t", 0): [2, 3]})
    assert h.state("t").replicas == (2, 3, 0, 1)
    assert reassign(h, {("t", 0): None}) == {("t", 0): Error.NONE}
    state = h.state("t")
    assert (state.replicas, state.isr, state.leader, state.adding_replicas, state.removing_replicas) == (
        (0, 1), (0, 1), 0, (), ())
    assert reassign(h, {("t", 0): None}) == {("t", 0): Error.NO_REASSIGNMENT_IN_PROGRESS}


def test_a_cancel_moves_leadership_off_a_new_replica() -> None:
    h = cluster()
    reassign(h, {("t", 0): [2, 3]})
    h.alter("t", 0, [0, 1, 2])  # 2 joins, 3 not yet: no completion
    assert h.state("t").adding_replicas == (2, 3)
    assert h.elect(cpb.PREFERRED, {"t": [0]}).results[0].partitions[0].error_code == Error.NONE
    assert h.state("t").leader == 2
    reassign(h, {("t", 0): None})
    state = h.state("t")
    assert (state.replicas, state.isr, state.leader) == ((0, 1), (0, 1), 0)


def test_a_cancel_with_no_original_replica_in_the_isr_elects_uncleanly() -> None:
    h = cluster()
    reassign(h, {("t", 0): [2, 3]})
    h.alter("t", 0, [0, 2])
    h.elect(cpb.PREFERRED, {"t": [0]})  # 2 leads
    h.alter("t", 0, [2])  # the original replicas fall out; 3 has not caught up
    reassign(h, {("t", 0): None})
    state = h.state("t")
    assert (state.replicas, state.isr, state.leader) == ((0, 1), (0,), 0)
    assert state.leader_recovery_state == mpb.RECOVERING


def test_a_new_target_during_a_move_starts_from_the_current_replica_set() -> None:
    h = cluster()
    reassign(h, {("t", 0): [2, 3]})
    reassign(h, {("t", 0): [3]})
    state = h.state("t")
    assert (state.replicas, state.adding_replicas, state.removing_replicas) == ((3, 2, 0, 1), (), (2, 0, 1))
    # 3 is a replica already (not adding), yet not in the ISR: removing everyone else would leave no ISR.
    assert state.isr == (0, 1)
    h.alter("t", 0, [0, 1, 3])
    state = h.state("t")
    assert (state.replicas, state.isr, state.leader) == ((3,), (3,), 3)


def test_no_completion_trades_a_leader_for_none() -> None:
    # The new ISR's target replicas are not live (a state the shell reaches
    # only in a race): the move waits rather than leave the partition offline.
    state = PartitionState(replicas=(1, 2, 0), isr=(0, 1, 2), leader=0, leader_epoch=3, partition_epoch=5,
                           adding_replicas=(2,), removing_replicas=(0,))
    assert reassignments.complete(state, lambda b: b == 0) is None
    done, election = reassignments.complete(state, lambda b: b in (0, 2))  # type: ignore[misc]
    assert (done.replicas, done.isr, election.leader) == ((1, 2), (1, 2), 2)


def test_a_completion_elects_the_first_live_target_replica_in_the_isr() -> None:
    h = cluster()
    reassign(h, {("t", 0): [3, 2]})
    h.alter("t", 0, [0, 1, 2])
    h.heartbeat(3, want_fence=True)
    assert h.state("t").adding_replicas == (3, 2)  # 3 fenced: it cannot join, nothing completes
    h.heartbeat(3)
    h.alter("t", 0, [0, 1, 2, 3])
    state = h.state("t")
    assert (state.replicas, state.isr, state.leader) == ((3, 2), (2, 3), 3)


def test_kafkas_refusals() -> None:
    h = cluster()
    h.create("u", assignments=[[0, 1]])
    errors = reassign(h, {
        ("t", 0): [],
        ("t", 1): [0, 1],
        ("nope", 0): [0, 1],
        ("u", 0): [0, 0],
    })
    assert errors == {("t", 0): Error.INVALID_REPLICA_ASSIGNMENT, ("t", 1): Error.UNKNOWN_TOPIC_OR_PARTITION,
                      ("nope", 0): Error.UNKNOWN_TOPIC_OR_PARTITION, ("u", 0): Error.INVALID_REPLICA_ASSIGNMENT}
    assert reassign(h, {("t", 0): [0, 99]}) == {("t", 0): Error.INVALID_REPLICA_ASSIGNMENT}
    assert reassign(h, {("t", 0): [-1, 0]}) == {("t", 0): Error.INVALID_REPLICA_ASSIGNMENT}
    assert reassign(h, {("__cluster_metadata", 0): [0]}) == {
        ("__cluster_metadata", 0): Error.UNKNOWN_TOPIC_OR_PARTITION}
    assert h.state("t").replicas == (0, 1) and h.state("u").replicas == (0, 1)


def test_a_partition_named_twice_or_too_many_partitions_refuse_the_whole_request() -> None:
    h = cluster()
    twice = Reassign(topics=[Reassign.ReassignableTopic(name="t", partitions=[
        Reassign.ReassignablePartition(partition_index=0, replicas=mpb.BrokerIdList(ids=[2, 3])),
        Reassign.ReassignablePartition(partition_index=0, replicas=mpb.BrokerIdList(ids=[1, 3]))])])
    response = h.apply(h.controller.handle_alter_partition_reassignments(twice))
    assert response.error_code == Error.INVALID_REQUEST and not response.responses
    assert "t-0" in response.error_message and not h.last.records  # type: ignore[union-attr]
    many = Reassign(topics=[Reassign.ReassignableTopic(name="t", partitions=[
        Reassign.ReassignablePartition(partition_index=p) for p in range(10_001)])])
    response = h.apply(h.controller.handle_alter_partition_reassignments(many))
    assert response.error_code == Error.POLICY_VIOLATION and not response.responses


def test_a_fenced_broker_may_be_a_target_as_in_kafka() -> None:
    h = cluster()
    h.heartbeat(3, want_fence=True)
    assert h.image.brokers[3].fenced
    assert reassign(h, {("t", 0): [0, 3]}) == {("t", 0): Error.NONE}
    assert h.state("t").adding_replicas == (3,)


def test_kip_860_refuses_a_factor_change_only_when_asked_to() -> None:
    h = cluster()
    assert reassign(h, {("t", 0): [0, 1, 2]}, allow_factor_change=False) == {
        ("t", 0): Error.INVALID_REPLICATION_FACTOR}
    assert reassign(h, {("t", 0): [2, 3]}, allow_factor_change=False) == {("t", 0): Error.NONE}
    # During the move the factor is the original one (2), not the union's (4).
    assert reassign(h, {("t", 0): [3, 1]}, allow_factor_change=False) == {("t", 0): Error.NONE}
    assert reassign(h, {("t", 0): [0, 1, 2]}) == {("t", 0): Error.NONE}


def test_list_names_only_partitions_under_way_and_skips_unknown_ones() -> None:
    h = cluster()
    h.create("u", partitions=2, rf=1)
    reassign(h, {("u", 1): [3, 2]})
    under_way = h.state("u", 1)
    assert under_way.adding_replicas
    expected = {("u", 1): (list(under_way.replicas), list(under_way.adding_replicas),
                           list(under_way.removing_replicas))}
    assert listed(h) == expected
    assert listed(h, {"u": [0, 1, 7], "nope": [0]}) == expected
    assert listed(h, {"t": [0]}) == {}


def test_a_snapshot_keeps_a_move_under_way() -> None:
    h = cluster()
    reassign(h, {("t", 0): [2, 3]})
    assert MetadataImage.from_snapshot(h.image.snapshot()) == h.image


# --- UnregisterBroker ----------------------------------------------------------------------

def test_unregister_moves_the_broker_out_of_isrs_and_leaderships_then_removes_it() -> None:
    h = cluster()
    response = h.apply(h.controller.handle_unregister_broker(cpb.UnregisterBrokerRequest(broker_id=0)))
    assert response.error_code == Error.NONE
    assert kinds(h.last) == ["partition_change", "unregister_broker"]
    assert 0 not in h.image.brokers
    state = h.state("t")
    assert (state.leader, state.isr, state.replicas) == (1, (1,), (0, 1))
    again = h.apply(h.controller.handle_unregister_broker(cpb.UnregisterBrokerRequest(broker_id=0)))
    assert again.error_code == Error.BROKER_ID_NOT_REGISTERED and not h.last.records  # type: ignore[union-attr]
    for hostile in (-1, 2**31 - 1):
        refused = h.apply(h.controller.handle_unregister_broker(cpb.UnregisterBrokerRequest(broker_id=hostile)))
        assert refused.error_code == Error.BROKER_ID_NOT_REGISTERED
    # A decommissioned broker's replicas move with a reassignment; it cannot be a target any more.
    assert reassign(h, {("t", 0): [1, 2]}) == {("t", 0): Error.NONE}
    assert reassign(h, {("t", 0): [0, 2]}) == {("t", 0): Error.INVALID_REPLICA_ASSIGNMENT}


def test_an_unregistered_broker_may_register_again() -> None:
    h = cluster()
    h.apply(h.controller.handle_unregister_broker(cpb.UnregisterBrokerRequest(broker_id=3)))
    assert 3 not in h.image.brokers
    assert h.register(3, incarnation="new").error_code == Error.NONE
    assert not h.image.brokers[3].fenced
