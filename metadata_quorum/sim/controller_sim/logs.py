"""A model of the partitions' replica logs, for KIP-966's invariants.

Only offsets: each replica's log end offset, and each partition's high
watermark (what acks=all producers were told is committed). The leader the
image names appends while its broker runs; every running follower that is
not lagging copies the leader's log (a truncation and a catch-up in one
step); the high watermark moves up to the least log end offset of the ISR,
and - with `eligible.leader.replicas.version` 1, the brokers' strict min
ISR rule - only while the ISR has at least min.insync.replicas members. A
broker that crashes loses an unflushed tail of every log (up to
LOST_TAIL records, taken when its next incarnation registers: it serves
nothing before); one that stops after a controlled shutdown loses nothing.

The invariants (with the feature on; `InvariantViolation` otherwise):

- a leader elected from the ELR has at least the high watermark the
  partition had when that replica left the ISR, and the one it has now;
- a broker back from a crash is in no ELR of a partition until it has been
  in that partition's ISR again, nor in any ISR right after it registers;
- a running leader never has fewer records than the high watermark, but
  after an unclean or last-known election (which lose what they lose: the
  high watermark is then reset to the new leader's log).

With the feature off the last can fail (the last ISR member's power loss):
it is counted as "committed records lost (ELR off)", not a violation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller.elections import NO_LEADER
from metadata_quorum.controller.partitions import eligibility
from metadata_quorum.features import elr_enabled
from metadata_quorum.image import MetadataImage, PartitionState

from .checker import fail

if TYPE_CHECKING:
    from .schedule import ControllerSim

LOST_TAIL = 5
WRITE_INTERVAL_MS = 300

Key = tuple[bytes, int]


class ReplicaLogs:
    def __init__(self, sim: "ControllerSim") -> None:
        self.sim = sim
        self.leo: dict[Key, dict[int, int]] = {}
        self.hw: dict[Key, int] = {}
        self.left_at: dict[tuple[Key, int], int] = {}  # the high watermark when a replica left the ISR
        self.tainted: set[tuple[Key, int]] = set()     # back from a crash, not yet in the ISR again

    @property
    def on(self) -> bool:
        return elr_enabled(self.sim.image.features)

    def _running(self, broker_id: int) -> bool:
        broker = self.sim.fleet.brokers.get(broker_id)
        return broker is not None and broker.alive and broker.epoch is not None

    def holds(self, key: Key, broker_id: int) -> bool:
        """Whether the replica has every committed record (a leader may add it to the ISR)."""
        return self.leo.get(key, {}).get(broker_id, 0) >= self.hw.get(key, 0)

    # --- time passes -------------------------------------------------------------------------

    def write(self) -> None:
        sim = self.sim
        sim.call_at(sim.now + WRITE_INTERVAL_MS, self.write)
        image = sim.image
        min_isr = eligibility(image, sim.config)
        for topic_id in sorted(image.topics):
            for pid, state in sorted(image.topics[topic_id].partitions.items()):
                self._write(image, (topic_id, pid), state, min_isr(topic_id))

    def _write(self, image: MetadataImage, key: Key, state: PartitionState, min_isr: Optional[int]) -> None:
        leo = self.leo.setdefault(key, {})
        for b in state.replicas:
            leo.setdefault(b, 0)
        leader = state.leader
        if leader == NO_LEADER or not self._running(leader):
            return
        hw = self.hw.get(key, 0)
        if leo[leader] < hw:
            if self.on:
                fail(f"{image.topics[key[0]].name}/{key[1]}: leader {leader} has {leo[leader]} records, "
                     f"{hw} were committed")
            self.sim.stats["committed records lost (ELR off)"] += hw - leo[leader]
            self.hw[key] = hw = leo[leader]
        leo[leader] += self.sim.rng.randint(0, 3)
        for b in state.replicas:
            follower = self.sim.fleet.brokers.get(b)
            if b != leader and self._running(b) and follower is not None and not follower.lagging:
                leo[b] = leo[leader]
        if state.isr and (min_isr is None or len(state.isr) >= min_isr):
            self.hw[key] = max(hw, min(leo.get(b, 0) for b in state.isr))

    # --- brokers crash and start -----------------------------------------------------------------

    def registered_after_crash(self, broker_id: int) -> None:
        """A crashed broker's new incarnation is registered (its registration
        decision applied): each of its logs lost up to LOST_TAIL records (found
        as it started; it served nothing before registering), and it must be
        in no ISR and no ELR now, nor in an ELR again before the ISR."""
        for key, leo in sorted(self.leo.items()):
            if broker_id in leo:
                leo[broker_id] = max(0, leo[broker_id] - self.sim.rng.randint(0, LOST_TAIL))
                self.tainted.add((key, broker_id))
        if not self.on:
            return
        for topic in self.sim.image.topics.values():
            for pid, state in topic.partitions.items():
                if broker_id in state.isr or broker_id in state.elr:
                    fail(f"{topic.name}/{pid}: broker {broker_id} registered after an unclean shutdown "
                         f"but stays in the ISR {list(state.isr)} or ELR {list(state.elr)}")

    # --- metadata records ------------------------------------------------------------------------

    def before(self, image: MetadataImage, record: mpb.MetadataRecord) -> None:
        """A PartitionChangeRecord about to apply: an ELR election must lose nothing committed."""
        if record.WhichOneof("record") != "partition_change":
            return
        change = record.partition_change
        key = (change.topic_id, change.partition_id)
        state = image.partition(*key)
        assert state is not None
        where = f"{image.topics[key[0]].name}/{key[1]}"
        leo = self.leo.get(key, {})
        hw = self.hw.get(key, 0)
        if change.election == mpb.ELECTION_ELR:
            self.sim.stats["ELR elections"] += 1
            leader = change.leader
            if leader not in state.elr:
                fail(f"{where}: ELR election of {leader}, outside the ELR {list(state.elr)}")
            held = leo.get(leader, 0)
            left = self.left_at.get((key, leader), 0)
            if held < left or held < hw:
                fail(f"{where}: ELR election of {leader} with {held} records; it left the ISR at high "
                     f"watermark {left}, the partition's is {hw}")
        if change.election in (mpb.ELECTION_UNCLEAN, mpb.ELECTION_LAST_KNOWN) and change.leader != NO_LEADER:
            self.sim.stats["last known elections" if change.election == mpb.ELECTION_LAST_KNOWN
                            else "unclean elections (model)"] += 1
            self.hw[key] = min(hw, leo.get(change.leader, 0))
        if change.HasField("isr"):
            for b in state.isr:
                if b not in change.isr.ids:
                    self.left_at[(key, b)] = hw

    def step(self, image: MetadataImage) -> None:
        """After each decision: the lists' shape, and no crashed broker back in an ELR."""
        on = self.on
        for topic_id, topic in image.topics.items():
            for pid, state in topic.partitions.items():
                key = (topic_id, pid)
                where = f"{topic.name}/{pid}"
                if not on and (state.elr or state.last_known_elr):
                    fail(f"{where}: ELR {list(state.elr)} / last known {list(state.last_known_elr)} "
                         "with the feature off")
                if state.elr or state.last_known_elr:
                    self.sim.stats["partitions with an ELR"] += 1
                for b in state.isr:
                    self.tainted.discard((key, b))
                back = [b for b in state.elr if (key, b) in self.tainted]
                if on and back:
                    fail(f"{where}: broker(s) {back} back from an unclean shutdown are in the ELR "
                         f"{list(state.elr)}")
