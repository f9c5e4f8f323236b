"""Produce: find the leader -> validate header + CRC, then every record
(partition_log.validator, as Kafka's LogValidator) -> check idempotent
producers' sequences (Partition.append; a retried batch is not appended again
and answers with its original offsets) -> append the bytes
(Log.append_as_leader) -> with acks=all, wait for the high watermark to pass
the batch (a retry's original included) -> answer. Errors are per partition,
Kafka's codes.

Transactions (KIP-890 part 1): a client's transactional batch of a producer
with no ongoing transaction of its epoch at the partition is verified first:
`ReplicaManager.txn_verifier` asks the transaction coordinator whether the
partition is in the producer's transaction (the request's transactional_id).
No verifier, no transactional_id, or an answer other than NONE: the
partition answers that error (INVALID_TXN_STATE for the first two) and
nothing is appended. Once the first batch opened the transaction at the
partition, later ones need no verification; a marker bumps the producer's
epoch here (producer_state.py), which fences a batch verified before the
transaction ended. The group coordinator's own transactional batches
(`AppendOrigin.COORDINATOR`) are neither verified nor sequence-checked.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Optional

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.batch import NO_PRODUCER_ID, iter_headers
from kafka_protocol.errors import KafkaError
from kafka_protocol.internal_topics import is_client_forbidden

from .errors import BrokerError, Error, as_broker_error, error_name
from .partition import NO_EPOCH, NO_LEADER, Partition
from .producer_state import AppendOrigin
from .replica_manager import ReplicaManager

__all__ = ["ACKS", "AppendOrigin", "ProduceResult", "append", "handle_produce", "start_append"]

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
                 timeout_ms: int, *, origin: AppendOrigin = AppendOrigin.CLIENT,
                 transactional_id: str = "") -> ProduceResult:
    """Append one partition's batches. acks 0 and 1 answer after the local
    append; acks=-1 once the high watermark passes the last batch, or
    REQUEST_TIMED_OUT after `timeout_ms` (the records stay in the log and
    may still be replicated: the outcome is unknown to the producer).
    A CLIENT's transactional batches are verified first (module docstring)."""
    if origin is AppendOrigin.CLIENT:
        partition = None
        try:
            partition = replicas.get(topic, index)
            await _verify_transactions(replicas, partition, records, transactional_id)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a per-partition error code
            return _failed(replicas, topic, index, exc, partition)
    appended = _append_here(replicas, topic, index, records, acks, origin)
    if isinstance(appended, ProduceResult):
        return appended
    return await _replicated(replicas, *appended, timeout_ms)


def start_append(replicas: ReplicaManager, topic: str, index: int, records: bytes, acks: int, timeout_ms: int,
                 origin: AppendOrigin = AppendOrigin.CLIENT) -> asyncio.Future[ProduceResult]:
    """`append` for a coordinator's own records: appended now, in the
    caller's step (they land in the order its machine decided them), and the
    answer to await: done at once for acks 0 and 1 or a refusal; for acks=-1
    a task of its own that waits for the high watermark, so it ends (its
    waiter forgotten on a timeout) whoever still awaits it."""
    appended = _append_here(replicas, topic, index, records, acks, origin)
    if isinstance(appended, ProduceResult):
        return _ready(appended)
    return asyncio.ensure_future(_replicated(replicas, *appended, timeout_ms))


def _append_here(replicas: ReplicaManager, topic: str, index: int, records: bytes, acks: int,
                 origin: AppendOrigin) -> ProduceResult | tuple[Partition, int, ProduceResult, bool]:
    """The local append: the answer when nothing is left to wait for (acks 0
    and 1, a refusal), else (the partition, the offset its high watermark
    must reach, the answer once it has)."""
    partition = None
    try:
        if acks not in ACKS:
            raise BrokerError(Error.INVALID_REQUIRED_ACKS, f"acks={acks}: expected 0, 1 or -1")
        partition = replicas.get(topic, index)
        info = partition.append(records, acks, origin)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a per-partition error code
        return _failed(replicas, topic, index, exc, partition)
    if info.batches:  # a retried duplicate appends nothing
        replicas.traffic.bytes_in += info.size
        replicas.traffic.messages_in += info.last_offset - info.first_offset + 1
    done = ProduceResult(base_offset=info.first_offset, log_start_offset=partition.log_start_offset)
    return done if acks != -1 else (partition, info.last_offset + 1, done, not info.batches)


async def _replicated(replicas: ReplicaManager, partition: Partition, offset: int, done: ProduceResult,
                      retried: bool, timeout_ms: int) -> ProduceResult:
    try:
        if retried:
            await wait_replicated_to_min_isr(partition, offset, timeout_ms)
        else:
            await wait_replicated(partition, offset, timeout_ms)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a per-partition error code
        return _failed(replicas, partition.topic, partition.index, exc, partition)
    return done


def _ready(result: ProduceResult) -> asyncio.Future[ProduceResult]:
    future: asyncio.Future[ProduceResult] = asyncio.get_running_loop().create_future()
    future.set_result(result)
    return future


def _failed(replicas: ReplicaManager, topic: str, index: int, exc: Exception,
            partition: Optional[Partition] = None) -> ProduceResult:
    err = as_broker_error(exc)
    leader, epoch = NO_LEADER, NO_EPOCH
    if err.error == Error.NOT_LEADER_OR_FOLLOWER:
        leader, epoch = replicas.leader_hint(topic, index)
    return ProduceResult(err.error, err.message, current_leader_id=leader, current_leader_epoch=epoch,
                         log_start_offset=partition.log_start_offset if partition else -1)


async def wait_replicated(partition: Partition, offset: int, timeout_ms: int) -> None:
    """acks=all: until the high watermark reaches `offset`; raises
    BrokerError (REQUEST_TIMED_OUT after `timeout_ms`, or the ISR's error)."""
    replicated = partition.wait_for_high_watermark(offset)
    try:
        error = await asyncio.wait_for(asyncio.shield(replicated), max(timeout_ms, 0) / 1000)
    except asyncio.TimeoutError:
        partition.forget_waiter(replicated)
        raise BrokerError(Error.REQUEST_TIMED_OUT, f"not replicated to the isr within {timeout_ms} ms") from None
    if error != Error.NONE:
        raise BrokerError(error, "while waiting for the isr to replicate the batch")


async def wait_replicated_to_min_isr(partition: Partition, offset: int, timeout_ms: int) -> None:
    """acks=all for a retry of batches already written: until the high
    watermark passes them with the ISR at min.insync.replicas, however long
    the ISR is short (up to `timeout_ms`: REQUEST_TIMED_OUT, outcome unknown).
    An error that says "written, ISR too small" would leave them
    unacknowledged, and a producer that bumps its epoch meanwhile (librdkafka,
    after an OUT_OF_ORDER_SEQUENCE_NUMBER of a later batch once the ISR grew)
    sends them again as new batches; held here, the producer's later
    requests on the connection wait behind this one and find the ISR whole."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(timeout_ms, 0) / 1000
    while True:
        remaining = deadline - loop.time()
        try:
            await wait_replicated(partition, offset, int(max(remaining, 0) * 1000))
            return
        except BrokerError as exc:
            if exc.error != Error.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
                raise
        remaining = deadline - loop.time()
        if remaining > 0:
            await asyncio.wait([partition.changed.wait()], timeout=remaining)  # an ISR change fires it
        if deadline - loop.time() <= 0:
            raise BrokerError(Error.REQUEST_TIMED_OUT,
                              f"written, but the isr stayed below min.insync.replicas for {timeout_ms} ms")


async def _verify_transactions(replicas: ReplicaManager, partition: Partition, records: bytes,
                               transactional_id: str) -> None:
    """KIP-890: each producer whose transactional batches would open a
    transaction here must be in the coordinator's transaction for this
    partition. Raises BrokerError with the refusal."""
    try:
        unverified = {(h.producer_id, h.producer_epoch) for _, h in iter_headers(records, validate=False)
                      if h.is_transactional and not h.is_control and h.producer_id != NO_PRODUCER_ID
                      and not partition.producers.has_ongoing_txn(h.producer_id, h.producer_epoch)}
    except KafkaError:
        return  # not batches at all: the append refuses them with the right error
    for producer_id, producer_epoch in sorted(unverified):
        if not transactional_id:
            raise BrokerError(Error.INVALID_TXN_STATE,
                              f"producer {producer_id} sent a transactional batch without a transactional id")
        if replicas.txn_verifier is None:
            raise BrokerError(Error.INVALID_TXN_STATE,
                              f"producer {producer_id}'s transaction cannot be verified: no transaction "
                              "coordinator on this broker")
        error = await replicas.txn_verifier.verify(transactional_id, producer_id, producer_epoch,
                                                   partition.topic, partition.index)
        if error != Error.NONE:
            what = ("is not in the ongoing transaction of" if error == Error.INVALID_TXN_STATE
                    else f"could not be verified ({error_name(error)}) in the transaction of")
            raise BrokerError(error, f"{partition.topic}-{partition.index} {what} "
                                     f"{transactional_id!r} (producer {producer_id}, epoch {producer_epoch})")


async def _client_append(replicas: ReplicaManager, topic: str, index: int, records: bytes, acks: int,
                         timeout_ms: int, transactional_id: str) -> ProduceResult:
    """A client's append: Kafka's internalTopicsAllowed=false. The brokers'
    own writers (the group coordinator) call `append` and are not checked."""
    if is_client_forbidden(topic):
        return ProduceResult(Error.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {topic}")
    return await append(replicas, topic, index, records, acks, timeout_ms, transactional_id=transactional_id)


async def handle_produce(replicas: ReplicaManager, request: bpb.ProduceRequest) -> bpb.ProduceResponse:
    """Every partition of the request at once; the answer lists them in request order."""
    keys = [(t.name, p.index) for t in request.topics for p in t.partitions]
    results = await asyncio.gather(*(
        _client_append(replicas, t.name, p.index, p.records, request.acks, request.timeout_ms,
                       request.transactional_id)
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
