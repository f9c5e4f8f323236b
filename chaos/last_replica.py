"""KIP-966's "last replica standing" as one scripted, seeded fault.

The sequence Kafka loses acknowledged writes in even with acks=all and
min.insync.replicas 2 when no replica fsyncs per write:

1. cut: the followers of one workload partition (drawn by the seed) are cut
   off from its leader - both ways, by iptables on the testbed (each keeps
   reaching the controllers and the run's clients); without a testbed they
   are paused (SIGSTOP), so the controller fences them - until the ISR the
   leader sees is the leader alone (it shrank the ISR after
   replica.lag.time.max.ms, or the controller took the fenced ones out);
2. power loss of the leader alone (`DiskNemesis.power_loss([leader])`):
   killed, each of its files cut back to what it had fsynced, every other
   node left running;
3. after a seeded 1-3 s it is started again, then the cut is healed;
4. it is re-elected: it is the only ISR member, so a clean election waits
   for it (its leader epoch past the one seen at step 1), and the
   followers, which had every acknowledged write, truncate to its log.

`last-replica-standing-elr` runs the same sequence with KIP-966's
eligible leader replicas on (eligible.leader.replicas.version 1, Kafka's
defaults otherwise): the shrink puts both followers in the ELR, the high
watermark stays while the ISR is the leader alone, and the leader's power
loss is an unclean shutdown (no clean-shutdown marker), so the controller
elects a follower from the ELR instead (step 4 expects a follower, with a
leader epoch past the one seen at step 1) and nothing acknowledged is lost.

Every step goes into the history (`note`, HistoryRecorder.fault with phase
"step") with what it did and saw; the call returns the whole sequence for
the fault's own history line and the run's summary. With Kafka's defaults
the leader's unfsynced tail is lost with every write only it and the
followers held; in the durable mode (log.flush.interval.messages=1) the
leader had fsynced every acknowledged write and nothing is lost; with
the ELR, the followers are elected instead (docs/architecture.md, section 13).
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Protocol, Sequence

from .disk_nemesis import DiskNemesis
from .testbed import NetworkTestbed

LAST_REPLICA = "last-replica-standing"
LAST_REPLICA_DURABLE = LAST_REPLICA + "-durable"
LAST_REPLICA_ELR = LAST_REPLICA + "-elr"  # KIP-966's eligible leader replicas on
WARMUP_S = 5.0  # acknowledged writes on every replica before the cut
DOWN_S = (1.0, 3.0)  # how long the leader stays powered off
SHRINK_TIMEOUT_S = 60.0  # the ISR shrinks within a lag window or a session timeout; a loaded machine is slow
ELECTION_TIMEOUT_S = 120.0  # a restarted broker registers, catches up on metadata and is unfenced
POLL_S = 0.2


class Cluster(Protocol):
    pids: dict[int, int]

    def kill(self, node_id: int) -> None: ...
    def start(self, *node_ids: int) -> None: ...
    def pause(self, node_id: int) -> None: ...
    def resume(self, node_id: int) -> None: ...
    def metadata(self, broker_id: Optional[int] = None, topics: Sequence[str] = (), timeout: float = 2.0) -> Any: ...


@dataclass(frozen=True)
class PartitionView:
    leader: int  # -1: none
    leader_epoch: int
    isr: list[int]
    replicas: list[int]
    elr: list[int]  # KIP-966's eligible leader replicas (empty with the feature off)
    last_known_elr: list[int]


def partition_view(metadata: Any, topic: str, partition: int) -> Optional[PartitionView]:
    """One partition as a Metadata answer describes it; None if it does not."""
    if metadata is None:
        return None
    for t in metadata.topics:
        if t.name == topic:
            for p in t.partitions:
                if p.partition_index == partition:
                    return PartitionView(p.leader_id, p.leader_epoch, sorted(p.isr_nodes), sorted(p.replica_nodes),
                                         sorted(p.eligible_leader_replicas), sorted(p.last_known_elr))
    return None


def draw(rng: random.Random, partitions: int) -> tuple[int, float]:
    """The seed's choices: the partition, and how long its leader stays down."""
    return rng.randrange(partitions), round(rng.uniform(*DOWN_S), 3)


def short_path(path: str) -> str:
    """A cut file as `<partition folder>/<file>`."""
    return "/".join(Path(path).parts[-2:])


def expected_elr(isrs_seen: list[list[int]], leader: int, followers: list[int]) -> list[int]:
    """KIP-966's ELR once an ISR of the leader and `followers` (min ISR 2) shrank to the leader
    alone, through the ISRs `isrs_seen` on the way: the followers that left in the last shrink, the
    one that took the ISR below min ISR. One that left before, while min ISR held, may have missed
    writes the high watermark passed."""
    before = [isr for isr in isrs_seen if isr != [leader]]
    last = before[-1] if before else [leader, *followers]
    return sorted(b for b in last if b in followers)


@dataclass
class LastReplicaStanding:
    cluster: Cluster
    brokers: Sequence[int]
    topic: str
    partitions: int
    disk: DiskNemesis
    testbed: Optional[NetworkTestbed]
    note: Callable[..., None]  # HistoryRecorder.fault
    shrink_timeout_s: float = SHRINK_TIMEOUT_S
    election_timeout_s: float = ELECTION_TIMEOUT_S
    elr: bool = False  # KIP-966 on: step 4 expects a follower from the ELR, not the old leader

    def __post_init__(self) -> None:
        self.outcome: dict[str, Any] = {}  # what the last call did, as far as it got

    def __call__(self, rng: random.Random) -> dict[str, Any]:
        partition, down_s = draw(rng, self.partitions)
        outcome = self.outcome = {"partition": partition, "down_s": down_s, "isr_shrunk": False,
                                  "power_loss": False, "re_elected": False, "elected_follower": False,
                                  "expected": "elected_follower" if self.elr else "re_elected", "steps": []}
        before = self._wait(lambda: self._view(partition, lambda v: v.leader >= 0), self.election_timeout_s)
        if before is None:
            self._step(outcome, "no-leader", partition=partition)
            return outcome
        leader = before.leader
        followers = [b for b in before.replicas if b != leader]
        how = self._cut(leader, followers)
        outcome.update(leader=leader, followers=followers, cut=how)
        self._step(outcome, "cut", partition=partition, leader=leader, followers=followers, how=how,
                   isr=before.isr, leader_epoch=before.leader_epoch)
        started = time.monotonic()
        # Each ISR the leader showed on the way. The followers' last fetches straddle a shrink check
        # now and then, and the ISR then shrinks in two steps; KIP-966 puts only the second leaver in
        # the ELR (the first left while the ISR still met min ISR), so the trace says which to expect.
        isrs_seen: list[list[int]] = []

        def leader_alone() -> Optional[PartitionView]:
            # The leader itself answers: paused followers do not, and its view is the one it acknowledges by.
            view = self._view(partition, lambda v: True, broker=leader)
            if view is not None and (not isrs_seen or isrs_seen[-1] != view.isr):
                isrs_seen.append(view.isr)
            return view if view is not None and view.isr == [leader] else None

        shrunk = self._wait(leader_alone, self.shrink_timeout_s)
        seen = shrunk or self._view(partition, lambda v: True, broker=leader)
        self._step(outcome, "isr-shrunk" if shrunk else "isr-not-shrunk", partition=partition, leader=leader,
                   isr=seen.isr if seen else None, elr=seen.elr if seen else None,
                   leader_epoch=seen.leader_epoch if seen else None, isrs_seen=isrs_seen,
                   waited_s=round(time.monotonic() - started, 3))
        if shrunk is None:  # the sequence cannot go on: undo the cut, nothing else happened
            self._heal(how, followers)
            self._step(outcome, "heal", nodes=followers, how=how)
            return outcome
        outcome["isr_shrunk"] = True
        details, cuts = self.disk.power_loss([leader])
        outcome["power_loss"] = True
        ours = [{"file": short_path(p), "before": b, "after": a} for p, b, a in cuts
                if f"/{self.topic}-" in p]
        self._step(outcome, "power-loss", **details, topic_files=ours)
        time.sleep(down_s)
        self.cluster.start(leader)
        self._step(outcome, "restart", nodes=[leader])
        self._heal(how, followers)
        self._step(outcome, "heal", nodes=followers, how=how)
        started = time.monotonic()
        elected = self._wait(lambda: self._view(partition, lambda v: v.leader >= 0
                                                and v.leader_epoch > shrunk.leader_epoch), self.election_timeout_s)
        seen = elected or self._view(partition, lambda v: True)
        outcome["re_elected"] = elected is not None and elected.leader == leader
        outcome["elected_follower"] = elected is not None and elected.leader in followers
        self._step(outcome, "elected" if elected else "not-elected", partition=partition,
                   leader=seen.leader if seen else None, was_leader=leader,
                   leader_epoch=seen.leader_epoch if seen else None, isr=seen.isr if seen else None,
                   elr=seen.elr if seen else None, last_known_elr=seen.last_known_elr if seen else None,
                   waited_s=round(time.monotonic() - started, 3))
        return outcome

    # -- steps -----------------------------------------------------------------------------------
    def _cut(self, leader: int, followers: list[int]) -> str:
        if self.testbed is not None:
            self.testbed.partition([[leader], followers])  # the controllers are in neither group: all reach them
            return "iptables"
        for follower in followers:
            self.cluster.pause(follower)
        return "SIGSTOP"

    def _heal(self, how: str, followers: list[int]) -> None:
        if how == "iptables":
            assert self.testbed is not None
            self.testbed.heal()
            return
        for follower in followers:
            if follower in self.cluster.pids:
                self.cluster.resume(follower)

    def _step(self, outcome: dict[str, Any], step: str, **details: Any) -> None:
        outcome["steps"].append(step)
        self.note(LAST_REPLICA, "step", step=step, **details)

    def _view(self, partition: int, wanted: Callable[[PartitionView], bool],
              broker: Optional[int] = None) -> Optional[PartitionView]:
        """The partition as a broker (`broker`, else the first live one that answers) sees it, if `wanted`."""
        for b in (broker,) if broker is not None else [b for b in self.brokers if b in self.cluster.pids]:
            view = partition_view(self.cluster.metadata(b, topics=[self.topic], timeout=1.0), self.topic, partition)
            if view is not None:
                return view if wanted(view) else None
        return None

    @staticmethod
    def _wait(find: Callable[[], Optional[PartitionView]], timeout_s: float) -> Optional[PartitionView]:
        deadline = time.monotonic() + timeout_s
        while True:
            found = find()
            if found is not None or time.monotonic() >= deadline:
                return found
            time.sleep(POLL_S)
