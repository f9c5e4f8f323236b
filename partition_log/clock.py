"""The node's two clocks: the wall clock, which the chaos testbed can skew,
and the monotonic clock, which nothing skews.

Everything that measures how long something took or waits for a deadline -
timeouts, leases, elections, replica lag - reads `monotonic_ms()`, so a
wall clock that jumps or drifts cannot fire or starve them. Only what is
about the calendar reads `wall_ms()`: record and segment timestamps,
time-based retention and roll, timestamps shown to operators, and the rules
Kafka keeps on its wall clock (flush.ms, producer-id and transactional-id
expiration). A coordinator that must rebuild a deadline from a timestamp in
its log reads the wall clock once, then runs the rest on the monotonic one.

The testbed skews one node's wall clock without touching the machine's (a
time namespace shifts only monotonic clocks, and libfaketime also fakes
`time.monotonic`, hanging threading timeouts): the node is started with
`KRAFTLOG_CLOCK_FILE` naming a JSON file `{"offset_ms": O, "rate": R,
"anchor_ms": A}`, which the nemesis rewrites; the wall clock then reads
real + O + (R - 1) * (real - A), a jump of O and a drift at rate R from the
real time A. The variable is set only by the chaos runner's command prefix;
no configuration reaches it, and without it the clock is the real one.
"""
from __future__ import annotations

import json
import logging
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

log = logging.getLogger(__name__)

CLOCK_FILE_ENV = "KRAFTLOG_CLOCK_FILE"
# How often the file is looked at again (by its modification time): a few
# stats a second, whatever the call rate.
RELOAD_INTERVAL_S = 0.1
# Rates outside this range are refused: a clock running backwards, or ten
# times fast, is no drift a real oscillator shows.
RATE_RANGE = (0.1, 10.0)


@dataclass(frozen=True)
class Skew:
    offset_ms: float = 0.0
    rate: float = 1.0
    anchor_ms: float = 0.0  # the real wall time the drift starts from

    def __post_init__(self) -> None:
        if not all(math.isfinite(v) for v in (self.offset_ms, self.rate, self.anchor_ms)):
            raise ValueError(f"clock skew values must be finite: {self}")
        if not RATE_RANGE[0] <= self.rate <= RATE_RANGE[1]:
            raise ValueError(f"clock rate {self.rate} is outside {RATE_RANGE}")

    def apply(self, real_ms: float) -> int:
        return int(real_ms + self.offset_ms + (self.rate - 1.0) * (real_ms - self.anchor_ms))

    @staticmethod
    def parse(text: str) -> "Skew":
        data = json.loads(text)
        if not isinstance(data, dict) or set(data) - {"offset_ms", "rate", "anchor_ms"}:
            raise ValueError(f"a clock file holds offset_ms, rate and anchor_ms, not {text[:80]!r}")
        values = {k: float(v) for k, v in data.items() if not isinstance(v, bool)}
        if len(values) != len(data):
            raise ValueError(f"clock file values must be numbers: {text[:80]!r}")
        return Skew(**values)


NO_SKEW = Skew()


def write_skew(path: Path, skew: Skew) -> None:
    """Set a node's skew (the testbed's side); atomic, so a node never reads half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(asdict(skew)))
    os.replace(tmp, path)


class SkewableClock:
    """The wall clock with the skew its file says (none without a file)."""

    def __init__(self, path: Optional[Path]) -> None:
        self.path = path
        self.skew = NO_SKEW
        self._checked_at = -math.inf
        self._mtime_ns: Optional[int] = None

    def wall_ms(self) -> int:
        real = time.time_ns() / 1_000_000
        if self.path is None:
            return int(real)
        now = time.monotonic()
        if now - self._checked_at >= RELOAD_INTERVAL_S:
            self._checked_at = now
            self._reload()
        return self.skew.apply(real)

    def _reload(self) -> None:
        assert self.path is not None
        try:
            mtime = self.path.stat().st_mtime_ns
            if mtime == self._mtime_ns:
                return
            self.skew, self._mtime_ns = Skew.parse(self.path.read_text()), mtime
        except FileNotFoundError:
            self.skew, self._mtime_ns = NO_SKEW, None
        except (OSError, ValueError) as exc:
            # a bad file keeps the skew in force rather than stopping the node
            log.warning("clock file %s ignored: %s", self.path, exc)


_WALL = SkewableClock(Path(os.environ[CLOCK_FILE_ENV]) if os.environ.get(CLOCK_FILE_ENV) else None)


def wall_ms() -> int:
    """Wall-clock milliseconds since the epoch, skewed when the testbed says so."""
    return _WALL.wall_ms()


def monotonic_ms() -> int:
    """Milliseconds on a clock that never jumps: for every duration and deadline."""
    return time.monotonic_ns() // 1_000_000
