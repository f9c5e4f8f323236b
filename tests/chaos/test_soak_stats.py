"""The soak run's measurements: /proc sampling, growth over each node's longest life, the chart."""
from __future__ import annotations

import os
from pathlib import Path

from chaos.soak_stats import METRICS, chart, growth, sample


def test_sample_reads_this_process() -> None:
    me = sample(os.getpid())
    assert me is not None and set(me) == set(METRICS)
    assert me["rss_mb"] > 1 and me["fds"] >= 3 and me["threads"] >= 1


def test_sample_of_a_gone_process_is_none() -> None:
    assert sample(2**22 + 12345) is None  # above pid_max's default: no such process


def line(t: float, node: int, pid: int, rss: float, fds: int = 50, threads: int = 10) -> dict:
    return {"t_s": t, "node": node, "role": "broker", "pid": pid, "rss_mb": rss, "fds": fds, "threads": threads}


def test_growth_is_over_the_longest_life_never_across_a_restart() -> None:
    samples = [line(0, 4, 100, 80), line(60, 4, 100, 90), line(120, 4, 100, 100),  # first life: 2 minutes
               line(150, 4, 200, 20),  # restarted: caught starting up, left out
               line(180, 4, 200, 60), line(240, 4, 200, 61), line(300, 4, 200, 62), line(360, 4, 200, 63)]
    [g] = growth(samples)
    assert g.pid == 200 and g.minutes == 3.0
    assert g.first["rss_mb"] == 60 and g.last["rss_mb"] == 63
    assert abs(g.per_hour["rss_mb"] - 60.0) < 1e-6  # 1 MiB a minute
    assert g.per_hour["fds"] == 0 and "node 4 (broker, 3.0 min)" in g.describe()


def test_chart_is_written(tmp_path: Path) -> None:
    samples = [line(t, n, 100 + n, 50 + t / 60) for t in (0, 60, 120) for n in (1, 4)]
    samples += [line(180, 4, 999, 40)]  # node 4 restarted
    chart(samples, tmp_path / "soak.png", "test")
    assert (tmp_path / "soak.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
