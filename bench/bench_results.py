"""What the benchmarks share: latency summaries and the results file (`from bench.bench_results import ...`)."""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1) of an ascending list."""
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def summarize(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    if not ordered:
        return {"count": 0}
    return {"count": len(ordered), "p50": percentile(ordered, 0.5), "p90": percentile(ordered, 0.9),
            "p99": percentile(ordered, 0.99), "max": ordered[-1], "mean": statistics.fmean(ordered)}


def save_results(path: str | Path, results: dict[str, Any]) -> Path:
    """Write `results` as JSON (bench/results/ is not committed); the path written."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    return out
