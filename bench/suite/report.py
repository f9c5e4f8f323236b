"""The suite's outputs: PNG charts (matplotlib, Agg) and results.md - each
figure's median with min–max, its ratio to the peer and to the limit
measured in the same run, and where kraftlog stands against the issue's
goals."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from .measure import Comparison, Figure, Recorder, ratio

# Each kraftlog figure (and each peer's) next to its peer and the limit that caps it; a
# throughput's CPU per record (KEY.cpu, lower is better) next to the peer's.
COMPARISONS = (
    Comparison("kraftlog.produce.rf1_acks1.1p", "redis.xadd.1p", "limits.grpc_up_64KiB"),
    Comparison("kraftlog.produce.rf1_acks1.4p", "redis.xadd.4p", "limits.grpc_up_64KiB"),
    Comparison("kraftlog.produce.rf1_acks1.1p_1KiB", "redis.xadd.1p_1KiB", "limits.grpc_up_64KiB"),
    Comparison("kraftlog.produce.rf1_acks1.1p_one_broker", "nats.r1.1p", "limits.grpc_up_64KiB"),
    Comparison("kraftlog.produce.rf3_all_idem.1p", "nats.r3.1p", "limits.grpc_up_64KiB"),
    Comparison("kraftlog.produce.rf3_all_idem.4p", "nats.r3.1p", "limits.grpc_up_64KiB"),
    Comparison("kraftlog.consume.decoded", "redis.xread", "limits.grpc_down_1MiB"),
    Comparison("kraftlog.consume.arrow", "redis.xread", "limits.grpc_down_1MiB"),
    Comparison("kraftlog.produce.arrow.rf1_acks1.1p", "redis.xadd.1p", "limits.grpc_up_64KiB"),
    Comparison("kraftlog.fetch.raw", None, "limits.grpc_down_1MiB"),
    # librdkafka speaks Kafka's protocol over plain TCP: its limit is the loopback's, not gRPC's.
    Comparison("kraftlog.produce.librdkafka.rf1_acks1", "redis.xadd.1p", "limits.tcp_loopback"),
    Comparison("kraftlog.produce.librdkafka.rf3_all_idem", "nats.r3.1p", "limits.tcp_loopback"),
    Comparison("kraftlog.consume.librdkafka.rf1", "redis.xread", "limits.tcp_loopback"),
    Comparison("kraftlog.consume.librdkafka.rf3", "redis.xread", "limits.tcp_loopback"),
    Comparison("redis.xadd.1p", None, "limits.tcp_loopback"),
    Comparison("redis.xadd.4p", None, "limits.tcp_loopback"),
    Comparison("redis.xadd.1p_1KiB", None, "limits.tcp_loopback"),
    Comparison("redis.xread", None, "limits.tcp_loopback"),
    Comparison("nats.r1.1p", None, "limits.tcp_loopback"),
    Comparison("nats.r3.1p", None, "limits.tcp_loopback"),
)

# (goal, figure, the figure it is divided by or None, threshold, "ratio" | "max")
GOALS = (
    ("Produce RF1 acks=1, 1 process: ≥ 2× Redis XADD (1 producer)", "kraftlog.produce.rf1_acks1.1p",
     "redis.xadd.1p", 2.0),
    ("Produce RF1 acks=1, 1 process: toward 1,000,000 records/s", "kraftlog.produce.rf1_acks1.1p", None, 1e6),
    ("Produce RF3 acks=all: ≥ NATS JetStream R3", "kraftlog.produce.rf3_all_idem.1p", "nats.r3.1p", 1.0),
    ("Raw fetch: ≥ 50% of the gRPC-Python streaming ceiling (1 MiB, server to client)", "kraftlog.fetch.raw",
     "limits.grpc_down_1MiB", 0.5),
    ("Decoded consume: ≥ Redis XREAD", "kraftlog.consume.decoded", "redis.xread", 1.0),
    ("Columnar consume (poll_arrow), 1 process: ≥ 1.5× Redis XREAD (issue 21)", "kraftlog.consume.arrow",
     "redis.xread", 1.5),
    ("Columnar consume (poll_arrow), 1 process: ≥ 5,000,000 records/s (issue 21)", "kraftlog.consume.arrow", None,
     5e6),
    ("Columnar produce (produce_arrow) RF1 acks=1, 1 process: ≥ 1,000,000 records/s (issue 21)",
     "kraftlog.produce.arrow.rf1_acks1.1p", None, 1e6),
    ("Produce RF1 acks=1 per record, 1 process: ≥ 600,000 records/s (issue 21)", "kraftlog.produce.rf1_acks1.1p",
     None, 6e5),
    ("librdkafka produce RF1 acks=1, 1 process: ≥ 1,000,000 records/s (issue 19)",
     "kraftlog.produce.librdkafka.rf1_acks1", None, 1e6),
    ("librdkafka consume, 1 process: ≥ 1,500,000 records/s (issue 19)", "kraftlog.consume.librdkafka.rf1", None,
     1.5e6),
)
LATENCY_GOAL_MS = 10.0

CHARTS = (
    ("limits.png", "Limits of this machine", ("limits.",)),
    ("produce.png", "Produce throughput (100-byte values unless marked)",
     ("redis.xadd.", "nats.", "kraftlog.produce.")),
    ("consume.png", "Reading back", ("redis.xread", "kraftlog.consume.", "kraftlog.fetch.", "limits.grpc_down")),
    ("latency.png", "kraftlog produce latency at 20% of max, RF3 acks=all", ("kraftlog.latency.",)),
    ("failover.png", "kraftlog failover after kill -9", ("kraftlog.failover.",)),
)
CPU_UNIT = "CPU µs/record"
COLOURS = {"limits": "#888888", "redis": "#d62728", "nats": "#2ca02c", "kraftlog": "#1f77b4"}


def fmt(value: float, unit: str) -> str:
    if unit == "records/s":
        return f"{value:,.0f}"
    if unit == "MB/s":
        return f"{value:,.1f}"
    return f"{value:,.2f}"


def write_charts(recorder: Recorder, out: Path) -> list[Path]:
    """One PNG per chart that has figures in this run; their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for filename, title, prefixes in CHARTS:
        figures = [f for key, f in recorder.figures.items() if f.runs and key.startswith(prefixes)]
        if not figures:
            continue
        units = list(dict.fromkeys(f.unit for f in figures))
        fig, axes = plt.subplots(len(units), 1, figsize=(10, 1.2 + 0.55 * len(figures) + 0.6 * len(units)),
                                 squeeze=False)
        for ax, unit in zip(axes[:, 0], units):
            mine = [f for f in figures if f.unit == unit]
            medians = [f.median for f in mine]
            errors = [[f.median - min(f.runs) for f in mine], [max(f.runs) - f.median for f in mine]]
            ax.barh(range(len(mine)), medians, xerr=errors, capsize=3,
                    color=[COLOURS.get(f.group, "#444444") for f in mine])
            ax.set_yticks(range(len(mine)), [f.label.split(": CPU per record")[0] for f in mine], fontsize=8)
            ax.invert_yaxis()
            lower = ", lower is better" if unit == CPU_UNIT else ""
            ax.set_xlabel(f"{unit} (median, bars min–max{lower})")
            for i, f in enumerate(mine):
                ax.text(max(f.runs), i, f"  {fmt(f.median, unit)}", va="center", fontsize=7)
        fig.suptitle(title)
        fig.tight_layout()
        path = out / filename
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def _versus(recorder: Recorder, key: str, other: Optional[str]) -> str:
    found = ratio(recorder, key, other)
    if found is None:
        return ""
    shown = f"{found:.2f}" if found >= 0.1 else f"{found:.2g}"
    return f"{shown}× {recorder.figures[other].label}"  # type: ignore[index]


def write_markdown(recorder: Recorder, results: dict[str, Any], path: Path) -> tuple[list[dict], list[dict]]:
    """results.md; the comparisons and goals as written there (for results.json)."""
    by_key = {c.key: c for c in COMPARISONS}
    comparisons = []
    rows = ["| figure | median | min – max | unit | vs peer | vs limit |", "|---|---:|---:|---|---|---|"]
    for key, figure in recorder.figures.items():
        if not figure.runs:
            continue
        c = by_key.get(key) or _cpu_comparison(by_key, key)
        peer, limit = ratio(recorder, key, c.peer), ratio(recorder, key, c.limit)
        comparisons.append({"figure": key, "peer": c.peer, "ratio_to_peer": peer, "limit": c.limit,
                            "ratio_to_limit": limit})
        note = f" ({'; '.join(figure.notes)})" if figure.notes else ""
        rows.append(f"| {figure.label}{note} | {fmt(figure.median, figure.unit)} | {fmt(min(figure.runs), figure.unit)}"
                    f" – {fmt(max(figure.runs), figure.unit)} | {figure.unit} | {_versus(recorder, key, c.peer)} | "
                    f"{_versus(recorder, key, c.limit)} |")
    goals = _goals(recorder)
    sizes, machine = results["sizes"], results["machine"]
    lines = [
        "# kraftlog side by side: the limits, Redis Streams, NATS JetStream",
        "",
        f"Suite `{results['suite']}`{' (--quick)' if results['quick'] else ''}, started {results['started']}, "
        f"{results['seconds']:.0f} s; {machine['cpus']} CPUs, Python {machine['python']}; load average "
        f"{machine['load_average_before'][0]:.1f} before, {machine['load_average_after'][0]:.1f} after.",
        f"{sizes['records']:,} records of 100 bytes per produce run ({sizes['records_1k']:,} of 1 KiB), "
        f"{sizes['repetitions']} repetition(s): medians, min – max; ratios are of medians from this run.",
        "",
    ]
    for name, peer in results["peers"].items():
        if "skipped" in peer:
            lines.append(f"- **{name} skipped**: {peer['skipped']}")
    for error in results["errors"]:
        lines.append(f"- **failed**: {error['step']}: {error['error']}")
    lines += ["", *rows, "", "## Goals (issues 8 and 19)", "", "| goal | measured | met |", "|---|---|---|"]
    lines += [f"| {g['goal']} | {g['measured']} | {g['met']} |" for g in goals]
    lines += ["", "Charts: " + ", ".join(Path(p).name for p in results.get("charts", [])), ""]
    path.write_text("\n".join(lines))
    return comparisons, goals


def _cpu_comparison(by_key: dict[str, Comparison], key: str) -> Comparison:
    """A CPU-per-record figure is compared with its peer's CPU per record (no limit)."""
    base = by_key.get(key.removesuffix(".cpu")) if key.endswith(".cpu") else None
    return Comparison(key, f"{base.peer}.cpu" if base is not None and base.peer else None)


def _goals(recorder: Recorder) -> list[dict[str, Any]]:
    goals = []
    for goal, key, other, threshold in GOALS:
        figure: Optional[Figure] = recorder.get(key)
        if figure is None or (other is not None and recorder.get(other) is None):
            goals.append({"goal": goal, "measured": "not measured", "met": "—"})
            continue
        value = ratio(recorder, key, other) if other else figure.median
        shown = f"{value:.2f}×" if other else f"{value:,.0f} records/s ({value / threshold:.1%})"
        goals.append({"goal": goal, "measured": shown, "met": "yes" if value >= threshold else "no"})
    p99 = recorder.get("kraftlog.latency.rf3_all.p99")
    goals.append({"goal": f"Produce p99 at 20% load ≤ {LATENCY_GOAL_MS:g} ms, RF3 acks=all",
                  "measured": f"{p99.median:.2f} ms" if p99 else "not measured",
                  "met": ("yes" if p99.median <= LATENCY_GOAL_MS else "no") if p99 else "—"})
    return goals
