"""The reassignment scenario's choice of a partition's next replicas (no cluster)."""
from __future__ import annotations

import random

from hypothesis import given, strategies as st

from chaos.nemesis import REASSIGNMENT, SCENARIOS
from chaos.reassign_workload import new_replicas


@given(seed=st.integers(0, 2**32), size=st.integers(1, 3))
def test_one_replica_moves_to_a_broker_outside_and_the_size_is_kept(seed: int, size: int) -> None:
    brokers = [4, 5, 6, 7]
    rng = random.Random(seed)
    current = rng.sample(brokers, size)
    target = new_replicas(current, brokers, rng)
    assert len(target) == len(set(target)) == size
    assert set(target) <= set(brokers)
    assert len(set(target) - set(current)) == 1


def test_with_no_broker_outside_only_the_order_may_change() -> None:
    assert sorted(new_replicas([4, 5, 6], [4, 5, 6], random.Random(1))) == [4, 5, 6]


def test_the_scenario_kills_leaders() -> None:
    assert SCENARIOS[REASSIGNMENT] == ("kill",)
