"""Clock skew for the chaos testbed: one clock file per node.

Each node is started with `KRAFTLOG_CLOCK_FILE` naming its file (through
the command prefix, so nothing in a node's configuration can point at
one); the nemesis writes a skew there and the node's wall clock
(`partition_log/clock.py`) follows within a tenth of a second. Removing the
skew is itself a jump back to the real time.
"""
from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Iterable

from partition_log.clock import CLOCK_FILE_ENV, NO_SKEW, Skew, write_skew

# A jump of up to five minutes either way: well inside Kafka's timestamp
# bounds (message.timestamp.after.max.ms, one hour) and retention, so a
# node that honours its monotonic clock for every timeout loses nothing.
MAX_JUMP_MS = 300_000
RATES = (0.5, 0.9, 1.1, 2.0)


class ClockFiles:
    def __init__(self, directory: Path, nodes: Iterable[int]) -> None:
        self.paths = {n: Path(directory) / f"clock-{n}.json" for n in nodes}
        for path in self.paths.values():
            write_skew(path, NO_SKEW)

    def prefix(self, node: int) -> list[str]:
        """Prepend to a node's command so its wall clock reads its file."""
        return ["env", f"{CLOCK_FILE_ENV}={self.paths[node]}"]

    def skew(self, node: int, skew: Skew) -> None:
        write_skew(self.paths[node], skew)

    def reset(self, node: int) -> None:
        write_skew(self.paths[node], NO_SKEW)


def draw_skew(rng: random.Random) -> Skew:
    """A seeded jump (forward or back) and a drift from now."""
    jump = rng.choice((-1, 1)) * rng.uniform(1000, MAX_JUMP_MS)
    return Skew(offset_ms=round(jump), rate=rng.choice(RATES), anchor_ms=time.time_ns() // 1_000_000)
