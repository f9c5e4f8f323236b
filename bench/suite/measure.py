"""Figures gathered over repetitions: each a median with its min and max.

A figure has a key ("kraftlog.produce.rf1_acks1.1p"), a label for people, a
unit, and - for throughput in records/s - the value size, so that records/s
can be compared with a limit in MB/s.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class Figure:
    key: str
    label: str
    unit: str  # "records/s", "MB/s", "ms", "s"
    group: str  # "limits", "redis", "nats", "kraftlog"
    value_bytes: Optional[int] = None  # records/s figures: the payload of one record
    runs: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    def payload_mb_per_s(self) -> Optional[float]:
        """records/s as payload MB/s (for ratios to a limit in MB/s)."""
        if self.unit == "MB/s":
            return self.median
        if self.unit == "records/s" and self.value_bytes:
            return self.median * self.value_bytes / 1e6
        return None

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "unit": self.unit, "group": self.group, "value_bytes": self.value_bytes,
                "median": self.median, "min": min(self.runs), "max": max(self.runs),
                "runs": self.runs, "notes": self.notes}


class Recorder:
    def __init__(self) -> None:
        self.figures: dict[str, Figure] = {}

    def add(self, key: str, label: str, unit: str, group: str, value: float,
            value_bytes: Optional[int] = None) -> Figure:
        figure = self.figures.get(key)
        if figure is None:
            figure = self.figures[key] = Figure(key, label, unit, group, value_bytes)
        figure.runs.append(float(value))
        return figure

    def note(self, key: str, text: str) -> None:
        if key in self.figures and text not in self.figures[key].notes:
            self.figures[key].notes.append(text)

    def get(self, key: str) -> Optional[Figure]:
        figure = self.figures.get(key)
        return figure if figure is not None and figure.runs else None

    def to_json(self) -> dict[str, Any]:
        return {key: figure.to_json() for key, figure in self.figures.items() if figure.runs}


@dataclass(frozen=True)
class Comparison:
    """A kraftlog figure next to a peer's and a limit's (keys; either may be absent)."""
    key: str
    peer: Optional[str] = None
    limit: Optional[str] = None


def ratio(recorder: Recorder, key: str, other: Optional[str]) -> Optional[float]:
    """key / other, in records/s when both are, else in payload MB/s; None when either is missing."""
    mine, theirs = recorder.get(key), recorder.get(other) if other else None
    if mine is None or theirs is None:
        return None
    if mine.unit == theirs.unit:
        return mine.median / theirs.median if theirs.median else None
    a, b = mine.payload_mb_per_s(), theirs.payload_mb_per_s()
    return a / b if a is not None and b else None
