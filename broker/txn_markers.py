"""The partition side of transactions' ends: WriteTxnMarkers and
DescribeProducers, answered by partition leaders.

WriteTxnMarkers (from transaction coordinators; the service checks that the
caller is a node): per marker, per partition, in request order, the leader
appends the COMMIT or ABORT control batch (Partition.append_txn_marker:
refused with TRANSACTION_COORDINATOR_FENCED from a deposed coordinator,
INVALID_PRODUCER_EPOCH for an older producer epoch, NOT_ENOUGH_REPLICAS
below min.insync.replicas). Right after a marker is appended to a
`__consumer_offsets` partition, in the same event-loop step, every
`ReplicaManager.txn_marker_listeners` callable is called with
(partition_index, producer_id, committed): the group coordinator's
`on_txn_completed` commits or drops the transaction's offsets. Then, as acks=all,
each appended marker waits for the high watermark to pass it, within the
request's timeout (REQUEST_TIMED_OUT). Errors are per partition; the
coordinator retries a partition until it answers NONE.

DescribeProducers (Kafka's KIP-664): the producers a partition leader
tracks, with the first offset of each one's open transaction.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Optional

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.internal_topics import GROUP_METADATA_TOPIC

from .errors import Error, as_broker_error
from .partition import Partition
from .produce import wait_replicated
from .replica_manager import ReplicaManager

log = logging.getLogger(__name__)

DescribedProducer = bpb.DescribeProducersResponse.Producer


@dataclass(slots=True)
class _Written:
    """One partition of one marker: appended (waiting for replication) or refused."""

    topic: str
    index: int
    error: int = Error.NONE
    partition: Optional[Partition] = None
    next_offset: int = -1


async def write_txn_markers(replicas: ReplicaManager, request: bpb.WriteTxnMarkersRequest,
                            timeout_ms: int) -> bpb.WriteTxnMarkersResponse:
    """Append every marker of the request, then wait for their replication."""
    written: list[list[_Written]] = []
    for marker in request.markers:
        written.append([_append(replicas, marker, t.name, index)
                        for t in marker.topics for index in t.partition_indexes])
    waiting = [w for ws in written for w in ws if w.partition is not None]
    results = await asyncio.gather(*(_replicated(w, timeout_ms) for w in waiting))
    for w, error in zip(waiting, results):
        w.error = error
    response = bpb.WriteTxnMarkersResponse()
    for marker, ws in zip(request.markers, written):
        out = response.markers.add(producer_id=marker.producer_id)
        by_topic: dict[str, bpb.WriteTxnMarkersResponse.Topic] = {}
        for w in ws:
            topic = by_topic.get(w.topic)
            if topic is None:
                topic = by_topic[w.topic] = out.topics.add(name=w.topic)
            topic.partitions.add(partition_index=w.index, error_code=w.error)
    return response


def _append(replicas: ReplicaManager, marker: bpb.WriteTxnMarkersRequest.Marker, topic: str,
            index: int) -> _Written:
    try:
        partition = replicas.get(topic, index)
        info = partition.append_txn_marker(marker.producer_id, marker.producer_epoch, marker.transaction_result,
                                           marker.coordinator_epoch, keep_epoch=marker.keep_epoch)
    except Exception as exc:  # noqa: BLE001 - every failure is this partition's error code
        error = as_broker_error(exc)
        log.debug("%s-%d: %s marker of producer %d epoch %d (coordinator epoch %d) refused: %s", topic, index,
                  "COMMIT" if marker.transaction_result else "ABORT", marker.producer_id, marker.producer_epoch,
                  marker.coordinator_epoch, error.message or error.error)
        return _Written(topic, index, error.error)
    log.debug("%s-%d@%d: %s marker of producer %d epoch %d (coordinator epoch %d)", topic, index, info.first_offset,
              "COMMIT" if marker.transaction_result else "ABORT", marker.producer_id, marker.producer_epoch,
              marker.coordinator_epoch)
    if topic == GROUP_METADATA_TOPIC:
        for listener in list(replicas.txn_marker_listeners):
            try:
                listener(index, marker.producer_id, marker.transaction_result)
            except Exception:  # noqa: BLE001 - the marker is in the log; one listener's bug stops no other
                log.exception("%s-%d: a transaction marker listener failed for producer %d",
                              topic, index, marker.producer_id)
    return _Written(topic, index, partition=partition, next_offset=info.last_offset + 1)


async def _replicated(w: _Written, timeout_ms: int) -> int:
    assert w.partition is not None
    try:
        await wait_replicated(w.partition, w.next_offset, timeout_ms)
    except Exception as exc:  # noqa: BLE001 - every failure is this partition's error code
        return as_broker_error(exc).error
    return Error.NONE


def describe_producers(replicas: ReplicaManager,
                       request: bpb.DescribeProducersRequest) -> bpb.DescribeProducersResponse:
    response = bpb.DescribeProducersResponse()
    for t in request.topics:
        topic = response.topics.add(name=t.name)
        for index in t.partition_indexes:
            out = topic.partitions.add(partition_index=index)
            try:
                partition = replicas.get(t.name, index)
                partition.leader()
                out.active_producers.extend(_producers(partition))
            except Exception as exc:  # noqa: BLE001 - every failure is this partition's error code
                err = as_broker_error(exc)
                out.error_code, out.error_message = err.error, err.message
    return response


def _producers(partition: Partition) -> list[DescribedProducer]:
    if not partition.opened:
        return []  # an unopened replica's log is empty: no producer wrote here
    now = partition.clock()
    out = []
    for pid in sorted(partition.producers.producers):
        entry = partition.producers.entry(pid, now)
        if entry is None:
            continue  # expired: forgotten now
        out.append(DescribedProducer(producer_id=pid, producer_epoch=entry.epoch, last_sequence=entry.last_seq,
                                     last_timestamp=entry.last_timestamp, coordinator_epoch=entry.coordinator_epoch,
                                     current_txn_start_offset=entry.current_txn_first_offset))
    return out
