"""Produce and consume for the console tools (`kraftlog produce` / `kraftlog consume`).

A first, synchronous client: the full producer and consumer (batching by
linger.ms, idempotence, key partitioning, groups) come with issue 5. Here
records are keyless, one batch at a time, sticky to a partition per batch
(Kafka's sticky partitioning for keyless records), retried on the errors
Kafka calls retriable after a metadata refresh. Without idempotence, a
retry after a timeout may write a batch twice; the summary says which
batches were not acknowledged.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

import grpc

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.records import Record, encode_batch, iter_batches

from .cluster import CALL_TIMEOUT_S, Cluster
from .metadata_cache import PartitionInfo
from .errors import NetworkError, error_name

# Kafka's retriable errors for produce and fetch.
RETRIABLE = {
    3,   # UNKNOWN_TOPIC_OR_PARTITION
    5,   # LEADER_NOT_AVAILABLE
    6,   # NOT_LEADER_OR_FOLLOWER
    7,   # REQUEST_TIMED_OUT
    19,  # NOT_ENOUGH_REPLICAS
    20,  # NOT_ENOUGH_REPLICAS_AFTER_APPEND
    74,  # FENCED_LEADER_EPOCH
    75,  # UNKNOWN_LEADER_EPOCH
}
RETRY_BACKOFF_S = 0.1
EARLIEST, LATEST = -2, -1


@dataclass
class ProduceSummary:
    acknowledged: int = 0
    failed: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    offsets: list[tuple[int, int, int]] = field(default_factory=list)  # (partition, base offset, count)


def produce_values(cluster: Cluster, topic: str, values: Iterable[bytes], *, acks: int = -1,
                   batch_records: int = 500, delivery_timeout_s: float = 30.0,
                   partition: Optional[int] = None) -> ProduceSummary:
    summary = ProduceSummary()
    batch: list[bytes] = []
    sticky = 0
    for value in values:
        batch.append(value)
        if len(batch) >= batch_records:
            _send(cluster, topic, batch, partition if partition is not None else sticky, acks, delivery_timeout_s, summary)
            sticky += 1
            batch = []
    if batch:
        _send(cluster, topic, batch, partition if partition is not None else sticky, acks, delivery_timeout_s, summary)
    return summary


def _send(cluster: Cluster, topic: str, values: list[bytes], choice: int, acks: int,
          delivery_timeout_s: float, summary: ProduceSummary) -> None:
    now_ms = int(time.time() * 1000)
    data = encode_batch([Record(None, v, now_ms) for v in values])
    deadline = time.monotonic() + delivery_timeout_s
    last_error = "no partition known"
    while time.monotonic() < deadline:
        partitions = cluster.partitions(topic)
        if partitions:
            target = partitions[choice % len(partitions)]
            error, base = _produce_once(cluster, target, data, acks, deadline)
            if error == 0:
                summary.acknowledged += len(values)
                summary.offsets.append((target.partition, base, len(values)))
                return
            last_error = error_name(error) if isinstance(error, int) else error
            if isinstance(error, int) and error not in RETRIABLE:
                break
        time.sleep(RETRY_BACKOFF_S)
        _refresh_quietly(cluster, topic)
    summary.failed += len(values)
    summary.errors[last_error] = summary.errors.get(last_error, 0) + len(values)


def _produce_once(cluster: Cluster, target: PartitionInfo, data: bytes, acks: int,
                  deadline: float) -> tuple[int | str, int]:
    if target.leader not in cluster.brokers:
        return 5, -1  # LEADER_NOT_AVAILABLE
    request = bpb.ProduceRequest(acks=acks, timeout_ms=int(CALL_TIMEOUT_S * 1000), topics=[
        bpb.ProduceRequest.TopicData(name=target.topic, partitions=[
            bpb.ProduceRequest.PartitionData(index=target.partition, records=data)])])
    try:
        response = cluster.broker_stub(target.leader).Produce(
            request, timeout=max(0.1, min(CALL_TIMEOUT_S * 2, deadline - time.monotonic())))
    except grpc.RpcError as exc:
        return exc.code().name, -1  # type: ignore[attr-defined]
    result = response.responses[0].partitions[0]
    return result.error_code, result.base_offset


def _refresh_quietly(cluster: Cluster, topic: str) -> None:
    try:
        cluster.refresh([topic])
    except Exception:  # noqa: BLE001 - the next attempt reports what is wrong
        pass


@dataclass(frozen=True)
class ConsumedRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: tuple[tuple[str, Optional[bytes]], ...]


def consume(cluster: Cluster, topic: str, *, from_beginning: bool = True, max_messages: Optional[int] = None,
            idle_timeout_s: Optional[float] = None, max_wait_ms: int = 500) -> Iterator[ConsumedRecord]:
    """Records of every partition, below each high watermark, in offset order per partition.

    Stops after `max_messages`, or once nothing new arrived for `idle_timeout_s` (None: never).
    """
    partitions = cluster.partitions(topic)
    positions = {p.partition: _list_offset(cluster, p, EARLIEST if from_beginning else LATEST) for p in partitions}
    delivered = 0
    last_data = time.monotonic()
    while max_messages is None or delivered < max_messages:
        got_any = False
        by_leader: dict[int, list[PartitionInfo]] = {}
        for p in cluster.partitions(topic):
            by_leader.setdefault(p.leader, []).append(p)
        for leader, parts in by_leader.items():
            if leader not in cluster.brokers:
                _refresh_quietly(cluster, topic)
                continue
            for record in _fetch(cluster, leader, topic, parts, positions, max_wait_ms):
                got_any = True
                yield record
                delivered += 1
                if max_messages is not None and delivered >= max_messages:
                    return
        if got_any:
            last_data = time.monotonic()
        elif idle_timeout_s is not None and time.monotonic() - last_data >= idle_timeout_s:
            return


def _fetch(cluster: Cluster, leader: int, topic: str, parts: list[PartitionInfo], positions: dict[int, int],
           max_wait_ms: int) -> Iterator[ConsumedRecord]:
    request = bpb.FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=8 << 20, topics=[
        bpb.FetchRequest.FetchTopic(topic=topic, partitions=[
            bpb.FetchRequest.FetchPartition(partition=p.partition, current_leader_epoch=-1,
                                            fetch_offset=positions[p.partition], last_fetched_epoch=-1,
                                            partition_max_bytes=1 << 20)
            for p in parts])])
    try:
        response = cluster.broker_stub(leader).Fetch(request, timeout=CALL_TIMEOUT_S + max_wait_ms / 1000)
    except grpc.RpcError:
        _refresh_quietly(cluster, topic)
        time.sleep(RETRY_BACKOFF_S)
        return
    for topic_data in response.responses:
        for data in topic_data.partitions:
            if data.error_code:
                _refresh_quietly(cluster, topic)
                continue
            position = positions[data.partition_index]
            for batch in iter_batches(data.records):
                for r in batch.records:
                    if r.offset >= position:
                        yield ConsumedRecord(topic, data.partition_index, r.offset, r.timestamp, r.key, r.value,
                                             r.headers)
                position = max(position, batch.header.last_offset + 1)
            positions[data.partition_index] = position


def _list_offset(cluster: Cluster, p: PartitionInfo, timestamp: int) -> int:
    request = bpb.ListOffsetsRequest(replica_id=-1, topics=[bpb.ListOffsetsRequest.ListOffsetsTopic(
        name=p.topic, partitions=[bpb.ListOffsetsRequest.ListOffsetsPartition(
            partition_index=p.partition, current_leader_epoch=-1, timestamp=timestamp)])])
    deadline = time.monotonic() + 30
    while True:
        try:
            info = next(x for x in cluster.partitions(p.topic) if x.partition == p.partition)
            response = cluster.broker_stub(info.leader).ListOffsets(request, timeout=CALL_TIMEOUT_S)
            result = response.topics[0].partitions[0]
            if result.error_code == 0:
                return result.offset
        except (grpc.RpcError, KeyError, StopIteration):
            pass
        if time.monotonic() >= deadline:
            raise NetworkError(f"{p.topic}-{p.partition}: no leader answered ListOffsets within 30 s")
        time.sleep(RETRY_BACKOFF_S)
        _refresh_quietly(cluster, p.topic)
