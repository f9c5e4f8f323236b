"""Partition moves for the `reassignment` chaos scenario: while the queue
workload writes at acks=all and the nemesis kills leaders, one thread moves
the workload topic's partitions between the brokers (one more broker than
the replication factor, so every move changes where a replica lives).

Every `interval_s` it picks a partition with no move under way and a new
replica set of the same size (at least one broker changed, the order
shuffled so leadership may have to move), and asks for it
(AlterPartitionReassignments through any broker); now and then it cancels
a move under way instead. Each request and its answer is a nemesis line of
the history ("reassign"/"cancel", phase "asked": not counted as a fault),
so a run's report shows what moved when. A request that meets a fault (no
controller in time, a broker down) is noted and the thread goes on.

`settle()`, after the run's recovery, waits until no move is under way:
once every broker is back, every new replica must catch up and every move
complete. One that does not is an error of the run; so is an unexpected
exception of the thread. The checks of the run are the queue's: no
acknowledged write lost, duplicated or reordered while replicas moved.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from client.cluster import Cluster
from client.errors import KafkaError
from client.reassignments import alter_partition_reassignments, list_partition_reassignments
from client.topics import describe_topics
from security.client_security import ClientSecurity

from .history import HistoryRecorder
from .workload import WorkloadThreads

CANCEL_SHARE = 0.15  # of the requests, when a move is under way


@dataclass
class ReassignWorkload(WorkloadThreads):
    history: HistoryRecorder
    bootstrap: str
    topic: str
    brokers: Sequence[int]
    seed: int = 0
    interval_s: float = 3.0
    security: Optional[ClientSecurity] = None
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _threads: list[threading.Thread] = field(default_factory=list, init=False)
    errors: list[str] = field(default_factory=list, init=False)
    counts: dict[str, int] = field(default_factory=dict, init=False)
    settled: Optional[bool] = field(default=None, init=False)  # settle()'s outcome

    def start(self) -> None:
        self._spawn("reassign", self._run)

    def settle(self, timeout_s: float) -> None:
        """Wait (bounded) until no move of the topic is under way; an error of the run if one still is."""
        deadline = time.monotonic() + timeout_s
        left: dict[Any, Any] = {}
        with Cluster(self.bootstrap, self.security) as cluster:
            while time.monotonic() < deadline:
                try:
                    left = list_partition_reassignments(cluster)
                except KafkaError:
                    left = {"unknown": "no answer"}
                if not left:
                    self.settled = True
                    return
                time.sleep(0.5)
        self.settled = False
        self.errors.append(f"moves still under way {timeout_s:g}s after recovery: {left}")

    def _run(self) -> None:
        rng = random.Random(self.seed)
        with Cluster(self.bootstrap, self.security) as cluster:
            while not self._stop.wait(rng.uniform(self.interval_s / 2, self.interval_s * 1.5)):
                try:
                    self._one(cluster, rng)
                except KafkaError as exc:  # a fault in the way: no controller, no broker, a stale view
                    self._count(f"no answer: {exc.name}")
                    self.history.fault("reassign", "asked", error=exc.name, message=str(exc)[:200])

    def _one(self, cluster: Cluster, rng: random.Random) -> None:
        under_way = {p for (t, p) in list_partition_reassignments(cluster) if t == self.topic}
        [described] = describe_topics(cluster, [self.topic])
        if under_way and rng.random() < CANCEL_SHARE:
            partition = rng.choice(sorted(under_way))
            [outcome] = alter_partition_reassignments(cluster, {(self.topic, partition): None})
            self._record("cancel", partition, None, outcome)
            return
        idle = [p for p in described["partitions"] if p["partition"] not in under_way]
        if not idle:
            return
        chosen = rng.choice(idle)
        target = new_replicas(chosen["replicas"], self.brokers, rng)
        [outcome] = alter_partition_reassignments(cluster, {(self.topic, chosen["partition"]): target})
        self._record("reassign", chosen["partition"], target, outcome, replicas=chosen["replicas"])

    def _record(self, kind: str, partition: int, target: Optional[list[int]], outcome: dict[str, Any],
                **details: Any) -> None:
        self._count(f"{kind} {outcome['error'] or 'NONE'}")
        self.history.fault(kind, "asked", topic=self.topic, partition=partition, target=target,
                           error=outcome["error"], **details)

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1


def new_replicas(current: Sequence[int], brokers: Sequence[int], rng: random.Random) -> list[int]:
    """`current` with one replica swapped for a broker outside it (when there is
    one), in a shuffled order."""
    target = list(current)
    outside = [b for b in brokers if b not in current]
    if target and outside:
        target[rng.randrange(len(target))] = rng.choice(outside)
    rng.shuffle(target)
    return target
