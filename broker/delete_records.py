"""DeleteRecords: a partition leader moves its log start offset up, as
Kafka's ReplicaManager.deleteRecords and DelayedDeleteRecords do.

Per partition, in the request's order: the leader (NOT_LEADER_OR_FOLLOWER
elsewhere) of a topic whose cleanup.policy includes "delete" (else
POLICY_VIOLATION), not an internal topic (INVALID_TOPIC_EXCEPTION), moves
its log start offset to the asked offset (-1: the high watermark; below 0
or above the high watermark: OFFSET_OUT_OF_RANGE). Records below it are
unreadable at once; retention deletes their segments later
(partition_log/log.py). Followers take the leader's log start offset from
their fetch answers and report theirs in their next fetch; the answer waits
until the partition's low watermark (Partition.low_watermark: the leader's
and the in-sync followers' lowest log start offset) has reached the offset,
at most `timeout_ms` (then REQUEST_TIMED_OUT, the deletion standing).
"""
from __future__ import annotations

import asyncio
import time
from typing import Optional

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.internal_topics import is_internal

from .errors import BrokerError, Error, as_broker_error
from .partition import Partition
from .replica_manager import ReplicaManager

HIGH_WATERMARK = -1


async def delete_records(replicas: ReplicaManager, request: bpb.DeleteRecordsRequest) -> bpb.DeleteRecordsResponse:
    response = bpb.DeleteRecordsResponse()
    deadline = time.monotonic() + max(request.timeout_ms, 0) / 1000
    waits = []
    for topic in request.topics:
        out = response.topics.add(name=topic.name)
        for asked in topic.partitions:
            result = out.partitions.add(partition_index=asked.partition_index, low_watermark=-1)
            try:
                partition, offset = _advance(replicas, topic.name, asked.partition_index, asked.offset)
            except Exception as exc:  # noqa: BLE001 - every failure is this partition's error code
                error = as_broker_error(exc)
                result.error_code, result.error_message = error.error, error.message or ""
                continue
            waits.append(_await_low_watermark(partition, offset, deadline, result))
    await asyncio.gather(*waits)
    return response


def _advance(replicas: ReplicaManager, topic: str, index: int, offset: int) -> tuple[Partition, int]:
    """The leader's partition and the offset its log now starts at, or raises."""
    if is_internal(topic):
        raise BrokerError(Error.INVALID_TOPIC_EXCEPTION, f"records of the internal topic {topic} cannot be deleted")
    partition = replicas.get(topic, index)
    partition.leader()
    config = partition.config
    if not config.delete:
        raise BrokerError(Error.POLICY_VIOLATION, f"records of {topic}-{index} cannot be deleted: its "
                                                  f"cleanup.policy is {config.cleanup_policy}")
    target = partition.high_watermark if offset == HIGH_WATERMARK else offset
    if not 0 <= target <= partition.high_watermark:
        raise BrokerError(Error.OFFSET_OUT_OF_RANGE, f"offset {offset} of {topic}-{index}: expected 0 to the high "
                                                     f"watermark {partition.high_watermark}, or -1")
    partition.advance_log_start_offset(target)
    partition.changed.fire()  # fetchers and followers learn the new log start
    return partition, target


async def _await_low_watermark(partition: Partition, offset: int, deadline: float,
                               result: bpb.DeleteRecordsResponse.Partition) -> None:
    while True:
        low: Optional[int] = None
        try:
            low = partition.low_watermark()
        except BrokerError as exc:  # leadership lost meanwhile
            result.error_code, result.error_message = exc.error, exc.message or ""
            return
        if low >= offset:
            result.low_watermark = low
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            result.error_code = Error.REQUEST_TIMED_OUT
            result.error_message = (f"the low watermark is {low}: not every in-sync replica starts at {offset} yet "
                                    "(the deletion stands)")
            return
        try:
            await asyncio.wait_for(asyncio.shield(partition.changed.wait()), remaining)
        except asyncio.TimeoutError:
            pass
