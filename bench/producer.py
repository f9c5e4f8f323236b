"""Producer benchmark: one producer process (the client library's AsyncProducer)
against the suite's cluster (3 controllers + 3 brokers as deploy/local.yaml,
on free ports; topics rf1 and rf3 of 6 partitions, rf3 with
min.insync.replicas 2).

The producer is the suite's ProduceJob (bench/suite/kraftlog_cluster.py:
batch.size 64 KiB, linger.ms 5, 5 requests in flight, 100-byte values, no
key), run in this process, so that one process's throughput is what is
measured and `py-spy record -- python -m bench.producer` profiles it. Runs:

    rf1  acks=1, idempotence off
    rf3  acks=all, idempotence on

Per run: records/s, this process's CPU seconds per million records and the
brokers' (from /proc). `--profile DIR` also records py-spy (raw, 200 Hz,
--gil: only samples where a thread holds the GIL, i.e. Python work, not
threads parked in native waits) of this process and of every broker during
each run, into DIR/<run>-<who>.txt (folded stacks, one per line with its count).

    python -m bench.producer [--records 300000] [--seconds 60] [--runs rf1,rf3] [--profile DIR]
                             [--out bench/results/producer.json]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional


from bench.bench_results import save_results
from bench.suite import kraftlog_cluster as kl
from bench.suite.parallel import cpu_seconds
from devcluster.local_cluster import LocalCluster

RECORD_BYTES = 100
RUNS = {"rf1": ("rf1", "1", False), "rf3": ("rf3", "all", True)}  # name: topic, acks, enable.idempotence
PY_SPY = Path(sys.executable).parent / "py-spy"


async def produce(job: kl.ProduceJob) -> dict[str, Any]:
    try:
        await job.prepare()
        started, cpu = time.monotonic(), time.process_time()
        answer = await job.run()
        return {**answer, "seconds": time.monotonic() - started, "cpu_s": time.process_time() - cpu}
    finally:
        await job.close()


@contextmanager
def profiled(directory: Optional[Path], run: str, pids: dict[str, int]) -> Iterator[None]:
    """py-spy on each pid for the duration (nothing when `directory` is None)."""
    spies: list[subprocess.Popen[bytes]] = []
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
        for who, pid in pids.items():
            spies.append(subprocess.Popen(
                [str(PY_SPY), "record", "--gil", "-r", "200", "-f", "raw", "-o", str(directory / f"{run}-{who}.txt"),
                 "-p", str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1.0)  # attached before the clock starts
    try:
        yield
    finally:
        for spy in spies:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        for spy in spies:
            try:
                spy.wait(60)
            except subprocess.TimeoutExpired:
                spy.kill()
                spy.wait()


def chosen_runs(parser: argparse.ArgumentParser, text: str, known: Iterable[str]) -> list[str]:
    """The runs a comma-separated --runs names, in order; a usage error for one not in `known`."""
    runs = [r.strip() for r in text.split(",") if r.strip()]
    unknown = [r for r in runs if r not in known]
    if unknown:
        parser.error(f"unknown run(s) {unknown}: choose from {list(known)}")
    return runs


def measure(cluster: LocalCluster, run: str, records: int, seconds: float,
            profile: Optional[Path]) -> dict[str, Any]:
    topic, acks, idempotence = RUNS[run]
    job = kl.ProduceJob(cluster.bootstrap, topic, records, RECORD_BYTES, acks, idempotence, seconds)
    brokers = {f"broker{b}": cluster.pids[b] for b in cluster.brokers}
    with profiled(profile, run, {"producer": os.getpid(), **brokers}):
        server_cpu = sum(cpu_seconds(pid) for pid in brokers.values())
        answer = asyncio.run(produce(job))
        server_cpu = sum(cpu_seconds(pid) for pid in brokers.values()) - server_cpu
    per_million = 1e6 / max(answer["records"], 1)
    return {"run": run, "acks": acks, "idempotence": idempotence, "records": answer["records"],
            "errors": answer["errors"], "undelivered": answer["undelivered"], "seconds": round(answer["seconds"], 3),
            "records_per_s": round(answer["records"] / answer["seconds"]),
            "producer_cpu_s_per_million": round(answer["cpu_s"] * per_million, 2),
            "brokers_cpu_s_per_million": round(server_cpu * per_million, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=300_000, help="records per run (default 300000)")
    parser.add_argument("--seconds", type=float, default=60.0, help="at most this long per run (default 60)")
    parser.add_argument("--runs", default="rf1,rf3", help="comma-separated, of: " + ", ".join(RUNS))
    parser.add_argument("--profile", type=Path, default=None, help="py-spy the producer and brokers into DIR")
    parser.add_argument("--out", default="bench/results/producer.json")
    args = parser.parse_args()
    runs = chosen_runs(parser, args.runs, RUNS)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-producer-") as tmp:
        cluster = kl.start_cluster(Path(tmp), 3)
        with cluster:
            for run in runs:
                result = measure(cluster, run, args.records, args.seconds, args.profile)
                results.append(result)
                print(f"{run}: acks={result['acks']:3} idempotence={str(result['idempotence']).lower():5} "
                      f"{result['records']:>8} records {result['seconds']:>7.2f} s {result['records_per_s']:>8} "
                      f"records/s  producer {result['producer_cpu_s_per_million']} CPU s/M records, brokers "
                      f"{result['brokers_cpu_s_per_million']}  errors {result['errors']}", flush=True)
    summary = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                           "load_average": os.getloadavg()},
               "record_bytes": RECORD_BYTES, "producer_settings": kl.PRODUCER_SETTINGS, "runs": results}
    print(f"results: {save_results(args.out, summary)}")


if __name__ == "__main__":
    main()
