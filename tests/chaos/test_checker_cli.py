"""The Go linearizability checker as the chaos harness calls it: a subprocess
fed a JSON-lines history, answering with a verdict on stdout and an exit code.

Skipped when Go is missing (`make go-test` installs it and runs the Go suite).
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

CHECKER = Path(__file__).resolve().parents[2] / "chaos" / "checker"


@pytest.fixture(scope="module")
def lincheck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed; the checker is built from chaos/checker with it")
    binary = tmp_path_factory.mktemp("lincheck") / "lincheck"
    subprocess.run([go, "build", "-o", str(binary), "./cmd/lincheck"], cwd=CHECKER, check=True, timeout=300)
    return binary


def history(*events: tuple) -> str:
    """Lines from (process, type, f, key, value, time); None leaves a field out."""
    lines = []
    for process, kind, f, key, value, time in events:
        event = {"process": process, "type": kind, "f": f, "time": time}
        if key is not None:
            event["key"] = key
        if value is not None:
            event["value"] = value
        lines.append(json.dumps(event))
    return "\n".join(lines) + "\n"


def check(lincheck: Path, text: str, *args: str, model: str = "log") -> tuple[int, dict]:
    done = subprocess.run(
        [str(lincheck), "--model", model, "--time-limit", "5", *args, "-"],
        input=text, capture_output=True, text=True, timeout=60,
    )
    return done.returncode, json.loads(done.stdout)


def test_timed_out_send_that_lands_late_is_linearizable(lincheck: Path) -> None:
    code, verdict = check(lincheck, history(
        (0, "invoke", "send", "t-0", "a", 0),
        (0, "info", "send", None, None, 10),
        (1, "invoke", "read", "t-0", 0, 20),
        (1, "ok", "read", None, None, 30),
        (1, "invoke", "read", "t-0", 0, 40),
        (1, "ok", "read", None, "a", 50),
    ))
    assert code == 0
    assert verdict["result"] == "ok"
    assert verdict["counterexample"] is None


def test_lost_acknowledged_send_is_caught_and_drawn(lincheck: Path, tmp_path: Path) -> None:
    page = tmp_path / "failure.html"
    code, verdict = check(lincheck, history(
        (0, "invoke", "send", "t-0", "a", 0),
        (0, "ok", "send", None, 0, 10),
        (1, "invoke", "read", "t-0", 0, 20),
        (1, "ok", "read", None, None, 30),
    ), "--html", str(page))
    assert code == 1
    assert verdict["result"] == "illegal"
    # the log model refutes it without a search, naming both operations
    conflict = verdict["counterexample"]["conflict"]
    assert [op["operation"] for op in conflict] == ['send("a") -> 0', "read(0) -> nothing"]
    assert conflict[1]["invoke_line"] == 3
    assert "saw nothing" in verdict["counterexample"]["reason"]
    assert "<svg" in page.read_text()


def test_unknown_commits_no_fetch_saw_are_pruned_and_counted(lincheck: Path) -> None:
    """An offsets history with two timed-out commits: 9, which no fetch returned, is left
    out before the search; 8, which a later fetch returned, is kept (the fetch needs it).
    The verdict counts what was left out, per partition, and a stale fetch stays illegal."""
    key = {"group": "g", "partition": "t-0"}
    other = {"group": "g", "partition": "t-1"}
    events = [
        (0, "invoke", "commit", key, 5, 0), (0, "ok", "commit", None, None, 1),
        (1, "invoke", "commit", key, 9, 2), (1, "info", "commit", None, None, 3),
        (2, "invoke", "commit", key, 8, 4), (2, "info", "commit", None, None, 5),
        (3, "invoke", "fetch", key, None, 6), (3, "ok", "fetch", None, 8, 7),
        (4, "invoke", "fetch", other, None, 8), (4, "ok", "fetch", None, -1, 9),
    ]
    code, verdict = check(lincheck, history(*events), model="offsets")
    assert (code, verdict["result"]) == (0, "ok")
    assert [(p["key"], p["operations"], p["pruned"]) for p in verdict["partitions"]] == [
        ('["g","t-0"]', 4, 1), ('["g","t-1"]', 1, 0)]
    code, verdict = check(lincheck, history(*events, (3, "invoke", "fetch", key, None, 10),
                                            (3, "ok", "fetch", None, 5, 11)), model="offsets")
    assert (code, verdict["result"]) == (1, "illegal")
    assert verdict["partitions"][0]["pruned"] == 1


def test_unreadable_history_exits_3_naming_the_line(lincheck: Path) -> None:
    done = subprocess.run(
        [str(lincheck), "--model", "log", "-"],
        input='{"process": 0, "type": "invoke", "f": "send", "key": "t-0", "value": "a", "time": 0}\nnot json\n',
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 3
    assert "line 2" in done.stderr
