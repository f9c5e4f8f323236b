"""The deterministic simulator: hundreds of seeded fault schedules with invariants at every step.

It must find nothing in the real core, and it must find the bugs we plant.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from metadata_quorum.sim import run_schedule
from metadata_quorum.sim.__main__ import main
from metadata_quorum.sim.bugs import BUGS

# 500 seeds exercise every path below in over 100 schedules each; `make sim`
# runs 20,000 (with the same seeds first) for the long search.
SCHEDULES = 500


def test_500_schedules_find_no_violation_and_exercise_every_path() -> None:
    failures = []
    totals: Counter[str] = Counter()
    sizes: Counter[int] = Counter()
    for seed in range(SCHEDULES):
        result = run_schedule(seed)
        totals.update(result.stats)
        sizes[result.voters] += 1
        if not result.ok:
            failures.append(result)
    assert not failures, "\n\n".join(r.report() for r in failures[:3])
    # Both cluster sizes, and every fault and protocol path, were exercised.
    assert sizes[3] and sizes[5]
    for key in (
        "crashes",
        "dropped",
        "duplicated",
        "elections won",
        "leader resignations",
        "pre-votes refused (leader alive)",
        "snapshot installs",
        "snapshots taken",
        "truncations",
        # KIP-853, in the dynamic half of the seeds.
        "voter change NONE",
        "voter change REQUEST_TIMED_OUT",
        "replicas replaced (disk wiped)",
    ):
        assert totals[key] > 0, f"no schedule exercised {key}"


EXPECTED = {
    # A leader that counts unflushed entries commits what a crash then loses.
    "ack-before-flush": "hold it durably",
    # A node that thinks one copy is a majority commits alone.
    "majority-of-one": "",
    # Voters that do not compare logs elect a leader missing committed entries.
    "vote-ignores-log": "",
    # Nobody can win an election: caught by the liveness check.
    "majority-too-large": "liveness",
}


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_a_planted_bug_is_caught(bug: str) -> None:
    for seed in range(300):
        result = run_schedule(seed, (BUGS[bug],))
        if not result.ok:
            assert EXPECTED[bug] in result.violation  # type: ignore[operator]
            report = result.report()
            assert "VIOLATION" in report and f"--seed {seed}" in report
            assert len(result.trace) > 5
            return
    pytest.fail(f"planted bug {bug!r} went unnoticed in 300 schedules")


def test_a_seed_replays_exactly() -> None:
    first = run_schedule(4242, (BUGS["ack-before-flush"],))
    again = run_schedule(4242, (BUGS["ack-before-flush"],))
    assert (first.violation, first.trace, first.messages, first.stats) == (
        again.violation,
        again.trace,
        again.messages,
        again.stats,
    )
    clean = [run_schedule(7) for _ in range(2)]
    assert clean[0].stats == clean[1].stats and clean[0].virtual_ms == clean[1].virtual_ms


def test_cli_json_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--schedules", "5", "--seed", "10", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"schedules": 5, "violations": 0, "first_failing_seed": None}


def test_cli_reports_the_first_failing_seed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--schedules", "5", "--seed", "0", "--json", "--inject-bug", "majority-too-large"]) == 1
    assert json.loads(capsys.readouterr().out) == {"schedules": 5, "violations": 5, "first_failing_seed": 0}
    assert main(["--schedules", "1", "--seed", "3", "--inject-bug", "majority-too-large"]) == 1
    out = capsys.readouterr().out
    assert "VIOLATION: liveness" in out and "replay: python -m metadata_quorum.sim --seed 3" in out
