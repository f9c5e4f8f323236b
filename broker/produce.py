"""Produce: find the leader -> validate header + CRC, then every record
(partition_log.validator, as Kafka's LogValidator) -> check idempotent
producers' sequences (Partition.append; a retried batch is not appended again
and answers with its original offsets) -> append the bytes
(Log.append_as_leader) -> with acks=all, wait for the high watermark to pass
the batch (a retry's original included) -> answer. Errors are per partition,
Kafka's codes.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.internal_topics import is_client_forbidden

from .errors import BrokerError, Error, as_broker_error
from .partition import NO_EPOCH, NO_LEADER
from .replica_manager import ReplicaManager

ACKS = (0, 1, -1)


@dataclass(frozen=True, slots=True)
class ProduceResult:
    error: int = Error.NONE
    message: str = ""
    base_offset: int = -1
    log_append_time_ms: int = -1  # -1: CreateTime
    log_start_offset: int = -1
    current_leader_id: int = NO_LEADER
    current_leader_epoch: int = NO_EPOCH


async def append(replicas: ReplicaManager, topic: str, index: int, records: bytes, acks: int,
                 timeout_ms: int) -> ProduceResult:
    """Append one partition's batches. acks 0 and 1 answer after the local
    append; acks=-1 once the high watermark passes the last batch, or
    REQUEST_TIMED_OUT after `timeout_ms` (the records stay in the log and
    may still be replicated: the outcome is unknown to the producer)."""
    partition = None
    try:
        if acks not in ACKS:
            raise BrokerError(Error.INVALID_REQUIRED_ACKS, f"acks={acks}: expected 0, 1 or -1")
        partition = replicas.get(topic, index)
        info = partition.append(records, acks)
        done = ProduceResult(base_offset=info.first_offset, log_start_offset=partition.log.log_start_offset)
        if acks != -1:
            return done
        replicated = partition.wait_for_high_watermark(info.last_offset + 1)
        try:
            error = await asyncio.wait_for(asyncio.shield(replicated), max(timeout_ms, 0) / 1000)
        except asyncio.TimeoutError:
            partition.forget_waiter(replicated)
            raise BrokerError(Error.REQUEST_TIMED_OUT,
                              f"not replicated to the isr within {timeout_ms} ms") from None
        if error != Error.NONE:
            raise BrokerError(error, "while waiting for the isr to replicate the batch")
        return done
    except Exception as exc:  # noqa: BLE001 - every failure becomes a per-partition error code
        err = as_broker_error(exc)
        leader, epoch = NO_LEADER, NO_EPOCH
        if err.error == Error.NOT_LEADER_OR_FOLLOWER:
            leader, epoch = replicas.leader_hint(topic, index)
        return ProduceResult(err.error, err.message, current_leader_id=leader, current_leader_epoch=epoch,
                             log_start_offset=partition.log.log_start_offset if partition else -1)


async def _client_append(replicas: ReplicaManager, topic: str, index: int, records: bytes, acks: int,
                         timeout_ms: int) -> ProduceResult:
    """A client's append: Kafka's internalTopicsAllowed=false. The brokers'
    own writers (the group coordinator) call `append` and are not checked."""
    if is_client_forbidden(topic):
        return ProduceResult(Error.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {topic}")
    return await append(replicas, topic, index, records, acks, timeout_ms)


async def handle_produce(replicas: ReplicaManager, request: bpb.ProduceRequest) -> bpb.ProduceResponse:
    """Every partition of the request at once; the answer lists them in request order."""
    keys = [(t.name, p.index) for t in request.topics for p in t.partitions]
    results = await asyncio.gather(*(
        _client_append(replicas, t.name, p.index, p.records, request.acks, request.timeout_ms)
        for t in request.topics for p in t.partitions))
    response = bpb.ProduceResponse()
    by_topic: dict[str, bpb.ProduceResponse.TopicResponse] = {}
    for (name, index), result in zip(keys, results):
        topic = by_topic.get(name)
        if topic is None:
            topic = by_topic[name] = response.responses.add(name=name)
        topic.partitions.add(
            index=index, error_code=result.error, error_message=result.message, base_offset=result.base_offset,
            log_append_time_ms=result.log_append_time_ms, log_start_offset=result.log_start_offset,
            current_leader_id=result.current_leader_id, current_leader_epoch=result.current_leader_epoch)
    return response
