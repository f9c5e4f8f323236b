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
from typing import Optional

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol import batch as b
from partition_log.log import Log

from .epochs import end_offset_for_epoch
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


def fetch_partition(partition: Partition, max_bytes: int) -> FetchPartition:
    lg = partition.log
    return FetchPartition(partition=partition.index, current_leader_epoch=partition.leader_epoch,
                          fetch_offset=lg.log_end_offset, last_fetched_epoch=lg.leader_epochs.latest_epoch,
                          log_start_offset=lg.log_start_offset, partition_max_bytes=max_bytes)


def fetch_requests(replicas: ReplicaManager, *, max_wait_ms: Optional[int] = None,
                   skip: frozenset[TopicPartition] = frozenset()) -> dict[int, bpb.FetchRequest]:
    """One Fetch per leader for every partition followed here (but `skip`,
    the partitions backing off)."""
    requests = {}
    for leader_id, partitions in sorted(replicas.followed().items()):
        request = fetch_request(replicas, [p for p in partitions if (p.topic, p.index) not in skip],
                                max_wait_ms=max_wait_ms)
        if request is not None:
            requests[leader_id] = request
    return requests


def fetch_request(replicas: ReplicaManager, partitions: list[Partition], *,
                  max_wait_ms: Optional[int] = None) -> Optional[bpb.FetchRequest]:
    """The Fetch for `partitions` (of one leader), long-polled per
    replica.fetch.wait.max.ms; None when there are none."""
    if not partitions:
        return None
    config = replicas.config
    me = replicas.image.brokers.get(replicas.broker_id)
    request = bpb.FetchRequest(
        replica_id=replicas.broker_id, replica_epoch=me.broker_epoch if me is not None else -1,
        max_wait_ms=config.replica_fetch_wait_max_ms if max_wait_ms is None else max_wait_ms,
        min_bytes=config.replica_fetch_min_bytes, max_bytes=DEFAULT_RESPONSE_MAX_BYTES)
    by_topic: dict[str, bpb.FetchRequest.FetchTopic] = {}
    for partition in sorted(partitions, key=lambda p: (p.topic, p.index)):
        topic = by_topic.get(partition.topic)
        if topic is None:
            topic = by_topic[partition.topic] = request.topics.add(topic=partition.topic)
        topic.partitions.append(fetch_partition(partition, config.replica_fetch_max_bytes))
    return request


def apply_fetch_response(replicas: ReplicaManager, request: bpb.FetchRequest,
                         response: bpb.FetchResponse) -> dict[TopicPartition, FetchOutcome]:
    answers = {(t.topic, p.partition_index): p for t in response.responses for p in t.partitions}
    outcomes = {}
    for topic in request.topics:
        for sent in topic.partitions:
            tp = (topic.topic, sent.partition)
            partition = replicas.partitions.get(tp)
            got = answers.get(tp)
            if partition is None or got is None:
                outcomes[tp] = FetchOutcome(Outcome.STALE)
            else:
                outcomes[tp] = apply_partition(partition, sent, got)
    return outcomes


def apply_partition(partition: Partition, sent: FetchPartition, got: PartitionData) -> FetchOutcome:
    lg = partition.log
    if (partition.is_leader or partition.stopped or partition.leader_epoch != sent.current_leader_epoch
            or lg.log_end_offset != sent.fetch_offset):
        return FetchOutcome(Outcome.STALE, log_end_offset=lg.log_end_offset)
    if got.error_code == Error.OFFSET_OUT_OF_RANGE:
        return FetchOutcome(Outcome.OUT_OF_RANGE, got.error_code, lg.log_end_offset)
    if got.error_code != Error.NONE:
        return FetchOutcome(Outcome.ERROR, got.error_code, lg.log_end_offset)
    try:
        if got.HasField("diverging_epoch"):
            offset = truncation_offset(lg, got.diverging_epoch.epoch, got.diverging_epoch.end_offset)
            log.info("%s-%d: diverged from leader %d at epoch %d, end offset %d: truncating to %d",
                     partition.topic, partition.index, partition.leader_id, got.diverging_epoch.epoch,
                     got.diverging_epoch.end_offset, offset)
            partition.truncate_to(offset)
            partition.changed.fire()
            return FetchOutcome(Outcome.TRUNCATED, log_end_offset=lg.log_end_offset)
        records = _from_offset(got.records, lg.log_end_offset)
        if records:
            partition.append_as_follower(records)
        lg.maybe_increment_high_watermark(got.high_watermark)
        if got.log_start_offset > lg.log_start_offset:
            lg.advance_log_start_offset(min(got.log_start_offset, lg.high_watermark))
    except Exception as exc:  # noqa: BLE001 - a bad answer stops this partition, not the fetcher
        err = as_broker_error(exc)
        log.error("%s-%d: cannot apply the fetch from leader %d: %s", partition.topic, partition.index,
                  partition.leader_id, err)
        return FetchOutcome(Outcome.ERROR, err.error, lg.log_end_offset)
    partition.changed.fire()
    return FetchOutcome(Outcome.APPENDED, log_end_offset=lg.log_end_offset)


def truncation_offset(lg: Log, leader_epoch: int, leader_end_offset: int) -> int:
    """Where our log stops matching the leader's, given the leader's answer
    (its largest epoch <= ours, and where that epoch ends in its log)."""
    end = lg.log_end_offset
    if leader_end_offset < 0:
        return min(lg.high_watermark, end)  # the leader knows none of our epochs
    if leader_epoch < 0:
        return min(leader_end_offset, end)
    our_epoch, our_end = end_offset_for_epoch(lg, leader_epoch)
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
    lg = partition.log
    if leader_end_offset < lg.log_end_offset:
        partition.truncate_to(leader_end_offset)
    if leader_start_offset > lg.log_end_offset:
        partition.truncate_fully_and_start_at(leader_start_offset)
    partition.changed.fire()
    return lg.log_end_offset


def _from_offset(records: bytes, offset: int) -> bytes:
    """The batches that end at or after `offset`: the leader returns the batch
    holding the fetch offset, which a compacted log may start before it."""
    for pos, h in b.iter_headers(records, validate=False):
        if h.next_offset > offset:
            return records[pos:]
    return b""
