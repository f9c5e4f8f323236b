"""The clock-skew fault: seeded, recorded in the history, aimed through each node's clock file, undone."""
from __future__ import annotations

import json
import random
from pathlib import Path

from chaos.clock_skew import MAX_JUMP_MS, RATES, ClockFiles
from chaos.history import HistoryRecorder
from chaos.nemesis import CLOCK_SKEW, SCENARIOS, Nemesis, ScheduledFault, schedule
from partition_log.clock import CLOCK_FILE_ENV, NO_SKEW, Skew


class NoCluster:
    def kill(self, node_id: int) -> None: raise AssertionError("no process fault here")
    start = pause = resume = kill


def test_skew_is_seeded_recorded_and_undone(tmp_path: Path) -> None:
    clocks = ClockFiles(tmp_path, [1, 2, 3])
    assert clocks.prefix(2) == ["env", f"{CLOCK_FILE_ENV}={tmp_path / 'clock-2.json'}"]
    faults = schedule(CLOCK_SKEW, 4, 30.0)
    assert faults and {f.kind for f in faults} == {CLOCK_SKEW} and SCENARIOS[CLOCK_SKEW] == (CLOCK_SKEW,)
    history = HistoryRecorder(tmp_path / "history.jsonl")
    nemesis = Nemesis(NoCluster(), [1, 2, 3], [1, 2, 3], history, clocks=clocks)
    nemesis.start(ScheduledFault(1.0, CLOCK_SKEW, 2.0, seed=7))
    skewed = {n: Skew.parse(p.read_text()) for n, p in clocks.paths.items()}
    [node] = [n for n, s in skewed.items() if s != NO_SKEW]
    assert 1000 <= abs(skewed[node].offset_ms) <= MAX_JUMP_MS and skewed[node].rate in RATES
    nemesis.stop()
    history.close()
    assert Skew.parse(clocks.paths[node].read_text()) == NO_SKEW
    start, stop = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert start["f"] == CLOCK_SKEW and start["value"]["nodes"] == [node] and stop["value"]["phase"] == "stop"
    assert start["value"]["offset_ms"] == skewed[node].offset_ms
    # the same seed picks the same node and skew
    (tmp_path / "again").mkdir()
    again = Nemesis(NoCluster(), [1, 2, 3], [1, 2, 3], HistoryRecorder(tmp_path / "again" / "history.jsonl"),
                    clocks=ClockFiles(tmp_path / "again", [1, 2, 3]))
    details, _ = again._inflict(CLOCK_SKEW, random.Random(7))
    assert details["nodes"] == [node] and details["offset_ms"] == skewed[node].offset_ms


def test_without_clock_files_the_fault_is_skipped(tmp_path: Path) -> None:
    history = HistoryRecorder(tmp_path / "history.jsonl")
    nemesis = Nemesis(NoCluster(), [1], [1], history)
    nemesis.start(ScheduledFault(1.0, CLOCK_SKEW, 2.0, seed=1))
    history.close()
    assert nemesis.skipped and "clock files" in nemesis.skipped[0]
