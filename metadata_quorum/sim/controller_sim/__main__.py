"""Run seeded controller simulator schedules.

    python -m metadata_quorum.sim.controller_sim --schedules 300 --seed 0
    python -m metadata_quorum.sim.controller_sim --schedules 1 --seed 17 --verbose --trace-lines 500
    python -m metadata_quorum.sim.controller_sim --schedules 1000 --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from typing import Optional

from .bugs import BUGS
from .schedule import TRACE_LINES, ControllerScheduleResult, run_controller_schedule


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m metadata_quorum.sim.controller_sim",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=100, help="how many schedules (seeds) to run")
    parser.add_argument("--seed", type=int, default=0, help="first seed; schedule i uses seed+i")
    parser.add_argument("--json", action="store_true", help="print only a JSON summary")
    parser.add_argument("--verbose", action="store_true", help="print each schedule and its faults")
    parser.add_argument("--trace-lines", type=int, default=TRACE_LINES, help="events shown for a failing seed")
    parser.add_argument("--inject-bug", choices=sorted(BUGS), help="test only: run with a deliberate bug")
    args = parser.parse_args(argv)

    started = time.monotonic()
    failing: list[ControllerScheduleResult] = []
    totals: Counter[str] = Counter()
    extra = f" --inject-bug {args.inject_bug}" if args.inject_bug else ""
    for seed in range(args.seed, args.seed + args.schedules):
        result = run_controller_schedule(seed, args.inject_bug, args.trace_lines)
        totals.update(result.stats)
        totals["virtual ms"] += result.virtual_ms
        if not result.ok:
            failing.append(result)
        if args.verbose and not args.json:
            print(result.report(extra))
            print("".join(f"    {fault}\n" for fault in result.faults), end="")
    elapsed = time.monotonic() - started

    if args.json:
        print(json.dumps({"schedules": args.schedules, "violations": len(failing),
                          "first_failing_seed": failing[0].seed if failing else None,
                          "stats": dict(sorted(totals.items()))}))
    else:
        print(f"{args.schedules} schedules (seeds {args.seed}..{args.seed + args.schedules - 1}) "
              f"in {elapsed:.1f}s: {len(failing)} violations")
        print("".join(f"  {key:<44} {totals[key]}\n" for key in sorted(totals)), end="")
        if failing and not args.verbose:
            print()
            print(failing[0].report(extra))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
