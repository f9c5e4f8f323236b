"""One seed -> one run: the controller, its log and image, brokers, an operator, faults, then healing."""

from __future__ import annotations

import heapq
import random
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Callable, Optional

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import Controller, ControllerConfig, ControllerResult
from metadata_quorum.controller.elections import NO_LEADER
from metadata_quorum.features import ELIGIBLE_LEADER_REPLICAS, elr_enabled
from metadata_quorum.image import MetadataImage, PartitionState

from .brokers import CLUSTER_ID, BrokerFleet
from .bugs import BUGS
from .checker import ControllerChecker, InvariantViolation, fail
from .logs import ReplicaLogs
from .operator import Operator
from .trace import brief, describe, hash_text

CONTROLLER_ID = 3000
TICK_MS = 250
LIVENESS_BOUND_MS = 60_000
TRACE_LINES = 60


@dataclass
class ControllerScheduleResult:
    seed: int
    brokers: int
    violation: Optional[str] = None
    trace: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    virtual_ms: int = 0
    records: int = 0
    liveness_ms: int = 0
    digest: int = 0  # of the whole trace: equal digests, equal runs
    stats: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return self.violation is None

    def report(self, replay_extra: str = "") -> str:
        head = f"seed {self.seed}: {self.brokers} brokers, {self.virtual_ms} virtual ms, {self.records} metadata records"
        if self.ok:
            return head
        return "\n".join([
            head, f"VIOLATION: {self.violation}", "faults:", *("  " + f for f in self.faults),
            f"last {len(self.trace)} events:", *("  " + t for t in self.trace),
            f"replay: python -m metadata_quorum.sim.controller_sim --seed {self.seed} --schedules 1 --verbose"
            + replay_extra,
        ])


class ControllerSim:
    def __init__(self, seed: int, bug: Optional[str] = None, trace_lines: int = TRACE_LINES) -> None:
        rng = random.Random(seed)
        self.rng = rng
        self.seed = seed
        self.bug = bug
        self.now = 0
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = 0
        self.trace: deque[str] = deque(maxlen=max(trace_lines, 1))
        self.faults: list[str] = []
        self.stats: Counter[str] = Counter()
        self.digest = 0
        self.healing = False

        racks = rng.choice((None, None, ("a", "b"), ("a", "b", "c")))
        self.fleet = BrokerFleet(self, rng.randint(3, 6), racks)
        scale = rng.choice((1.0, 1.0, 0.5))
        self.config = ControllerConfig(
            broker_session_timeout_ms=int(9000 * scale),
            broker_heartbeat_interval_ms=int(2000 * scale),
            unclean_leader_election_enable=rng.random() < 0.2,
            default_replication_factor=rng.choice((1, 2, 3)),
            num_partitions=rng.choice((1, 3)),
            leader_imbalance_check_interval_seconds=rng.choice((5, 10, 300)),
            leader_imbalance_per_broker_percentage=rng.choice((0, 10, 50)),
            min_insync_replicas=rng.choice((1, 2, 2)),
        )
        elr = rng.random() < 0.5
        self.heartbeat_loss = rng.choice((0.0, 0.05, 0.2))
        self.response_loss = rng.choice((0.0, 0.05))
        self.chaos_ms = rng.randint(20_000, 60_000)

        self.image = MetadataImage()
        self.log: list[mpb.MetadataRecord] = []
        self.checker = ControllerChecker(self.config, self.stats)
        self.logs = ReplicaLogs(self)
        self.operator = Operator(self)
        self.controller = self._new_controller()
        if elr:  # KIP-966, as `kraftlog features upgrade --feature eligible.leader.replicas.version=1`
            self.submit("operator upgrades eligible.leader.replicas.version to 1",
                        self.controller.handle_update_features(cpb.UpdateFeaturesRequest(feature_updates=[
                            cpb.UpdateFeaturesRequest.FeatureUpdate(
                                feature=ELIGIBLE_LEADER_REPLICAS, max_version_level=1, upgrade_type=1)])))
            assert elr_enabled(self.image.features)
        if rng.random() < 0.2:
            # An operator's cluster-wide dynamic setting (the controller has no AlterConfigs yet).
            value = rng.choice(("true", "false"))
            self._append([mpb.MetadataRecord(config=mpb.ConfigRecord(
                resource_type=mpb.BROKER, resource_name="", name="unclean.leader.election.enable", value=value))],
                f"operator sets cluster unclean.leader.election.enable={value}")

    # --- virtual time and the trace --------------------------------------------------------

    def call_at(self, when: int, fn: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (when, self._seq, fn))

    def run_until(self, until: int, stop: Optional[Callable[[], bool]] = None) -> bool:
        while self._queue and self._queue[0][0] <= until:
            when, _, fn = heapq.heappop(self._queue)
            self.now = when
            fn()
            if stop is not None and stop():
                return True
        self.now = max(self.now, until)
        return stop() if stop is not None else True

    def note(self, text: str) -> None:
        line = f"{self.now}ms {text}"
        self.trace.append(line)
        self.digest = (self.digest * 1_000_003 + hash_text(line)) % (1 << 61)

    def fault(self, text: str) -> None:
        self.faults.append(f"{self.now}ms {text}")
        self.note("FAULT " + text)

    # --- the controller and its log ----------------------------------------------------------

    def _new_controller(self) -> Controller:
        controller = Controller(self.image, self.config, cluster_id=CLUSTER_ID, node_id=CONTROLLER_ID,
                                now_ms=self.now, rng=random.Random(self.rng.getrandbits(64)))
        if self.bug:
            BUGS[self.bug](controller)
        return controller

    def submit(self, what: str, result: ControllerResult, unclean_requested: bool = False) -> object:
        """Append a result's records (as the shell would) and hand back its response."""
        self._append(result.records, what, unclean_requested)
        if not result.records:
            self.note(f"{what}: {brief(result.response)}")
        return result.response

    def _append(self, records: list[mpb.MetadataRecord], what: str, unclean_requested: bool = False) -> None:
        if not records:
            return
        before = {b: (r.fenced, r.in_controlled_shutdown) for b, r in self.image.brokers.items()}
        lines = []
        for record in records:
            offset = self.image.offset + 1
            lines.append(describe(record, self.image))
            self.checker.before(self.image, record, offset, unclean_requested)
            self.logs.before(self.image, record)
            old = self._partition_of(record)
            self.image.apply(record, offset)
            self.log.append(record)
            self.checker.after(self.image, record, old)
            self.fleet.remember(record, offset)
        self.stats["metadata records"] += len(records)
        self.note(f"{what}: " + "; ".join(lines))
        newly_gone = {b for b, r in self.image.brokers.items()
                      if (r.fenced or r.in_controlled_shutdown) and before.get(b) == (False, False)}
        self.checker.step(self.image, newly_gone)
        self.logs.step(self.image)

    def _partition_of(self, record: mpb.MetadataRecord) -> Optional[PartitionState]:
        if record.WhichOneof("record") != "partition_change":
            return None
        return self.image.partition(record.partition_change.topic_id, record.partition_change.partition_id)

    def tick(self) -> None:
        self.call_at(self.now + TICK_MS, self.tick)
        self._append(self.controller.tick(self.now).records, "tick")

    # --- faults ------------------------------------------------------------------------------

    def chaos(self) -> None:
        if self.now >= self.chaos_ms:
            return
        rng = self.rng
        self.call_at(self.now + rng.randint(1000, 6000), self.chaos)
        brokers = list(self.fleet.brokers.values())
        alive = [b for b in brokers if b.alive]
        dead = [b for b in brokers if not b.alive]
        action = rng.choice(("crash", "crash", "restart", "restart", "crash-restart", "deaf", "shutdown",
                             "lag", "catch-up", "failover", "zombie"))
        if action == "crash" and len(alive) > 1:
            b = rng.choice(alive)
            self.fleet.crash(b)
            self.fault(f"crash broker {b.broker_id} (marker epoch {b.previous_epoch})")
        elif action == "restart" and dead:
            b = rng.choice(dead)
            self.fault(f"restart broker {b.broker_id}")
            self.fleet.start(b)
        elif action == "crash-restart" and alive:
            b = rng.choice(alive)
            self.fleet.crash(b)
            self.fault(f"crash broker {b.broker_id}, restart soon (marker epoch {b.previous_epoch})")
            self.call_at(self.now + rng.randint(0, 3000), lambda: b.alive or self.fleet.start(b))
        elif action == "deaf" and alive:
            b = rng.choice(alive)
            b.deaf_until = self.now + rng.randint(1000, 3 * self.config.broker_session_timeout_ms // 2)
            self.fault(f"broker {b.broker_id}'s heartbeats lost until {b.deaf_until}ms")
        elif action == "shutdown" and alive:
            b = rng.choice(alive)
            if b.epoch is not None:
                b.shutting_down = True
                self.fault(f"controlled shutdown of broker {b.broker_id}")
        elif action == "lag" and alive:
            b = rng.choice(alive)
            b.lagging = True
            self.fault(f"broker {b.broker_id} stops fetching as a follower")
        elif action == "catch-up":
            for b in brokers:
                b.lagging = False
            self.fault("every follower catches up")
        elif action == "zombie":
            self.fleet.zombie(rng.choice(brokers))
        elif action == "failover":
            self.controller = self._new_controller()
            self.stats["controller failovers"] += 1
            self.fault("a new active controller (soft state lost)")

    # --- healing and liveness ------------------------------------------------------------------

    def heal(self) -> None:
        self.healing = True
        self.heartbeat_loss = self.response_loss = 0.0
        for b in self.fleet.brokers.values():
            b.deaf_until = 0
            b.lagging = False
            if not b.alive:
                self.fleet.start(b)
        self.fault("heal: no more losses, every broker restarted")

    def _not_serving(self) -> list[int]:
        brokers = self.image.brokers
        return sorted(b for b in self.fleet.brokers
                      if b not in brokers or brokers[b].fenced or brokers[b].in_controlled_shutdown)

    def _offline(self) -> list[str]:
        return sorted(f"{t.name}/{p}" for t in self.image.topics.values()
                      for p, s in t.partitions.items() if s.leader == NO_LEADER)

    def healthy(self) -> bool:
        return not self._not_serving() and not self._offline()

    def run(self) -> ControllerScheduleResult:
        result = ControllerScheduleResult(self.seed, len(self.fleet.brokers))
        try:
            for b in self.fleet.brokers.values():
                self.call_at(self.rng.randint(0, 500), lambda b=b: self.fleet.start(b))
            self.call_at(TICK_MS, self.tick)
            self.call_at(self.rng.randint(1000, 3000), self.operator.act)
            self.call_at(self.rng.randint(2000, 4000), self.fleet.isr_churn)
            self.call_at(self.rng.randint(3000, 6000), self.chaos)
            self.call_at(self.rng.randint(500, 1500), self.logs.write)
            self.run_until(self.chaos_ms)
            self.heal()
            healed_at = self.now
            if not self.run_until(healed_at + LIVENESS_BOUND_MS, stop=self.healthy):
                fail(f"liveness: {LIVENESS_BOUND_MS} ms after healing, brokers {self._not_serving()} are still "
                     f"fenced or unregistered and partitions {self._offline()} offline")
            result.liveness_ms = self.now - healed_at
            self.checker.replay(self.log, self.image)
        except InvariantViolation as exc:
            result.violation = str(exc)
        except AssertionError as exc:
            result.violation = f"assertion: {exc or repr(exc)}"
        result.trace = list(self.trace)
        result.faults = self.faults
        result.virtual_ms = self.now
        result.records = len(self.log)
        result.digest = self.digest
        result.stats = self.stats
        return result


def run_controller_schedule(seed: int, bug: Optional[str] = None,
                            trace_lines: int = TRACE_LINES) -> ControllerScheduleResult:
    """Run one seeded schedule; `bug` (tests only) plants one of BUGS in the controller."""
    return ControllerSim(seed, bug, trace_lines).run()
