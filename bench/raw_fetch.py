"""Raw Fetch two ways in one run: one fetch at a time (the suite's row before)
and every partition's fetch in flight at once (the row now), batches left
undecoded, on 3 controllers + 3 brokers (RF 3, 6 partitions, filled by
--seconds of acks=all produce). Alternates the two --passes times; medians.

    python -m bench.raw_fetch [--seconds 5] [--passes 3] [--out bench/results/raw_fetch.json]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import cluster as cluster_bench
from bench.bench_results import save_results
from bench.suite.kraftlog_cluster import raw_fetch_mb_per_s
from devcluster.local_cluster import LocalCluster


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "raw_fetch.json"))
    args = parser.parse_args()
    results: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                           "load_avg": os.getloadavg()}, "settings": vars(args)}
    with tempfile.TemporaryDirectory(prefix="kraftlog-bench-raw-fetch-") as workdir, \
            LocalCluster(Path(workdir), properties=cluster_bench.PROPERTIES) as cluster:
        cluster.start()
        cluster.wait_for_brokers(timeout=60)
        cluster.create_topic("rf3", 6, 3, {"min.insync.replicas": "2"})
        results["filled"] = cluster_bench.throughput(cluster, "rf3", -1, args.seconds)
        passes: dict[str, list[float]] = {"one_at_a_time": [], "all_in_flight": []}
        for _ in range(args.passes):
            passes["one_at_a_time"].append(raw_fetch_mb_per_s(cluster, "rf3", in_flight=False))
            passes["all_in_flight"].append(raw_fetch_mb_per_s(cluster, "rf3", in_flight=True))
            print(passes, flush=True)
        results["mb_per_s"] = passes
        results["median_mb_per_s"] = {k: statistics.median(v) for k, v in passes.items()}
    print("median MB/s:", results["median_mb_per_s"])
    print(f"written to {save_results(args.out, results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
