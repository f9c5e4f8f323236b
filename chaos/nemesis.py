"""The nemesis: a seeded schedule of faults, and the code that inflicts them.

`schedule()` is pure: from a scenario name, a seed and the run's length it
gives the faults, each with its start, its duration and the seed of its own
choices (which node, which halves). The same seed gives the same schedule;
the targets a fault hits depend also on the cluster at that moment (who
leads), which the run records in the history next to the fault.

`Nemesis` inflicts one scheduled fault on a running cluster and undoes it:
process faults (kill -9 then restart, SIGSTOP then SIGCONT) through the
cluster's process handles, network faults (partitions, one-way drops, loss,
delays) through a NetworkTestbed. Without a testbed the network faults are
skipped, and the history says so.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Optional, Protocol, Sequence

from .history import HistoryRecorder
from .testbed import FaultUnsupported, NetworkTestbed, TestbedError

PROCESS_FAULTS = ("kill", "pause")
NETWORK_FAULTS = ("partition-halves", "isolate-leader", "isolate-controller", "bridge", "one-way", "loss", "delay")
FAULTS = PROCESS_FAULTS + NETWORK_FAULTS
# The transactions scenario's own targets: the transaction coordinator (the
# leader of a workload id's __transaction_state partition) and the
# transactional producers (replaced mid-transaction by a new instance of the
# same id: chaos/txn_workload.py).
TRANSACTIONS = "transactions"
TXN_FAULTS = ("kill", "pause", "kill-coordinator", "pause-coordinator", "isolate-coordinator", "kill-producer",
              "isolate-leader", "partition-halves")

# scenario -> the faults it draws from (targets: see Nemesis._targets)
SCENARIOS: dict[str, tuple[str, ...]] = {
    "kill-leaders": ("kill",),
    "pause": ("pause",),
    "partition-halves": ("partition-halves",),
    "isolate-controller": ("isolate-controller",),
    "isolate-leader": ("isolate-leader",),
    "mixed": FAULTS,
    TRANSACTIONS: TXN_FAULTS,
}


@dataclass(frozen=True)
class ScheduledFault:
    start_s: float  # since the workload began
    kind: str
    duration_s: float
    seed: int  # seeds the fault's own choices

    def describe(self) -> str:
        return f"{self.kind} at {self.start_s:.1f}s for {self.duration_s:.1f}s"


def schedule(scenario: str, seed: int, duration_s: float, *, interval_s: float = 6.0,
             fault_s: tuple[float, float] = (2.0, 5.0), quiet_end_s: float = 5.0) -> list[ScheduledFault]:
    """Faults one after another (never two at once), `interval_s` apart on
    average, each healed before the next; none in the last `quiet_end_s`
    so the cluster recovers before the final reads."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(sorted(SCENARIOS))}")
    rng = random.Random(seed)
    kinds = SCENARIOS[scenario]
    faults: list[ScheduledFault] = []
    at = rng.uniform(1.0, interval_s / 2)
    while True:
        length = rng.uniform(*fault_s)
        if at + length > duration_s - quiet_end_s:
            return faults
        faults.append(ScheduledFault(round(at, 3), rng.choice(kinds), round(length, 3), rng.getrandbits(32)))
        at += length + rng.uniform(interval_s / 2, interval_s * 1.5) - length / 2


class ClusterHandle(Protocol):
    """What the nemesis needs of a running cluster (LocalCluster offers it)."""

    def kill(self, node_id: int) -> None: ...
    def start(self, *node_ids: int) -> None: ...
    def pause(self, node_id: int) -> None: ...
    def resume(self, node_id: int) -> None: ...


@dataclass
class Nemesis:
    cluster: ClusterHandle
    nodes: Sequence[int]  # every node id, brokers and controllers
    brokers: Sequence[int]
    history: HistoryRecorder
    testbed: Optional[NetworkTestbed] = None
    # who leads now: a partition of the workload's topic, and the quorum
    partition_leader: Callable[[], Optional[int]] = lambda: None
    active_controller: Callable[[], Optional[int]] = lambda: None
    # the transactions scenario: a workload id's coordinator, and the workload's producer fault
    txn_coordinator: Callable[[], Optional[int]] = lambda: None
    crash_producer: Optional[Callable[[random.Random], dict]] = None

    def __post_init__(self) -> None:
        self._undo: Optional[Callable[[], None]] = None
        self._current: Optional[ScheduledFault] = None
        self.skipped: list[str] = []

    def start(self, fault: ScheduledFault) -> None:
        """Inflict the fault (one at a time); recorded in the history with its targets."""
        if self._undo is not None:
            raise RuntimeError("a fault is already in effect: stop it first")
        rng = random.Random(fault.seed)
        try:
            details, undo = self._inflict(fault.kind, rng)
        except (FaultUnsupported, _NoTarget) as exc:
            self.skipped.append(f"{fault.describe()}: {exc}")
            self.history.fault(fault.kind, "skipped", reason=str(exc))
            return
        self._current, self._undo = fault, undo
        self.history.fault(fault.kind, "start", **details)

    def stop(self) -> None:
        """Undo the fault in effect, if any (restart, resume, heal)."""
        if self._undo is None:
            return
        undo, fault = self._undo, self._current
        self._undo = self._current = None
        undo()
        assert fault is not None
        self.history.fault(fault.kind, "stop")

    def heal_all(self) -> None:
        """End of run: undo what is in effect and remove every network rule."""
        self.stop()
        if self.testbed is not None:
            self.testbed.heal()

    # -- inflicting ---------------------------------------------------------------------------
    def _inflict(self, kind: str, rng: random.Random) -> tuple[dict, Callable[[], None]]:
        if kind in ("kill", "pause"):
            return self._stop_process(kind, self._pick_leader_or_any(rng))
        if kind in ("kill-coordinator", "pause-coordinator"):
            return self._stop_process(kind.split("-")[0], self._target(self.txn_coordinator, "no coordinator"))
        if kind == "kill-producer":
            if self.crash_producer is None:
                raise _NoTarget("no transactional producers in this run")
            return self.crash_producer(rng), lambda: None  # replaced at once: nothing to undo
        testbed = self._testbed()
        nodes = list(self.nodes)
        if kind == "partition-halves":
            rng.shuffle(nodes)
            halves = [sorted(nodes[: len(nodes) // 2]), sorted(nodes[len(nodes) // 2:])]
            testbed.partition(halves)
            return {"groups": halves}, testbed.heal
        if kind in ("isolate-leader", "isolate-controller", "isolate-coordinator"):
            target = self._target({"isolate-leader": self.partition_leader, "isolate-controller": self.active_controller,
                                   "isolate-coordinator": self.txn_coordinator}[kind], "nobody leads right now")
            rest = sorted(n for n in nodes if n != target)
            testbed.partition([[target], rest])
            return {"groups": [[target], rest]}, testbed.heal
        if kind == "bridge":
            # Two halves that cannot reach each other, and one node both reach.
            rng.shuffle(nodes)
            bridge, rest = nodes[0], nodes[1:]
            left, right = sorted(rest[: len(rest) // 2]), sorted(rest[len(rest) // 2:])
            for a in left:
                for b in right:
                    testbed.drop(a, b)
                    testbed.drop(b, a)
            return {"bridge": bridge, "groups": [left, right]}, testbed.heal
        if kind == "one-way":
            source, destination = rng.sample(nodes, 2)
            testbed.drop(source, destination)
            return {"from": source, "to": destination}, testbed.heal
        if kind == "loss":
            node = rng.choice(nodes)
            probability = round(rng.uniform(0.1, 0.4), 2)
            testbed.loss(node, probability)
            return {"nodes": [node], "probability": probability}, testbed.heal
        if kind == "delay":
            node = rng.choice(nodes)
            delay_ms = rng.choice((50, 100, 200))
            testbed.delay(node, delay_ms, delay_ms // 5)
            return {"nodes": [node], "delay_ms": delay_ms}, testbed.heal
        raise ValueError(f"unknown fault {kind!r}")

    def _stop_process(self, kind: str, node: int) -> tuple[dict, Callable[[], None]]:
        """kill -9 (undone by a restart) or SIGSTOP (undone by SIGCONT)."""
        if kind == "kill":
            self.cluster.kill(node)
            return {"nodes": [node]}, lambda: self.cluster.start(node)
        self.cluster.pause(node)
        return {"nodes": [node]}, lambda: self.cluster.resume(node)

    @staticmethod
    def _target(find: Callable[[], Optional[int]], missing: str) -> int:
        target = find()
        if target is None:
            raise _NoTarget(missing)
        return target

    def _pick_leader_or_any(self, rng: random.Random) -> int:
        # Faults on leaders are the ones that test elections; half the time
        # the leader of the workload's partition, else any broker.
        leader = self.partition_leader()
        if leader is not None and rng.random() < 0.5:
            return leader
        return rng.choice(list(self.brokers))

    def _testbed(self) -> NetworkTestbed:
        if self.testbed is None:
            raise FaultUnsupported("network faults need the namespace testbed (root); running on 127.0.0.1")
        return self.testbed


class _NoTarget(TestbedError):
    """The fault's target does not exist right now (no leader)."""
