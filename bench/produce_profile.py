"""Where a producing client's CPU goes: py-spy on one process running
bench.columnar's produce() or produce_arrow() job against a one-broker
cluster (`python -m bench.produce_profile [--api produce|arrow] [--records N]
[--raw FILE]`).

Prints the client's CPU µs per record (process time: its I/O and the
sender included, as bench.columnar counts it), the broker's, and py-spy's
top frames by self time and by total time (shares of the samples taken
while the job ran; idle waits in the event loop's selector show as such).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

from .suite import kraftlog_cluster as kl
from .suite.parallel import cpu_seconds
from .suite.processes import PeerProcesses, py_spy

VALUE_BYTES = 100
TOTAL_LEFT_OUT = ("_run_code", "_run_module_as_main", "<module>", "main ", "run (", "Runner.run", "BaseEventLoop.",
                  "Handle._run", "ProduceJob.run", "ArrowProduceJob.run")


def top_frames(path: Path, count: int) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """py-spy's raw stacks ("frame;frame;... N"): the functions with the most
    self and total time, as shares (lines of a function counted together;
    the event loop's and this script's frames, on every stack, left out of
    the totals)."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    samples = 0
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        functions = [re.sub(r":\d+\)$", ")", frame) for frame in stack.split(";")]
        own[functions[-1]] += int(n)
        for function in set(functions):
            if not function.startswith(TOTAL_LEFT_OUT):
                total[function] += int(n)
        samples += int(n)
    samples = samples or 1
    return ([(f, n / samples) for f, n in own.most_common(count)],
            [(f, n / samples) for f, n in total.most_common(count)])


def thread_cpu() -> dict[int, tuple[str, float]]:
    """This process's threads: id -> (name, user + system CPU seconds so far)."""
    out = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            out[int(task.name)] = ((task / "comm").read_text().strip(), (int(fields[11]) + int(fields[12])) / tick)
        except (FileNotFoundError, ProcessLookupError):
            continue  # ended meanwhile
    return out


async def run(job: object, raw: Path, rate: int, native: bool) -> tuple[int, float, float]:
    await job.prepare()  # type: ignore[attr-defined]
    spy = subprocess.Popen([py_spy(), "record", "--nonblocking", "-r", str(rate), "-p", str(os.getpid()),
                            *(["--native", "--threads"] if native else []),
                            "-f", "raw", "-o", str(raw)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await asyncio.sleep(1.0)  # py-spy attached
        started, cpu, threads = time.monotonic(), time.process_time(), thread_cpu()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        answer = await job.run()  # type: ignore[attr-defined]
        ended, cpu = time.monotonic(), time.process_time() - cpu
        used = resource.getrusage(resource.RUSAGE_SELF)
        print(f"user {used.ru_utime - usage.ru_utime:.2f} s, system {used.ru_stime - usage.ru_stime:.2f} s, "
              f"{used.ru_minflt - usage.ru_minflt:,} minor page faults")
        after = thread_cpu()
        by_name: Counter[str] = Counter()
        for tid, (name, seconds) in after.items():
            by_name[name] += seconds - threads.get(tid, (name, 0.0))[1]
        print("CPU seconds by thread: " + ", ".join(f"{name} {s:.2f}" for name, s in by_name.most_common()))
        return answer["records"], ended - started, cpu
    finally:
        spy.send_signal(2)  # SIGINT: py-spy writes what it has
        spy.wait(timeout=60)
        await job.close()  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", choices=("produce", "arrow"), default="produce")
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--raw", type=Path, help="keep py-spy's raw stacks here")
    parser.add_argument("--native", action="store_true", help="py-spy --native --threads: C frames, per thread")
    args = parser.parse_args()
    with PeerProcesses() as processes, tempfile.TemporaryDirectory() as scratch:
        raw = args.raw or Path(scratch) / "stacks.txt"
        with kl.start_cluster(processes.directory("kraftlog"), 1) as cluster:
            boot, pids = kl.bootstrap(cluster), list(cluster.pids.values())
            if args.api == "produce":
                job: object = kl.ProduceJob(boot, "rf1", args.records, VALUE_BYTES, "1", False, 300)
            else:
                job = kl.ArrowProduceJob(boot, "rf1", args.records, VALUE_BYTES, "1", 300)
            servers = sum(cpu_seconds(pid) for pid in pids)
            records, seconds, client_cpu = asyncio.run(run(job, raw, args.rate, args.native))
            servers = sum(cpu_seconds(pid) for pid in pids) - servers
        print(f"{args.api}: {records:,} records of {VALUE_BYTES} bytes in {seconds:.2f} s "
              f"({records / seconds:,.0f}/s wall, {records / client_cpu:,.0f} per client CPU second); "
              f"client / servers CPU µs/record {client_cpu / records * 1e6:.2f} / {servers / records * 1e6:.2f} "
              f"(py-spy attached at {args.rate} Hz)")
        own, total = top_frames(raw, args.top)
        print("\nself time:")
        for frame, share in own:
            print(f"  {share:6.1%}  {frame}")
        print("\ntotal time:")
        for frame, share in total:
            print(f"  {share:6.1%}  {frame}")


if __name__ == "__main__":
    main()
