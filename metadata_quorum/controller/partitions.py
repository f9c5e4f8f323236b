"""Partition decisions: leaders leaving and returning, AlterPartition, ElectLeaders, rebalancing.

Each function reads the image and returns PartitionChangeRecords (and a
response); nothing here changes the image.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import AbstractSet, Callable, Iterable, Iterator, Mapping, Optional

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.features import elr_enabled
from metadata_quorum.image import BrokerRegistration, MetadataImage, PartitionState

from . import reassignments
from .controller_config import ControllerConfig
from .elections import (
    NO_LEADER,
    Election,
    MinIsr,
    change_record,
    elect_leader,
    live_brokers,
    preferred_leader,
    track_eligible,
    without_brokers,
)
from .errors import ControllerError, Error
from .result import ControllerResult

Partition = tuple[bytes, int, PartitionState]


def unclean_policy(image: MetadataImage, config: ControllerConfig) -> Callable[[bytes], bool]:
    """topic id -> whether `unclean.leader.election.enable` holds for it (topic, then cluster, then static)."""
    cluster = image.cluster_config()
    cache: dict[bytes, bool] = {}

    def allowed(topic_id: bytes) -> bool:
        if topic_id not in cache:
            topic = image.topics[topic_id]
            cache[topic_id] = config.unclean_election_enabled(cluster, image.topic_config(topic.name))
        return cache[topic_id]

    return allowed


def eligibility(image: MetadataImage, config: ControllerConfig) -> MinIsr:
    """topic id -> its min.insync.replicas while KIP-966's eligible leader
    replicas are on (`eligible.leader.replicas.version` 1), None while off."""
    if not elr_enabled(image.features):
        return lambda topic_id: None
    cluster = image.cluster_config()
    cache: dict[bytes, int] = {}

    def min_isr(topic_id: bytes) -> Optional[int]:
        if topic_id not in cache:
            topic = image.topics[topic_id]
            cache[topic_id] = config.min_insync_replicas_for(cluster, image.topic_config(topic.name))
        return cache[topic_id]

    return min_isr


def _changes(partitions: Iterable[Partition], decide: Callable[[bytes, PartitionState], Election],
             min_isr: MinIsr, unclean: AbstractSet[int] = frozenset()) -> list[mpb.MetadataRecord]:
    records = []
    for topic_id, partition_id, state in partitions:
        election = track_eligible(state, decide(topic_id, state), min_isr(topic_id), unclean)
        record = change_record(topic_id, partition_id, state, election)
        if record is not None:
            records.append(record)
    return records


def _naming_any(image: MetadataImage, broker_ids: Iterable[int]) -> Iterator[Partition]:
    """Partitions with a replica on any of `broker_ids`, each once, sorted."""
    found: dict[tuple[bytes, int], PartitionState] = {}
    for broker_id in broker_ids:
        for topic_id, partition_id, state in image.partitions_with_replica(broker_id):
            found[(topic_id, partition_id)] = state
    return ((tid, pid, found[(tid, pid)]) for tid, pid in sorted(found))


def move_away(image: MetadataImage, config: ControllerConfig, gone: AbstractSet[int]) -> list[mpb.MetadataRecord]:
    """Brokers being fenced or shut down leave every ISR (keeping ISRs non-empty) and every leadership."""
    live = live_brokers(image) - gone
    unclean = unclean_policy(image, config)
    affected = (
        (tid, pid, state) for tid, pid, state in _naming_any(image, gone)
        if state.leader in gone or not gone.isdisjoint(state.isr)
    )
    return _changes(affected, lambda tid, state: without_brokers(state, gone, live.__contains__, unclean(tid)),
                    eligibility(image, config))


def shut_down_uncleanly(image: MetadataImage, config: ControllerConfig, broker_id: int) -> list[mpb.MetadataRecord]:
    """KIP-966: `broker_id` registers after an unclean shutdown, so its logs
    may lack records it had acknowledged: it leaves every ISR, even as the
    last member, and every ELR for the last known ELR, and leads nothing.
    brokers.register asks only while the feature is on; off, this is
    `move_away` (the last ISR member stays, and is elected again cleanly
    when it returns)."""
    if not elr_enabled(image.features):
        return move_away(image, config, {broker_id})
    live = live_brokers(image) - {broker_id}
    unclean = unclean_policy(image, config)
    affected = (
        (tid, pid, state) for tid, pid, state in _naming_any(image, [broker_id])
        if state.leader == broker_id or broker_id in state.isr or broker_id in state.elr
    )

    def decide(tid: bytes, state: PartitionState) -> Election:
        isr = tuple(b for b in state.isr if b != broker_id)
        return elect_leader(replace(state, elr=tuple(b for b in state.elr if b != broker_id)),
                            live.__contains__, unclean(tid), isr)

    return _changes(affected, decide, eligibility(image, config), frozenset({broker_id}))


def elect_offline(image: MetadataImage, config: ControllerConfig, returning: int) -> list[mpb.MetadataRecord]:
    """`returning` is being unfenced: give a leader to its leaderless partitions, cleanly if possible."""
    live = live_brokers(image) | {returning}
    unclean = unclean_policy(image, config)
    offline = (p for p in image.partitions_with_replica(returning) if p[2].leader == NO_LEADER)
    return _changes(offline, lambda tid, state: elect_leader(state, live.__contains__, unclean(tid)),
                    eligibility(image, config))


def elect_unclean_offline(image: MetadataImage, config: ControllerConfig) -> list[mpb.MetadataRecord]:
    """Leaderless partitions of topics that allow unclean election get a live
    replica as leader, in or out of the ISR. Run now and then by the active
    controller (as Kafka's periodic unclean election check), so that enabling
    `unclean.leader.election.enable` brings offline partitions back."""
    live = live_brokers(image)
    unclean = unclean_policy(image, config)
    records = []
    for topic_id in sorted(image.topics):
        if not unclean(topic_id):
            continue
        offline = ((topic_id, pid, state) for pid, state in sorted(image.topics[topic_id].partitions.items())
                   if state.leader == NO_LEADER)
        records += _changes(offline, lambda tid, state: elect_leader(state, live.__contains__, True),
                            eligibility(image, config))
    return records


def clear_eligible(image: MetadataImage, topic_ids: Optional[Iterable[bytes]] = None,
                   feature_off: bool = False) -> list[mpb.MetadataRecord]:
    """Empty the ELR and last known ELR of every partition of `topic_ids`
    (default: all) that has any: its min.insync.replicas changed, or the
    feature went off, so what made those replicas eligible no longer holds
    (Kafka's ClearElrRecord, here PartitionChangeRecords).

    Not where the ISR is empty: nobody else could ever lead it (without
    unclean election), and with no leader its high watermark cannot move,
    so they stay as eligible as they were - unless the feature goes off
    (`feature_off`): then they become the ISR (the ELR first), as the last
    members of an ISR stay in it without KIP-966, to lead when they return."""
    records = []
    for topic_id in sorted(image.topics if topic_ids is None else set(topic_ids) & image.topics.keys()):
        for partition_id, state in sorted(image.topics[topic_id].partitions.items()):
            if not (state.elr or state.last_known_elr) or (not state.isr and not feature_off):
                continue
            isr = state.isr or state.elr + state.last_known_elr
            election = Election(state.leader, isr, state.leader_recovery_state, elr=(), last_known_elr=())
            record = change_record(topic_id, partition_id, state, election)
            assert record is not None
            records.append(record)
    return records


# --- AlterPartition ---------------------------------------------------------------------

def check_broker_epoch(image: MetadataImage, broker_id: int, broker_epoch: int) -> None:
    broker = image.brokers.get(broker_id)
    if broker is None:
        raise ControllerError(Error.BROKER_ID_NOT_REGISTERED, f"broker {broker_id} is not registered")
    if broker.broker_epoch != broker_epoch:
        raise ControllerError(
            Error.STALE_BROKER_EPOCH,
            f"broker {broker_id} has broker epoch {broker.broker_epoch}, the request {broker_epoch}")


def validate_isr_change(
    state: PartitionState, broker_id: int, data: cpb.AlterPartitionRequest.PartitionData,
    live: AbstractSet[int], brokers: Mapping[int, BrokerRegistration],
) -> Election:
    """The leader's proposed ISR, if the proposal is against the partition as it is now and keeps it safe.

    KIP-903: a new member whose broker epoch (from its fetches, in
    new_isr_with_epochs) is not its registration's is a restarted broker's
    old incarnation: INELIGIBLE_REPLICA. Epoch -1 (unknown) is not checked.
    """
    if data.leader_epoch != state.leader_epoch:
        raise ControllerError(
            Error.FENCED_LEADER_EPOCH, f"leader epoch {data.leader_epoch}, the partition is at {state.leader_epoch}")
    if state.leader != broker_id:
        raise ControllerError(Error.NOT_LEADER_OR_FOLLOWER, f"broker {broker_id} does not lead (leader {state.leader})")
    if data.partition_epoch != state.partition_epoch:
        raise ControllerError(
            Error.INVALID_UPDATE_VERSION,
            f"partition epoch {data.partition_epoch}, the partition is at {state.partition_epoch}")
    isr = tuple(data.new_isr)
    if not isr:
        raise ControllerError(Error.INVALID_REQUEST, "the new ISR is empty")
    if len(set(isr)) != len(isr):
        raise ControllerError(Error.INVALID_REQUEST, f"the new ISR {list(isr)} lists a broker twice")
    strangers = [b for b in isr if b not in state.replicas]
    if strangers:
        raise ControllerError(Error.INVALID_REQUEST, f"broker(s) {strangers} in the new ISR are not replicas")
    if broker_id not in isr:
        raise ControllerError(Error.INVALID_REQUEST, f"the new ISR {list(isr)} leaves out the leader {broker_id}")
    recovery = data.leader_recovery_state
    if recovery not in (mpb.RECOVERED, mpb.RECOVERING):
        raise ControllerError(Error.INVALID_REQUEST, f"unknown leader recovery state {recovery}")
    if recovery == mpb.RECOVERING and state.leader_recovery_state == mpb.RECOVERED:
        raise ControllerError(Error.INVALID_REQUEST, "a recovered partition cannot go back to RECOVERING")
    if recovery == mpb.RECOVERING and len(isr) > 1:
        raise ControllerError(Error.INVALID_REQUEST, "the ISR of a RECOVERING partition cannot grow")
    ineligible = [b for b in isr if b not in state.isr and b not in live]
    if ineligible:
        raise ControllerError(
            Error.INELIGIBLE_REPLICA, f"broker(s) {ineligible} are fenced, shutting down or not registered")
    with_epochs = data.new_isr_with_epochs
    if with_epochs:
        if tuple(s.broker_id for s in with_epochs) != isr:
            raise ControllerError(Error.INVALID_REQUEST, "new_isr_with_epochs does not list the new ISR")
        stale = [(s.broker_id, s.broker_epoch) for s in with_epochs
                 if s.broker_id not in state.isr and s.broker_epoch >= 0
                 and s.broker_epoch != brokers[s.broker_id].broker_epoch]
        if stale:
            raise ControllerError(
                Error.INELIGIBLE_REPLICA,
                "; ".join(f"broker {b} fetched with broker epoch {e}, its registration has "
                          f"{brokers[b].broker_epoch}" for b, e in stale))
    return Election(state.leader, isr, recovery)


def alter_partition(image: MetadataImage, config: ControllerConfig, request: cpb.AlterPartitionRequest,
                    node_id: int) -> ControllerResult:
    response = cpb.AlterPartitionResponse(controller_id=node_id)
    try:
        check_broker_epoch(image, request.broker_id, request.broker_epoch)
    except ControllerError as exc:
        response.error_code = exc.error
        return ControllerResult([], response)
    live = live_brokers(image)
    min_isr = eligibility(image, config)
    seen = Counter((t.topic_id, p.partition_index) for t in request.topics for p in t.partitions)
    records = []
    for topic_data in request.topics:
        topic_out = response.topics.add(topic_id=topic_data.topic_id)
        topic = image.topics.get(topic_data.topic_id)
        for data in topic_data.partitions:
            out = topic_out.partitions.add(partition_index=data.partition_index)
            try:
                if seen[(topic_data.topic_id, data.partition_index)] > 1:
                    raise ControllerError(Error.INVALID_REQUEST, "partition listed more than once")
                state = topic.partitions.get(data.partition_index) if topic is not None else None
                if state is None:
                    raise ControllerError(Error.UNKNOWN_TOPIC_OR_PARTITION)
                election = validate_isr_change(state, request.broker_id, data, live, image.brokers)
            except ControllerError as exc:
                out.error_code = exc.error
                continue
            proposal = replace(state, isr=election.isr, leader_recovery_state=election.leader_recovery_state)
            # The ISR change that brings in the last new replica of a reassignment completes it.
            new, election = (reassignments.complete(proposal, live.__contains__)
                             if reassignments.is_reassigning(state) else None) or (proposal, election)
            election = track_eligible(state, election, min_isr(topic_data.topic_id), replicas=new.replicas)
            record = reassignments.partition_change(topic_data.topic_id, data.partition_index, state, new, election)
            if record is not None:
                records.append(record)
            if election.leader != state.leader:
                # The completion moved leadership off a removed replica: as
                # Kafka, the asking leader hears of it from the metadata log.
                out.error_code = Error.NEW_LEADER_ELECTED
                continue
            out.leader_id = state.leader
            out.leader_epoch = state.leader_epoch
            out.isr.extend(election.isr)
            out.partition_epoch = state.partition_epoch + (1 if record is not None else 0)
            out.leader_recovery_state = election.leader_recovery_state  # type: ignore[assignment]
    return ControllerResult(records, response)


# --- ElectLeaders and the automatic rebalance ----------------------------------------------

def elect_leaders(
    image: MetadataImage, config: ControllerConfig, request: cpb.ElectLeadersRequest, node_id: int
) -> ControllerResult:
    response = cpb.ElectLeadersResponse(controller_id=node_id)
    if request.election_type not in (cpb.PREFERRED, cpb.UNCLEAN):
        response.error_code = Error.INVALID_REQUEST
        return ControllerResult([], response)
    every = not request.topic_partitions
    if every:
        targets = [(name, sorted(image.topics[tid].partitions)) for name, tid in sorted(image.topic_ids.items())]
    else:
        wanted: dict[str, list[int]] = {}
        for tp in request.topic_partitions:
            ids = wanted.setdefault(tp.topic, [])
            ids.extend(p for p in tp.partitions if p not in ids)
        targets = list(wanted.items())
    live = live_brokers(image)
    min_isr = eligibility(image, config)
    records = []
    for name, partition_ids in targets:
        topic = image.topic(name)
        result = cpb.ElectLeadersResponse.Result(topic=name)
        for partition_id in partition_ids:
            state = topic.partitions.get(partition_id) if topic is not None else None
            try:
                if state is None:
                    raise ControllerError(Error.UNKNOWN_TOPIC_OR_PARTITION)
                assert topic is not None
                if request.election_type == cpb.PREFERRED:
                    leader = preferred_leader(state, live.__contains__)
                    election = Election(leader, state.isr, state.leader_recovery_state, mpb.ELECTION_PREFERRED)
                else:
                    election = _unclean_on_request(state, live)
            except ControllerError as exc:
                if not (every and exc.error is Error.ELECTION_NOT_NEEDED):
                    result.partitions.add(partition_id=partition_id, error_code=exc.error, error_message=exc.message)
                continue
            election = track_eligible(state, election, min_isr(topic.topic_id))
            record = change_record(topic.topic_id, partition_id, state, election)
            if record is not None:
                records.append(record)
            result.partitions.add(partition_id=partition_id)
        if result.partitions or not every:
            response.results.append(result)
    return ControllerResult(records, response)


def _unclean_on_request(state: PartitionState, live: AbstractSet[int]) -> Election:
    """An operator's unclean election: only for a leaderless partition; a live ISR member is still preferred."""
    if state.leader != NO_LEADER:
        raise ControllerError(Error.ELECTION_NOT_NEEDED, f"broker {state.leader} leads")
    election = elect_leader(state, live.__contains__, unclean_allowed=True)
    if election.leader == NO_LEADER:
        raise ControllerError(Error.ELIGIBLE_LEADERS_NOT_AVAILABLE, "no replica is live")
    return election


def rebalance(image: MetadataImage, config: ControllerConfig) -> list[mpb.MetadataRecord]:
    """Preferred-leader elections for brokers whose share of not-led preferred partitions is too high.

    A live broker that is the preferred replica of N partitions but leads
    only some of them is imbalanced when the rest exceed
    `leader.imbalance.per.broker.percentage` of N; leadership then moves
    back to it wherever it is in the ISR.
    """
    live = live_brokers(image)
    preferred: Counter[int] = Counter()
    not_led: dict[int, list[Partition]] = {}
    for topic_id in sorted(image.topics):
        partitions = image.topics[topic_id].partitions
        for partition_id in sorted(partitions):
            state = partitions[partition_id]
            if not state.replicas:
                continue
            first = state.replicas[0]
            preferred[first] += 1
            if state.leader != first:
                not_led.setdefault(first, []).append((topic_id, partition_id, state))
    records = []
    for broker_id in sorted(not_led):
        if broker_id not in live:
            continue
        moves = not_led[broker_id]
        if len(moves) * 100 <= config.leader_imbalance_per_broker_percentage * preferred[broker_id]:
            continue
        for topic_id, partition_id, state in moves:
            try:
                leader = preferred_leader(state, live.__contains__)
            except ControllerError:
                continue
            election = Election(leader, state.isr, state.leader_recovery_state, mpb.ELECTION_PREFERRED)
            record = change_record(topic_id, partition_id, state, election)
            if record is not None:
                records.append(record)
    return records
