"""The chaos matrix (every scenario x seeds), run in slices that accumulate.

`kraftlog chaos run` keeps each (scenario, seed) run in RESULTS/<scenario>-seed<N>/
(chaos/runner.py's files). This module is what makes a results folder a
matrix that can be filled over several sessions or machines:

- a slice: scenarios as a comma list, seeds as ranges ("0-4,7"), and a
  shard ("I/N": every N-th run of the slice, starting at the I-th), so N
  machines or sessions split one matrix between them;
- provenance: each run's summary.json gets a "run" object (the commit and
  whether the checkout had changes, start and end in UTC, the settings
  asked for, the load average, the faults by kind from its history, the
  checker's time per model from its verdict files, and the verdict);
- resumption: a run whose summary.json was made with the same settings on
  the same unmodified commit is not run again (`--resume` reuses it whatever
  its commit; `--rerun` never does). A run that died left no summary.json
  and is run again.

chaos/matrix_table.py reads the folder back into the Markdown table of
docs/chaos.md ("Matrix"). Pure functions and files: no cluster here.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from .history import NEMESIS

SUMMARY = "summary.json"
MODELS = ("log", "offsets", "metadata")  # the checker's models, as runner.py names their files
VERDICT_KEYS = {"log": "linearizable", "offsets": "offsets_linearizable", "metadata": "metadata_linearizable"}
UNCLEAN = "unclean-election"  # chaos/runner.py's name (not imported: this module stays light)
# Kafka's defaults, no fsync per write: their loss is counted, not a broken promise
LOSS_ON_DEFAULTS = ("power-loss", "last-replica-standing")


def all_scenarios() -> list[str]:
    """Every scenario `--scenario all` runs, in its order: chaos/runner.py's ALL_SCENARIOS, made the
    same way here without importing the runner (the cluster's modules, seconds to load)."""
    from .nemesis import SCENARIOS

    return list(SCENARIOS) + [UNCLEAN]


def parse_seeds(text: str) -> list[int]:
    """"0-4,7" -> [0, 1, 2, 3, 4, 7] (in the order given, each once)."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low, dash, high = part.partition("-")
        try:
            first, last = int(low), int(high if dash else low)
        except ValueError:
            raise ValueError(f"seeds are numbers and ranges like 0-4,7, not {text!r}") from None
        if first < 0 or last < first:
            raise ValueError(f"seed range {part!r}: want 0 <= first <= last")
        seeds += [s for s in range(first, last + 1) if s not in seeds]
    if not seeds:
        raise ValueError(f"no seed in {text!r}")
    return seeds


def parse_shard(text: str) -> tuple[int, int]:
    """"2/4" -> (2, 4): the second of four shards (1-based)."""
    index, slash, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        raise ValueError(f"--shard is I/N (1 <= I <= N), not {text!r}") from None
    if not slash or not 1 <= i <= n:
        raise ValueError(f"--shard is I/N (1 <= I <= N), not {text!r}")
    return i, n


def plan(scenarios: Sequence[str], seeds: Sequence[int],
         shard: Optional[tuple[int, int]] = None) -> list[tuple[str, int]]:
    """The slice's (scenario, seed) runs, scenario by scenario; a shard I/N
    keeps every N-th of them from the I-th, so the N shards together are the
    whole slice and no run is in two."""
    runs = [(scenario, seed) for scenario in scenarios for seed in seeds]
    if shard is None:
        return runs
    i, n = shard
    return runs[i - 1::n]


def folder(results: Path, scenario: str, seed: int) -> Path:
    return Path(results) / f"{scenario}-seed{seed}"


def provenance(repo: Optional[Path] = None) -> dict[str, Any]:
    """The commit this code is (None outside a git checkout) and whether tracked files differ from it."""
    repo = repo or Path(__file__).resolve().parent.parent

    def git(*args: str) -> Optional[str]:
        try:
            done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    changes = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": bool(changes) if commit else None}


def requested(time_limit_s: float, *, network: bool, secure: bool, client: str, unclean: bool) -> dict[str, Any]:
    """The settings a run was asked for: a run is reused only for the same ones."""
    return {"time_limit_s": float(time_limit_s), "network": network, "secure": secure, "client": client,
            "unclean": unclean}


def read_summary(path: Path) -> Optional[dict[str, Any]]:
    """A run folder's summary.json, None when there is none or it cannot be read (a run that died)."""
    try:
        summary = json.loads((Path(path) / SUMMARY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None


def reusable(summary: Optional[dict[str, Any]], settings: dict[str, Any], current: dict[str, Any], *,
             resume: bool = False) -> bool:
    """Whether an earlier run's summary stands for this one: made with the same
    settings, and on the same commit with no local changes either time (with
    `resume`: on any commit)."""
    run = (summary or {}).get("run")
    if not isinstance(run, dict) or run.get("settings") != settings:
        return False
    if resume:
        return True
    return bool(current.get("commit")) and run.get("commit") == current["commit"] \
        and run.get("dirty") is False and current.get("dirty") is False


def verdict(summary: dict[str, Any]) -> tuple[bool, str]:
    """(kept its promise, the words for it). An unclean-election run that
    lost writes, and a power loss on Kafka's defaults, kept theirs: that
    loss is what they show."""
    scenario = summary.get("scenario")
    anomalies = {k: v for k, v in summary.get("anomalies", {}).items() if v and k != "lost-unacked-ok"}
    # Kafka's defaults fsync no write: what a power loss takes is counted, not hidden
    expected_loss = (scenario == UNCLEAN and bool(summary.get("unclean"))) or scenario in LOSS_ON_DEFAULTS
    verdicts = [summary.get(k) for k in VERDICT_KEYS.values()]
    kept = (bool(summary.get("valid")) and all(v in ("ok", None) for v in verdicts)) or expected_loss
    # ... but only once it happened: a last-replica-standing sequence that stopped short showed nothing
    kept = kept and summary.get("last_replica_standing", {}).get("happened", True)
    if expected_loss and anomalies:
        return kept, ("lost writes, as unclean election does" if scenario == UNCLEAN
                      else "lost writes, as a power loss without fsync does")
    return kept, "ok" if kept else "PROMISE BROKEN"


def faults_by_kind(history: Path) -> dict[str, int]:
    """The faults a run's history says were started, by kind ({} without a history)."""
    kinds: dict[str, int] = {}
    try:
        lines = Path(history).open(encoding="utf-8")
    except OSError:
        return kinds
    with lines:
        for text in lines:
            if NEMESIS not in text:  # most lines are the clients': skip them unparsed
                continue
            try:
                line = json.loads(text)
            except ValueError:  # a run killed mid-line
                continue
            value = line.get("value")
            if line.get("process") == NEMESIS and isinstance(value, dict) and value.get("phase") == "start":
                kinds[line["f"]] = kinds.get(line["f"], 0) + 1
    return dict(sorted(kinds.items()))


def _checked_partitions(run_folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Per model checked, the partitions of its <model>-verdict.json."""
    checked: dict[str, list[dict[str, Any]]] = {}
    for model in MODELS:
        try:
            verdict_json = json.loads((Path(run_folder) / f"{model}-verdict.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        partitions = (verdict_json.get("partitions") or []) if isinstance(verdict_json, dict) else []
        checked[model] = [p for p in partitions if isinstance(p, dict)]
    return checked


def checker_seconds(run_folder: Path) -> dict[str, float]:
    """Per model checked, the checker's own time on the run's history: the sum
    of its partitions' elapsed_ms in <model>-verdict.json, in seconds."""
    return {model: round(sum(float(p.get("elapsed_ms") or 0) for p in partitions) / 1000, 3)
            for model, partitions in _checked_partitions(run_folder).items()}


def checker_pruned(run_folder: Path) -> dict[str, dict[str, int]]:
    """Per model checked, the operations of unknown outcome the checker left out
    before its search (no observation could depend on them), by partition key;
    only the partitions where it left any out (verdicts from before the checker
    pruned have no count)."""
    return {model: {str(p.get("key")): int(p["pruned"]) for p in partitions if p.get("pruned")}
            for model, partitions in _checked_partitions(run_folder).items()}


def utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def stamp(run_folder: Path, summary: dict[str, Any], *, settings: dict[str, Any], source: dict[str, Any],
          started: float, finished: float, load: Iterable[float] = ()) -> dict[str, Any]:
    """Add the run's provenance ("run") to its summary and write summary.json again."""
    kept, words = verdict(summary)
    summary["run"] = {
        **source, "started": utc(started), "finished": utc(finished), "wall_s": round(finished - started, 1),
        "settings": settings, "load_average": [round(x, 2) for x in load],
        "faults_by_kind": faults_by_kind(Path(run_folder) / "history.jsonl"),
        "checker_s": checker_seconds(run_folder), "kept": kept, "verdict": words,
    }
    Path(run_folder).mkdir(parents=True, exist_ok=True)
    (Path(run_folder) / SUMMARY).write_text(json.dumps(summary, indent=1))
    return summary


def load_average() -> tuple[float, ...]:
    try:
        return os.getloadavg()
    except OSError:
        return ()
