"""The reassignment scenario's time below min ISR: fault windows read from a
history, stretches measured over ISR samples (no cluster)."""
from __future__ import annotations

import math
import threading
from types import SimpleNamespace

from chaos.history import NEMESIS
from chaos.min_isr import FaultWindow, IsrSample, IsrSampler, below_min_isr, fault_windows, partitions_of, violations

REPLICAS = (4, 5, 6)


def series(*points: tuple[float, tuple[int, ...]], partition: int = 0) -> list[IsrSample]:
    return [IsrSample(t, partition, REPLICAS, isr) for t, isr in points]


def nemesis(time_s: float, f: str, phase: str, **details: object) -> dict:
    return {"process": NEMESIS, "type": "info", "f": f, "time": int(time_s * 1e9), "value": {"phase": phase, **details}}


def test_fault_windows_pair_each_start_with_its_stop_and_skip_the_rest() -> None:
    history = [
        {"process": 0, "type": "invoke", "f": "send", "key": "0", "value": 1, "time": 0},
        nemesis(1.0, "reassign", "asked", partition=0, target=[4, 5, 7]),
        nemesis(2.0, "kill", "start", nodes=[5]),
        nemesis(5.5, "kill", "stop"),
        nemesis(6.0, "kill", "skipped", reason="nobody leads"),
        nemesis(8.0, "partition-halves", "start", groups=[[1, 2], [3, 4]]),
        nemesis(9.0, "partition-halves", "stop"),
        nemesis(12.0, "kill", "start", nodes=[6]),
    ]
    assert fault_windows(history) == [FaultWindow(2.0, 5.5, (5,)), FaultWindow(8.0, 9.0, ()),
                                      FaultWindow(12.0, math.inf, (6,))]


def test_never_below_min_isr_reports_zero() -> None:
    report = below_min_isr(series((0.0, REPLICAS), (0.2, (4, 5)), (0.4, REPLICAS)), [], 2, 3.0)
    assert report == {0: {"samples": 3, "fault_s": 0.0, "unexplained_s": 0.0, "unexplained_from_s": None}}


def test_an_unexplained_stretch_lasts_until_the_first_sample_back_at_min_isr() -> None:
    samples = series((0.0, REPLICAS), (1.0, (4,)), (1.2, (4,)), (1.4, (4,)), (2.0, (4, 5)), (3.0, (4,)), (3.2, (4, 5)))
    report = below_min_isr(samples, [], 2, 3.0)[0]
    assert (report["unexplained_s"], report["unexplained_from_s"], report["fault_s"]) == (1.0, 1.0, 0.0)
    assert violations({0: report}, 0.9) and not violations({0: report}, 1.0)


def test_a_stretch_still_open_at_the_last_sample_ends_there() -> None:
    report = below_min_isr(series((0.0, (4,)), (0.5, (4,)), (2.5, (4,))), [], 2, 3.0)[0]
    assert report["unexplained_s"] == 2.5


def test_below_min_isr_while_a_fault_is_in_effect_is_the_fault_s() -> None:
    samples = series((0.0, REPLICAS), (2.0, (4,)), (3.0, (4,)), (4.0, (4, 5, 6)))
    report = below_min_isr(samples, [FaultWindow(1.5, 3.5, (5,))], 2, 3.0)[0]
    assert (report["fault_s"], report["unexplained_s"]) == (2.0, 0.0)


def test_a_killed_replica_explains_the_stretch_until_it_is_back_in_the_isr_after_the_grace() -> None:
    # Broker 5 killed at 1 s, restarted at 3 s; it still shows in the ISR at 4 s (before the
    # controller fenced it: inside the 3 s grace), drops out, and is back at 9 s. Broker 6 lags from
    # 7 s to 12 s: from 9 s on nothing but the move explains the partition's ISR of one.
    samples = series((0.0, REPLICAS), (2.0, (4, 6)), (4.0, (4, 5, 6)), (5.0, (4, 6)), (7.0, (4,)), (8.0, (4,)),
                     (9.0, (4, 5)), (9.5, (4,)), (12.0, (4,)), (13.0, REPLICAS))
    report = below_min_isr(samples, [FaultWindow(1.0, 3.0, (5,))], 2, 3.0)[0]
    assert report["fault_s"] == 2.0  # 7 s to 9 s: broker 5 still on its way back
    assert (report["unexplained_s"], report["unexplained_from_s"]) == (3.5, 9.5)


def test_a_fault_on_a_broker_outside_the_missing_replicas_explains_nothing_after_it_stops() -> None:
    samples = series((0.0, REPLICAS), (5.0, (4,)), (6.0, (4,)), (7.0, REPLICAS))
    report = below_min_isr(samples, [FaultWindow(1.0, 2.0, (7,))], 2, 3.0)[0]
    assert (report["fault_s"], report["unexplained_s"]) == (0.0, 2.0)


def test_partitions_are_measured_apart() -> None:
    samples = series((0.0, (4,)), (1.0, REPLICAS)) + series((0.0, REPLICAS), (0.5, (4,)), (3.0, REPLICAS), partition=1)
    report = below_min_isr(samples, [], 2, 3.0)
    assert (report[0]["unexplained_s"], report[1]["unexplained_s"]) == (1.0, 2.5)
    assert [v.split(" below")[0] for v in violations(report, 1.5)] == ["partition 1"]


def answer(isr: tuple[int, ...]) -> SimpleNamespace:
    partition = SimpleNamespace(partition_index=0, replica_nodes=list(REPLICAS), isr_nodes=list(isr))
    return SimpleNamespace(topics=[SimpleNamespace(name="other", partitions=[]),
                                   SimpleNamespace(name="chaos", partitions=[partition])])


def test_the_sampler_keeps_each_answer_and_skips_no_answer() -> None:
    answers = iter([answer((6, 4)), None, answer((4,))])
    done = threading.Event()

    def read() -> object:
        value = next(answers, None)
        if value is None and not done.is_set() and len(sampler.samples) == 2:
            done.set()
        return value

    ticks = iter(range(100))
    sampler = IsrSampler(read, "chaos", lambda: float(next(ticks)), interval_s=0.01)
    sampler.start()
    assert done.wait(10)
    sampler.stop(timeout=10)
    assert sampler.errors == []
    assert [(s.time_s, s.isr) for s in sampler.samples] == [(0.0, (4, 6)), (2.0, (4,))]
    assert partitions_of(None, "chaos") == {}
