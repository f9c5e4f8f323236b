"""Scheduling delay: how late the node's event loop runs a timer.

Every request on a node is a step of one event loop, so when the loop is
busy (a long step, a garbage collection, the CPU given to another process)
every waiting answer waits longer. A timer asked for every PERIOD_S is the
probe: the time between when it was due and when it ran is the delay any
callback due then saw. The samples go into a histogram
(`kraftlog_event_loop_lag_seconds`); a benchmark scrapes it before and after
a run and prints the percentiles of the difference beside the produce
latencies (bench/produce_latency.py).

`LagHistogram` is the pure part (samples in, cumulative buckets out);
`LoopLagProbe` is the timer on the running loop.
"""
from __future__ import annotations

import asyncio
import bisect
from typing import Iterator, Optional, Sequence

from prometheus_client.core import HistogramMetricFamily, Metric

PERIOD_S = 0.01  # 100 samples a second: cheap next to a request, fine enough for a p99 over a few seconds
# The delay a request can see, from a clean wake-up to a stall (seconds).
BUCKETS_S = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1.0)
NAME = "kraftlog_event_loop_lag_seconds"


class LagHistogram:
    """Counts of lateness samples per bucket (upper bounds BUCKETS_S, then +Inf)."""

    def __init__(self, buckets: Sequence[float] = BUCKETS_S) -> None:
        self.bounds = tuple(buckets)
        self.counts = [0] * (len(self.bounds) + 1)
        self.total_s = 0.0
        self.max_s = 0.0

    def add(self, lateness_s: float) -> None:
        lateness_s = max(lateness_s, 0.0)  # the loop may run a timer a clock tick early
        self.counts[bisect.bisect_left(self.bounds, lateness_s)] += 1
        self.total_s += lateness_s
        self.max_s = max(self.max_s, lateness_s)

    @property
    def samples(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[str, int]]:
        """Prometheus' buckets: ("le", samples at or below it), +Inf last."""
        out, running = [], 0
        for bound, count in zip((*map(repr, self.bounds), "+Inf"), self.counts):
            running += count
            out.append((bound, running))
        return out


class LoopLagProbe:
    """The periodic timer on the running loop, measuring its own lateness."""

    def __init__(self, period_s: float = PERIOD_S, histogram: Optional[LagHistogram] = None) -> None:
        self.period_s = period_s
        self.histogram = histogram if histogram is not None else LagHistogram()
        self._handle: Optional[asyncio.TimerHandle] = None

    def start(self) -> None:
        self._schedule(asyncio.get_running_loop())

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        due = loop.time() + self.period_s
        self._handle = loop.call_at(due, self._fired, loop, due)

    def _fired(self, loop: asyncio.AbstractEventLoop, due: float) -> None:
        self.histogram.add(loop.time() - due)
        self._schedule(loop)  # from now, not from `due`: a stall gives one late sample, not a burst

    def collect(self) -> Iterator[Metric]:
        h = self.histogram
        family = HistogramMetricFamily(NAME, "How late the node's event loop ran a timer due every "
                                             f"{self.period_s * 1000:g} ms (scheduling delay)")
        family.add_metric([], h.cumulative(), sum_value=h.total_s)
        yield family
