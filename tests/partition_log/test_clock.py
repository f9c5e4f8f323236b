"""The skewable wall clock: jumps and drift from the testbed's file, and what a bad file does."""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from partition_log import clock
from partition_log.clock import Skew, SkewableClock, write_skew


def test_no_file_is_the_real_clock() -> None:
    before = time.time_ns() // 1_000_000
    now = SkewableClock(None).wall_ms()
    assert before <= now <= time.time_ns() // 1_000_000


def test_offset_jumps_and_rate_drifts_from_the_anchor() -> None:
    assert Skew(offset_ms=-5000).apply(1_000_000) == 995_000
    drift = Skew(rate=2.0, anchor_ms=1_000_000)
    assert drift.apply(1_000_000) == 1_000_000  # no drift yet at the anchor
    assert drift.apply(1_001_000) == 1_002_000  # one real second later, two on the clock
    assert Skew(offset_ms=100, rate=0.5, anchor_ms=0).apply(2000) == 1100


def test_file_changes_take_effect_and_removal_heals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clock, "RELOAD_INTERVAL_S", 0.0)
    path = tmp_path / "clock.json"
    wall = SkewableClock(path)
    write_skew(path, Skew(offset_ms=3_600_000))
    assert wall.wall_ms() - time.time_ns() // 1_000_000 >= 3_599_000
    write_skew(path, Skew(offset_ms=-3_600_000))
    assert time.time_ns() // 1_000_000 - wall.wall_ms() >= 3_599_000
    path.unlink()
    assert abs(wall.wall_ms() - time.time_ns() // 1_000_000) < 1000


@pytest.mark.parametrize("text", [
    "not json", "[]", '{"offset_ms": "soon"}', '{"rate": 0}', '{"rate": -1}', '{"rate": 1e9}',
    '{"offset_ms": NaN}', '{"offset_ms": true}', '{"unknown": 1}',
])
def test_a_bad_file_keeps_the_skew_in_force(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(clock, "RELOAD_INTERVAL_S", 0.0)
    path = tmp_path / "clock.json"
    wall = SkewableClock(path)
    write_skew(path, Skew(offset_ms=60_000))
    wall.wall_ms()
    path.write_text(text)
    assert wall.skew == Skew(offset_ms=60_000)
    assert wall.wall_ms() - time.time_ns() // 1_000_000 >= 59_000


def test_skew_refuses_impossible_values() -> None:
    for bad in (dict(rate=0.0), dict(rate=11.0), dict(offset_ms=math.inf), dict(anchor_ms=math.nan)):
        with pytest.raises(ValueError):
            Skew(**bad)
    assert Skew.parse(json.dumps({"offset_ms": 5, "rate": 1.5, "anchor_ms": 7})) == Skew(5, 1.5, 7)


def test_monotonic_ignores_the_skew() -> None:
    a = clock.monotonic_ms()
    assert abs(a - time.monotonic_ns() // 1_000_000) < 1000
