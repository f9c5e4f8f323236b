"""Summaries the benchmarks share (imported as a sibling: `python bench/<name>.py`)."""
from __future__ import annotations

import math
import statistics
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
