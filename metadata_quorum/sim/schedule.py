"""Random fault schedules: one seed -> one reproducible run with checks at every step.

A schedule has two phases. Chaos: clients append to whoever thinks it
leads, state machines take snapshots, and faults arrive every few hundred
ms (partitions by halves, an isolated leader, one-way links, a lossy or
duplicating network, slow disks, paused processes whose mail piles up,
crashes and restarts, graceful resignations). Then everything
heals and liveness is checked: within LIVENESS_BOUND_MS a leader must be
elected and a fresh entry must commit and reach every node.

Half the seeds run a dynamic quorum (KIP-853; the choice comes from its own
RNG, so a static seed replays as it always did). Their faults also include
voter changes: a new node joins as an observer, a client asks the leader to
add an observer or remove a voter (hostile ones too: a node that has not
caught up, the last voter, a second change while one is in flight), and the
leader is replaced: removed, then, once that committed, its disk wiped and
the node back as a new replica that a later change may add.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional

from metadata_quorum.raft import Entry, NotLeaderError, QuorumConfig
from metadata_quorum.raft.messages import AddVoterRequest, RemoveVoterRequest
from metadata_quorum.raft.voters import Voter

from .checker import InvariantViolation
from .cluster import SimCluster, SimNode

LIVENESS_BOUND_MS = 20_000
TRACE_LINES = 60


@dataclass
class ScheduleResult:
    seed: int
    voters: int
    observers: int
    violation: Optional[str] = None
    dynamic: bool = False
    trace: list[str] = field(default_factory=list)
    virtual_ms: int = 0
    messages: int = 0
    committed: int = 0
    elections: int = 0
    liveness_ms: int = 0
    faults: list[str] = field(default_factory=list)
    stats: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return self.violation is None

    def report(self, replay_extra: str = "") -> str:
        head = (
            f"seed {self.seed}: {self.voters} voters + {self.observers} observers"
            f"{' (dynamic quorum)' if self.dynamic else ''}, "
            f"{self.virtual_ms} virtual ms, {self.messages} messages, {self.committed} committed entries"
        )
        if self.ok:
            return head
        lines = [head, f"VIOLATION: {self.violation}", "faults:"]
        lines += ["  " + fault for fault in self.faults]
        lines.append(f"last {len(self.trace)} events:")
        lines += ["  " + line for line in self.trace]
        lines.append(f"replay: python -m metadata_quorum.sim --seed {self.seed} --schedules 1 --verbose{replay_extra}")
        return "\n".join(lines)


class _Schedule:
    def __init__(
        self, seed: int, hooks: tuple[Callable[[SimNode], None], ...] = (), trace_lines: int = TRACE_LINES
    ) -> None:
        rng = random.Random(seed)
        # Its own RNG: the static schedules' draws stay what they were.
        dynamic_rng = random.Random(f"dynamic-{seed}")
        self.dynamic = dynamic_rng.random() < 0.5
        self.joins_left = dynamic_rng.randint(1, 2) if self.dynamic else 0
        self.trace_lines = trace_lines
        self.rng = rng
        self.seed = seed
        self.voters = rng.choice((3, 3, 5))
        self.observers = rng.choice((0, 0, 1, 2))
        # Kafka's timeouts, or the same shrunk so that network delays are
        # large next to them (more races per virtual second).
        scale = rng.choice((1.0, 1.0, 0.5, 0.2))
        self.scale = scale
        config = QuorumConfig(
            election_timeout_ms=int(1000 * scale),
            fetch_timeout_ms=int(2000 * scale),
            election_backoff_max_ms=int(1000 * scale),
            request_timeout_ms=int(2000 * scale),
            fetch_max_wait_ms=int(500 * scale),
            append_linger_ms=rng.choice((0, 25)),
            fetch_snapshot_max_bytes=rng.choice((5, 16, 64)),
        )
        self.cluster = SimCluster(
            rng.getrandbits(32), self.voters, self.observers, config, trace_len=max(trace_lines, 200),
            dynamic=self.dynamic,
        )
        self.cluster.hooks.extend(hooks)
        c = self.cluster
        c.latency = (rng.randint(1, 5), rng.randint(5, 40))
        c.drop_rate = rng.choice((0.0, 0.0, 0.01, 0.05))
        c.dup_rate = rng.choice((0.0, 0.01, 0.05))
        c.snapshot_every = rng.choice((0, 5, 10, 25))
        self.chaos_ms = rng.randint(5000, 15000)
        self.fault_gap = (int(rng.randint(100, 300) * scale), int(rng.randint(400, 1200) * scale))
        self.client_gap = (rng.randint(10, 50), rng.randint(60, 250))
        self.value = 0
        self.faults: list[str] = []
        self.elections = 0
        self.correlation_ids = 0

    # --- the chaos phase ------------------------------------------------------------

    def client(self) -> None:
        c = self.cluster
        if c.now >= self.chaos_ms:
            return
        leaders = c.leaders()
        if leaders:
            node = self.rng.choice(leaders)
            batch = []
            for _ in range(self.rng.randint(1, 3)):
                self.value += 1
                batch.append(f"v{self.value}".encode())
            try:
                node.core.append(batch)  # type: ignore[union-attr]
            except NotLeaderError:  # pragma: no cover - leaders() just said so
                pass
            c.process(node)
        if c.now < self.chaos_ms:
            c.call_at(c.now + self.rng.randint(*self.client_gap), self.client)

    def fault(self) -> None:
        c = self.cluster
        if c.now >= self.chaos_ms:
            return
        rng = self.rng
        ids = sorted(c.nodes)
        alive = [n for n in ids if c.nodes[n].alive]
        dead = [n for n in ids if not c.nodes[n].alive]
        action = rng.choice(
            (
                *(("join", "add-voter", "add-voter", "remove-voter", "replace-leader") if self.dynamic else ()),
                "halves",
                "isolate-leader",
                "isolate-leader",
                "isolate",
                "one-way",
                "heal",
                "heal",
                "crash",
                "crash",
                "restart",
                "restart",
                "crash-restart",
                "lossy",
                "slow-disk",
                "pause",
                "snapshot",
                "resign",
            )
        )
        text = action
        if action == "halves":
            shuffled = ids[:]
            rng.shuffle(shuffled)
            cut = rng.randint(1, len(shuffled) - 1)
            a, b = shuffled[:cut], shuffled[cut:]
            for x in a:
                for y in b:
                    c.blocked.add((x, y))
                    c.blocked.add((y, x))
            text = f"partition {sorted(a)} | {sorted(b)}"
        elif action in ("isolate-leader", "isolate"):
            leaders = [n.node_id for n in c.leaders()]
            victim = rng.choice(leaders) if action == "isolate-leader" and leaders else rng.choice(ids)
            for y in ids:
                if y != victim:
                    c.blocked.add((victim, y))
                    c.blocked.add((y, victim))
            text = f"isolate node {victim}"
        elif action == "one-way":
            victim = rng.choice(ids)
            outgoing = rng.random() < 0.5
            for y in ids:
                if y != victim:
                    c.blocked.add((victim, y) if outgoing else (y, victim))
            text = f"one-way: node {victim} can {'only receive' if outgoing else 'only send'}"
        elif action == "heal":
            c.blocked.clear()
            c.drop_rate = 0.0
            text = "heal network"
        elif action == "crash" and alive:
            victim = rng.choice(alive)
            c.crash(victim)
            text = f"crash node {victim}"
        elif action == "crash-restart" and alive:
            victim = rng.choice(alive)
            c.crash(victim)
            c.call_at(c.now + rng.randint(0, 200), lambda: c.nodes[victim].alive or c.start(victim))
            text = f"crash node {victim}, restart soon"
        elif action == "restart" and dead:
            victim = rng.choice(dead)
            c.start(victim)
            text = f"restart node {victim}"
        elif action == "lossy":
            c.drop_rate = rng.choice((0.0, 0.1, 0.3))
            c.dup_rate = rng.choice((0.0, 0.05, 0.2))
            text = f"network drop={c.drop_rate} dup={c.dup_rate}"
        elif action == "slow-disk":
            victim = rng.choice(ids)
            c.nodes[victim].flush_delay = rng.choice(((0, 3), (20, 150), (200, 600)))
            text = f"node {victim} flush delay {c.nodes[victim].flush_delay}"
        elif action == "pause" and alive:
            victim = rng.choice(alive)
            c.pause(victim, c.now + rng.randint(100, int(4000 * self.scale)))
            text = f"pause node {victim} until {int(c.nodes[victim].paused_until)}ms"
        elif action == "snapshot" and alive:
            victim = c.nodes[rng.choice(alive)]
            if victim.paused_until > c.now:
                return self._again()
            taken = c.take_snapshot(victim)
            if taken:
                c.process(victim)
            text = f"snapshot on node {victim.node_id}" + ("" if taken else " (nothing new)")
        elif action == "resign":
            leaders = c.leaders()
            if leaders:
                node = rng.choice(leaders)
                node.core.resign()  # type: ignore[union-attr]
                c.process(node)
                text = f"node {node.node_id} resigns"
        elif action in ("join", "add-voter", "remove-voter", "replace-leader"):
            text = self._voter_change(action)
        else:
            text = f"{action} (no-op)"
        c.note("FAULT", text)
        self.faults.append(f"{c.now}ms {text}")
        self._again()

    def _voter_change(self, action: str) -> str:
        c = self.cluster
        rng = self.rng
        if action == "join":
            if not self.joins_left:
                return "join (no-op)"
            self.joins_left -= 1
            nid = c.add_node()
            c.start(nid)
            return f"node {nid} joins as an observer"
        leaders = c.leaders()
        if not leaders:
            return f"{action} (no leader)"
        leader = rng.choice(leaders)
        core = leader.core
        assert core is not None
        self.correlation_ids += 1
        envelope = dict(src=-1, dst=leader.node_id, correlation_id=self.correlation_ids, cluster_id=c.cluster_id)
        if action == "add-voter":
            observers = [n for n in c.nodes.values() if n.alive and not core.voter_set.has_key(n.key)]
            if not observers:
                return "add-voter (no observer)"
            target = rng.choice(observers)
            c.client_request(leader.node_id, AddVoterRequest(voter=Voter(target.key), **envelope))  # type: ignore[arg-type]
            return f"ask leader {leader.node_id} to add {target.key}"
        if action == "remove-voter":
            victim = rng.choice(list(core.voter_set)).key
            c.client_request(leader.node_id, RemoveVoterRequest(voter=victim, **envelope))  # type: ignore[arg-type]
            return f"ask leader {leader.node_id} to remove {victim}"
        # replace-leader: remove it; once that committed, wipe it and bring it back as a new replica.
        key = leader.key
        c.client_request(leader.node_id, RemoveVoterRequest(voter=key, **envelope))  # type: ignore[arg-type]
        c.call_at(c.now + rng.randint(500, 3000), lambda: self._reformat_if_removed(leader.node_id, key))
        return f"replace leader {key}: remove it"

    def _reformat_if_removed(self, nid: int, key: object) -> None:
        c = self.cluster
        node = c.nodes[nid]
        if node.key != key or c.checker.committed_voters().has_key(node.key):
            return
        if any(n.core is not None and n.core.voter_set.has_key(node.key) for n in c.nodes.values()):
            return  # some log still names it (re-added since): keep its disk
        c.crash(nid)
        c.reformat(nid)
        c.start(nid)
        c.note("FAULT", f"node {nid} back as a new replica {node.key}")
        self.faults.append(f"{c.now}ms node {nid} wiped, back as {node.key}")
        c.stats["replicas replaced (disk wiped)"] += 1

    def _again(self) -> None:
        c = self.cluster
        if c.now < self.chaos_ms:
            c.call_at(c.now + self.rng.randint(*self.fault_gap), self.fault)

    # --- healing and liveness ---------------------------------------------------------

    def heal(self) -> None:
        c = self.cluster
        c.blocked.clear()
        c.drop_rate = 0.0
        c.dup_rate = 0.0
        for node in c.nodes.values():
            node.flush_delay = (0, 3)
            node.paused_until = min(node.paused_until, c.now)
        for nid in sorted(c.nodes):
            if not c.nodes[nid].alive:
                c.start(nid)
        c.note("FAULT", "heal everything, restart every node")
        self.faults.append(f"{c.now}ms heal everything")

    def run(self) -> ScheduleResult:
        c = self.cluster
        result = ScheduleResult(self.seed, self.voters, self.observers, dynamic=self.dynamic)
        try:
            for nid in sorted(c.nodes):
                c.start(nid)
            c.call_at(self.rng.randint(0, 300), self.client)
            c.call_at(self.rng.randint(200, 1000), self.fault)
            c.run_until(self.chaos_ms)
            self.heal()
            healed_at = c.now
            live = _Liveness(c)
            if not c.run_until(healed_at + LIVENESS_BOUND_MS, stop=live.step):
                raise InvariantViolation(f"liveness: {live.failure()} within {LIVENESS_BOUND_MS} ms of healing")
            result.liveness_ms = c.now - healed_at
            c.checker.final_check()
        except (InvariantViolation, AssertionError) as exc:
            kind = "" if isinstance(exc, InvariantViolation) else "assertion in core: "
            result.violation = kind + (str(exc) or repr(exc))
            result.trace = c.format_trace(self.trace_lines)
        result.virtual_ms = int(c.now)
        result.messages = c.messages_delivered
        result.committed = len(c.checker.committed)
        result.elections = len(c.checker.leaders)
        result.faults = self.faults
        result.stats = c.stats
        return result


class _Liveness:
    """After healing: a leader appends a marker, and every node applies it."""

    def __init__(self, cluster: SimCluster) -> None:
        self.c = cluster
        self.marker: Optional[tuple[int, Entry]] = None
        self.attempt = 0
        self.next_check = cluster.now

    def step(self) -> bool:
        c = self.c
        if c.now < self.next_check:
            return False
        self.next_check = c.now + 20
        committed = c.checker.committed
        if self.marker is not None:
            offset, entry = self.marker
            if offset < len(committed):
                if committed[offset] != entry:
                    self.marker = None  # lost to a leader change: try again
                elif all(n.sm.applied_end > offset for n in c.nodes.values()):
                    return True
                return False
            if self._leader_id(entry.epoch) is None:
                self.marker = None  # its leader is gone; if it never commits, append anew
            return False
        for node in c.leaders():
            core = node.core
            assert core is not None
            if core.state.high_watermark is None:  # type: ignore[attr-defined]
                continue
            self.attempt += 1
            data = f"liveness-{self.attempt}".encode()
            offset = core.append([data])
            self.marker = (offset, Entry(core.epoch(), data))
            c.note("liveness marker", offset, "on node", node.node_id)
            c.process(node)
            break
        return False

    def _leader_id(self, epoch: int) -> Optional[int]:
        for node in self.c.leaders():
            if node.core is not None and node.core.epoch() == epoch:
                return node.node_id
        return None

    def failure(self) -> str:
        if self.marker is None:
            return "no leader able to commit was elected"
        offset, _ = self.marker
        behind = [n.node_id for n in self.c.nodes.values() if n.sm.applied_end <= offset]
        return f"marker at offset {offset} not applied by nodes {behind}"


def run_schedule(
    seed: int, hooks: tuple[Callable[[SimNode], None], ...] = (), trace_lines: int = TRACE_LINES
) -> ScheduleResult:
    """Run one seeded schedule; `hooks` (tests only) may alter each core as it starts."""
    return _Schedule(seed, hooks, trace_lines).run()
