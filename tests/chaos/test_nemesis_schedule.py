"""The nemesis schedule: seeded, one fault at a time, a quiet end."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from chaos.nemesis import FAULTS, SCENARIOS, schedule


@settings(max_examples=200, deadline=None)
@given(scenario=st.sampled_from(sorted(SCENARIOS)), seed=st.integers(0, 2**32), duration=st.floats(10, 600))
def test_faults_never_overlap_and_end_before_the_quiet_time(scenario, seed, duration) -> None:
    faults = schedule(scenario, seed, duration)
    assert faults == schedule(scenario, seed, duration)  # the seed decides everything
    for before, after in zip(faults, faults[1:]):
        assert before.start_s + before.duration_s < after.start_s
    for fault in faults:
        assert fault.kind in SCENARIOS[scenario]
        assert fault.start_s > 0 and fault.start_s + fault.duration_s <= duration - 5.0


def test_a_long_mixed_run_draws_every_fault_and_seeds_differ() -> None:
    faults = schedule("mixed", 7, 3600)
    assert {f.kind for f in faults} == set(FAULTS)
    assert schedule("mixed", 8, 3600) != faults


def test_unknown_scenario() -> None:
    with pytest.raises(ValueError, match="unknown scenario 'nope'; known: "):
        schedule("nope", 1, 60)
