"""Scenario scripts: a command language over a hand-driven cluster, for protocol walkthroughs.

A scenario file is a list of blocks separated by blank lines:

    # comments explain the step
    command arg arg
    ----
    the exact output the command must print

Messages are not delivered until `stabilize` (or `deliver`); time only
moves with `tick`. Disks flush at once. Each node's randomness is seeded by
its id, so a scenario always prints the same trace.

Commands:
    add-nodes N [observers=K] [linger=MS] [chunk=BYTES]   voters 1..N, observers after
    campaign ID          start an election on ID now (pre-vote first)
    tick MS              let MS pass, firing timers in time order
    stabilize            deliver messages until none are left, printing each
    run MS               let MS pass, delivering every message at once; prints
                         state changes and commits but not the messages
    deliver [N]          deliver the first N messages in flight (default 1)
    drop                 lose every message in flight
    partition ID...      cut these nodes off from the rest (both directions)
    partition A,B C,D    cut the cluster into these groups
    cut A->B             lose messages from A to B only
    heal                 undo every partition
    append ID DATA...    append records on the leader ID
    resign ID            the leader ID hands over gracefully
    snapshot ID          ID's state machine takes a snapshot of what it applied
    crash ID / restart ID
    status               one line per node
    log ID               node ID's log entries
    describe ID          DescribeQuorum on ID
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Optional

from metadata_quorum.raft import Message, NotLeaderError, QuorumConfig, RaftCore
from metadata_quorum.raft.states import ElectionState

from .disk import SimDisk
from .statemachine import ChecksumStateMachine
from .trace import format_entries, format_entry, format_message, format_state

INF = float("inf")


@dataclass
class Block:
    comments: list[str]
    command: str
    expected: list[str]
    line: int


def parse(text: str) -> list[Block]:
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        comments: list[str] = []
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith("#")):
            if lines[i].startswith("#"):
                comments.append(lines[i])
            i += 1
        if i >= len(lines):
            break
        start = i
        command = lines[i].strip()
        i += 1
        if i >= len(lines) or lines[i].strip() != "----":
            raise ValueError(f"line {i + 1}: expected ---- after {command!r}")
        i += 1
        expected: list[str] = []
        while i < len(lines) and lines[i].strip():
            expected.append(lines[i])
            i += 1
        blocks.append(Block(comments, command, expected, start + 1))
    return blocks


def render(blocks: list[Block], outputs: list[list[str]]) -> str:
    parts = []
    for block, output in zip(blocks, outputs):
        chunk = block.comments + [block.command, "----"] + (output or ["ok"])
        parts.append("\n".join(chunk))
    return "\n\n".join(parts) + "\n"


class _Node:
    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.disk = SimDisk()
        self.sm = ChecksumStateMachine()
        self.core: Optional[RaftCore] = None


class ScenarioCluster:
    def __init__(self) -> None:
        self.now = 0
        self.nodes: dict[int, _Node] = {}
        self.voters: frozenset[int] = frozenset()
        self.config = QuorumConfig()
        self.in_flight: list[Message] = []
        self.blocked: set[tuple[int, int]] = set()
        self.out: list[str] = []

    # --- plumbing -------------------------------------------------------------------

    def _start(self, nid: int) -> None:
        node = self.nodes[nid]
        durable = node.disk.durable_state()
        core = RaftCore(nid, self.voters, "scenario", random.Random(nid), self.config, now=self.now, durable=durable)
        core.on_transition = lambda old, new, nid=nid: self._transition(nid, old, new)
        node.core = core
        node.sm.reset()
        if durable.snapshot is not None:
            node.sm.load(durable.snapshot)
        self._process(node)

    def _transition(self, nid: int, old: ElectionState, new: ElectionState) -> None:
        self.out.append(f"node {nid}: {old!r} -> {new!r}")

    def _process(self, node: _Node) -> None:
        core = node.core
        assert core is not None
        while True:
            ready = core.ready()
            if ready is None:
                return
            node.disk.apply(ready)
            if ready.truncate_to is not None:
                self.out.append(f"node {node.node_id}: truncated log to {ready.truncate_to}")
            if ready.snapshot_to_install is not None:
                sid = ready.snapshot_to_install.snapshot_id
                node.sm.load(ready.snapshot_to_install)
                self.out.append(f"node {node.node_id}: installed snapshot (end={sid.end_offset},epoch={sid.epoch})")
            if ready.committed is not None:
                node.sm.apply(ready.committed)
                data = [e for e in ready.committed.entries]
                self.out.append(
                    f"node {node.node_id}: committed {format_entries(tuple(data), ready.committed.base_offset)}"
                )
            self.in_flight.extend(ready.messages)
            if ready.entries or ready.truncate_to is not None:
                core.advance(node.disk.flush())

    def _alive(self) -> list[_Node]:
        return [n for _, n in sorted(self.nodes.items()) if n.core is not None]

    def _node(self, arg: str) -> _Node:
        node = self.nodes[int(arg)]
        if node.core is None:
            raise ValueError(f"node {arg} is crashed")
        return node

    def _deliver_one(self, quiet: bool = False) -> None:
        msg = self.in_flight.pop(0)
        node = self.nodes.get(msg.dst)
        if node is None or node.core is None or (msg.src, msg.dst) in self.blocked:
            if not quiet:
                self.out.append(f"{format_message(msg)}  (dropped)")
            return
        if not quiet:
            self.out.append(format_message(msg))
        node.core.step(msg, self.now)
        self._process(node)

    # --- commands ---------------------------------------------------------------------

    def run(self, command: str) -> list[str]:
        self.out = []
        words = command.split()
        handler: Callable[[list[str]], None] = getattr(self, "cmd_" + words[0].replace("-", "_"))
        handler(words[1:])
        return self.out

    def cmd_add_nodes(self, args: list[str]) -> None:
        count = int(args[0])
        opts = dict(a.split("=") for a in args[1:])
        observers = int(opts.get("observers", 0))
        self.config = QuorumConfig(
            append_linger_ms=int(opts.get("linger", 0)),
            fetch_snapshot_max_bytes=int(opts.get("chunk", 16)),
        )
        self.voters = frozenset(range(1, count + 1))
        for nid in range(1, count + observers + 1):
            self.nodes[nid] = _Node(nid)
        for nid in sorted(self.nodes):
            self._start(nid)
        self.cmd_status([])

    def cmd_campaign(self, args: list[str]) -> None:
        node = self._node(args[0])
        node.core.campaign()  # type: ignore[union-attr]
        self._process(node)

    def cmd_tick(self, args: list[str]) -> None:
        self._advance(int(args[0]), settle=False)

    def _advance(self, ms: int, *, settle: bool) -> None:
        """Move virtual time forward by `ms`, firing every deadline on the way;
        with `settle`, deliver all messages in flight before each deadline."""
        target = self.now + ms
        while True:
            if settle:
                self.cmd_stabilize([], quiet=True)
            alive = self._alive()
            due = min((n.core.next_deadline() for n in alive), default=INF)  # type: ignore[union-attr]
            if due > target:
                break
            self.now = int(due)
            for node in alive:
                if node.core is not None and node.core.next_deadline() <= self.now:
                    node.core.tick(self.now)
                    self._process(node)
        self.now = target

    def cmd_stabilize(self, args: list[str], quiet: bool = False) -> None:
        for _ in range(10_000):
            if not self.in_flight:
                return
            self._deliver_one(quiet)
        raise RuntimeError("stabilize did not settle")

    def cmd_run(self, args: list[str]) -> None:
        """Let MS pass with every message delivered at once; print state changes, not messages."""
        self._advance(int(args[0]), settle=True)

    def cmd_deliver(self, args: list[str]) -> None:
        for _ in range(int(args[0]) if args else 1):
            if self.in_flight:
                self._deliver_one()

    def cmd_drop(self, args: list[str]) -> None:
        for msg in self.in_flight:
            self.out.append(f"{format_message(msg)}  (dropped)")
        self.in_flight.clear()

    def cmd_partition(self, args: list[str]) -> None:
        ids = sorted(self.nodes)
        if all("," not in a for a in args) and len(args) >= 1 and len(args) < len(ids):
            groups = [[int(a) for a in args], [i for i in ids if str(i) not in args]]
        else:
            groups = [[int(x) for x in a.split(",")] for a in args]
        for g in groups:
            for h in groups:
                if g is not h:
                    for x in g:
                        for y in h:
                            self.blocked.add((x, y))
        self.out.append(" | ".join(",".join(map(str, g)) for g in groups))

    def cmd_cut(self, args: list[str]) -> None:
        a, b = args[0].split("->")
        self.blocked.add((int(a), int(b)))

    def cmd_heal(self, args: list[str]) -> None:
        self.blocked.clear()

    def cmd_append(self, args: list[str]) -> None:
        node = self._node(args[0])
        try:
            offset = node.core.append([a.encode() for a in args[1:]])  # type: ignore[union-attr]
        except NotLeaderError as exc:
            self.out.append(f"error: {exc}")
            return
        self.out.append(f"appended up to offset {offset}")
        self._process(node)

    def cmd_resign(self, args: list[str]) -> None:
        node = self._node(args[0])
        node.core.resign()  # type: ignore[union-attr]
        self._process(node)

    def cmd_snapshot(self, args: list[str]) -> None:
        node = self._node(args[0])
        core = node.core
        assert core is not None
        sid = core.create_snapshot(node.sm.applied_end, node.sm.snapshot_bytes())
        node.sm.last_snapshot_end = sid.end_offset
        self.out.append(f"node {node.node_id}: snapshot (end={sid.end_offset},epoch={sid.epoch})")
        self._process(node)

    def cmd_crash(self, args: list[str]) -> None:
        node = self._node(args[0])
        node.core = None
        node.disk.crash()
        self.out.append(f"node {node.node_id}: crashed")

    def cmd_restart(self, args: list[str]) -> None:
        node = self.nodes[int(args[0])]
        assert node.core is None
        self._start(node.node_id)
        self.out.append(f"node {node.node_id}: {format_state(node.core)}")  # type: ignore[arg-type]

    def cmd_status(self, args: list[str]) -> None:
        for nid, node in sorted(self.nodes.items()):
            kind = "" if nid in self.voters else " (observer)"
            text = "crashed" if node.core is None else format_state(node.core)
            self.out.append(f"node {nid}{kind}: {text}")

    def cmd_log(self, args: list[str]) -> None:
        node = self._node(args[0])
        log = node.core.log  # type: ignore[union-attr]
        entries = [f"{log.start_offset + i}:{format_entry(log.entry(log.start_offset + i))}" for i in range(len(log))]
        self.out.append(f"node {node.node_id} log from {log.start_offset}: " + (" ".join(entries) or "(empty)"))

    def cmd_describe(self, args: list[str]) -> None:
        node = self._node(args[0])
        try:
            info = node.core.describe_quorum()  # type: ignore[union-attr]
        except NotLeaderError as exc:
            self.out.append(f"error: {exc}")
            return
        self.out.append(f"leader={info.leader_id} epoch={info.leader_epoch} high_watermark={info.high_watermark}")
        for kind, replicas in (("voter", info.voters), ("observer", info.observers)):
            for r in replicas:
                self.out.append(
                    f"  {kind} {r.replica_id}: log_end_offset={r.log_end_offset} "
                    f"last_fetch={r.last_fetch_timestamp} last_caught_up={r.last_caught_up_timestamp}"
                )


def run_script(text: str) -> tuple[list[Block], list[list[str]]]:
    blocks = parse(text)
    cluster = ScenarioCluster()
    outputs = []
    for block in blocks:
        try:
            outputs.append(cluster.run(block.command))
        except Exception as exc:  # a scenario prints errors instead of dying
            outputs.append(cluster.out + [f"error: {type(exc).__name__}: {exc}"])
    return blocks, outputs
