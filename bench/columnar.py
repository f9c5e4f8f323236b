"""The columnar calls beside the per-record ones, in one run (`python -m
bench.columnar [--records N] [--repetitions R]`): on a one-broker cluster
(topic rf1, 6 partitions), produce() per record against produce_arrow(),
poll() against poll_arrow(), each a process of its own, with Redis XADD
and XREAD (hiredis) on the same machine beside them; runs interleaved,
medians of the repetitions, CPU per record of client and servers.

The suite (`make bench`) has the same rows on its 3-broker cluster; this is
the short run for before/after on a busy machine.
"""
from __future__ import annotations

import argparse
import statistics
from typing import Any

from .suite import kraftlog_cluster as kl
from .suite import redis_streams
from .suite.parallel import run_jobs
from .suite.processes import PeerProcesses

VALUE_BYTES = 100
RUN_SECONDS = 120


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args()
    n = args.records
    results: dict[str, list[dict[str, Any]]] = {}
    with PeerProcesses() as processes:
        redis_port = None if redis_streams.missing() else redis_streams.start(processes)
        redis_pids = [p.pid for p in processes.started if p.name.startswith("redis")]
        with kl.start_cluster(processes.directory("kraftlog"), 1) as cluster:
            boot, pids = kl.bootstrap(cluster), list(cluster.pids.values())
            for rep in range(args.repetitions):
                runs = [
                    ("produce() per record, RF1 acks=1", [kl.ProduceJob(boot, "rf1", n, VALUE_BYTES, "1", False,
                                                                         RUN_SECONDS)], pids),
                    ("produce_arrow(), RF1 acks=1", [kl.ArrowProduceJob(boot, "rf1", n, VALUE_BYTES, "1",
                                                                        RUN_SECONDS)], pids),
                    ("poll(), ConsumerRecords", [kl.ConsumeJob(boot, "rf1", n, RUN_SECONDS)], pids),
                    ("poll_arrow(), Arrow rows", [kl.ConsumeJob(boot, "rf1", n, RUN_SECONDS, arrow=True)], pids),
                ]
                if redis_port is not None:
                    stream = f"columnar-{rep}"
                    runs[:0] = [("Redis XADD pipelined", [redis_streams.XaddJob(redis_port, stream, n, VALUE_BYTES,
                                                                                RUN_SECONDS)], redis_pids)]
                    runs.insert(3, ("Redis XREAD (hiredis)", [redis_streams.XreadJob(redis_port, stream, n,
                                                                                     RUN_SECONDS)], redis_pids))
                for name, jobs, servers in runs:
                    done = run_jobs(jobs, RUN_SECONDS, servers)
                    results.setdefault(name, []).append(done)
                    print(f"rep {rep + 1}: {name}: {done['records_per_s']:,.0f} records/s", flush=True)
                if redis_port is not None:
                    redis_streams.delete_streams(redis_port, [stream])
    print(f"\n{n:,} records of {VALUE_BYTES} bytes a run, medians of {args.repetitions}\n")
    print("| run | records/s | client / servers CPU µs/record |")
    print("| --- | ---: | ---: |")
    for name, runs in results.items():
        rate = statistics.median(r["records_per_s"] for r in runs)
        client = statistics.median(r["client_cpu_s"] / max(1, r["records"]) * 1e6 for r in runs)
        servers = statistics.median(r["server_cpu_s"] / max(1, r["records"]) * 1e6 for r in runs)
        print(f"| {name} | {rate:,.0f} | {client:.2f} / {servers:.2f} |")


if __name__ == "__main__":
    main()
