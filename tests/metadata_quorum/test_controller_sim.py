"""The controller simulator: hundreds of seeded schedules, invariants at every step, planted bugs caught."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from metadata_quorum.sim.controller_sim import BUGS, run_controller_schedule
from metadata_quorum.sim.controller_sim.__main__ import main

SCHEDULES = 300


def test_300_schedules_find_no_violation_and_exercise_every_path() -> None:
    failures = []
    totals: Counter[str] = Counter()
    for seed in range(SCHEDULES):
        result = run_controller_schedule(seed)
        totals.update(result.stats)
        if not result.ok:
            failures.append(result)
    assert not failures, "\n\n".join(r.report() for r in failures[:3])
    for key in (
        "registration NONE", "registration DUPLICATE_BROKER_REGISTRATION", "heartbeats lost",
        "controlled shutdowns completed", "controller failovers", "partitions gone offline",
        "unclean elections", "preferred elections", "zombie STALE_BROKER_EPOCH",
        "AlterPartition NONE", "AlterPartition INVALID_UPDATE_VERSION", "AlterPartition FENCED_LEADER_EPOCH",
        "AlterPartition INELIGIBLE_REPLICA", "AlterPartition INVALID_REQUEST",
        "CreateTopics NONE", "CreateTopics TOPIC_ALREADY_EXISTS", "CreateTopics INVALID_TOPIC_EXCEPTION",
        "CreateTopics INVALID_REPLICATION_FACTOR", "CreateTopics INVALID_CONFIG",
        "DeleteTopics NONE", "CreatePartitions NONE", "ElectLeaders UNCLEAN NONE", "AllocateProducerIds NONE",
        "AlterPartitionReassignments NONE", "AlterPartitionReassignments NO_REASSIGNMENT_IN_PROGRESS",
        "AlterPartitionReassignments INVALID_REPLICA_ASSIGNMENT", "AlterPartition NEW_LEADER_ELECTED",
        "reassignments completed", "reassignments cancelled",
        # KIP-966 (logs.py): eligible replicas elected, last known ones, ISRs emptied by unclean shutdowns.
        "ELR elections", "last known elections", "partitions with an ELR", "empty ISRs",
    ):
        assert totals[key] > 0, f"no schedule exercised {key}"
    # The replica-log model can see a loss: without the feature, the last ISR member's power loss
    # loses committed records (counted, not a violation); with it, any such loss is a violation.
    assert totals["committed records lost (ELR off)"] > 0


def test_a_seed_replays_exactly() -> None:
    first, second = run_controller_schedule(42), run_controller_schedule(42)
    assert first.ok and second.ok
    assert (first.digest, first.records, first.virtual_ms, first.faults) == (
        second.digest, second.records, second.virtual_ms, second.faults)
    assert run_controller_schedule(43).digest != first.digest


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_a_planted_bug_is_caught_with_a_readable_trace(bug: str) -> None:
    failing = next((r for r in (run_controller_schedule(seed, bug) for seed in range(100)) if not r.ok), None)
    assert failing is not None, f"{bug} went unnoticed"
    report = failing.report(f" --inject-bug {bug}")
    assert "VIOLATION:" in report and "faults:" in report and "last " in report
    assert f"--seed {failing.seed} --schedules 1 --verbose --inject-bug {bug}" in report
    assert any("ms " in line for line in failing.trace)


def test_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--schedules", "5", "--seed", "100", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["schedules"] == 5 and summary["violations"] == 0 and summary["first_failing_seed"] is None
    assert main(["--schedules", "3", "--inject-bug", "fencing-keeps-leaders"]) == 1
    out = capsys.readouterr().out
    assert "violations" in out and "VIOLATION" in out and "replay: python -m metadata_quorum.sim.controller_sim" in out
