"""Run seeded simulator schedules.

    python -m metadata_quorum.sim --schedules 2000 --seed 1
    python -m metadata_quorum.sim --schedules 1 --seed 193 --verbose --trace-lines 500   # replay one seed
    python -m metadata_quorum.sim --schedules 20000 --jobs 2 --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from multiprocessing import Pool
from typing import Iterable, Optional

from functools import partial

from .bugs import BUGS
from .schedule import ScheduleResult, run_schedule


def _run(seed: int, bug: Optional[str] = None, trace_lines: int = 60) -> ScheduleResult:
    hooks = (BUGS[bug],) if bug else ()
    return run_schedule(seed, hooks, trace_lines)


def run_many(
    first_seed: int, count: int, jobs: int = 1, bug: Optional[str] = None, trace_lines: int = 60
) -> Iterable[ScheduleResult]:
    seeds = range(first_seed, first_seed + count)
    run = partial(_run, bug=bug, trace_lines=trace_lines)
    if jobs <= 1:
        return map(run, seeds)
    pool = Pool(jobs)
    return pool.imap(run, seeds, chunksize=16)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m metadata_quorum.sim", description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=100, help="how many schedules (seeds) to run")
    parser.add_argument("--seed", type=int, default=0, help="first seed; schedule i uses seed+i")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--json", action="store_true", help="print only a JSON summary")
    parser.add_argument("--verbose", action="store_true", help="print each schedule and its faults")
    parser.add_argument("--trace-lines", type=int, default=60, help="events shown for a failing seed")
    parser.add_argument("--inject-bug", choices=sorted(BUGS), help="test only: run with a deliberate bug")
    args = parser.parse_args(argv)

    started = time.monotonic()
    violations = 0
    first_failing: Optional[int] = None
    failing_report = ""
    totals: Counter[str] = Counter()
    extra = f" --inject-bug {args.inject_bug}" if args.inject_bug else ""
    for result in run_many(args.seed, args.schedules, args.jobs, args.inject_bug, args.trace_lines):
        totals["virtual ms"] += result.virtual_ms
        totals["messages delivered"] += result.messages
        totals["entries committed"] += result.committed
        totals.update(result.stats)
        if args.verbose and not args.json:
            print(result.report(extra))
            for fault in result.faults:
                print("   ", fault)
        if not result.ok:
            violations += 1
            if first_failing is None or result.seed < first_failing:
                first_failing = result.seed
                failing_report = result.report(extra)
    elapsed = time.monotonic() - started

    if args.json:
        print(json.dumps({"schedules": args.schedules, "violations": violations, "first_failing_seed": first_failing}))
    else:
        print(
            f"{args.schedules} schedules (seeds {args.seed}..{args.seed + args.schedules - 1}) "
            f"in {elapsed:.1f}s: {violations} violations"
        )
        for key in sorted(totals):
            print(f"  {key:<36} {totals[key]}")
        if first_failing is not None:
            print()
            print(failing_report)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
