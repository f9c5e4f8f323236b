"""The chaos matrix's table, built from its results (never typed by hand).

    python -m chaos.matrix_table RESULTS [RESULTS ...] [--out FILE]

Reads every run's summary.json (RESULTS/<scenario>-seed<N>/summary.json, as
`kraftlog chaos run` leaves them; chaos/matrix.py) and prints one Markdown
row per scenario: runs and seeds, their time limit and hosts (namespaces or
127.0.0.1), how many kept their promise, acknowledged
and unknown sends, faults (count and by kind), anomalies by kind, each
checker model's verdicts (ok/illegal/unknown), the checker's time per run
(median and max), and the commits and dates the runs were made on. A row
whose runs come from more than one commit, or from a checkout with local
changes, is flagged. Scenarios of the matrix with no run in RESULTS are
listed under the table, so a partial matrix says so.

Summaries from before chaos/matrix.py stamped them (no "run" object) are
read too: their faults by kind and checker times come from the files beside
them, their commit and date are unknown ("?").
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Iterable, Optional

from . import matrix

# How verdict counts are shown: ok/illegal/unknown, then any other answer.
VERDICT_ORDER = ("ok", "illegal", "unknown")
COLUMNS = ("scenario", "runs (seeds)", "s each, hosts", "kept", "sends ok / unknown", "faults (by kind)", "anomalies",
           "log ok/illegal/unknown", "offsets ok/illegal/unknown", "metadata ok/illegal/unknown",
           "checker s median / max", "commit", "date (UTC)")


def collect(folders: Iterable[Path]) -> list[dict[str, Any]]:
    """Every readable run summary in the results folders (each a folder of run folders, or a run folder)."""
    runs: list[dict[str, Any]] = []
    for results in folders:
        results = Path(results)
        candidates = [results] if (results / matrix.SUMMARY).is_file() else sorted(
            p for p in results.iterdir() if p.is_dir()) if results.is_dir() else []
        for run_folder in candidates:
            summary = matrix.read_summary(run_folder)
            if summary is None or "scenario" not in summary:
                continue
            if not isinstance(summary.get("run"), dict):  # made before runs were stamped: what its files say
                summary["run"] = {"commit": None, "dirty": None, "finished": None,
                                  "faults_by_kind": matrix.faults_by_kind(run_folder / "history.jsonl"),
                                  "checker_s": matrix.checker_seconds(run_folder)}
            summary["run"].setdefault("kept", matrix.verdict(summary)[0])
            summary["_folder"] = str(run_folder)
            runs.append(summary)
    return runs


def label(summary: dict[str, Any]) -> str:
    """The row a run belongs to: its scenario, and any variant the run was asked for."""
    variant = []
    if summary["scenario"] == matrix.UNCLEAN and summary.get("unclean") is False:
        variant.append("clean")
    if summary.get("secure"):
        variant.append("secure")
    if summary.get("client", "grpc") != "grpc":
        variant.append(f"{summary['client']} clients")
    return summary["scenario"] + (f" ({', '.join(variant)})" if variant else "")


def _counts(values: Iterable[Optional[str]]) -> str:
    """Verdicts as ok/illegal/unknown counts; "-" when no run was checked by that model."""
    tally: dict[str, int] = {}
    for value in values:
        if value is not None:
            tally[value] = tally.get(value, 0) + 1
    if not tally:
        return "-"
    shown = "/".join(str(tally.pop(v, 0)) for v in VERDICT_ORDER)
    return shown + "".join(f" +{n} {v}" for v, n in sorted(tally.items()))


def _kinds(tally: dict[str, int]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(tally.items(), key=lambda kv: (-kv[1], kv[0])))


def _add(into: dict[str, int], counts: dict[str, Any]) -> None:
    for kind, n in counts.items():
        if isinstance(n, (int, float)) and not isinstance(n, bool):
            into[kind] = into.get(kind, 0) + int(n)


def row(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One scenario's runs summed up: the cells of its row, and whether its commits differ."""
    stamps = [r["run"] for r in runs]
    faults: dict[str, int] = {}
    anomalies: dict[str, int] = {}
    for r in runs:
        _add(faults, r["run"].get("faults_by_kind") or {})
        _add(anomalies, {k: v for k, v in r.get("anomalies", {}).items() if k != "lost-unacked-ok"})
    total_faults = sum(int(r.get("faults") or 0) for r in runs)
    unknown_absent = sum(int((r.get("anomalies") or {}).get("lost-unacked-ok") or 0) for r in runs)
    checker = [sum(s.get("checker_s", {}).values()) for s in stamps if s.get("checker_s")]
    commits = sorted({(s.get("commit") or "?")[:7] + ("+changes" if s.get("dirty") else "") for s in stamps})
    dates = sorted({(s.get("finished") or "?")[:10] for s in stamps})
    seeds = sorted({int(r["seed"]) for r in runs if isinstance(r.get("seed"), int)})
    mixed = len(commits) > 1 or any(s.get("dirty") for s in stamps)
    sends_ok = sum(int((r.get("sends") or {}).get("ok") or 0) for r in runs)
    sends_info = sum(int((r.get("sends") or {}).get("info") or 0) for r in runs)
    anomaly_text = _kinds({k: n for k, n in anomalies.items() if n}) or "none"
    if unknown_absent:
        anomaly_text += f" (unknown sends absent, allowed: {unknown_absent})"
    fault_text = f"{total_faults}" + (f" ({_kinds(faults)})" if faults else "")
    cells = {
        "scenario": label(runs[0]),
        "runs (seeds)": f"{len(runs)} ({_ranges(seeds)})",
        "s each, hosts": f"{_listed(r.get('time_limit_s') for r in runs)}, "
                         f"{_listed('namespaces' if r.get('testbed') else '127.0.0.1' for r in runs)}",
        "kept": f"{sum(bool(s.get('kept')) for s in stamps)}/{len(runs)}",
        "sends ok / unknown": f"{sends_ok:,} / {sends_info:,}",
        "faults (by kind)": fault_text,
        "anomalies": anomaly_text,
        "log ok/illegal/unknown": _counts(r.get("linearizable") for r in runs),
        "offsets ok/illegal/unknown": _counts(r.get("offsets_linearizable") for r in runs),
        "metadata ok/illegal/unknown": _counts(r.get("metadata_linearizable") for r in runs),
        "checker s median / max": f"{statistics.median(checker):.1f} / {max(checker):.1f}" if checker else "-",
        "commit": ("**mixed**: " if mixed else "") + ", ".join(f"`{c}`" if c != "?" else c for c in commits),
        "date (UTC)": ", ".join(dates),
    }
    return {"cells": cells, "mixed": mixed}


def _listed(values: Iterable[Any]) -> str:
    """Each value once, in order ("20, 60"; whole numbers without ".0")."""
    shown = [f"{v:g}" if isinstance(v, float) else str(v) for v in values if v is not None]
    return ", ".join(sorted(set(shown), key=shown.index)) or "?"


def _ranges(seeds: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2, 5"."""
    parts: list[list[int]] = []
    for s in seeds:
        if parts and s == parts[-1][1] + 1:
            parts[-1][1] = s
        else:
            parts.append([s, s])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in parts)


def table(runs: list[dict[str, Any]], scenarios: Optional[list[str]] = None) -> str:
    """The Markdown table of the runs, one row per scenario (in `scenarios` order, others after)."""
    order = scenarios or []
    rows: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        rows.setdefault(label(r), []).append(r)
    rank = {name: i for i, name in enumerate(order)}
    names = sorted(rows, key=lambda name: (rank.get(rows[name][0]["scenario"], len(rank)), name))
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    flagged = []
    for name in names:
        built = row(rows[name])
        flagged += [name] if built["mixed"] else []
        lines.append("| " + " | ".join(str(built["cells"][c]).replace("|", "\\|") for c in COLUMNS) + " |")
    notes = [f"{len(runs)} runs of {len(rows)} scenarios."]
    if flagged:
        notes.append("Made on more than one commit, or with local changes (**mixed**): " + ", ".join(flagged) + ".")
    missing = [s for s in order if s not in {r["scenario"] for r in runs}]
    if missing:
        notes.append("Not run in these results (the matrix is partial): " + ", ".join(missing) + ".")
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos.matrix_table", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="results folders of `kraftlog chaos run`")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    parser.add_argument("--json", action="store_true", help="the rows' cells as JSON instead of Markdown")
    args = parser.parse_args(argv)
    runs = collect(args.results)
    if not runs:
        print(f"no run summaries in {', '.join(map(str, args.results))}", file=sys.stderr)
        return 1
    if args.json:
        grouped: dict[str, list[dict[str, Any]]] = {}
        for r in runs:
            grouped.setdefault(label(r), []).append(r)
        text = json.dumps([row(group) for group in grouped.values()], indent=1) + "\n"
    else:
        text = table(runs, matrix.all_scenarios())
    sys.stdout.write(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
