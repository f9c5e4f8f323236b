"""Disk faults and power loss for chaos runs, through the testbed's disk
fault layer (partition_log/disk_faults.py).

Every node of a disk scenario runs with KRAFTLOG_TESTBED_DISK_FAULTS set to
its own control folder (`command_prefix`: `env VAR=folder` in front of the
node's command), so its storage goes through the layer; the faults are
rules written to that folder, or, for a power loss, the layer's journal
replayed with the node dead. Each fault's targets and effects go into the
history with the fault (Nemesis records what `inflict` returns):

- `eio-fsync`: every fsync of the workload topic's partitions on one
  broker (the partition's leader half the time) fails with EIO. The broker
  must not acknowledge, takes its log directory offline (KIP-112), hands
  its leaderships over and exits; undone by restarting it.
- `enospc`: the next write there is cut short with ENOSPC (the disk filled
  mid-append): the same, and no partial batch may ever be read.
- `torn-write`: the next write there is half written and the process dies
  (SIGKILL) at once: the restarted broker's recovery cuts the torn tail at
  the last batch whose CRC holds.
- `power-loss`: every node is killed at once and each file cut back to
  what its node had fsynced; undone by starting every node. With Kafka's
  defaults (no fsync per write) acknowledged writes are lost, and the run
  says how many; with `log.flush.interval.messages=1` (DURABLE_PROPERTIES)
  none may be. `power_loss(nodes)` does the same to some nodes only (the
  last-replica-standing scenario's leader, chaos/last_replica.py), the
  others running on.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Protocol, Sequence

from partition_log import disk_faults as df

DISK_FAULTS = ("eio-fsync", "enospc", "torn-write", "power-loss")
# flush.messages=1 on every replica (broker default, so the internal topics
# too): with acks=all an answer means every ISR member fsynced the batch.
DURABLE_PROPERTIES = {"log.flush.interval.messages": 1}
STOP_BY_ITSELF_S = 60.0  # a broker whose log directory failed hands over and exits within this


class DiskCluster(Protocol):
    pids: dict[int, int]

    def kill(self, node_id: int) -> None: ...
    def start(self, *node_ids: int) -> None: ...
    def alive(self, node_id: int) -> bool: ...
    def wait_exit(self, node_id: int, timeout: float) -> int: ...


def control_folder(root: Path, node_id: int) -> Path:
    return Path(root) / f"node-{node_id}"


def env_prefix(root: Path, inner: Callable[[int], Sequence[str]] = lambda node_id: ()) -> Callable[[int], tuple[str, ...]]:
    """A command prefix putting each node's storage under the fault layer (after `inner`'s, e.g. a namespace)."""
    return lambda node_id: (*inner(node_id), "env", f"{df.ENV}={control_folder(root, node_id)}")


@dataclass
class DiskNemesis:
    cluster: DiskCluster
    root: Path  # the control folders' parent
    nodes: Sequence[int]
    brokers: Sequence[int]
    topic: str  # the workload's topic: its partition folders are the targets
    # writes a line about the fault's effect into the history (HistoryRecorder.fault)
    note: Callable[..., None] = lambda kind, phase, **details: None

    def inflict(self, kind: str, rng: random.Random, leader: Optional[int]) -> tuple[dict, Callable[[], None]]:
        if kind == "power-loss":
            return self._power_loss()
        target = leader if leader is not None and rng.random() < 0.5 else rng.choice(list(self.brokers))
        rule = {"eio-fsync": df.Rule("fsync", "EIO", path=f"/{self.topic}-"),
                "enospc": df.Rule("write", "ENOSPC", path=f"/{self.topic}-", times=1, mode="short"),
                "torn-write": df.Rule("write", "EIO", path=f"/{self.topic}-", times=1, mode="torn")}[kind]
        folder = control_folder(self.root, target)
        before = df.injected(folder)
        df.write_rules(folder, [rule])
        return {"nodes": [target], "rule": rule.to_json()}, lambda: self._after_rule(kind, target, folder, before)

    def _after_rule(self, kind: str, node: int, folder: Path, injected_before: int) -> None:
        """Clear the rule; if the node hit it, wait (bounded) for it to stop
        by itself, as it must, and start it again; the history says which
        happened. A node that never stopped is left running."""
        df.write_rules(folder, [])
        time.sleep(0.2)  # a write that read the rule just before it went has injected by now
        if df.injected(folder) == injected_before:
            self.note(kind, "effect", nodes=[node], hit=False)  # it wrote or synced nothing there meanwhile
            return
        try:
            status = self.cluster.wait_exit(node, STOP_BY_ITSELF_S) if node in self.cluster.pids else None
        except TimeoutError:
            self.note(kind, "effect", nodes=[node], hit=True, stopped=False)
            return
        self.note(kind, "effect", nodes=[node], hit=True, stopped=True, exit_status=status)
        self.cluster.start(node)

    def _power_loss(self) -> tuple[dict, Callable[[], None]]:
        details, _cuts = self.power_loss(self.nodes)
        down = details["nodes"]
        return details, lambda: self.cluster.start(*down)

    def power_loss(self, nodes: Sequence[int]) -> tuple[dict, list[tuple[str, int, Optional[int]]]]:
        """Kill these nodes at once and cut each of their files back to what
        its node fsynced (the others run on: one node's power loss when
        `nodes` is one). What it did, and every cut (path, size before, size
        after or None when the file was removed). Restarting them is the caller's."""
        down = [n for n in nodes if n in self.cluster.pids]
        for node in down:  # as close to "at once" as signals go
            self.cluster.kill(node)
        cuts = [cut for node in nodes for cut in df.power_loss(control_folder(self.root, node))]
        details = {"nodes": down, "files_cut": len(cuts), "bytes_cut": sum(b - (a or 0) for _p, b, a in cuts),
                   "files_removed": sum(a is None for _p, _b, a in cuts)}
        return details, cuts


def durable(properties: dict) -> dict:
    return {**properties, **DURABLE_PROPERTIES}
