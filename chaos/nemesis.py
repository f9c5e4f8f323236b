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
skipped, and the history says so. A `delay` is netem's where the kernel has
it, else made by the link proxy on every link of the node (below).

Slow and lossy links (`LINK_FAULTS`; no netem on this kernel, so tbf/htb,
iptables `statistic` and the testbed's link proxy): a slow follower (its
leader's fetch answers delayed and its inbound bandwidth capped), a slow
controller (the active controller's answers delayed on every link to it),
asymmetric delay (one direction of one link), a stalled link (bytes held,
connections open), a resetting link, a bandwidth cap on one directed link,
and a lossy directed link. `LONG_FAULTS` last longer than the workload's
`delivery.timeout.ms` in the long-partition scenario (`SCENARIO_TIMING`,
`LONG_FAULT_PRODUCER`), so sends end with an unknown outcome; `mute-clients`
drops only the brokers' answers to the workload, so those sends are written
but never acknowledged.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable, Optional, Protocol, Sequence

from .clock_skew import ClockFiles, draw_skew
from .disk_nemesis import DISK_FAULTS, DiskNemesis
from .history import HistoryRecorder
from .last_replica import LAST_REPLICA, LAST_REPLICA_DURABLE, LAST_REPLICA_ELR, WARMUP_S as LAST_REPLICA_WARMUP_S
from .linkproxy import Toxics
from .minority_damage import MINORITY_FAULTS, MINORITY_SCENARIOS, FollowerDamage
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
# One whole rolling restart (devcluster/roll.py: every node in turn, each once
# the cluster is healthy again), after a warm-up, as an operator's upgrade would.
ROLLING_RESTART = "rolling-restart"
ROLL_WARMUP_S = 5.0
REASSIGNMENT = "reassignment"
LINK_FAULTS = ("slow-follower", "slow-controller", "asymmetric-delay", "stall-link", "reset-link", "bandwidth",
               "lossy-link")
LONG_PARTITION = "long-partition"
LONG_FAULTS = ("mute-clients", "partition-halves", "isolate-leader")
# Faults of 10-14 s against a producer that gives up on a send after 6 s
# (and on a request after 2 s): every send caught by a fault ends unknown.
LONG_FAULT_PRODUCER = {"delivery.timeout.ms": 6000, "request.timeout.ms": 2000}
SCENARIO_TIMING: dict[str, dict] = {LONG_PARTITION: {"interval_s": 20.0, "fault_s": (10.0, 14.0)}}
# A follower's damage waits this long at most for the partition to be led with every replica in sync.
DAMAGE_WAIT_S = 20.0
# One node's wall clock jumps and drifts (chaos/clock_skew.py); undoing it jumps back.
CLOCK_SKEW = "clock-skew"

# scenario -> the faults it draws from (targets: see Nemesis._targets)
SCENARIOS: dict[str, tuple[str, ...]] = {
    "kill-leaders": ("kill",),
    "pause": ("pause",),
    "partition-halves": ("partition-halves",),
    "isolate-controller": ("isolate-controller",),
    "isolate-leader": ("isolate-leader",),
    "mixed": FAULTS + LINK_FAULTS + ("mute-clients",),
    TRANSACTIONS: TXN_FAULTS,
    ROLLING_RESTART: ("roll",),
    # leaders killed while the workload topic's partitions move (chaos/reassign_workload.py)
    REASSIGNMENT: ("kill",),
    # A dynamic quorum's controller replaced under load (chaos/replacement_run.py): process faults.
    "controller-replacement": ("kill", "pause"),
    "slow-follower": ("slow-follower",),
    "slow-controller": ("slow-controller",),
    "lossy-link": ("lossy-link", "bandwidth"),
    "slow-links": LINK_FAULTS,
    LONG_PARTITION: LONG_FAULTS,
    CLOCK_SKEW: (CLOCK_SKEW,),
    # Disk faults and power loss (chaos/disk_nemesis.py; the runner sets the cluster's disk up for them).
    "disk-eio-fsync": ("eio-fsync",),
    "disk-enospc": ("enospc",),
    "disk-torn-write": ("torn-write",),
    "power-loss": ("power-loss",),  # Kafka's defaults: acknowledged writes may be lost, and are counted
    "power-loss-durable": ("power-loss",),  # log.flush.interval.messages=1: none may be
    # KIP-966's last replica standing (chaos/last_replica.py): the ISR shrinks to a leader that then
    # power-fails alone and is re-elected; with Kafka's defaults, then with log.flush.interval.messages=1,
    # then with Kafka's defaults and the eligible leader replicas on (a follower is elected instead).
    LAST_REPLICA: (LAST_REPLICA,),
    LAST_REPLICA_DURABLE: (LAST_REPLICA,),
    LAST_REPLICA_ELR: (LAST_REPLICA,),
    # A follower's copy damaged while it is down (chaos/minority_damage.py), and leaders killed:
    # killed (unclean: recovery runs) or, in the -clean one, stopped cleanly (no recovery).
    **{name: MINORITY_FAULTS + ("kill",) for name in MINORITY_SCENARIOS},
}


@dataclass(frozen=True)
class ScheduledFault:
    start_s: float  # since the workload began
    kind: str
    duration_s: float
    seed: int  # seeds the fault's own choices

    def describe(self) -> str:
        return f"{self.kind} at {self.start_s:.1f}s for {self.duration_s:.1f}s"


def schedule(scenario: str, seed: int, duration_s: float, *, interval_s: Optional[float] = None,
             fault_s: Optional[tuple[float, float]] = None, quiet_end_s: float = 5.0) -> list[ScheduledFault]:
    """Faults one after another (never two at once), `interval_s` apart on
    average, each healed before the next; none in the last `quiet_end_s`
    so the cluster recovers before the final reads. Unless given, the
    spacing and lengths are the scenario's (`SCENARIO_TIMING`), else 6 s
    apart and 2-5 s long."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(sorted(SCENARIOS))}")
    timing = SCENARIO_TIMING.get(scenario, {})
    interval_s = interval_s if interval_s is not None else timing.get("interval_s", 6.0)
    fault_s = fault_s if fault_s is not None else timing.get("fault_s", (2.0, 5.0))
    rng = random.Random(seed)
    if scenario == ROLLING_RESTART:  # the roll takes as long as it takes; the run waits for it
        return [ScheduledFault(min(ROLL_WARMUP_S, duration_s / 4), "roll", 0.0, rng.getrandbits(32))]
    if LAST_REPLICA in SCENARIOS[scenario]:  # one scripted sequence; its seed draws the partition and the downtime
        return [ScheduledFault(min(LAST_REPLICA_WARMUP_S, duration_s / 4), LAST_REPLICA, 0.0, rng.getrandbits(32))]
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
    # the rolling-restart scenario: a whole roll, returning what it did
    roll: Optional[Callable[[], dict]] = None
    # the listeners' ports on a testbed host (the link faults proxy and mute them)
    broker_port: int = 9092
    controller_port: int = 9093
    client_ports: Sequence[int] = (9092,)
    # the clock-skew fault: each node's clock file
    clocks: Optional[ClockFiles] = None
    # the disk scenarios: faults through each node's disk fault layer
    disk: Optional[DiskNemesis] = None
    # the last-replica-standing scenario: the whole sequence, returning what it did
    last_replica: Optional[Callable[[random.Random], dict]] = None
    # the minority-damage scenarios: a follower's segment damaged while it is down
    follower_damage: Optional[FollowerDamage] = None

    def __post_init__(self) -> None:
        self._undo: Optional[Callable[[], None]] = None
        self._current: Optional[ScheduledFault] = None
        self.skipped: list[str] = []
        # Followers damaged and started again, each with whether it has been seen
        # out of the partition's ISR since (its re-registration takes it out).
        self._rejoining: dict[int, bool] = {}

    def start(self, fault: ScheduledFault) -> None:
        """Inflict the fault (one at a time); recorded in the history with its targets."""
        if self._undo is not None:
            raise RuntimeError("a fault is already in effect: stop it first")
        rng = random.Random(fault.seed)
        try:
            details, undo = self._inflict(fault.kind, rng)
        except (FaultUnsupported, _NoTarget) as exc:
            if self.testbed is not None and isinstance(exc, FaultUnsupported):
                self.testbed.heal()  # what a half-made fault had set up before the refused command
            self.skipped.append(f"{fault.describe()}: {exc}")
            self.history.fault(fault.kind, "skipped", reason=str(exc))
            return
        except BaseException:
            if self.testbed is not None:
                self.testbed.heal()  # a half-made network fault leaves nothing behind
            raise
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
        if kind == "roll":
            if self.roll is None:
                raise _NoTarget("no roll in this run")
            return self.roll(), lambda: None  # done when it returns: every node back
        if kind == CLOCK_SKEW:
            return self._skew_clock(rng)
        if kind == LAST_REPLICA:
            if self.last_replica is None:
                raise _NoTarget("this run's nodes have no disk fault layer")
            return self.last_replica(rng), lambda: None  # done when it returns: the leader back and re-elected
        if kind == "kill-producer":
            if self.crash_producer is None:
                raise _NoTarget("no transactional producers in this run")
            return self.crash_producer(rng), lambda: None  # replaced at once: nothing to undo
        if kind in MINORITY_FAULTS:
            return self._damage_follower(kind, rng)
        if kind in DISK_FAULTS:
            if self.disk is None:
                raise _NoTarget("this run's nodes have no disk fault layer")
            return self.disk.inflict(kind, rng, self.partition_leader())
        testbed = self._testbed()
        if kind in LINK_FAULTS or kind == "mute-clients":
            return self._link_fault(kind, rng, testbed), lambda: self._heal_link(kind, testbed)
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
            try:
                testbed.delay(node, delay_ms, delay_ms // 5)
                return {"nodes": [node], "delay_ms": delay_ms, "via": "netem"}, testbed.heal
            except FaultUnsupported as no_netem:
                details = self._proxied_delay(node, delay_ms, rng, testbed)
                return {**details, "netem": str(no_netem)}, lambda: self._heal_link(kind, testbed)
        raise ValueError(f"unknown fault {kind!r}")

    def _listen_port(self, node: int) -> int:
        return self.broker_port if node in self.brokers else self.controller_port

    def _proxied_delay(self, node: int, delay_ms: int, rng: random.Random, testbed: NetworkTestbed) -> dict:
        """netem's egress delay on one node, through the link proxy where the
        kernel has no netem: what the node sends to every other node is late
        by delay_ms ± a fifth - its requests on the connections it opens and
        its answers on the connections the others open to it. The run's own
        clients reach the nodes from the root namespace, which the proxy
        does not steer, so their links are not delayed (the history says so)."""
        toxics = Toxics(delay_ms, delay_ms / 5)
        seed = rng.getrandbits(32)
        others = sorted(n for n in self.nodes if n != node)
        for other in others:
            testbed.proxy_link(node, other, [self._listen_port(other)], seed=seed, upstream=toxics)
            testbed.proxy_link(other, node, [self._listen_port(node)], seed=seed, downstream=toxics)
        return {"nodes": [node], "delay_ms": delay_ms, "jitter_ms": delay_ms / 5, "via": "link-proxy",
                "not_delayed": "the run's clients"}

    def _link_fault(self, kind: str, rng: random.Random, testbed: NetworkTestbed) -> dict:
        """A slow, lossy, stalled or resetting link, or the clients' answers muted: what it hit."""
        if kind == "mute-clients":
            for broker in self.brokers:
                testbed.mute(broker, self.client_ports)
            return {"nodes": sorted(self.brokers), "ports": list(self.client_ports)}
        if kind == "slow-follower":
            leader = self._target(self.partition_leader, "nobody leads right now")
            follower = rng.choice(sorted(b for b in self.brokers if b != leader))
            latency, rate = rng.choice((200, 500, 1000)), rng.choice((256, 1024, 4096))
            testbed.proxy_link(follower, leader, [self.broker_port], seed=rng.getrandbits(32),
                               downstream=Toxics(latency, latency / 4))
            testbed.shape(follower, rate, inbound=True)
            return {"nodes": [follower], "leader": leader, "latency_ms": latency, "jitter_ms": latency / 4,
                    "rate_kbit": rate}
        if kind == "slow-controller":
            controller = self._target(self.active_controller, "no active controller right now")
            latency = rng.choice((100, 300, 600))
            others = sorted(n for n in self.nodes if n != controller)
            seed = rng.getrandbits(32)
            for node in others:
                testbed.proxy_link(node, controller, [self.controller_port], seed=seed,
                                   downstream=Toxics(latency, latency / 4))
            return {"nodes": [controller], "from": others, "latency_ms": latency}
        source, destination = self._busy_link(rng)
        link = {"from": source, "to": destination}
        ports = [self.broker_port if destination in self.brokers else self.controller_port]
        if kind == "asymmetric-delay":  # source's requests slow, the answers and the other direction not
            latency = rng.choice((100, 300, 800))
            testbed.proxy_link(source, destination, ports, seed=rng.getrandbits(32),
                               upstream=Toxics(latency, latency / 4))
            return {**link, "upstream_ms": latency}
        if kind == "stall-link":
            testbed.proxy_link(source, destination, ports, upstream=Toxics(stall=True),
                               downstream=Toxics(stall=True))
            return link
        if kind == "reset-link":
            after = rng.choice((0, 200, 1000))
            testbed.proxy_link(source, destination, ports, reset_after_ms=after)
            return {**link, "reset_after_ms": after}
        if kind == "bandwidth":
            rate = rng.choice((64, 256, 1024))
            testbed.shape_link(source, [destination], rate)
            return {**link, "rate_kbit": rate}
        if kind == "lossy-link":
            probability = round(rng.uniform(0.05, 0.3), 2)
            testbed.loss(destination, probability, source=source)
            return {**link, "probability": probability}
        raise ValueError(f"unknown link fault {kind!r}")

    def _busy_link(self, rng: random.Random) -> tuple[int, int]:
        """A directed link that carries traffic: a broker fetching from another
        (followers from leaders), or any node to the active controller (Raft
        fetches, heartbeats, metadata); a link nobody uses would make the fault a no-op."""
        brokers = sorted(self.brokers)
        links = [(s, d) for d in brokers for s in brokers if s != d]
        controller = self.active_controller()
        if controller is not None:
            links += [(s, controller) for s in sorted(self.nodes) if s != controller]
        return rng.choice(links)

    def _heal_link(self, kind: str, testbed: NetworkTestbed) -> None:
        """Heal, first recording how many connections the link proxy carried (0 would mean the fault missed)."""
        carried = testbed.proxied_connections()
        testbed.heal()
        if isinstance(carried, int):
            self.history.fault(kind, "proxied", connections=carried)

    def _stop_process(self, kind: str, node: int) -> tuple[dict, Callable[[], None]]:
        """kill -9 (undone by a restart) or SIGSTOP (undone by SIGCONT)."""
        if kind == "kill":
            self.cluster.kill(node)
            return {"nodes": [node]}, lambda: self.cluster.start(node)
        self.cluster.pause(node)
        return {"nodes": [node]}, lambda: self.cluster.resume(node)

    def _damage_follower(self, kind: str, rng: random.Random) -> tuple[dict, Callable[[], None]]:
        """A follower of the workload partition's leader stopped, its copy damaged, started; the leader killed."""
        damage = self.follower_damage
        if damage is None:
            raise _NoTarget("this run damages no follower's segment")
        # A minority: only once every replica is in sync again, so that the copies
        # an earlier damage cut are whole again (two damaged in turn before either
        # caught up would be a majority: their writes may be nowhere else). A full
        # ISR alone does not prove it: a follower killed and started again within
        # its session is still listed until it registers again, which takes it out;
        # so each damaged follower must also have been seen out of the ISR since.
        deadline = time.monotonic() + DAMAGE_WAIT_S
        while True:
            leader, isr = self.partition_leader(), damage.isr()
            for follower in self._rejoining:
                if isr is not None and follower not in isr:
                    self._rejoining[follower] = True
            if leader is not None and isr is not None and set(damage.brokers) <= set(isr) \
                    and all(self._rejoining.values()):
                self._rejoining.clear()
                details, undo = damage.inflict(kind, rng, leader)
                if details.get("damaged"):
                    self._rejoining[details["follower"]] = False
                return details, undo
            if time.monotonic() >= deadline:
                waiting = sorted(f for f, seen_out in self._rejoining.items() if not seen_out)
                raise _NoTarget(f"partition 0 not led with every replica in sync for {DAMAGE_WAIT_S:g}s "
                                f"(leader {leader}, isr {isr}"
                                + (f"; damaged follower(s) {waiting} not yet seen out of the ISR" if waiting else "")
                                + ")")
            time.sleep(0.5)

    def _skew_clock(self, rng: random.Random) -> tuple[dict, Callable[[], None]]:
        """Jump one node's wall clock and let it drift; half the time the partition leader's."""
        if self.clocks is None:
            raise _NoTarget("the nodes were started without clock files")
        leader = self.partition_leader()
        node = leader if leader is not None and rng.random() < 0.5 else rng.choice(list(self.nodes))
        skew = draw_skew(rng)
        self.clocks.skew(node, skew)
        clocks = self.clocks
        return {"nodes": [node], "offset_ms": skew.offset_ms, "rate": skew.rate}, lambda: clocks.reset(node)

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
