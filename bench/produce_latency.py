"""Issue 21 target 3: produce latency at 20 % of the maximum, RF3 acks=all
(the suite's latency row, bench/suite/kraftlog_cluster.LatencyJob), with the
scheduling delay beside it: the servers' event-loop lag
(`kraftlog_event_loop_lag_seconds`, scraped before and after) and the
client's. Several cluster variants (the levers) are measured in one run,
interleaved round by round, at the same offered rate: 20 % of the first
variant's measured maximum (each variant's own maximum is printed too).

    python -m bench.produce_latency [--variants asyncio,uvloop,combined] [--rounds 1]
        [--seconds 10] [--records 20000] [--rate N] [--profile DIR]

Variants: `asyncio` (the suite's cluster: 3 controllers + 3 brokers), `uvloop`
(the same, kraftlog.event.loop=uvloop), `combined` (3 broker,controller
nodes: half the processes on the machine's cores), `combined-uvloop`, `linger5`
(the suite's cluster, the producer at linger.ms 5: Kafka 4.0's default, KIP-1030).
`--profile DIR`: py-spy records two brokers (each leads two of rf3's six
partitions and follows four) during each latency run; their top frames are
printed and the raw stacks kept in DIR.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Optional

from .suite import kraftlog_cluster as kl
from .suite.kraftlog_cluster import pooled_delta, quantile_bound, scrape_histograms
from .suite.parallel import run_jobs
from .suite.processes import py_spy

VALUE_BYTES = 100
LOAD = 0.2  # of the maximum, as the suite (bench/suite/runner.py LATENCY_LOAD)
# name -> (node properties, combined nodes, the producer's linger.ms)
VARIANTS: dict[str, tuple[dict[str, Any], bool, float]] = {
    "asyncio": ({}, False, kl.LATENCY_LINGER_MS),
    "uvloop": ({"kraftlog.event.loop": "uvloop"}, False, kl.LATENCY_LINGER_MS),
    "combined": ({}, True, kl.LATENCY_LINGER_MS),
    "combined-uvloop": ({"kraftlog.event.loop": "uvloop"}, True, kl.LATENCY_LINGER_MS),
    # Kafka 4.0's producer default (KIP-1030): fewer, larger requests for the same records.
    "linger5": ({}, False, 5.0),
}

def start_profiles(cluster: Any, seconds: float, directory: Path, tag: str) -> list[tuple[int, Path, Any]]:
    out = []
    for broker in cluster.brokers[:2]:
        path = directory / f"{tag}-broker{broker}.txt"
        process = subprocess.Popen([py_spy(), "record", "--nonblocking", "-r", "200", "-d", str(int(seconds) + 1),
                                    "-p", str(cluster.pids[broker]), "-f", "raw", "-o", str(path)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append((broker, path, process))
    return out


def top_frames(path: Path, count: int = 8) -> list[tuple[str, float]]:
    """py-spy's raw stacks ("frame;frame;... N"): the frames with the most self time, as shares."""
    self_time: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if stack:
            self_time[stack.rsplit(";", 1)[-1]] += int(n)
    total = sum(self_time.values()) or 1
    return [(frame, n / total) for frame, n in self_time.most_common(count)]


def measure(name: str, cluster: Any, records: int, rate: Optional[float], seconds: float,
            profile: Optional[Path], tag: str, linger_ms: float = kl.LATENCY_LINGER_MS) -> dict[str, Any]:
    bootstrap, servers = kl.bootstrap(cluster), list(cluster.pids.values())
    most = run_jobs([kl.ProduceJob(bootstrap, "rf3", records, VALUE_BYTES, "all", True, 120)], 120, servers)
    target = rate if rate is not None else most["records_per_s"] * LOAD
    before = scrape_histograms(cluster)
    profiles = start_profiles(cluster, seconds, profile, tag) if profile else []
    sched_from = {pid: kl.schedstat(pid) for pid in servers}
    done = run_jobs([kl.LatencyJob(bootstrap, "rf3", target, seconds, VALUE_BYTES, linger_ms)], seconds + 120,
                    servers)
    after = scrape_histograms(cluster)
    ran, waited = (sum(kl.schedstat(pid)[i] - sched_from[pid][i] for pid in servers) for i in (0, 1))
    lag, produce, fetch = (pooled_delta(after[key], before[key]) for key in ("lag", "produce", "follower_fetch"))
    [worker] = done["workers"]
    row = {"variant": name, "max_per_s": most["records_per_s"], "rate": target, "records": worker["records"],
           **{k: worker[k] for k in ("p50_ms", "p99_ms", "p99.9_ms", "client_lag_p50_ms", "client_lag_p99_ms")},
           "server_lag_p50_ms": quantile_bound(lag, .5) * 1000, "server_lag_p99_ms": quantile_bound(lag, .99) * 1000,
           "server_lag_p99.9_ms": quantile_bound(lag, .999) * 1000,
           "broker_produce_p50_ms": quantile_bound(produce, .5), "broker_produce_p99_ms": quantile_bound(produce, .99),
           "follower_fetch_p50_ms": quantile_bound(fetch, .5),
           "server_cpu_us_per_record": done["server_cpu_s"] / max(worker["records"], 1) * 1e6,
           # The kernel's view: for each second a server's loop thread ran, how long it waited runnable.
           "server_wait_per_run": waited / max(ran, 1e-9),
           "client_wait_per_run": worker["client_runqueue_wait_s"] / max(worker["client_ran_s"], 1e-9)}
    for broker, path, process in profiles:
        process.wait(timeout=seconds + 60)
        if path.exists():
            row[f"profile_broker{broker}"] = top_frames(path)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default="asyncio,uvloop")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=10.0, help="of each latency run")
    parser.add_argument("--records", type=int, default=20_000, help="of each maximum-rate run")
    parser.add_argument("--rate", type=float, help="offered records/s (default: 20%% of the first variant's max)")
    parser.add_argument("--profile", type=Path, help="py-spy two brokers during the latency runs, stacks here")
    args = parser.parse_args()
    names = args.variants.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {unknown}; known: {', '.join(VARIANTS)}")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    rows: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    rate = args.rate
    with tempfile.TemporaryDirectory(prefix="produce-latency-") as tmp:
        for r in range(args.rounds):
            for name in names:
                properties, combined, linger_ms = VARIANTS[name]
                with kl.start_cluster(Path(tmp) / f"{name}-{r}", 3, properties, combined) as cluster:
                    row = measure(name, cluster, args.records, rate, args.seconds, args.profile, f"{name}-{r}",
                                  linger_ms)
                rate = row["rate"] if rate is None else rate
                rows[name].append(row)
                print_row(row)
    print("\nmedians over rounds (noisy: a shared 2-core machine)")
    for name, got in rows.items():
        print_row({k: (statistics.median(r[k] for r in got) if isinstance(v, (int, float)) else v)
                   for k, v in got[0].items() if not k.startswith("profile")})


def print_row(row: dict[str, Any]) -> None:
    print(f"{row['variant']:>16}: max {row['max_per_s']:,.0f}/s, at {row['rate']:,.0f}/s ({row['records']:,} records) "
          f"p50/p99/p99.9 {row['p50_ms']:.1f}/{row['p99_ms']:.1f}/{row['p99.9_ms']:.1f} ms; "
          f"server loop lag p50/p99/p99.9 <= {row['server_lag_p50_ms']:g}/{row['server_lag_p99_ms']:g}/"
          f"{row['server_lag_p99.9_ms']:g} ms; broker Produce p50/p99 <= {row['broker_produce_p50_ms']:g}/"
          f"{row['broker_produce_p99_ms']:g} ms, follower Fetch p50 <= {row['follower_fetch_p50_ms']:g} ms; client lag p50/p99 {row['client_lag_p50_ms']:.2f}/"
          f"{row['client_lag_p99_ms']:.2f} ms; run-queue wait per s run: servers {row['server_wait_per_run']:.1f} s, "
          f"client {row['client_wait_per_run']:.1f} s; servers {row['server_cpu_us_per_record']:,.0f} us/record",
          flush=True)
    for key, frames in row.items():
        if key.startswith("profile"):
            print(f"    {key}: " + "; ".join(f"{frame} {share:.0%}" for frame, share in frames), flush=True)


if __name__ == "__main__":
    main()
