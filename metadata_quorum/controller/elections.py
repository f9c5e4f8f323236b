"""Partition leader election, as pure functions of a partition's state.

- clean: the current leader stays if it is still in the ISR and live;
  otherwise the first live ISR member in replica order leads.
- unclean (only when `unclean.leader.election.enable` holds for the topic):
  when no ISR member is live, the first live replica outside it leads, the
  ISR becomes just that replica and the partition is RECOVERING: records
  acknowledged by the old ISR and missing on it are lost.
- offline: nobody eligible; the leader becomes -1 (NO_LEADER).
- preferred: leadership moves back to the first replica when it is live
  and in the ISR.

"Live" means registered, unfenced and not in controlled shutdown.
The ISR is never emptied: a replica that would be its last member stays,
so the partition can come back cleanly when that replica returns.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import AbstractSet, Callable, Iterable, Optional

from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image import MetadataImage, PartitionState

from .errors import ControllerError, Error

NO_LEADER = -1

IsLive = Callable[[int], bool]


def live_brokers(image: MetadataImage) -> frozenset[int]:
    """Brokers that may lead and join ISRs: registered, unfenced, not shutting down."""
    return frozenset(
        b.broker_id for b in image.brokers.values() if not b.fenced and not b.in_controlled_shutdown
    )


@dataclass(frozen=True)
class Election:
    """The leader, ISR and recovery state a partition should have, and why the leader changed."""

    leader: int
    isr: tuple[int, ...]
    leader_recovery_state: int
    kind: int = mpb.ELECTION_NONE


def elect_leader(
    state: PartitionState,
    is_live: IsLive,
    unclean_allowed: bool,
    isr: Optional[tuple[int, ...]] = None,
) -> Election:
    """Who should lead `state` given who is live, with `isr` as the ISR to keep (default: the current one)."""
    isr = state.isr if isr is None else isr
    recovery = state.leader_recovery_state
    if state.leader != NO_LEADER and state.leader in isr and is_live(state.leader):
        return Election(state.leader, isr, recovery)
    for replica in state.replicas:
        if replica in isr and is_live(replica):
            return Election(replica, isr, recovery, mpb.ELECTION_CLEAN)
    if unclean_allowed:
        for replica in state.replicas:
            if is_live(replica):
                return Election(replica, (replica,), mpb.RECOVERING, mpb.ELECTION_UNCLEAN)
    return Election(NO_LEADER, isr, recovery)


def without_brokers(
    state: PartitionState, gone: AbstractSet[int], is_live: IsLive, unclean_allowed: bool
) -> Election:
    """`gone` brokers (fenced or shutting down) leave the ISR and leadership.

    They leave the ISR only if someone stays in it; a leader among them is
    replaced from the remaining ISR (or uncleanly, or by NO_LEADER).
    """
    isr = tuple(b for b in state.isr if b not in gone) or state.isr

    def eligible(b: int) -> bool:
        return b not in gone and is_live(b)

    return elect_leader(state, eligible, unclean_allowed, isr)


def preferred_leader(state: PartitionState, is_live: IsLive) -> int:
    """The preferred replica, if a preferred election would move leadership to it.

    Raises ControllerError(ELECTION_NOT_NEEDED) when it already leads and
    ControllerError(PREFERRED_LEADER_NOT_AVAILABLE) when it cannot lead.
    """
    if not state.replicas:
        raise ControllerError(Error.PREFERRED_LEADER_NOT_AVAILABLE, "the partition has no replicas")
    preferred = state.replicas[0]
    if state.leader == preferred:
        raise ControllerError(Error.ELECTION_NOT_NEEDED, f"broker {preferred} already leads")
    if preferred not in state.isr:
        raise ControllerError(Error.PREFERRED_LEADER_NOT_AVAILABLE, f"broker {preferred} is not in the ISR")
    if not is_live(preferred):
        raise ControllerError(Error.PREFERRED_LEADER_NOT_AVAILABLE, f"broker {preferred} is not live")
    return preferred


def change_record(
    topic_id: bytes, partition_id: int, state: PartitionState, election: Election
) -> Optional[mpb.MetadataRecord]:
    """A PartitionChangeRecord carrying only what `election` changes; None if it changes nothing."""
    change = mpb.PartitionChangeRecord(partition_id=partition_id, topic_id=topic_id)
    changed = False
    if election.leader != state.leader:
        change.leader = election.leader
        change.election = election.kind
        changed = True
    if tuple(election.isr) != tuple(state.isr):
        change.isr.ids.extend(election.isr)
        changed = True
    if election.leader_recovery_state != state.leader_recovery_state:
        change.leader_recovery_state = election.leader_recovery_state
        changed = True
    return mpb.MetadataRecord(partition_change=change) if changed else None



def elections_in(records: Iterable[mpb.MetadataRecord]) -> Counter[int]:
    """How many leaders `records` elect, by ElectionKind (clean, unclean,
    preferred): what the active controller counts once they commit."""
    return Counter(r.partition_change.election for r in records
                   if r.WhichOneof("record") == "partition_change" and r.partition_change.election)
