"""The chaos matrix in slices (chaos/matrix.py) and its table (chaos/matrix_table.py), on small
synthetic run folders shaped as chaos/runner.py writes them: no cluster runs here."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chaos import matrix
from chaos.matrix_table import collect, table
from chaos.queue_checks import ANOMALY_KINDS

KRAFTLOG = Path(sys.executable).with_name("kraftlog")
SETTINGS = matrix.requested(20, network=False, secure=False, client="grpc", unclean=True)
COMMIT_A = {"commit": "a" * 40, "dirty": False}
COMMIT_B = {"commit": "b" * 40, "dirty": False}


def write_run(results: Path, scenario: str, seed: int, *, source: dict | None = COMMIT_A, sends: int = 100,
              info: int = 0, faults: tuple[str, ...] = ("kill", "kill"), anomalies: dict | None = None,
              verdicts: tuple = ("ok", "ok", "ok"), checker_ms: tuple[float, ...] = (100.0, 200.0),
              pruned: tuple[int, ...] = (0, 0),
              started: float = 1_795_000_000.0, **extra) -> Path:
    """A run folder as `kraftlog chaos run` leaves it: a history with the nemesis' lines among the
    clients', the checker's verdict files, and summary.json (runner.py's keys), stamped unless
    `source` is None (a summary from before runs were stamped)."""
    folder = matrix.folder(results, scenario, seed)
    folder.mkdir(parents=True)
    lines = [{"process": 0, "type": "invoke", "f": "send", "key": "0", "value": "p0-0", "time": 1},
             {"process": 0, "type": "ok", "f": "send", "key": "0", "value": [0, 0], "time": 2}]
    for i, kind in enumerate(faults):
        lines += [{"process": "nemesis", "type": "info", "f": kind, "value": {"phase": "start", "nodes": [4]},
                   "time": 10 + i},
                  {"process": "nemesis", "type": "info", "f": kind, "value": {"phase": "stop"}, "time": 20 + i}]
    (folder / "history.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    for model, verdict in zip(matrix.MODELS, verdicts):
        if verdict is not None:
            (folder / f"{model}-verdict.json").write_text(json.dumps(
                {"result": verdict, "model": model, "operations": 10, "counterexample": None,
                 "partitions": [{"key": str(p), "result": verdict, "operations": 5, "pruned": n, "elapsed_ms": ms}
                                for p, (ms, n) in enumerate(zip(checker_ms, pruned))]}))
    counts = {kind: 0 for kind in ANOMALY_KINDS}
    counts.update(anomalies or {})
    summary = {"sends": {"ok": sends, "fail": 0, "info": info}, "polled_records": sends, "final_records": sends,
               "faults": len(faults), "anomalies": counts,
               "indeterminate_sends": {"info": info, "open": 0, "written": 0, "absent": counts["lost-unacked-ok"]},
               "valid": not any(v for k, v in counts.items() if k != "lost-unacked-ok"),
               "linearizable": verdicts[0], "offsets_linearizable": verdicts[1], "metadata_linearizable": verdicts[2],
               "produce_unavailability_s": {"0": {"longest_s": 1.5, "from_s": 3.0, "to_s": 4.5}}, "notes": [],
               "scenario": scenario, "seed": seed, "time_limit_s": 20.0, "testbed": False, "unclean": True,
               "secure": False, "client": "grpc", "testbed_run_id": None, **extra}
    if source is None:
        (folder / matrix.SUMMARY).write_text(json.dumps(summary, indent=1))
    else:
        matrix.stamp(folder, summary, settings=SETTINGS, source=source, started=started, finished=started + 42)
    return folder


def test_seeds_shards_and_plan() -> None:
    assert matrix.parse_seeds("0-4,7") == [0, 1, 2, 3, 4, 7]
    assert matrix.parse_seeds("3,1-3") == [3, 1, 2]
    for bad in ("", "a", "4-2", "-1", "1-"):
        with pytest.raises(ValueError):
            matrix.parse_seeds(bad)
    assert matrix.parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "2", "a/b", "1/0"):
        with pytest.raises(ValueError):
            matrix.parse_shard(bad)
    scenarios, seeds = ["kill-leaders", "pause", "mixed"], list(range(10))
    whole = matrix.plan(scenarios, seeds)
    assert len(whole) == 30 and whole[:2] == [("kill-leaders", 0), ("kill-leaders", 1)]
    shards = [matrix.plan(scenarios, seeds, (i, 4)) for i in range(1, 5)]
    assert sorted(run for shard in shards for run in shard) == sorted(whole)  # every run once, in one shard
    assert [len(s) for s in shards] == [8, 8, 7, 7]


def test_a_run_is_reused_only_for_the_same_settings_on_the_same_unchanged_commit(tmp_path) -> None:
    summary = matrix.read_summary(write_run(tmp_path, "pause", 0))
    assert summary["run"]["commit"] == COMMIT_A["commit"] and summary["run"]["settings"] == SETTINGS
    assert matrix.reusable(summary, SETTINGS, COMMIT_A)
    assert not matrix.reusable(summary, SETTINGS, COMMIT_B)  # another commit: run again...
    assert matrix.reusable(summary, SETTINGS, COMMIT_B, resume=True)  # ...unless resuming
    assert not matrix.reusable(summary, SETTINGS, {**COMMIT_A, "dirty": True})  # local changes: not the commit
    assert not matrix.reusable(summary, SETTINGS, {"commit": None, "dirty": None})  # not a git checkout
    longer = {**SETTINGS, "time_limit_s": 60.0}
    assert not matrix.reusable(summary, longer, COMMIT_A, resume=True)  # other settings never stand in
    dirty = matrix.read_summary(write_run(tmp_path, "pause", 1, source={**COMMIT_A, "dirty": True}))
    assert not matrix.reusable(dirty, SETTINGS, COMMIT_A)
    legacy = matrix.read_summary(write_run(tmp_path, "pause", 2, source=None))
    assert not matrix.reusable(legacy, SETTINGS, COMMIT_A, resume=True)
    assert not matrix.reusable(None, SETTINGS, COMMIT_A, resume=True)  # a run that died: no summary
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / "summary.json").write_text('{"sends": ')
    assert matrix.read_summary(tmp_path / "torn") is None


def test_the_stamp_says_what_the_run_files_say(tmp_path) -> None:
    folder = write_run(tmp_path, "mixed", 3, faults=("loss", "kill", "loss"), checker_ms=(1500.0, 250.0),
                       verdicts=("unknown", "ok", None))
    run = matrix.read_summary(folder)["run"]
    assert run["faults_by_kind"] == {"kill": 1, "loss": 2}
    assert run["checker_s"] == {"log": 1.75, "offsets": 1.75}  # no metadata verdict file: not checked
    assert run["started"] == "2026-11-18T11:06:40Z" and run["wall_s"] == 42
    assert (run["kept"], run["verdict"]) == (False, "PROMISE BROKEN")  # "unknown" is not a kept promise
    lost = matrix.read_summary(write_run(tmp_path, "unclean-election", 0, anomalies={"lost": 7},
                                         verdicts=("illegal", "ok", "ok")))["run"]
    assert (lost["kept"], lost["verdict"]) == (True, "lost writes, as unclean election does")
    clean = matrix.read_summary(write_run(tmp_path / "clean", "unclean-election", 0, anomalies={"lost": 7},
                                          verdicts=("illegal", "ok", "ok"), unclean=False))["run"]
    assert (clean["kept"], clean["verdict"]) == (False, "PROMISE BROKEN")


def test_pruned_counts_come_from_the_verdict_files(tmp_path) -> None:
    folder = write_run(tmp_path, "mixed", 3, pruned=(0, 143), verdicts=("ok", "unknown", None))
    # per model, only the partitions where the checker left operations out
    assert matrix.checker_pruned(folder) == {"log": {"1": 143}, "offsets": {"1": 143}}
    verdict_file = folder / "log-verdict.json"
    older = json.loads(verdict_file.read_text())
    for p in older["partitions"]:
        del p["pruned"]  # a verdict from before the checker pruned
    verdict_file.write_text(json.dumps(older))
    (folder / "offsets-verdict.json").write_text("{")
    assert matrix.checker_pruned(folder) == {"log": {}}


def test_the_table_has_one_row_per_scenario_from_the_summaries(tmp_path) -> None:
    write_run(tmp_path, "kill-leaders", 0, sends=1000, info=3, checker_ms=(100.0,))
    write_run(tmp_path, "kill-leaders", 1, sends=2500, faults=("kill",), anomalies={"lost-unacked-ok": 2},
              checker_ms=(300.0,))
    write_run(tmp_path, "kill-leaders", 3, sends=10, faults=(), anomalies={"duplicate": 1, "lost": 2},
              verdicts=("illegal", "ok", "unknown"), checker_ms=(30000.0,))
    write_run(tmp_path, "pause", 0, source=COMMIT_A, started=1_795_000_000.0)
    write_run(tmp_path, "pause", 1, source=COMMIT_B, started=1_795_100_000.0, time_limit_s=60.0, testbed=True)
    write_run(tmp_path, "transactions", 0, verdicts=(None, None, None), faults=("kill-coordinator",))
    (tmp_path / "isolate-leader-seed0").mkdir()  # a run that died before its summary: not counted
    (tmp_path / "notes.txt").write_text("not a run")
    runs = collect([tmp_path])
    assert len(runs) == 6
    text = table(runs, ["kill-leaders", "pause", "isolate-leader", "transactions", "mixed"])
    lines = text.splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {cells[0]: dict(zip(header, cells)) for cells in
            ([c.strip() for c in line.strip("|").split("|")] for line in lines[2:] if line.startswith("| "))}
    assert list(rows) == ["kill-leaders", "pause", "transactions"]
    kills = rows["kill-leaders"]
    assert kills["runs (seeds)"] == "3 (0-1, 3)" and kills["kept"] == "2/3"
    assert kills["s each, hosts"] == "20, 127.0.0.1"
    assert kills["sends ok / unknown"] == "3,510 / 3"
    assert kills["faults (by kind)"] == "3 (kill 3)"
    assert kills["anomalies"] == "lost 2, duplicate 1 (unknown sends absent, allowed: 2)"
    assert kills["log ok/illegal/unknown"] == "2/1/0" and kills["metadata ok/illegal/unknown"] == "2/0/1"
    assert kills["checker s median / max"] == "0.9 / 90.0"  # each run's three models summed: 0.3, 0.9, 90
    assert kills["commit"] == "`aaaaaaa`" and kills["date (UTC)"] == "2026-11-18"
    pause = rows["pause"]
    assert pause["s each, hosts"] == "20, 60, 127.0.0.1, namespaces"
    assert pause["commit"] == "**mixed**: `aaaaaaa`, `bbbbbbb`" and pause["date (UTC)"] == "2026-11-18, 2026-11-19"
    assert rows["transactions"]["log ok/illegal/unknown"] == "-"
    assert rows["transactions"]["checker s median / max"] == "-"
    assert "6 runs of 3 scenarios." in text
    assert "(**mixed**): pause." in text
    assert "Not run in these results (the matrix is partial): isolate-leader, mixed." in text


def test_variants_get_rows_of_their_own_and_unstamped_runs_are_read_from_their_files(tmp_path) -> None:
    write_run(tmp_path / "a", "unclean-election", 0, anomalies={"lost": 5}, verdicts=("illegal", "ok", "ok"))
    write_run(tmp_path / "b", "unclean-election", 0, unclean=False, secure=True)
    write_run(tmp_path / "c", "kill-leaders", 4, client="kafka", faults=("kill", "kill"))
    write_run(tmp_path / "d", "kill-leaders", 5, source=None, faults=("kill", "pause"), checker_ms=(2000.0,))
    text = table(collect([tmp_path / d for d in "abcd"]), ["kill-leaders", "unclean-election"])
    rows = {line.split(" | ")[0][2:]: line for line in text.splitlines()[2:] if line.startswith("| ")}
    assert list(rows) == ["kill-leaders", "kill-leaders (kafka clients)", "unclean-election",
                          "unclean-election (clean, secure)"]
    assert "| 1/1 |" in rows["unclean-election"]  # the loss it shows is its promise
    assert "lost 5" in rows["unclean-election"]
    legacy = rows["kill-leaders"]
    assert "2 (kill 1, pause 1)" in legacy and "| 6.0 / 6.0 |" in legacy and legacy.endswith("| ? | ? |")
    assert "partial" not in text


def test_matrix_table_command(tmp_path) -> None:
    """`python -m chaos.matrix_table` as make chaos-table runs it: the table on stdout and in --out."""
    write_run(tmp_path, "kill-leaders", 0)
    out = tmp_path / "matrix.md"
    done = subprocess.run([sys.executable, "-m", "chaos.matrix_table", str(tmp_path), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == out.read_text() and done.stdout.startswith("| scenario | runs (seeds) |")
    assert "Not run in these results (the matrix is partial): " in done.stdout  # every other scenario
    from chaos.runner import ALL_SCENARIOS  # what `--scenario all` runs: the table's list of the matrix

    assert matrix.all_scenarios() == list(ALL_SCENARIOS)
    empty = subprocess.run([sys.executable, "-m", "chaos.matrix_table", str(tmp_path / "nothing")],
                           capture_output=True, text=True, timeout=120)
    assert empty.returncode == 1 and "no run summaries" in empty.stderr


def test_chaos_run_reuses_a_finished_run_and_refuses_a_bad_slice(tmp_path) -> None:
    """`--resume` reuses the run already in --results (no cluster is started: the summary comes back
    as it was); a bad --shard is refused before any run (parse_seeds and parse_shard's other refusals:
    test_seeds_shards_and_plan)."""
    folder = write_run(tmp_path, "pause", 0, sends=1234, checker_pruned={"offsets": {"1": 143}})
    done = subprocess.run([str(KRAFTLOG), "chaos", "run", "--scenario", "kill-leaders,pause", "--seeds", "0",
                           "--shard", "2/2", "--time-limit", "20", "--no-network", "--results", str(tmp_path),
                           "--resume", "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    [summary] = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert summary["sends"]["ok"] == 1234 and summary["results"] == str(folder) and summary["verdict"] == "ok"
    assert "already run on aaaaaaaaaa" in done.stderr
    assert "(143" in done.stderr  # the offsets cell: "ok (143 pruned)", wrapped in an 80-column table
    refused = subprocess.run([str(KRAFTLOG), "chaos", "run", "--scenario", "pause", "--shard", "3/2", "--results",
                              str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--shard is I/N" in refused.stderr, refused.stdout + refused.stderr
