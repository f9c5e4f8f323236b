"""`kraftlog chaos check` as a user runs it: the real console script, the real checker."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[2] / "chaos" / "checker" / "testdata" / "jepsen-etcd"
KRAFTLOG = Path(sys.executable).with_name("kraftlog")

pytestmark = [
    pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed; `make test` installs it first"),
]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(KRAFTLOG), "chaos", "check", *args], capture_output=True, text=True, timeout=300)


def expected() -> dict[str, str]:
    rows = (line.split("\t") for line in (CORPUS / "expected.tsv").read_text().splitlines() if line.strip())
    return {name: verdict for name, verdict in rows}


def test_verdicts_and_exit_codes_on_the_corpus(tmp_path):
    verdicts = expected()
    legal = next(n for n, v in verdicts.items() if v == "linearizable")
    illegal = next(n for n, v in verdicts.items() if v == "not-linearizable")
    ok = run(str(CORPUS / "etcd" / legal), "--format", "jepsen-etcd")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["result"] == "ok"
    page = tmp_path / "bad.html"
    bad = run(str(CORPUS / "etcd" / illegal), "--format", "jepsen-etcd", "--html", str(page))
    assert bad.returncode == 1, bad.stderr
    verdict = json.loads(bad.stdout)
    assert verdict["result"] == "illegal" and verdict["counterexample"]
    assert page.read_text().lstrip().lower().startswith("<!doctype html")


def test_unreadable_inputs_exit_3_with_one_line(tmp_path):
    missing = run(str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 3 and "no such file" in missing.stderr
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"process": 1, "type": "invoke"\nnot json at all\n')
    broken = run(str(garbage))
    assert broken.returncode == 3
    assert "line" in broken.stderr and "Traceback" not in broken.stderr
    wrong_format = run(str(garbage), "--format", "csv")
    assert wrong_format.returncode == 3 and "--format" in wrong_format.stderr
