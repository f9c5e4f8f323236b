"""Run one job in N fresh processes at once and measure them together.

Every system is driven the same way: each producer (or reader) is its own
process (spawned, so nothing is inherited from the suite), sets itself up
(connects, warms up), waits at a barrier with the others, then works. The
aggregate rate is all records over the span from the first start to the last
end - what a user with N processes would see.

A job is a picklable object with `async prepare()`, `async run() -> dict`
(at least {"records": n}) and `async close()`.

CPU time is counted too, because on a shared machine it is steadier than the
wall clock: each worker's own (all its threads) over run(), and the servers'
(by pid, from /proc) from the barrier until every worker answered.
"""
from __future__ import annotations

import asyncio
import multiprocessing
import os
import queue
import threading
import time
import traceback
from typing import Any, Protocol, Sequence

SETUP_TIMEOUT_S = 120.0


class Job(Protocol):
    async def prepare(self) -> None: ...
    async def run(self) -> dict[str, Any]: ...
    async def close(self) -> None: ...


class JobFailed(RuntimeError):
    pass


def run_jobs(jobs: Sequence[Job], timeout: float, servers: Sequence[int] = ()) -> dict[str, Any]:
    """Run each job in its own process; {"records", "seconds", "records_per_s", "client_cpu_s",
    "server_cpu_s", "workers": [...]} (`servers`: the pids of the system's server processes).
    A process still running after `timeout` (plus setup) is killed and the run fails."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(jobs) + 1)  # and this process, to start the servers' CPU clock
    results = context.Queue()
    processes = [context.Process(target=_child, args=(job, barrier, results, i), daemon=True)
                 for i, job in enumerate(jobs)]
    for process in processes:
        process.start()
    answers: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + SETUP_TIMEOUT_S + timeout
    try:
        try:
            barrier.wait(SETUP_TIMEOUT_S)
        except threading.BrokenBarrierError:
            pass  # a worker failed to set up: its answer says why
        server_cpu = sum(cpu_seconds(pid) for pid in servers)
        while len(answers) < len(jobs):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise JobFailed(f"{len(jobs) - len(answers)} of {len(jobs)} worker(s) still running after "
                                f"{SETUP_TIMEOUT_S + timeout:.0f}s")
            try:
                index, answer = results.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                dead = [p for i, p in enumerate(processes) if i not in answers and p.exitcode is not None]
                if dead:
                    raise JobFailed(f"worker exited with {dead[0].exitcode} without an answer") from None
                continue
            if "error" in answer:
                barrier.abort()
                raise JobFailed(answer["error"])
            answers[index] = answer
        server_cpu = sum(cpu_seconds(pid) for pid in servers) - server_cpu
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
        results.close()
    workers = [answers[i] for i in range(len(jobs))]
    records = sum(w["records"] for w in workers)
    seconds = max(w["ended"] for w in workers) - min(w["started"] for w in workers)
    return {"records": records, "seconds": seconds, "records_per_s": records / seconds if seconds > 0 else 0.0,
            "client_cpu_s": sum(w["cpu_s"] for w in workers), "server_cpu_s": server_cpu, "workers": workers}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process (its threads included), from /proc/PID/stat."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _child(job: Job, barrier: Any, results: Any, index: int) -> None:
    try:
        answer = asyncio.run(_work(job, barrier))
    except BaseException:  # noqa: BLE001 - told to the parent, which fails the run
        answer = {"error": traceback.format_exc(limit=8)}
    results.put((index, answer))


async def _work(job: Job, barrier: Any) -> dict[str, Any]:
    try:
        try:
            await job.prepare()
        except BaseException:
            barrier.abort()  # the others (and the parent) stop waiting for this one
            raise
        await asyncio.to_thread(barrier.wait, SETUP_TIMEOUT_S)
        started, cpu = time.monotonic(), time.process_time()
        answer = await job.run()
        ended, cpu = time.monotonic(), time.process_time() - cpu
        return {**answer, "started": started, "ended": ended, "cpu_s": cpu}
    finally:
        await job.close()
