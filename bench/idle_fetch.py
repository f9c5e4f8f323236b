"""Idle brokers with many partitions: what replication costs when nothing is written.

Starts 3 controllers + 3 brokers (LocalCluster), creates --partitions
partitions (RF 3, --per-topic a topic), waits until every one is led with
its whole replica set in the ISR, lets the fetchers settle, then measures
for --seconds while nothing is produced or consumed:

- each broker's CPU (% of one core: utime + stime from /proc/PID/stat);
- each broker's bytes read and written through system calls per second
  (/proc/PID/io rchar/wchar: on an idle broker that is its sockets: the
  followers' Fetch requests and their answers);
- optionally (--profile S) a py-spy profile of broker 1 for S seconds, its
  top functions by samples (own and with callees).

`--properties k=v,...` passes broker settings, e.g.
`max.incremental.fetch.session.cache.slots=0` for sessionless fetches (every
fetch names every partition, as before KIP-227).

    python -m bench.idle_fetch [--partitions 10000] [--per-topic 100] [--seconds 20]
                               [--profile 10] [--properties k=v,...] [--out bench/results/idle_fetch.json]
"""
from __future__ import annotations

import argparse
import collections
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_results import save_results
from bench.cluster import cpu_seconds
from bench.suite.processes import py_spy
from devcluster.local_cluster import LocalCluster

SETTLE_S = 10.0


def io_bytes(pid: int) -> int:
    fields = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return int(fields["rchar"]) + int(fields["wchar"])


def create(cluster: LocalCluster, count: int, per_topic: int, wait_s: float = 900) -> dict[str, Any]:
    started = time.monotonic()
    for t in range(count // per_topic):
        cluster.create_topic(f"idle-{t:04d}", per_topic, 3, timeout=120)
    created = time.monotonic() - started
    deadline = time.monotonic() + wait_s
    ready = 0
    while time.monotonic() < deadline:
        answer = cluster.metadata(timeout=30)
        if answer is not None:
            scale = [p for topic in answer.topics if topic.name.startswith("idle-") for p in topic.partitions]
            ready = sum(1 for p in scale if p.leader_id >= 0 and len(p.isr_nodes) == 3)
            if ready >= count:
                break
        time.sleep(1)
    return {"create_requests_s": round(created, 1), "ready_s": round(time.monotonic() - started, 1),
            "ready": ready}


def measure(pids: dict[int, int], seconds: float) -> dict[int, dict[str, float]]:
    cpu = {b: cpu_seconds(pid) for b, pid in pids.items()}
    io = {b: io_bytes(pid) for b, pid in pids.items()}
    time.sleep(seconds)
    return {b: {"cpu_percent": round(100 * (cpu_seconds(pid) - cpu[b]) / seconds, 2),
                "io_bytes_per_s": round((io_bytes(pid) - io[b]) / seconds)} for b, pid in pids.items()}


def profile(pid: int, seconds: float, workdir: Path, top: int = 15) -> dict[str, Any]:
    """py-spy's collapsed stacks of `pid`, summed per function (own samples and with callees)."""
    spy = py_spy()
    out = workdir / "profile.txt"
    run = subprocess.run([spy, "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "200",
                          "--format", "raw", "--output", str(out), "--nonblocking"],
                         capture_output=True, text=True)
    if run.returncode != 0 or not out.exists():
        return {"error": (run.stderr or run.stdout).strip()[-500:]}
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        samples += n
        frames = [f.split(" (")[0] + " " + f.rsplit("/", 1)[-1].rstrip(")") for f in stack.split(";")]
        own[frames[-1]] += n
        for frame in set(frames):
            total[frame] += n
    return {"samples": samples, "own": own.most_common(top), "total": total.most_common(top)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--per-topic", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--profile", type=float, default=0, help="seconds of py-spy on broker 1 (0: none)")
    parser.add_argument("--properties", default="", help="broker settings k=v,...")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "idle_fetch.json"))
    args = parser.parse_args()
    properties = dict(kv.split("=", 1) for kv in args.properties.split(",") if kv)
    results: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                           "load_avg": os.getloadavg()}, "settings": vars(args)}
    with tempfile.TemporaryDirectory(prefix="kraftlog-bench-idle-") as workdir, \
            LocalCluster(Path(workdir), properties=properties) as cluster:
        cluster.start()
        cluster.wait_for_brokers(timeout=60)
        results["setup"] = create(cluster, args.partitions, args.per_topic)
        print("setup:", results["setup"], flush=True)
        time.sleep(SETTLE_S)
        pids = {b: cluster.pids[b] for b in cluster.brokers}
        results["idle"] = measure(pids, args.seconds)
        print("idle:", results["idle"], flush=True)
        if args.profile > 0:
            results["profile_broker"] = cluster.brokers[0]
            results["profile"] = profile(pids[cluster.brokers[0]], args.profile, Path(workdir))
            for kind in ("own", "total"):
                print(f"profile ({kind}):", flush=True)
                for name, n in results["profile"].get(kind, []):
                    print(f"  {n:6d}  {name}", flush=True)
    out = save_results(args.out, results)
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
