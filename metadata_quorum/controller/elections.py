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
A fenced or shutting-down broker never empties the ISR: a replica that
would be its last member stays, so the partition can come back cleanly
when that replica returns.

KIP-966's eligible leader replicas (`eligible.leader.replicas.version` 1,
`track_eligible`): while the ISR is below min.insync.replicas the brokers'
strict min ISR rule holds the high watermark still, so a replica leaving
the ISR then holds every committed record and joins the ELR; it may lead
when no ISR member is live (ELECTION_ELR, the ISR becomes just it). A
broker back from an unclean shutdown (its registration's
previous_broker_epoch is not the epoch it had: it may have lost its
unflushed tail) leaves every ISR, even as the last member (the ISR may
then be empty), and every ELR for the last known ELR; when neither ISR nor
ELR holds anyone, the first live member of the last known ELR leads
(ELECTION_LAST_KNOWN, RECOVERING as an unclean election: what it lost is
lost), as Kafka elects its last known leader. Once the ISR is back at min
ISR both lists empty; an unclean or last-known election empties them too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
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


# topic id -> its min.insync.replicas while KIP-966's eligible leader replicas are on, None while off
MinIsr = Callable[[bytes], Optional[int]]


@dataclass(frozen=True)
class Election:
    """The leader, ISR and recovery state a partition should have, and why the leader changed.

    `elr` and `last_known_elr`: None until `track_eligible` decides them."""

    leader: int
    isr: tuple[int, ...]
    leader_recovery_state: int
    kind: int = mpb.ELECTION_NONE
    elr: Optional[tuple[int, ...]] = None
    last_known_elr: Optional[tuple[int, ...]] = None


def elect_leader(
    state: PartitionState,
    is_live: IsLive,
    unclean_allowed: bool,
    isr: Optional[tuple[int, ...]] = None,
) -> Election:
    """Who should lead `state` given who is live, with `isr` as the ISR to keep (default: the current one).

    In order: the leader stays; a live ISR member; a live ELR member; with
    ISR and ELR both empty, a live member of the last known ELR; with
    unclean election allowed, any live replica; else nobody."""
    isr = state.isr if isr is None else isr
    recovery = state.leader_recovery_state
    if state.leader != NO_LEADER and state.leader in isr and is_live(state.leader):
        return Election(state.leader, isr, recovery)
    for replica in state.replicas:
        if replica in isr and is_live(replica):
            return Election(replica, isr, recovery, mpb.ELECTION_CLEAN)
    for replica in state.replicas:
        if replica in state.elr and is_live(replica):
            return Election(replica, (replica,), recovery, mpb.ELECTION_ELR)
    if not isr and not state.elr:
        for replica in state.last_known_elr:
            if is_live(replica):
                return Election(replica, (replica,), mpb.RECOVERING, mpb.ELECTION_LAST_KNOWN)
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


def track_eligible(state: PartitionState, election: Election, min_isr: Optional[int],
                   unclean: AbstractSet[int] = frozenset(),
                   replicas: Optional[tuple[int, ...]] = None) -> Election:
    """`election` with the ELR and last known ELR `state` should have after
    it (KIP-966); `min_isr` None: the feature is off, both lists empty.

    `unclean`: brokers leaving for an unclean shutdown (never eligible);
    `replicas`: the replicas after the change (a reassignment's), default
    the current ones. Below min ISR, the ELR is the old ELR and the old ISR
    members leaving, less the new ISR and `unclean`; the last known ELR
    gains the `unclean` ELR members, and, when the ISR empties, the
    `unclean` ISR members leaving it (the last leader first: they held the
    most)."""
    if (min_isr is None or len(election.isr) >= min_isr
            or election.kind in (mpb.ELECTION_UNCLEAN, mpb.ELECTION_LAST_KNOWN)):
        return replace(election, elr=(), last_known_elr=())
    keep = frozenset(state.replicas if replicas is None else replicas) - frozenset(election.isr)
    leaving = [b for b in state.isr if b not in election.isr]
    elr = tuple(b for b in (*state.elr, *leaving) if b in keep and b not in unclean)
    elr = tuple(dict.fromkeys(elr))
    last_leaders = [b for b in leaving if b in unclean] if not election.isr else []
    last_leaders.sort(key=lambda b: b != state.leader)
    last_known = (*last_leaders, *state.last_known_elr, *(b for b in state.elr if b in unclean))
    last_known = tuple(b for b in dict.fromkeys(last_known) if b in keep and b not in elr)
    return replace(election, elr=elr, last_known_elr=last_known)


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
    """A PartitionChangeRecord carrying only what `election` changes; None if
    it changes nothing. Its ELR fields are written when `track_eligible` set them."""
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
    for field, before, after in (("eligible_leader_replicas", state.elr, election.elr),
                                 ("last_known_elr", state.last_known_elr, election.last_known_elr)):
        if after is not None and tuple(after) != tuple(before):
            ids = getattr(change, field)
            ids.SetInParent()  # present even when empty: an empty list clears the field
            ids.ids.extend(after)
            changed = True
    return mpb.MetadataRecord(partition_change=change) if changed else None



def elections_in(records: Iterable[mpb.MetadataRecord]) -> Counter[int]:
    """How many leaders `records` elect, by ElectionKind (clean, unclean,
    preferred, ELR, last known): what the active controller counts once they commit."""
    return Counter(r.partition_change.election for r in records
                   if r.WhichOneof("record") == "partition_change" and r.partition_change.election)
