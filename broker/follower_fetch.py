"""A follower's side of replication, without the network: the Fetch requests
to send (one per leader) and what to do with each answer.

Per partition the answer means, in this order:
- an error: nothing changes; NOT_LEADER_OR_FOLLOWER and the epoch errors wait
  for the metadata log to name the new leader, OFFSET_OUT_OF_RANGE asks the
  leader's log start and end (ListOffsets, then `reset_out_of_range`);
- a diverging epoch: truncate to where our log stops matching the leader's
  (`truncation_offset`), then fetch again - several rounds if the leader's
  epochs are unknown to us;
- otherwise append the batches as they are (`append_as_follower`, keeping
  the leader's offsets and epochs) and learn the leader's high watermark and
  log start offset.
An answer to a request built before the partition changed (new leader or
epoch, truncation) is ignored: it describes a log we no longer have.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum
from typing import Mapping, NamedTuple, Optional

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol import batch as b
from kafka_protocol.fetch_session_handler import FINAL_EPOCH, INVALID_SESSION_ID, FetchPlan

from .errors import Error, as_broker_error
from .partition import Partition
from .replica_manager import ReplicaManager, TopicPartition

log = logging.getLogger(__name__)

FetchPartition = bpb.FetchRequest.FetchPartition
PartitionData = bpb.FetchResponse.PartitionData
DEFAULT_RESPONSE_MAX_BYTES = 10485760  # replica.fetch.response.max.bytes


class Outcome(Enum):
    APPENDED = "appended"          # records appended (maybe none: caught up)
    TRUNCATED = "truncated"        # diverged: truncated, fetch again
    OUT_OF_RANGE = "out_of_range"  # ask the leader's log start and end offsets
    ERROR = "error"                # back off until the metadata moves or replica.fetch.backoff.ms passes
    STALE = "stale"                # an answer to an outdated request: ignored


@dataclass(frozen=True, slots=True)
class FetchOutcome:
    outcome: Outcome
    error: int = Error.NONE
    log_end_offset: int = -1
    appended_bytes: int = 0


class FetchState(NamedTuple):
    """What a follower fetches a partition with: FetchRequest.FetchPartition's
    fields, as a value a fetch session compares (equal: nothing to send)."""
    partition: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    partition_max_bytes: int


def fetch_state(partition: Partition, max_bytes: int) -> tuple[int, int, int, int, int, int]:
    """A FetchState's fields as a plain tuple: made for every followed
    partition on every round, where a NamedTuple's constructor was the
    largest cost of an idle follower (bench/idle_fetch.py's profile).
    An unopened replica's log stays unopened."""
    return (partition.index, partition.leader_epoch, partition.log_end_offset, partition.latest_epoch,
            partition.log_start_offset, max_bytes)


def fetch_partition(partition: Partition, max_bytes: int) -> FetchPartition:
    return FetchPartition(**FetchState._make(fetch_state(partition, max_bytes))._asdict())


def fetch_requests(replicas: ReplicaManager, *, max_wait_ms: Optional[int] = None,
                   skip: frozenset[TopicPartition] = frozenset()) -> dict[int, bpb.FetchRequest]:
    """One Fetch per leader for every partition followed here (but `skip`,
    the partitions backing off)."""
    requests = {}
    for leader_id, partitions in sorted(replicas.followed().items()):
        request = fetch_request(replicas, [p for p in partitions if p.tp not in skip],
                                max_wait_ms=max_wait_ms)
        if request is not None:
            requests[leader_id] = request
    return requests


def fetch_request(replicas: ReplicaManager, partitions: list[Partition], *,
                  max_wait_ms: Optional[int] = None) -> Optional[bpb.FetchRequest]:
    """The sessionless Fetch for `partitions` (of one leader), long-polled per
    replica.fetch.wait.max.ms; None when there are none."""
    if not partitions:
        return None
    max_bytes = replicas.config.replica_fetch_max_bytes
    return session_request(replicas, FetchPlan(INVALID_SESSION_ID, FINAL_EPOCH, {
        p.tp: fetch_state(p, max_bytes) for p in partitions}, []), max_wait_ms=max_wait_ms,
        sessionless=True)


def session_request(replicas: ReplicaManager, plan: FetchPlan[TopicPartition, tuple], *,
                    max_wait_ms: Optional[int] = None, sessionless: bool = False) -> bpb.FetchRequest:
    """The Fetch a session's plan (kafka_protocol/fetch_session_handler.py) asks for."""
    config = replicas.config
    me = replicas.image.brokers.get(replicas.broker_id)
    request = bpb.FetchRequest(
        replica_id=replicas.broker_id, replica_epoch=me.broker_epoch if me is not None else -1,
        max_wait_ms=config.replica_fetch_wait_max_ms if max_wait_ms is None else max_wait_ms,
        min_bytes=config.replica_fetch_min_bytes, max_bytes=DEFAULT_RESPONSE_MAX_BYTES)
    if not sessionless:
        request.session_id, request.session_epoch = plan.session_id, plan.epoch
    by_topic: dict[str, bpb.FetchRequest.FetchTopic] = {}
    for (name, _), state in sorted(plan.send.items()):
        topic = by_topic.get(name)
        if topic is None:
            topic = by_topic[name] = request.topics.add(topic=name)
        topic.partitions.add(**FetchState._make(state)._asdict())
    forgotten: dict[str, bpb.FetchRequest.ForgottenTopic] = {}
    for name, index in sorted(plan.forgotten):
        topic = forgotten.get(name)
        if topic is None:
            topic = forgotten[name] = request.forgotten.add(topic=name)
        topic.partitions.append(index)
    return request


def sent_states(request: bpb.FetchRequest) -> dict[TopicPartition, FetchPartition]:
    """The partitions a (full) request names, with what it sent for each."""
    return {(t.topic, p.partition): p for t in request.topics for p in t.partitions}


def apply_fetch_response(replicas: ReplicaManager, sent: Mapping[TopicPartition, FetchPartition | tuple],
                         response: bpb.FetchResponse) -> dict[TopicPartition, FetchOutcome]:
    """Apply each partition of the answer, given what the session holds for
    it (`sent`: for an incremental answer, the whole session, as it carries
    only the partitions with something new)."""
    outcomes = {}
    for topic in response.responses:
        for got in topic.partitions:
            tp = (topic.topic, got.partition_index)
            partition = replicas.partitions.get(tp)
            state = sent.get(tp)
            if partition is None or state is None:
                outcomes[tp] = FetchOutcome(Outcome.STALE)
            else:
                if type(state) is tuple:  # fetch_state's plain tuple
                    state = FetchState._make(state)
                outcomes[tp] = apply_partition(partition, state, got)
                replicas.traffic.replication_bytes_in += outcomes[tp].appended_bytes
    return outcomes


def apply_partition(partition: Partition, sent: FetchPartition | FetchState, got: PartitionData) -> FetchOutcome:
    """An unopened replica (broker/partition.py) opens its log only when the
    answer brings records (or a log start past its empty log)."""
    if (partition.is_leader or partition.stopped or partition.leader_epoch != sent.current_leader_epoch
            or partition.log_end_offset != sent.fetch_offset):
        return FetchOutcome(Outcome.STALE, log_end_offset=partition.log_end_offset)
    if got.error_code == Error.OFFSET_OUT_OF_RANGE:
        return FetchOutcome(Outcome.OUT_OF_RANGE, got.error_code, partition.log_end_offset)
    if got.error_code != Error.NONE:
        return FetchOutcome(Outcome.ERROR, got.error_code, partition.log_end_offset)
    try:
        if got.HasField("diverging_epoch"):
            offset = truncation_offset(partition, got.diverging_epoch.epoch, got.diverging_epoch.end_offset)
            log.info("%s-%d: diverged from leader %d at epoch %d, end offset %d: truncating to %d",
                     partition.topic, partition.index, partition.leader_id, got.diverging_epoch.epoch,
                     got.diverging_epoch.end_offset, offset)
            partition.truncate_to(offset)
            partition.changed.fire()
            return FetchOutcome(Outcome.TRUNCATED, log_end_offset=partition.log_end_offset)
        records = _from_offset(got.records, partition.log_end_offset)
        appended = partition.append_as_follower(records).size if records else 0
        partition.maybe_increment_high_watermark(got.high_watermark)
        if got.log_start_offset > partition.log_start_offset:
            partition.advance_log_start_offset(min(got.log_start_offset, partition.high_watermark))
    except Exception as exc:  # noqa: BLE001 - a bad answer stops this partition, not the fetcher
        err = as_broker_error(exc)
        log.error("%s-%d: cannot apply the fetch from leader %d: %s", partition.topic, partition.index,
                  partition.leader_id, err)
        return FetchOutcome(Outcome.ERROR, err.error, partition.log_end_offset)
    partition.changed.fire()
    return FetchOutcome(Outcome.APPENDED, log_end_offset=partition.log_end_offset, appended_bytes=appended)


def truncation_offset(partition: Partition, leader_epoch: int, leader_end_offset: int) -> int:
    """Where our log stops matching the leader's, given the leader's answer
    (its largest epoch <= ours, and where that epoch ends in its log)."""
    end = partition.log_end_offset
    if leader_end_offset < 0:
        return min(partition.high_watermark, end)  # the leader knows none of our epochs
    if leader_epoch < 0:
        return min(leader_end_offset, end)
    our_epoch, our_end = partition.end_offset_for_epoch(leader_epoch)
    if our_epoch < 0:
        return min(leader_end_offset, end)
    if our_epoch != leader_epoch:
        # We never had the leader's epoch: cut back to the end of our last
        # epoch before it; the next fetch compares again from there.
        return min(our_end, end)
    return min(our_end, leader_end_offset, end)


def reset_out_of_range(partition: Partition, leader_start_offset: int, leader_end_offset: int) -> int:
    """After OFFSET_OUT_OF_RANGE: a follower ahead of the leader's log end
    truncates to it; one behind the leader's log start starts over there.
    Returns the new fetch offset."""
    if leader_end_offset < partition.log_end_offset:
        partition.truncate_to(leader_end_offset)
    if leader_start_offset > partition.log_end_offset:
        partition.truncate_fully_and_start_at(leader_start_offset)
    partition.changed.fire()
    return partition.log_end_offset


def _from_offset(records: bytes, offset: int) -> bytes:
    """The batches that end at or after `offset`: the leader returns the batch
    holding the fetch offset, which a compacted log may start before it."""
    for pos, h in b.iter_headers(records, validate=False):
        if h.next_offset > offset:
            return records[pos:]
    return b""
