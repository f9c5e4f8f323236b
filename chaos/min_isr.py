"""How long each partition stayed below min.insync.replicas during a chaos
run, and whether a fault of the nemesis explains it (the reassignment
scenario's check: no partition below min ISR for longer than the
reassignment's own steps).

`IsrSampler` asks a broker for the topic's partitions every
`interval_s` and keeps each partition's replicas and ISR on the
history's clock. The rest is pure: `fault_windows` reads the faults out
of the history, `below_min_isr` measures, per partition, the longest
continuous time below min ISR that a fault explains and the longest that
nothing explains, and `violations` names the partitions whose unexplained
time passes a bound.

A sample below min ISR is explained by a fault when a fault is in effect
at its time (any fault: a killed leader moves leadership and followers
refetch), or when one of the replicas missing from its ISR was hit by a
fault and has not been back in this partition's ISR since: a killed
broker restarted still has to register and catch up. It counts as back
only when seen in the ISR `recovery_grace_s` after the fault stopped or
later; before that the ISR the brokers show may still be the one from
before the kill (the controller fences a broker only after
broker.session.timeout.ms without heartbeats).

A stretch below min ISR lasts from its first sample to the first sample
that is not part of it (the next sample at or above min ISR, or of the
other kind), so it is measured to within one sampling interval, never
shorter than it was; samples the brokers did not answer leave a gap the
stretch spans.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

from .history import NEMESIS
from .workload import WorkloadThreads

SAMPLE_INTERVAL_S = 0.2
FAULT, UNEXPLAINED = "fault", "unexplained"


@dataclass(frozen=True)
class IsrSample:
    time_s: float
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class FaultWindow:
    start_s: float
    stop_s: float  # math.inf when the history never says it stopped
    nodes: tuple[int, ...]  # the nodes it hit (none for a network fault)


def fault_windows(history: Iterable[dict[str, Any]]) -> list[FaultWindow]:
    """The nemesis's faults in a history, each from its "start" line to the
    next "stop" line (the nemesis inflicts one fault at a time)."""
    windows: list[FaultWindow] = []
    open_at: Optional[tuple[float, tuple[int, ...]]] = None
    for line in history:
        if line["process"] != NEMESIS:
            continue
        phase = line["value"].get("phase")
        at = line["time"] / 1e9
        if phase == "start":
            if open_at is not None:  # not expected: close the one before where the next begins
                windows.append(FaultWindow(open_at[0], at, open_at[1]))
            open_at = (at, tuple(line["value"].get("nodes") or ()))
        elif phase == "stop" and open_at is not None:
            windows.append(FaultWindow(open_at[0], at, open_at[1]))
            open_at = None
    if open_at is not None:
        windows.append(FaultWindow(open_at[0], math.inf, open_at[1]))
    return windows


def below_min_isr(samples: Iterable[IsrSample], faults: Sequence[FaultWindow], min_isr: int,
                  recovery_grace_s: float) -> dict[int, dict[str, Any]]:
    """Per partition: {"samples", "fault_s", "unexplained_s", "unexplained_from_s"}: the
    longest continuous time below `min_isr` explained by a fault and not explained
    (seconds), and when the longest unexplained one began (None if there was none)."""
    by_partition: dict[int, list[IsrSample]] = {}
    for sample in samples:
        by_partition.setdefault(sample.partition, []).append(sample)
    report: dict[int, dict[str, Any]] = {}
    for partition, series in sorted(by_partition.items()):
        series.sort(key=lambda s: s.time_s)
        kinds = _classify(series, faults, min_isr, recovery_grace_s)
        longest = {FAULT: (0.0, None), UNEXPLAINED: (0.0, None)}
        i = 0
        while i < len(series):
            kind = kinds[i]
            if kind is None:
                i += 1
                continue
            j = i
            while j + 1 < len(series) and kinds[j + 1] == kind:
                j += 1
            end = series[j + 1].time_s if j + 1 < len(series) else series[j].time_s
            if end - series[i].time_s > longest[kind][0]:
                longest[kind] = (end - series[i].time_s, series[i].time_s)
            i = j + 1
        report[partition] = {"samples": len(series), "fault_s": round(longest[FAULT][0], 3),
                             "unexplained_s": round(longest[UNEXPLAINED][0], 3),
                             "unexplained_from_s": longest[UNEXPLAINED][1]}
    return report


def _classify(series: Sequence[IsrSample], faults: Sequence[FaultWindow], min_isr: int,
              recovery_grace_s: float) -> list[Optional[str]]:
    """Each sample of one partition (in time order): None (at or above min ISR), FAULT or UNEXPLAINED."""
    kinds: list[Optional[str]] = []
    recovering: dict[int, float] = {}  # node hit by a fault -> when a sample of it in the ISR clears it
    started = 0
    ordered = sorted(faults, key=lambda f: f.start_s)
    for sample in series:
        while started < len(ordered) and ordered[started].start_s <= sample.time_s:
            for node in ordered[started].nodes:
                recovering[node] = ordered[started].stop_s + recovery_grace_s
            started += 1
        for node in [n for n, clears_from in recovering.items() if n in sample.isr and sample.time_s >= clears_from]:
            del recovering[node]
        if len(sample.isr) >= min_isr:
            kinds.append(None)
            continue
        in_effect = any(f.start_s <= sample.time_s <= f.stop_s for f in faults)
        missing = set(sample.replicas) - set(sample.isr)
        kinds.append(FAULT if in_effect or missing & recovering.keys() else UNEXPLAINED)
    return kinds


def violations(report: dict[int, dict[str, Any]], bound_s: float) -> list[str]:
    """The partitions below min ISR with no fault to explain it for longer than `bound_s`."""
    return [f"partition {p} below min ISR for {r['unexplained_s']:g}s with no fault to explain it "
            f"(from {r['unexplained_from_s']:.1f}s; the bound is {bound_s:g}s)"
            for p, r in sorted(report.items()) if r["unexplained_s"] > bound_s]


def partitions_of(metadata: Any, topic: str) -> dict[int, tuple[tuple[int, ...], tuple[int, ...]]]:
    """partition -> (replicas, ISR) of `topic` in a Metadata answer (empty when there is none)."""
    if metadata is None:
        return {}
    return {p.partition_index: (tuple(p.replica_nodes), tuple(sorted(p.isr_nodes)))
            for t in metadata.topics if t.name == topic for p in t.partitions}


@dataclass
class IsrSampler(WorkloadThreads):
    """Samples `read()` (a Metadata answer, None when no broker answers) every `interval_s`."""

    read: Callable[[], Any]
    topic: str
    clock: Callable[[], float]  # seconds, the history's clock
    interval_s: float = SAMPLE_INTERVAL_S
    samples: list[IsrSample] = field(default_factory=list, init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _threads: list[threading.Thread] = field(default_factory=list, init=False)
    errors: list[str] = field(default_factory=list, init=False)

    def start(self) -> None:
        self._spawn("isr-sampler", self._run)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            answer = self.read()
            at = self.clock()  # when the answer came; what it shows held at some moment of the call
            for partition, (replicas, isr) in partitions_of(answer, self.topic).items():
                self.samples.append(IsrSample(round(at, 3), partition, replicas, isr))
