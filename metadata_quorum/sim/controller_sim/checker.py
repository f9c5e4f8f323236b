"""Invariants of the metadata the controller writes, checked as every record is applied.

- a leader is live (registered, unfenced, not shutting down) and in the
  ISR; a RECOVERING (uncleanly elected) leader is the whole ISR;
- the ISR is a non-empty subset of the replicas, without repeats (empty
  only without a leader, with KIP-966's eligible leader replicas on: its
  last member came back from an unclean shutdown); the data invariants of
  the ELR are `logs.py`'s;
- leader and partition epochs never decrease; every change bumps the
  partition epoch by one;
- a broker just fenced or shutting down leads nothing and stays in an ISR
  only when nobody in it could lead (the partition is offline);
- a clean election picks an ISR member; an unclean one happens only when
  the topic or cluster allows it, or on an operator's request;
- an accepted AlterPartition came from the current leader with the
  current leader and partition epochs, and adds only live brokers;
- a broker registers fenced, with the offset of its record as epoch;
  producer id blocks never overlap;
- an automatically placed topic spreads its leaders evenly and each
  partition over as many racks as it can;
- a reassignment's adding and removing replicas are disjoint replicas;
  one ends with a subset of the replicas it had (no broker becomes a
  replica without being an adding one first), and it completes to its
  target only with every adding replica in the ISR;
- replaying the whole log into a fresh image gives the same image.
"""

from __future__ import annotations

from collections import Counter
from typing import AbstractSet, Iterable, Optional

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import ControllerConfig
from metadata_quorum.controller.elections import NO_LEADER, live_brokers
from metadata_quorum.features import elr_enabled
from metadata_quorum.image import BrokerRegistration, MetadataImage, PartitionState


class InvariantViolation(Exception):
    pass


def fail(message: str) -> None:
    raise InvariantViolation(message)


class ControllerChecker:
    def __init__(self, config: ControllerConfig, stats: Counter[str]) -> None:
        # The configuration as the operator wrote it (a planted bug may
        # give the controller another).
        self.config = config
        self.stats = stats
        self.max_epochs: dict[tuple[bytes, int], tuple[int, int]] = {}
        self.producer_blocks: list[tuple[int, int]] = []

    # --- one record, before and after it is applied ---------------------------------------

    def before(self, image: MetadataImage, record: mpb.MetadataRecord, offset: int, unclean_requested: bool) -> None:
        kind = record.WhichOneof("record")
        if kind == "register_broker":
            rec = record.register_broker
            if rec.broker_epoch != offset:
                fail(f"broker {rec.broker_id} registered with epoch {rec.broker_epoch} at offset {offset}")
            if not rec.fenced:
                fail(f"broker {rec.broker_id} registered unfenced")
        elif kind == "partition_change":
            self._before_change(image, record.partition_change, unclean_requested)
        elif kind == "producer_ids":
            start, end = image.next_producer_id, record.producer_ids.next_producer_id
            if any(s < end and start < e for s, e in self.producer_blocks):
                fail(f"producer id block [{start}, {end}) overlaps an earlier one")
            self.producer_blocks.append((start, end))

    def _before_change(self, image: MetadataImage, change: mpb.PartitionChangeRecord, unclean_requested: bool) -> None:
        state = image.partition(change.topic_id, change.partition_id)
        assert state is not None
        # The ISR the new leader gets: a completed reassignment's change carries
        # the ISR that just took in its last new replica, which may lead then.
        isr = tuple(change.isr.ids) if change.HasField("isr") else state.isr
        if change.election == mpb.ELECTION_CLEAN and change.leader not in isr:
            fail(f"clean election of {change.leader}, outside the ISR {list(isr)}")
        if change.election == mpb.ELECTION_UNCLEAN:
            self.stats["unclean elections"] += 1
            name = image.topics[change.topic_id].name
            allowed = self.config.unclean_election_enabled(image.cluster_config(), image.topic_config(name))
            if not (allowed or unclean_requested):
                fail(f"unclean election of {change.leader} in {name!r}, which does not allow it")
        if change.election == mpb.ELECTION_PREFERRED:
            self.stats["preferred elections"] += 1
        if change.HasField("leader") and change.leader == NO_LEADER and state.leader != NO_LEADER:
            self.stats["partitions gone offline"] += 1

    def after(self, image: MetadataImage, record: mpb.MetadataRecord, old: Optional[PartitionState]) -> None:
        if record.WhichOneof("record") == "partition_change" and old is not None:
            change = record.partition_change
            new = image.partition(change.topic_id, change.partition_id)
            assert new is not None
            if new.partition_epoch != old.partition_epoch + 1:
                fail(f"a change of partition {change.partition_id} did not bump its partition epoch by one")
            self._reassignment_step(change.partition_id, old, new)

    def _reassignment_step(self, pid: int, old: PartitionState, new: PartitionState) -> None:
        adding, removing = set(new.adding_replicas), set(new.removing_replicas)
        if adding & removing or not (adding | removing) <= set(new.replicas):
            fail(f"partition {pid}: adding {sorted(adding)} / removing {sorted(removing)} vs replicas "
                 f"{list(new.replicas)}")
        if not (old.adding_replicas or old.removing_replicas) or new.adding_replicas or new.removing_replicas:
            return
        if not set(new.replicas) <= set(old.replicas):
            fail(f"partition {pid}: a reassignment of {list(old.replicas)} ended with replicas "
                 f"{list(new.replicas)}: a broker joined without being an adding replica first")
        if new.replicas == tuple(b for b in old.replicas if b not in old.adding_replicas):
            self.stats["reassignments cancelled"] += 1
        else:
            self.stats["reassignments completed"] += 1
            if new.replicas == tuple(b for b in old.replicas if b not in old.removing_replicas) and not set(
                    old.adding_replicas) <= set(new.isr):
                fail(f"partition {pid}: a reassignment completed with {list(old.adding_replicas)} "
                     f"not all in the ISR {list(new.isr)}")

    # --- after every step ---------------------------------------------------------------------

    def step(self, image: MetadataImage, newly_gone: AbstractSet[int] = frozenset()) -> None:
        live = live_brokers(image)
        elr_on = elr_enabled(image.features)
        for topic_id, topic in image.topics.items():
            for pid, state in topic.partitions.items():
                where = f"{topic.name}/{pid}"
                isr = set(state.isr)
                if not state.isr and (state.leader != NO_LEADER or not elr_on):
                    fail(f"{where}: empty ISR (leader {state.leader})")
                if not state.isr:
                    self.stats["empty ISRs"] += 1
                if len(isr) != len(state.isr) or not isr <= set(state.replicas):
                    fail(f"{where}: ISR {list(state.isr)} not a subset of replicas {list(state.replicas)}")
                if state.leader != NO_LEADER:
                    if state.leader not in live:
                        fail(f"{where}: leader {state.leader} is fenced, shutting down or unregistered")
                    if state.leader not in isr and state.leader_recovery_state != mpb.RECOVERING:
                        fail(f"{where}: leader {state.leader} not in ISR {list(state.isr)}")
                    if state.leader_recovery_state == mpb.RECOVERING and state.isr != (state.leader,):
                        fail(f"{where}: RECOVERING leader {state.leader} with ISR {list(state.isr)}")
                key = (topic_id, pid)
                epochs = (state.leader_epoch, state.partition_epoch)
                previous = self.max_epochs.get(key)
                if previous is not None and (epochs[0] < previous[0] or epochs[1] < previous[1]):
                    fail(f"{where}: (leader epoch, partition epoch) went from {previous} to {epochs}")
                self.max_epochs[key] = epochs
                for b in newly_gone & isr:
                    if state.leader != NO_LEADER or live & isr:
                        fail(f"{where}: broker {b} left but stays in ISR {list(state.isr)} (leader {state.leader})")

    def alter_partition(self, image: MetadataImage, request: cpb.AlterPartitionRequest,
                        current: PartitionState) -> None:
        """An AlterPartition was accepted with a change against `current` (the state before it)."""
        data = request.topics[0].partitions[0]
        if (current.leader != request.broker_id or current.leader_epoch != data.leader_epoch
                or current.partition_epoch != data.partition_epoch):
            fail(f"AlterPartition from a stale view accepted: request by {request.broker_id} at epochs "
                 f"({data.leader_epoch}, {data.partition_epoch}), partition {current}")
        added = set(data.new_isr) - set(current.isr)
        not_live = added - live_brokers(image)
        if not_live:
            fail(f"AlterPartition added non-live broker(s) {sorted(not_live)} to the ISR")

    def placement(self, image: MetadataImage, name: str, usable: Iterable[BrokerRegistration]) -> None:
        """A topic just placed automatically over `usable` brokers."""
        created = image.topic(name)
        assert created is not None
        racks = {b.broker_id: b.rack for b in usable}
        rack_count = len(set(racks.values()))
        leaders = Counter(s.leader for s in created.partitions.values())
        if len(created.partitions) >= len(racks) and max(leaders.values()) - min(leaders[b] for b in racks) > 1:
            fail(f"leaders of {name!r} unevenly spread: {dict(leaders)}")
        for pid, state in created.partitions.items():
            if not set(state.replicas) <= set(racks):
                fail(f"{name}/{pid} placed on unusable brokers {list(state.replicas)}")
            if all(r is not None for r in racks.values()):
                spread = len({racks[b] for b in state.replicas})
                if spread != min(len(state.replicas), rack_count):
                    fail(f"{name}/{pid} replicas {list(state.replicas)} use {spread} racks of {rack_count}")

    def replay(self, log: list[mpb.MetadataRecord], image: MetadataImage) -> None:
        fresh = MetadataImage()
        for offset, record in enumerate(log):
            fresh.apply(record, offset)
        if fresh != image:
            fail("replaying the log gives a different image")
        image.check_index()
