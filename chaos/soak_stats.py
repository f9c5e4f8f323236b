"""What the soak run measures of each node process, and what it makes of it.

`sample(pid)` reads a process's resident memory, open file descriptors and
threads from /proc. `growth()` turns a run's samples into each node's
growth; `chart()` draws them. A killed node comes back as a new process
with fresh memory, so a node's growth is taken over its longest life (the
longest run of samples with one pid), never across a restart; and the first
sample of a life that began during the run is left out, since it caught the
process starting up (its pools and connections not yet made).
"""
from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

METRICS = ("rss_mb", "fds", "threads")


def sample(pid: int) -> Optional[dict[str, float]]:
    """The process's RSS (MiB), open fds and threads; None when it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rss_kb = int(fields.get("VmRSS", "0 kB").split()[0])
    return {"rss_mb": round(rss_kb / 1024, 1), "fds": fds, "threads": int(fields["Threads"])}


@dataclass(frozen=True)
class Growth:
    node: int
    role: str
    pid: int
    minutes: float  # the life it was measured over
    first: dict[str, float]
    last: dict[str, float]
    per_hour: dict[str, float]  # least-squares slope over that life

    def describe(self) -> str:
        parts = [f"{m} {self.first[m]:g} -> {self.last[m]:g} ({self.per_hour[m]:+.1f}/h)" for m in METRICS]
        return f"node {self.node} ({self.role}, {self.minutes:.1f} min): " + ", ".join(parts)


def growth(samples: Iterable[dict]) -> list[Growth]:
    """Each node's growth over its longest life in the samples (lines with
    t_s, node, role, pid and the METRICS)."""
    samples = list(samples)
    lives: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for s in samples:
        lives[(s["node"], s["pid"])].append(s)
    start = min((s["t_s"] for s in samples), default=0.0)
    for life in lives.values():
        if life[0]["t_s"] > start and len(life) > 1:
            del life[0]
    longest: dict[int, list[dict]] = {}
    for (node, _), life in lives.items():
        span = life[-1]["t_s"] - life[0]["t_s"]
        if node not in longest or span > longest[node][-1]["t_s"] - longest[node][0]["t_s"]:
            longest[node] = life
    out = []
    for node, life in sorted(longest.items()):
        out.append(Growth(node, life[0]["role"], life[0]["pid"], (life[-1]["t_s"] - life[0]["t_s"]) / 60,
                          {m: life[0][m] for m in METRICS}, {m: life[-1][m] for m in METRICS},
                          {m: round(_slope([s["t_s"] for s in life], [s[m] for s in life]) * 3600, 2)
                           for m in METRICS}))
    return out


def _slope(xs: list[float], ys: list[float]) -> float:
    if len(xs) < 2:
        return 0.0
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return 0.0 if var == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var


def chart(samples: list[dict], path: Path, title: str) -> None:
    """One panel per metric, one line per node (brokers solid, controllers
    dashed); a restart shows as a break in the node's line."""
    import matplotlib
    matplotlib.use("Agg")  # no display here
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(METRICS), 1, figsize=(9, 8), sharex=True)
    labels = {"rss_mb": "RSS (MiB)", "fds": "open fds", "threads": "threads"}
    nodes = sorted({(s["node"], s["role"]) for s in samples})
    for ax, metric in zip(axes, METRICS):
        for node, role in nodes:
            for pid in dict.fromkeys(s["pid"] for s in samples if s["node"] == node):
                life = [s for s in samples if s["node"] == node and s["pid"] == pid]
                ax.plot([s["t_s"] / 60 for s in life], [s[metric] for s in life], marker=".",
                        linestyle="-" if role == "broker" else "--", color=f"C{node % 10}",
                        label=f"{role} {node}" if pid == samples_first_pid(samples, node) else None)
        ax.set_ylabel(labels[metric])
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, ncol=3)
    axes[0].set_title(title)
    axes[-1].set_xlabel("minutes")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def samples_first_pid(samples: list[dict], node: int) -> int:
    return next(s["pid"] for s in samples if s["node"] == node)
