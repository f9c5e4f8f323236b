"""Raw Fetch against the gRPC-Python streaming ceiling, back to back (issue 21
target 1), on 3 controllers + 3 brokers (RF 3, 6 partitions, filled by
--seconds of acks=all produce).

Each pass runs the ceiling (bench/suite/grpc_ceiling.py: 1 MiB messages,
server to client, as many bytes as one raw read moves) and then every
--modes raw fetch (bench/suite/kraftlog_cluster.RawFetchJob: the topic read
whole --reads times from the leaders, batches undecoded), each in its own
process (bench/suite/parallel.run_jobs). Per run: MB/s, its ratio to the
ceiling of the same pass, and CPU µs per MB of the client process and of the
servers (the ceiling's server; the 6 cluster nodes). Medians over --passes.

`--profile DIR`: py-spy (200 Hz, idle excluded) on each broker and on the
fetching process during the first pass's runs of each mode; the top frames
by own samples are printed and saved (`--native`: the brokers' C frames too).

    python -m bench.raw_fetch [--seconds 5] [--passes 3] [--reads 3]
        [--modes one_at_a_time,aio_pipelined,aio_pipelined@1024] [--profile DIR [--native]]
        [--out bench/results/raw_fetch.json]
"""
from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Optional

from bench import cluster as cluster_bench
from bench.bench_results import save_results
from bench.suite import kraftlog_cluster as kl
from bench.suite.grpc_ceiling import StreamJob
from bench.suite.parallel import cpu_seconds, run_jobs
from bench.suite.processes import py_spy
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import free_ports, wait_until

CEILING_MESSAGE_BYTES = 1 << 20


def start_ceiling() -> tuple[subprocess.Popen, str]:
    port = free_ports(1)[0]
    server = subprocess.Popen([sys.executable, "-m", "bench.suite.grpc_ceiling", str(port)],
                              cwd=Path(__file__).resolve().parent.parent)
    address = f"127.0.0.1:{port}"

    def listening() -> Optional[bool]:
        import socket
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return None
    wait_until(listening, 30, "the gRPC ceiling server listening", interval=0.2)
    return server, address


def figures(done: dict[str, Any], moved: int, idle_cpu_per_s: float = 0.0) -> dict[str, float]:
    """MB/s and CPU µs per MB; `idle_cpu_per_s`: the servers' CPU per second
    while nobody fetches (heartbeats, followers' long polls), taken out of
    their figure as `servers_net`."""
    mb = moved / 1e6
    return {"mb_per_s": round(mb / done["seconds"], 1),
            "client_cpu_us_per_mb": round(done["client_cpu_s"] / mb * 1e6),
            "servers_cpu_us_per_mb": round(done["server_cpu_s"] / mb * 1e6),
            "servers_net_cpu_us_per_mb": round((done["server_cpu_s"] - idle_cpu_per_s * done["seconds"]) / mb * 1e6)}


def idle_cpu_per_s(pids: list[int], seconds: float = 3.0) -> float:
    before = sum(cpu_seconds(pid) for pid in pids)
    time.sleep(seconds)
    return (sum(cpu_seconds(pid) for pid in pids) - before) / seconds


def spy(pids: dict[str, int], seconds: float, directory: Path, tag: str,
        native: bool = False) -> list[tuple[str, Path, Any]]:
    out = []
    for name, pid in pids.items():
        path = directory / f"{tag}-{name}.txt"
        # --native unwinds C stacks, which needs the process paused (no --nonblocking).
        process = subprocess.Popen([py_spy(), "record", *(["--native"] if native else ["--nonblocking"]), "-r", "200",
                                    "-d", str(max(1, int(seconds))), "-p", str(pid), "-f", "raw", "-o", str(path)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append((name, path, process))
    return out


def top_frames(path: Path, count: int = 10) -> list[tuple[str, float]]:
    """py-spy's raw stacks ("frame;frame;... N"): the frames with the most own samples, as shares."""
    own: Counter[str] = Counter()
    if not path.exists():
        return []
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if stack:
            own[stack.rsplit(";", 1)[-1]] += int(n)
    total = sum(own.values()) or 1
    return [(frame, round(n / total, 3)) for frame, n in own.most_common(count)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5, help="acks=all produce filling the topic")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--reads", type=int, default=3, help="times each run reads the topic whole")
    parser.add_argument("--modes", default=",".join(kl.RAW_FETCH_MODES),
                        help="MODE[@KIB],...: @KIB sets the fetches' partition_max_bytes (default 4096 KiB)")
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument("--native", action="store_true", help="py-spy the brokers' C frames too (gRPC's core)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "raw_fetch.json"))
    args = parser.parse_args()
    modes = args.modes.split(",")
    results: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                           "load_avg": os.getloadavg()},
                               "settings": {k: str(v) for k, v in vars(args).items()}}
    ceiling, address = start_ceiling()
    try:
        with tempfile.TemporaryDirectory(prefix="kraftlog-bench-raw-fetch-") as workdir, \
                LocalCluster(Path(workdir), properties=cluster_bench.PROPERTIES) as cluster:
            cluster.start()
            cluster.wait_for_brokers(timeout=60)
            cluster.create_topic("rf3", 6, 3, {"min.insync.replicas": "2"})
            results["filled"] = cluster_bench.throughput(cluster, "rf3", -1, args.seconds)
            servers = list(cluster.pids.values())
            runs: dict[str, list[dict[str, float]]] = {"ceiling": [], **{m: [] for m in modes}}
            profiles: dict[str, Any] = {}
            for index in range(args.passes):
                row: dict[str, dict[str, float]] = {}
                idle = idle_cpu_per_s(servers)
                for mode in modes:
                    name, _, kib = mode.partition("@")
                    job = kl.raw_fetch_job(cluster, "rf3", name, args.reads)
                    if kib:
                        job.partition_max_bytes = int(kib) << 10
                    spies = []
                    if args.profile and index == 0:
                        args.profile.mkdir(parents=True, exist_ok=True)
                        # The fetching process is spawned by run_jobs: the job starts py-spy on itself.
                        job.profile = str(args.profile / f"{mode}-client.txt")
                        spies = spy({f"broker{b}": cluster.pids[b] for b in cluster.brokers}, 20, args.profile, mode,
                                    args.native)
                    done = run_jobs([job], 600, servers)
                    moved = sum(w["bytes"] for w in done["workers"])
                    row[mode] = figures(done, moved, idle)
                    for name, path, process in spies:
                        process.send_signal(signal.SIGINT)  # py-spy writes what it sampled
                        process.wait(timeout=30)
                    if spies:
                        paths = [(name, path) for name, path, _ in spies] + [("client", Path(job.profile))]
                        profiles[mode] = {name: top_frames(path) for name, path in paths}
                    ceiling_job = StreamJob(address, "down", CEILING_MESSAGE_BYTES, moved)
                    if mode == modes[0]:
                        done = run_jobs([ceiling_job], 600, [ceiling.pid])
                        row["ceiling"] = figures(done, sum(w["bytes"] for w in done["workers"]))
                for mode in modes:
                    row[mode]["ratio"] = round(row[mode]["mb_per_s"] / row["ceiling"]["mb_per_s"], 3)
                for name, figure in row.items():
                    runs[name].append(figure)
                print(f"pass {index + 1} (servers idle: {idle * 1000:.0f} ms CPU per s):", row, flush=True)
            results["runs"] = runs
            results["median"] = {name: {k: statistics.median(f[k] for f in figures_) for k in figures_[0]}
                                 for name, figures_ in runs.items()}
            results["profiles"] = profiles
    finally:
        ceiling.terminate()
        ceiling.wait(timeout=30)
    print("medians:")
    for name, median in results["median"].items():
        print(f"  {name:16} {median}")
    for mode, tops in results.get("profiles", {}).items():
        for who, frames in tops.items():
            print(f"profile {mode} {who}:")
            for frame, share in frames:
                print(f"    {share:6.1%}  {frame}")
    print(f"written to {save_results(args.out, results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
