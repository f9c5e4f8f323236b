"""Partition reassignment (KIP-455): AlterPartitionReassignments, ListPartitionReassignments,
and the step that completes a reassignment.

A reassignment of a partition from replicas C to a target T is recorded in
the partition itself, as Kafka does: replicas := T followed by the members
of C not in T, adding_replicas := T - C, removing_replicas := C - T. Every
broker named in replicas holds the partition, so the adding ones start
following the leader and fetching; its leader adds them to the ISR through
the ordinary AlterPartition path. The reassignment completes in the same
PartitionChangeRecord as the ISR change that puts the last adding replica
in the ISR: replicas := T, the removing replicas leave the ISR, adding and
removing are cleared, and a leader being removed hands over to the first
replica of T (in T's order) that is in the new ISR and live. A target whose
replicas are all in the ISR already completes at once.

A completion is held back, as Kafka holds it back, when the ISR without the
removing replicas would be empty; and also (not Kafka's rule) when it would
leave the partition leaderless though it is led now: no target replica of
the new ISR is live. It completes at the next ISR change instead.

A new target while one is under way starts from the partition's current
replica set (the union), as Kafka's does. A cancel (no target) reverts:
replicas := replicas - adding, ISR := ISR - adding; if that leaves no ISR
(every original replica fell out while the new ones caught up), Kafka's
rule: the first original replica becomes the ISR and the leader is chosen
uncleanly (RECOVERING), since records only the new replicas held may be lost.

Target checks are Kafka's (INVALID_REPLICA_ASSIGNMENT): a non-empty list of
registered brokers without repeats. A fenced or shut-down broker may be a
target, as in Kafka: it catches up once it is back, and the reassignment
waits for it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import AbstractSet, Optional, Sequence

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image import MetadataImage, PartitionState

from .elections import (NO_LEADER, Election, IsLive, MinIsr, change_record, elect_leader, live_brokers,
                        track_eligible)
from .errors import ControllerError, Error
from .result import MAX_RECORDS_PER_USER_OP, ControllerResult, too_many_records

ReassignablePartition = cpb.AlterPartitionReassignmentsRequest.ReassignablePartition


def is_reassigning(state: PartitionState) -> bool:
    return bool(state.adding_replicas or state.removing_replicas)


def with_target(state: PartitionState, target: Sequence[int]) -> PartitionState:
    """`state` with a reassignment to `target` recorded (not yet completed)."""
    current = state.replicas
    removing = tuple(b for b in current if b not in target)
    adding = tuple(b for b in target if b not in current)
    return replace(state, replicas=tuple(target) + removing, adding_replicas=adding, removing_replicas=removing)


def completed(state: PartitionState) -> Optional[PartitionState]:
    """`state` with its reassignment completed, or None while it cannot complete:
    an adding replica is not in the ISR yet, or no ISR member would be left."""
    if not is_reassigning(state):
        return None
    if any(b not in state.isr for b in state.adding_replicas):
        return None
    removing = state.removing_replicas
    isr = tuple(b for b in state.isr if b not in removing)
    if not isr:
        return None
    return replace(state, replicas=tuple(b for b in state.replicas if b not in removing), isr=isr,
                   adding_replicas=(), removing_replicas=())


def complete(state: PartitionState, is_live: IsLive) -> Optional[tuple[PartitionState, Election]]:
    """`state` (a proposal: a new ISR or a new target) with its reassignment
    completed and its leader elected; None when it cannot complete yet. The
    current leader stays while it is in the new ISR and live."""
    done = completed(state)
    if done is None:
        return None
    election = elect_leader(done, is_live, unclean_allowed=False)
    if election.leader == NO_LEADER and state.leader != NO_LEADER:
        return None  # never trade a leader for none: wait for a live target replica in the ISR
    return done, election


def settle(state: PartitionState, is_live: IsLive) -> tuple[PartitionState, Election]:
    """A new target recorded: complete it at once if it can, else elect as usual."""
    return complete(state, is_live) or (state, elect_leader(state, is_live, unclean_allowed=False))


def reverted(state: PartitionState, is_live: IsLive) -> tuple[PartitionState, Election]:
    """`state` with its reassignment cancelled: the replicas it had before, and a leader among them."""
    adding = state.adding_replicas
    replicas = tuple(b for b in state.replicas if b not in adding)
    isr = tuple(b for b in state.isr if b not in adding)
    elr = tuple(b for b in state.elr if b not in adding)
    if isr or elr:  # KIP-966: an eligible replica may lead the reverted partition cleanly
        back = replace(state, replicas=replicas, isr=isr, elr=elr, adding_replicas=(), removing_replicas=())
        return back, elect_leader(back, is_live, unclean_allowed=False)
    back = replace(state, replicas=replicas, isr=replicas[:1], adding_replicas=(), removing_replicas=())
    election = elect_leader(back, is_live, unclean_allowed=True)
    if election.leader != NO_LEADER:
        election = Election(election.leader, election.isr, mpb.RECOVERING, mpb.ELECTION_UNCLEAN)
    return back, election


def partition_change(topic_id: bytes, partition_id: int, old: PartitionState, new: PartitionState,
                     election: Election) -> Optional[mpb.MetadataRecord]:
    """The PartitionChangeRecord taking `old` to `new` led as `election` says; None if nothing changes."""
    record = change_record(topic_id, partition_id, old, election)
    if record is None:
        record = mpb.MetadataRecord(partition_change=mpb.PartitionChangeRecord(
            partition_id=partition_id, topic_id=topic_id))
        changed = False
    else:
        changed = True
    change = record.partition_change
    for field, before, after in (("replicas", old.replicas, new.replicas),
                                 ("adding_replicas", old.adding_replicas, new.adding_replicas),
                                 ("removing_replicas", old.removing_replicas, new.removing_replicas)):
        if tuple(before) != tuple(after):
            ids = getattr(change, field)
            ids.SetInParent()  # present even when empty: an empty list clears the field
            ids.ids.extend(after)
            changed = True
    return record if changed else None


# --- the requests ----------------------------------------------------------------------

def validate_target(image: MetadataImage, state: PartitionState, target: Sequence[int],
                    allow_replication_factor_change: bool) -> tuple[int, ...]:
    """Kafka's checks of a manual assignment (INVALID_REPLICA_ASSIGNMENT), and KIP-860's."""
    if not target:
        raise ControllerError(Error.INVALID_REPLICA_ASSIGNMENT,
                              "The manual partition assignment includes an empty replica list.")
    for broker_id, count in sorted(Counter(target).items()):
        if broker_id not in image.brokers:
            raise ControllerError(
                Error.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {broker_id}, but no such broker is registered.")
        if count > 1:
            raise ControllerError(
                Error.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {broker_id} more than once.")
    if not allow_replication_factor_change:
        # The factor the partition had before any reassignment under way.
        factor = len(state.replicas) - len(state.adding_replicas) if is_reassigning(state) else len(state.replicas)
        if len(target) != factor:
            raise ControllerError(
                Error.INVALID_REPLICATION_FACTOR,
                f"The replication factor is changed from {factor} to {len(target)}, "
                "which the request does not allow.")
    return tuple(target)


def alter_partition_reassignments(
    image: MetadataImage, request: cpb.AlterPartitionReassignmentsRequest, node_id: int,
    min_isr: MinIsr = lambda topic_id: None,
) -> ControllerResult:
    """Each partition's move (or cancel) decided on its own (`min_isr`: partitions.eligibility,
    for KIP-966's eligible leader replicas); the request is refused whole, before
    any partition is looked at, when it names more partitions than one request may change
    (MAX_RECORDS_PER_USER_OP: a partition is at most one record) or a partition twice."""
    response = cpb.AlterPartitionReassignmentsResponse(controller_id=node_id)
    count = sum(len(t.partitions) for t in request.topics)
    if count > MAX_RECORDS_PER_USER_OP:
        refusal = too_many_records(count)
        response.error_code, response.error_message = refusal.error, refusal.message
        return ControllerResult([], response)
    seen = Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    twice = next((tp for tp, n in seen.items() if n > 1), None)
    if twice is not None:
        response.error_code = Error.INVALID_REQUEST
        response.error_message = f"the partition {twice[0]}-{twice[1]} is listed more than once"
        return ControllerResult([], response)
    allow_factor_change = (not request.HasField("allow_replication_factor_change")
                           or request.allow_replication_factor_change)
    live = live_brokers(image)
    records = []
    for item in request.topics:
        topic_out = response.responses.add(name=item.name)
        topic = image.topic(item.name)
        for wanted in item.partitions:
            out = topic_out.partitions.add(partition_index=wanted.partition_index)
            try:
                state = topic.partitions.get(wanted.partition_index) if topic is not None else None
                if topic is None or state is None:
                    raise ControllerError(Error.UNKNOWN_TOPIC_OR_PARTITION)
                new, election = _decide(image, state, wanted, allow_factor_change, live)
            except ControllerError as exc:
                out.error_code = exc.error
                out.error_message = exc.message
                continue
            election = track_eligible(state, election, min_isr(topic.topic_id), replicas=new.replicas)
            record = partition_change(topic.topic_id, wanted.partition_index, state, new, election)
            if record is not None:
                records.append(record)
    return ControllerResult(records, response)


def _decide(image: MetadataImage, state: PartitionState, wanted: ReassignablePartition,
            allow_factor_change: bool, live: AbstractSet[int]) -> tuple[PartitionState, Election]:
    if not wanted.HasField("replicas"):
        if not is_reassigning(state):
            raise ControllerError(Error.NO_REASSIGNMENT_IN_PROGRESS)
        return reverted(state, live.__contains__)
    target = validate_target(image, state, wanted.replicas.ids, allow_factor_change)
    return settle(with_target(state, target), live.__contains__)


def list_partition_reassignments(
    image: MetadataImage, request: cpb.ListPartitionReassignmentsRequest, node_id: int
) -> ControllerResult:
    """The reassignments under way, by topic name and partition; topics and
    partitions named but unknown, or not being reassigned, are left out."""
    response = cpb.ListPartitionReassignmentsResponse(controller_id=node_id)
    wanted: dict[str, dict[int, None]] = {}  # each partition once, in the order asked
    if request.topics:
        for tp in request.topics:
            wanted.setdefault(tp.topic, {}).update(dict.fromkeys(tp.partitions))
    else:
        wanted = {name: dict.fromkeys(sorted(image.topics[tid].partitions)) for name, tid in image.topic_ids.items()}
    for name in sorted(wanted):
        topic = image.topic(name)
        if topic is None:
            continue
        ongoing = []
        for partition_id in wanted[name]:
            state = topic.partitions.get(partition_id)
            if state is not None and is_reassigning(state):
                ongoing.append(cpb.ListPartitionReassignmentsResponse.OngoingPartition(
                    partition_index=partition_id, replicas=state.replicas,
                    adding_replicas=state.adding_replicas, removing_replicas=state.removing_replicas))
        if ongoing:
            response.topics.add(name=name, partitions=ongoing)
    return ControllerResult([], response)
