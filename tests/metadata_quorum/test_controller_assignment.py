"""Replica placement: even, rack-aware, deterministic; and checks of explicit placements."""

from __future__ import annotations

from collections import Counter

import pytest

from metadata_quorum.controller import ControllerError, Error, PlacementBroker, place_replicas, validate_assignments
from metadata_quorum.controller.assignment import rack_alternating


def brokers(count: int, racks: str = "") -> list[PlacementBroker]:
    return [PlacementBroker(i, racks[i % len(racks)] if racks else None) for i in range(count)]


@pytest.mark.parametrize(("count", "partitions", "rf"), [(3, 3, 3), (5, 10, 2), (6, 12, 3), (4, 7, 2), (7, 100, 3)])
def test_leaders_and_replicas_are_spread_evenly(count: int, partitions: int, rf: int) -> None:
    placement = place_replicas(brokers(count), partitions, rf)
    assert len(placement) == partitions
    assert all(len(r) == rf == len(set(r)) for r in placement)
    leaders = Counter(r[0] for r in placement)
    replicas = Counter(b for r in placement for b in r)
    assert max(leaders.values()) - min(leaders.get(b, 0) for b in range(count)) <= 1
    assert max(replicas.values()) - min(replicas.get(b, 0) for b in range(count)) <= 1


def test_replicas_of_a_partition_are_on_distinct_racks() -> None:
    placement = place_replicas(brokers(6, "abc"), 12, 3)
    rack = {b.broker_id: b.rack for b in brokers(6, "abc")}
    assert all(len({rack[b] for b in r}) == 3 for r in placement)
    # With fewer racks than replicas every rack is still used.
    placement = place_replicas(brokers(4, "ab"), 8, 3)
    rack = {b.broker_id: b.rack for b in brokers(4, "ab")}
    assert all({rack[b] for b in r} == {"a", "b"} for r in placement)


def test_consecutive_leaders_alternate_racks() -> None:
    order = rack_alternating(brokers(6, "ab"))
    assert [b.rack for b in order] == ["a", "b"] * 3
    placement = place_replicas(brokers(6, "ab"), 6, 1)
    rack = {b.broker_id: b.rack for b in brokers(6, "ab")}
    assert [rack[r[0]] for r in placement] == ["a", "b"] * 3


def test_placement_is_deterministic_and_start_rotates_it() -> None:
    assert place_replicas(brokers(5), 8, 3, start=2) == place_replicas(brokers(5), 8, 3, start=2)
    firsts = {place_replicas(brokers(5), 1, 1, start=s)[0][0] for s in range(5)}
    assert firsts == {0, 1, 2, 3, 4}


@pytest.mark.parametrize("rf", [0, -1, 4])
def test_an_impossible_replication_factor_is_refused(rf: int) -> None:
    with pytest.raises(ControllerError) as info:
        place_replicas(brokers(3), 1, rf)
    assert info.value.error is Error.INVALID_REPLICATION_FACTOR


def test_a_valid_explicit_assignment_is_returned_in_partition_order() -> None:
    placed = validate_assignments([(1, [2, 0]), (0, [0, 1])], range(2), {0, 1, 2})
    assert placed == {0: (0, 1), 1: (2, 0)}
    assert list(placed) == [0, 1]


@pytest.mark.parametrize(("assignments", "expected", "rf", "reason"), [
    ([(0, [0]), (2, [1])], range(2), None, "not one of partitions 0..1"),
    ([(0, [0]), (0, [1])], range(2), None, "assigned twice"),
    ([(0, [])], range(1), None, "no replicas"),
    ([(0, [1, 1])], range(1), None, "lists a broker twice"),
    ([(0, [0, 9])], range(1), None, "not registered"),
    ([(0, [0])], range(2), None, "no assignment for partition(s) [1]"),
    ([(0, [0, 1]), (1, [2])], range(2), None, "every partition needs 2 replicas"),
    ([(3, [0])], range(3, 4), 2, "every partition needs 2 replicas"),
])
def test_a_bad_explicit_assignment_is_refused(assignments: list, expected: range, rf: int, reason: str) -> None:
    with pytest.raises(ControllerError) as info:
        validate_assignments(assignments, expected, {0, 1, 2}, rf)
    assert info.value.error is Error.INVALID_REPLICA_ASSIGNMENT
    assert reason in info.value.message
