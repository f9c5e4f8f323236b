"""Run one job in N fresh processes at once and measure them together.

Every system is driven the same way: each producer (or reader) is its own
process (spawned, so nothing is inherited from the suite), sets itself up
(connects, warms up), waits at a barrier with the others, then works. The
aggregate rate is all records over the span from the first start to the last
end - what a user with N processes would see.

A job is a picklable object with `async prepare()`, `async run() -> dict`
(at least {"records": n}) and `async close()`.
"""
from __future__ import annotations

import asyncio
import multiprocessing
import queue
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


def run_jobs(jobs: Sequence[Job], timeout: float) -> dict[str, Any]:
    """Run each job in its own process; {"records", "seconds", "records_per_s", "workers": [...]}.
    A process still running after `timeout` (plus setup) is killed and the run fails."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(jobs))
    results = context.Queue()
    processes = [context.Process(target=_child, args=(job, barrier, results, i), daemon=True)
                 for i, job in enumerate(jobs)]
    for process in processes:
        process.start()
    answers: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + SETUP_TIMEOUT_S + timeout
    try:
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
            "workers": workers}


def _child(job: Job, barrier: Any, results: Any, index: int) -> None:
    try:
        answer = asyncio.run(_work(job, barrier))
    except BaseException:  # noqa: BLE001 - told to the parent, which fails the run
        answer = {"error": traceback.format_exc(limit=8)}
    results.put((index, answer))


async def _work(job: Job, barrier: Any) -> dict[str, Any]:
    try:
        await job.prepare()
        await asyncio.to_thread(barrier.wait, SETUP_TIMEOUT_S)
        started = time.monotonic()
        answer = await job.run()
        ended = time.monotonic()
        return {**answer, "started": started, "ended": ended}
    finally:
        await job.close()
