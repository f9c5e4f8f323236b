"""bench.columnar's produce() row from two checkouts in turn, against one
one-broker cluster (`python -m bench.produce_ab BEFORE_DIR AFTER_DIR
[--rounds R] [--records N]`): each run a process of its own, started in the
checkout's directory (so it imports that checkout's client), the order
swapped every round; prints each run's client CPU µs per record (process
time, every thread), records/s and records per Produce request, then the
medians and the median of the paired differences.

On a shared machine the spread of one run is wider than most changes, and
the CPU per record moves with the records per request (the broker's pace
decides how many wait for each request): pairs run seconds apart, against
the same cluster, are the figure to read.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

VALUE_BYTES = 100


async def _one_run(bootstrap: str, records: int) -> str:
    from bench.suite import kraftlog_cluster as kl  # this checkout's, from the working directory
    job = kl.ProduceJob(bootstrap, "rf1", records, VALUE_BYTES, "1", False, 300)
    await job.prepare()
    try:
        started, cpu = time.monotonic(), time.process_time()
        answer = await job.run()
        wall, cpu = time.monotonic() - started, time.process_time() - cpu
        metrics = job._producer.metrics()
    finally:
        await job.close()
    n = answer["records"]
    return (f"cpu_us={cpu / n * 1e6:.3f} rate={n / wall:.0f} "
            f"per_request={metrics['record-send-total'] / max(1, metrics['request-total']):.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--job", help=argparse.SUPPRESS)  # a run's own process: the cluster's bootstrap
    args = parser.parse_args()
    if args.job:
        sys.path[0] = os.getcwd()  # the checkout run in, not this file's (it may have no such file)
        print("RESULT " + asyncio.run(_one_run(args.job, args.records)))
        return
    from .suite import kraftlog_cluster as kl
    from .suite.processes import PeerProcesses
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    with PeerProcesses() as processes, kl.start_cluster(processes.directory("kraftlog"), 1) as cluster:
        bootstrap = kl.bootstrap(cluster)
        for n in range(args.rounds):
            for side in ("before", "after") if n % 2 == 0 else ("after", "before"):
                load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
                done = subprocess.run([sys.executable, str(Path(__file__).resolve()), ".", ".", "--job", bootstrap,
                                       "--records", str(args.records)], cwd=trees[side], capture_output=True,
                                      text=True, timeout=600)
                result = next((line for line in done.stdout.splitlines() if line.startswith("RESULT ")), None)
                if result is None:
                    raise SystemExit(f"{side} run failed:\n{done.stderr[-3000:]}")
                runs[side].append({k: float(v) for k, v in (kv.split("=") for kv in result.split()[1:])})
                print(f"round {n + 1} {side}: {result[7:]} (load {load})", flush=True)
    for side, rows in runs.items():
        print(f"{side}: median {statistics.median(r['cpu_us'] for r in rows):.3f} µs/record, "
              f"{statistics.median(r['rate'] for r in rows):,.0f} records/s, "
              f"{statistics.median(r['per_request'] for r in rows):,.0f} records/request")
    differences = [a["cpu_us"] - b["cpu_us"] for b, a in zip(runs["before"], runs["after"])]
    print(f"after - before, paired by round: median {statistics.median(differences):+.3f} µs/record, "
          f"{sum(d < 0 for d in differences)} of {len(differences)} rounds lower")


if __name__ == "__main__":
    main()
