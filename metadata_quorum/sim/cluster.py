"""A simulated cluster: N cores, a lossy network, simulated disks, virtual time, one seeded RNG.

Everything happens through one event queue ordered by (time, sequence), so
a seed replays exactly. The network drops, delays (and so reorders) and
duplicates messages, and honours partitions, which may be one-way. A crash
throws away the core and everything on its disk that was not flushed; a
restart builds a new core from what survived.

A dynamic cluster (KIP-853) gives every node a directory id; the first
`voters` nodes are formatted with them as the bootstrap voter set, the others
join as observers that know no voter and ask any node (their bootstrap
servers). `reformat` wipes a node's disk and gives it a new directory id: to
the quorum it is then a new replica. Voter changes come from a client, whose
answers land in `client_responses`.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter, deque
from typing import Callable, Optional

from metadata_quorum.raft import Message, QuorumConfig, RaftCore, is_request
from metadata_quorum.raft.messages import VoterChangeResponse
from metadata_quorum.raft.states import ElectionState
from metadata_quorum.raft.voters import ReplicaKey, Voter, VoterSet, uuid_text

from .checker import InvariantChecker
from .disk import SimDisk
from .statemachine import ChecksumStateMachine
from .trace import format_message

INF = float("inf")

DELIVER, WAKE, FLUSH, CALL = 0, 1, 2, 3

TRANSITION_STATS = {
    ("Candidate", "Leader"): "elections won",
    ("Prospective", "Candidate"): "pre-votes won",
    ("Prospective", "Follower"): "pre-votes refused (leader alive)",
    ("Leader", "Resigned"): "leader resignations",
    ("Follower", "Prospective"): "follower timeouts",
}


class SimNode:
    __slots__ = (
        "node_id",
        "is_voter",
        "disk",
        "sm",
        "core",
        "incarnation",
        "wake_at",
        "flush_scheduled",
        "flush_delay",
        "paused_until",
        "directory_id",
    )

    def __init__(self, node_id: int, is_voter: bool, directory_id: Optional[str] = None) -> None:
        self.node_id = node_id
        self.is_voter = is_voter  # formatted as a (bootstrap) voter
        self.directory_id = directory_id
        self.disk = SimDisk()
        self.sm = ChecksumStateMachine()
        self.core: Optional[RaftCore] = None
        self.incarnation = 0
        self.wake_at = INF
        self.flush_scheduled = False
        self.flush_delay = (0, 3)
        # Like SIGSTOP: until then the node handles nothing; what arrives waits.
        self.paused_until: float = 0

    @property
    def alive(self) -> bool:
        return self.core is not None

    @property
    def key(self) -> ReplicaKey:
        return ReplicaKey(self.node_id, self.directory_id)


class SimCluster:
    def __init__(
        self,
        seed: int,
        voters: int,
        observers: int = 0,
        config: Optional[QuorumConfig] = None,
        cluster_id: str = "sim-cluster",
        trace_len: int = 400,
        dynamic: bool = False,
    ) -> None:
        self.rng = random.Random(seed)
        self.config = config or QuorumConfig()
        self.cluster_id = cluster_id
        self.now = 0
        self._queue: list[tuple[int, int, int, object]] = []
        self._seq = 0
        self.voter_ids = frozenset(range(1, voters + 1))
        self.dynamic = dynamic
        self.nodes: dict[int, SimNode] = {}
        for nid in range(1, voters + observers + 1):
            self.nodes[nid] = SimNode(nid, nid in self.voter_ids, self._new_directory_id() if dynamic else None)
        self.bootstrap_voters: VoterSet = (
            VoterSet(Voter(self.nodes[v].key) for v in sorted(self.voter_ids))
            if dynamic
            else VoterSet.of_ids(self.voter_ids)
        )
        self.checker = InvariantChecker(self.bootstrap_voters, self.nodes)
        self.client_responses: list[VoterChangeResponse] = []
        self.trace: deque[tuple] = deque(maxlen=trace_len)
        # Network behaviour.
        self.blocked: set[tuple[int, int]] = set()
        self.drop_rate = 0.0
        self.dup_rate = 0.0
        self.latency = (1, 10)
        # State machine snapshots: every this many applied entries (0: never).
        self.snapshot_every = 0
        self.messages_delivered = 0
        # What happened, for coverage summaries.
        self.stats: Counter[str] = Counter()
        self.hooks: list[Callable[[SimNode], None]] = []  # test-only, run before each core is used

    # --- events -------------------------------------------------------------------

    def push(self, at: float, kind: int, payload: object) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (at, self._seq, kind, payload))  # type: ignore[arg-type]

    def call_at(self, at: float, fn: Callable[[], None]) -> None:
        self.push(at, CALL, fn)

    def run_until(self, end: float, stop: Optional[Callable[[], bool]] = None) -> bool:
        """Process events up to time `end`; True if `stop()` became true first."""
        queue = self._queue
        nodes = self.nodes
        pop = heapq.heappop
        while queue and queue[0][0] <= end:
            at, _, kind, payload = pop(queue)
            self.now = at  # type: ignore[assignment]
            if kind == DELIVER:
                node = nodes[payload.dst]  # type: ignore[attr-defined]
                if node.paused_until > at:
                    self.push(node.paused_until, DELIVER, payload)  # waits in the socket buffer
                else:
                    self._deliver(payload)  # type: ignore[arg-type]
            elif kind == WAKE:
                nid, incarnation = payload  # type: ignore[misc]
                node = nodes[nid]
                if node.core is None or node.incarnation != incarnation or node.wake_at != at:
                    continue  # superseded
                if node.paused_until > at:
                    node.wake_at = node.paused_until
                    self.push(node.paused_until, WAKE, payload)
                    continue
                node.wake_at = INF
                node.core.tick(at)  # type: ignore[arg-type]
                self.process(node)
            elif kind == FLUSH:
                nid, incarnation = payload  # type: ignore[misc]
                node = nodes[nid]
                if node.core is None or node.incarnation != incarnation:
                    continue
                if node.paused_until > at:
                    self.push(node.paused_until, FLUSH, payload)
                    continue
                node.flush_scheduled = False
                end_offset = node.disk.flush()
                self.trace.append((at, "flush", nid, end_offset))
                node.core.advance(end_offset)
                self.process(node)
            else:
                payload()  # type: ignore[operator]
            if stop is not None and stop():
                return True
        if self.now < end:
            self.now = end  # type: ignore[assignment]
        return False

    # --- network --------------------------------------------------------------------

    def send(self, msg: Message) -> None:
        if msg.dst not in self.nodes:
            # The answer to a client's voter change (a client is no node).
            if isinstance(msg, VoterChangeResponse):
                self.trace.append((self.now, "client", msg))
                self.client_responses.append(msg)
                self.stats[f"voter change {msg.error.name}"] += 1
            return
        rng = self.rng
        if (msg.src, msg.dst) in self.blocked or (self.drop_rate and rng.random() < self.drop_rate):
            self.trace.append((self.now, "drop", msg))
            self.stats["dropped"] += 1
            return
        lo, hi = self.latency
        self.push(self.now + rng.randint(lo, hi), DELIVER, msg)
        if self.dup_rate and rng.random() < self.dup_rate:
            self.stats["duplicated"] += 1
            self.push(self.now + rng.randint(lo, hi * 3), DELIVER, msg)

    def _deliver(self, msg: Message) -> None:
        node = self.nodes[msg.dst]
        if node.core is None or (msg.src, msg.dst) in self.blocked:
            self.trace.append((self.now, "drop", msg))
            self.stats["dropped"] += 1
            if node.core is None and is_request(msg):
                # Nothing listens on a crashed node: the sender's connection is refused.
                self.call_at(self.now + self.latency[0], lambda: self._refused(msg.src, msg.dst))
            return
        self.trace.append((self.now, "deliver", msg))
        self.messages_delivered += 1
        node.core.step(msg, self.now)
        self.process(node)

    def _refused(self, src: int, dst: int) -> None:
        sender = self.nodes[src]
        if sender.core is not None and self.nodes[dst].core is None and sender.paused_until <= self.now:
            self.trace.append((self.now, "refused", src, dst))
            sender.core.peer_unreachable(dst, self.now)  # type: ignore[arg-type]
            self.process(sender)

    # --- nodes ------------------------------------------------------------------------

    def start(self, nid: int) -> None:
        node = self.nodes[nid]
        assert node.core is None
        durable = node.disk.durable_state()
        seed = self.rng.getrandbits(32)
        if self.dynamic:
            # Formatted with the bootstrap voters, or (a joining node) with none.
            voters = self.bootstrap_voters if node.is_voter else VoterSet()
            core = RaftCore(
                nid, voters, self.cluster_id, random.Random(seed), self.config, now=self.now, durable=durable,
                directory_id=node.directory_id, bootstrap_ids=sorted(self.nodes),
            )
        else:
            core = RaftCore(
                nid, self.voter_ids, self.cluster_id, random.Random(seed), self.config, now=self.now, durable=durable
            )
        core.on_transition = lambda old, new, nid=nid: self._on_transition(nid, old, new)
        node.core = core
        node.incarnation += 1
        node.wake_at = INF
        node.flush_scheduled = False
        node.sm.reset()
        if durable.snapshot is not None:
            node.sm.load(durable.snapshot)
        self.trace.append((self.now, "start", nid, repr(core.state)))
        self.stats["starts"] += 1
        for hook in self.hooks:
            hook(node)
        self.checker.node_started(node)
        self.process(node)

    def crash(self, nid: int) -> None:
        node = self.nodes[nid]
        if node.core is None:
            return
        self.trace.append((self.now, "crash", nid))
        self.stats["crashes"] += 1
        node.core = None
        node.incarnation += 1
        node.paused_until = 0
        node.disk.crash()

    def _new_directory_id(self) -> str:
        text = uuid_text(self.rng.getrandbits(128).to_bytes(16, "big"))
        return text or "AQEBAQEBAQEBAQEBAQEBAQ"  # the zero UUID is no directory id

    def add_node(self) -> int:
        """A new node, formatted to join (no voters); not started."""
        nid = max(self.nodes) + 1
        self.nodes[nid] = SimNode(nid, False, self._new_directory_id())
        return nid

    def reformat(self, nid: int) -> None:
        """Wipe a (crashed) node's disk and give it a new directory id: a new replica of the same id."""
        node = self.nodes[nid]
        assert node.core is None
        node.disk = SimDisk()
        node.is_voter = False  # formatted to join
        node.directory_id = self._new_directory_id()
        self.trace.append((self.now, "note", f"node {nid} reformatted as {node.key}"))
        self.checker.node_reformatted(nid)

    def client_request(self, nid: int, request: Message) -> None:
        """A client's request (src -1) handed to node `nid` now."""
        node = self.nodes[nid]
        if node.core is None:
            return
        self.trace.append((self.now, "deliver", request))
        node.core.step(request, self.now)
        self.process(node)

    def _on_transition(self, nid: int, old: ElectionState, new: ElectionState) -> None:
        self.trace.append((self.now, "state", nid, repr(old), repr(new)))
        key = TRANSITION_STATS.get((old.name, new.name))
        if key:
            self.stats[key] += 1

    def process(self, node: SimNode) -> None:
        """Carry out every Ready bundle the node's core has, then re-arm its timer."""
        core = node.core
        assert core is not None
        sm = node.sm
        disk = node.disk
        checker = self.checker
        while True:
            ready = core.ready()
            if ready is None:
                if self._maybe_snapshot(node):
                    continue
                break
            applied_before = sm.applied_end
            disk.apply(ready)
            if ready.snapshot_to_install is not None:
                sm.load(ready.snapshot_to_install)
                self.trace.append((self.now, "install", node.node_id, ready.snapshot_to_install.snapshot_id))
                self.stats["snapshot installs"] += 1
            if ready.truncate_to is not None:
                self.stats["truncations"] += 1
            if ready.committed is not None:
                sm.apply(ready.committed)
            checker.on_ready(node, ready, applied_before)
            for msg in ready.messages:
                self.send(msg)
            if (ready.entries or ready.truncate_to is not None) and not node.flush_scheduled:
                node.flush_scheduled = True
                lo, hi = node.flush_delay
                self.push(self.now + self.rng.randint(lo, hi), FLUSH, (node.node_id, node.incarnation))
        checker.after_step(node)
        deadline = core.next_deadline()
        if deadline != node.wake_at:
            node.wake_at = deadline
            if deadline != INF:
                self.push(deadline, WAKE, (node.node_id, node.incarnation))

    def _maybe_snapshot(self, node: SimNode) -> bool:
        every = self.snapshot_every
        core = node.core
        sm = node.sm
        assert core is not None
        if not every or sm.applied_end - max(sm.last_snapshot_end, core.log.start_offset) < every:
            return False
        return self.take_snapshot(node)

    def take_snapshot(self, node: SimNode) -> bool:
        core = node.core
        sm = node.sm
        if core is None or sm.applied_end <= core.log.start_offset:
            return False
        core.create_snapshot(sm.applied_end, sm.snapshot_bytes())
        sm.last_snapshot_end = sm.applied_end
        self.trace.append((self.now, "snapshot", node.node_id, sm.applied_end))
        self.stats["snapshots taken"] += 1
        return True

    def leaders(self) -> list[SimNode]:
        """Nodes that think they lead and are running (not paused)."""
        return [
            n
            for n in self.nodes.values()
            if n.core is not None and n.core.is_leader() and n.paused_until <= self.now
        ]

    def pause(self, nid: int, until: float) -> None:
        node = self.nodes[nid]
        if node.core is not None:
            node.paused_until = until
            self.trace.append((self.now, "note", f"node {nid} paused until {int(until)}ms"))

    # --- traces -------------------------------------------------------------------------

    def format_trace(self, last: int = 80) -> list[str]:
        events = list(self.trace)[-last:]
        lines = []
        for event in events:
            at, kind = event[0], event[1]
            if kind in ("deliver", "drop"):
                text = ("" if kind == "deliver" else "DROPPED ") + format_message(event[2])
            elif kind == "state":
                text = f"node {event[2]}: {event[3]} -> {event[4]}"
            elif kind == "flush":
                text = f"node {event[2]}: flushed up to {event[3]}"
            elif kind == "start":
                text = f"node {event[2]}: started as {event[3]}"
            elif kind == "crash":
                text = f"node {event[2]}: CRASHED"
            elif kind == "refused":
                text = f"node {event[2]}: connection to node {event[3]} refused"
            elif kind == "client":
                text = "to the client: " + format_message(event[2])
            elif kind == "install":
                text = f"node {event[2]}: installed snapshot {tuple(event[3])}"
            elif kind == "snapshot":
                text = f"node {event[2]}: took snapshot at {event[3]}"
            else:
                text = " ".join(str(x) for x in event[2:])
            lines.append(f"{int(at):>7}ms  {text}")
        return lines

    def note(self, *parts: object) -> None:
        self.trace.append((self.now, "note", *parts))

