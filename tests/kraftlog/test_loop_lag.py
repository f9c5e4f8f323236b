"""The event-loop lag probe (kraftlog_server/metrics/loop_lag.py): samples
land in the right buckets, and a blocked loop shows as one late sample."""
from __future__ import annotations

import asyncio
import time

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kraftlog_server.metrics.loop_lag import NAME, LagHistogram, LoopLagProbe


def test_samples_go_to_the_first_bucket_at_or_above_them() -> None:
    h = LagHistogram((0.001, 0.01))
    for sample in (-0.0001, 0.0, 0.001, 0.002, 0.01, 0.5):
        h.add(sample)
    assert h.counts == [3, 2, 1]  # an early timer counts as on time; a bound is inclusive (Prometheus' le)
    assert h.cumulative() == [("0.001", 3), ("0.01", 5), ("+Inf", 6)]
    assert h.max_s == 0.5 and abs(h.total_s - 0.513) < 1e-9


def test_a_blocked_loop_is_one_late_sample_in_the_exposed_histogram() -> None:
    probe = LoopLagProbe(period_s=0.005)

    async def scenario() -> None:
        probe.start()
        await asyncio.sleep(0.05)
        time.sleep(0.12)  # a step that holds the loop: the timer due meanwhile runs late
        await asyncio.sleep(0.05)
        probe.stop()

    asyncio.run(scenario())
    h = probe.histogram
    assert h.samples >= 3
    assert h.max_s >= 0.1
    registry = CollectorRegistry(auto_describe=False)
    registry.register(probe)
    [family] = [f for f in text_string_to_metric_families(generate_latest(registry).decode()) if f.name == NAME]
    counts = {s.labels.get("le"): s.value for s in family.samples if s.name == NAME + "_bucket"}
    assert counts["+Inf"] == h.samples
    assert counts["0.1"] == h.samples - 1  # only the stalled one is above 100 ms
