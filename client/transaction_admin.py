"""Transaction administration, like Kafka's kafka-transactions.sh: list and
describe transactional ids (their coordinators' ListTransactions and
DescribeTransactions), the producers a partition tracks (DescribeProducers
at its leader), aborting a hanging transaction at a partition
(WriteTxnMarkers ABORT to the leader, which needs ClusterAction on the
cluster), and finding hanging transactions. `security` is the client's
security.protocol, ssl.* and sasl.* settings (None: plaintext).

A hanging transaction is one a partition still holds open (so its last
stable offset, and every read_committed consumer, is stuck behind it) while
its coordinator no longer has it ongoing with that partition - a marker
that was lost - or that has been open longer than any transaction may be
(transaction.max.timeout.ms). Each call runs once with asyncio.run.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable, Iterable, Optional, TypeVar

import grpc

from kafka_protocol.errors import Errors, error_name
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import transactions_pb2 as tpb
from kraftlog_api import transactions_pb2_grpc as tpb_grpc
from security.client_security import ClientSecurity

from .coordinator import TRANSACTION, Coordinator
from .errors import KafkaError, NetworkError, error_for_code
from .metadata import Metadata

T = TypeVar("T")
CALL_TIMEOUT_S = 15.0
RETRY_BACKOFF_S = 0.2
DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN = 15  # Kafka's transaction.max.timeout.ms, 900000


def list_transactions(bootstrap: str, *, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                      duration_ms: int = 0, security: Optional[ClientSecurity] = None) -> list[dict[str, Any]]:
    """Every transactional id of every coordinator: [{"transactional_id", "producer_id", "state",
    "coordinator"}, ...]; `states`, `producer_ids`, `duration_ms` filter as KIP-664/994 say."""
    request = tpb.ListTransactionsRequest(state_filters=list(states), producer_id_filters=list(producer_ids),
                                          duration_filter_ms=duration_ms)
    return _run(bootstrap, security, lambda m: _list(m, request))


def describe_transaction(bootstrap: str, transactional_id: str, *,
                         security: Optional[ClientSecurity] = None) -> dict[str, Any]:
    """The id's state, producer, timeout, start time and partitions, from its coordinator."""
    return _run(bootstrap, security, lambda m: _describe(m, transactional_id))


def describe_producers(bootstrap: str, topic: str, partition: int, *,
                       security: Optional[ClientSecurity] = None) -> list[dict[str, Any]]:
    """The producers the partition's leader tracks, with their open transaction's first offset (-1: none)."""
    return _run(bootstrap, security, lambda m: _producers_of(m, [(topic, partition)]))


def abort_transaction(bootstrap: str, topic: str, partition: int, start_offset: int, *,
                      security: Optional[ClientSecurity] = None) -> dict[str, Any]:
    """Abort the transaction open at the partition since `start_offset`: find its producer
    (DescribeProducers), then write an ABORT marker with that producer's epoch and
    coordinator epoch at the leader (WriteTxnMarkers: ClusterAction on the cluster)."""
    return _run(bootstrap, security, lambda m: _abort(m, topic, partition, start_offset))


def find_hanging(bootstrap: str, *, broker_id: Optional[int] = None,
                 max_transaction_timeout_min: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN,
                 security: Optional[ClientSecurity] = None) -> list[dict[str, Any]]:
    """The transactions open at partitions (those led by `broker_id`, or all) that their
    coordinator does not have ongoing with that partition, or open longer than the maximum."""
    return _run(bootstrap, security, lambda m: _find_hanging(m, broker_id, max_transaction_timeout_min * 60_000))


def _run(bootstrap: str, security: Optional[ClientSecurity], work: Callable[[Metadata], Awaitable[T]]) -> T:
    async def run() -> T:
        metadata = Metadata(bootstrap, security=security)
        try:
            await metadata.update()
            return await work(metadata)
        finally:
            await metadata.close()
    return asyncio.run(run())


async def _list(metadata: Metadata, request: tpb.ListTransactionsRequest) -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    problems = []
    for broker_id, address in sorted(metadata.brokers.items()):
        stub = tpb_grpc.TransactionCoordinatorStub(metadata.channel(address))
        try:
            response = await stub.ListTransactions(request, timeout=CALL_TIMEOUT_S)
        except grpc.aio.AioRpcError as exc:
            problems.append(f"broker {broker_id}: {exc.code().name}")
            continue
        if response.error_code:
            problems.append(f"broker {broker_id}: {error_name(response.error_code)}")
            continue
        if response.unknown_state_filters:
            raise error_for_code(Errors.INVALID_REQUEST, "unknown states: "
                                 + ", ".join(response.unknown_state_filters))
        for t in response.transaction_states:
            found[t.transactional_id] = {"transactional_id": t.transactional_id, "producer_id": t.producer_id,
                                         "state": t.transaction_state, "coordinator": broker_id}
    if problems and len(problems) == len(metadata.brokers):
        raise NetworkError(f"no broker answered ListTransactions ({'; '.join(problems)})")
    return [found[t] for t in sorted(found)]


async def _describe(metadata: Metadata, transactional_id: str) -> dict[str, Any]:
    coordinator = Coordinator(metadata, transactional_id, request_timeout_s=CALL_TIMEOUT_S,
                              backoff_s=RETRY_BACKOFF_S, key_type=TRANSACTION,
                              stub_factory=tpb_grpc.TransactionCoordinatorStub)
    response = await coordinator.call("DescribeTransactions", lambda: tpb.DescribeTransactionsRequest(
        transactional_ids=[transactional_id]), time.monotonic() + CALL_TIMEOUT_S)
    [state] = response.transaction_states
    if state.error_code:
        raise error_for_code(state.error_code, f"transactional id {transactional_id}")
    return {"transactional_id": state.transactional_id, "coordinator": state.coordinator_id,
            "producer_id": state.producer_id, "producer_epoch": state.producer_epoch,
            "state": state.transaction_state, "timeout_ms": state.transaction_timeout_ms,
            "start_time_ms": state.transaction_start_time_ms,
            "partitions": sorted((t.name, p) for t in state.topics for p in t.partitions)}


async def _producers_of(metadata: Metadata, partitions: list[tuple[str, int]],
                        ) -> list[dict[str, Any]]:
    """Every producer of each partition, asked of its leader (one request per leader)."""
    metadata.add_topics({t for t, _ in partitions})
    if any(metadata.leader_for(t, p) is None for t, p in partitions):
        await metadata.update()
    by_leader: dict[int, dict[str, list[int]]] = {}
    for topic, partition in partitions:
        info = metadata.leader_for(topic, partition)
        if info is None:
            raise error_for_code(metadata.topic_error(topic) or Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                 f"{topic}-{partition}: no leader known")
        by_leader.setdefault(info.leader, {}).setdefault(topic, []).append(partition)
    out = []
    for leader, topics in sorted(by_leader.items()):
        request = bpb.DescribeProducersRequest(topics=[
            bpb.DescribeProducersRequest.Topic(name=t, partition_indexes=ps) for t, ps in topics.items()])
        try:
            response = await metadata.stub(leader).DescribeProducers(request, timeout=CALL_TIMEOUT_S)
        except grpc.aio.AioRpcError as exc:
            raise NetworkError(f"DescribeProducers to broker {leader}: {exc.code().name}") from None
        for t in response.topics:
            for p in t.partitions:
                if p.error_code:
                    raise error_for_code(p.error_code, f"{t.name}-{p.partition_index}: {p.error_message}")
                out.extend({"topic": t.name, "partition": p.partition_index, "leader": leader,
                            "producer_id": pr.producer_id, "producer_epoch": pr.producer_epoch,
                            "last_sequence": pr.last_sequence, "last_timestamp": pr.last_timestamp,
                            "coordinator_epoch": pr.coordinator_epoch,
                            "current_txn_start_offset": pr.current_txn_start_offset}
                           for pr in p.active_producers)
    return out


async def _abort(metadata: Metadata, topic: str, partition: int, start_offset: int) -> dict[str, Any]:
    producers = await _producers_of(metadata, [(topic, partition)])
    match = [p for p in producers if p["current_txn_start_offset"] == start_offset]
    if not match:
        open_at = sorted(p["current_txn_start_offset"] for p in producers if p["current_txn_start_offset"] >= 0)
        raise error_for_code(Errors.INVALID_REQUEST, f"{topic}-{partition}: no transaction open at offset "
                             f"{start_offset} (open at: {', '.join(map(str, open_at)) or 'none'})")
    [producer] = match
    request = bpb.WriteTxnMarkersRequest(markers=[bpb.WriteTxnMarkersRequest.Marker(
        producer_id=producer["producer_id"], producer_epoch=producer["producer_epoch"], transaction_result=False,
        coordinator_epoch=producer["coordinator_epoch"],
        topics=[bpb.WriteTxnMarkersRequest.Topic(name=topic, partition_indexes=[partition])])])
    leader = producer["leader"]
    try:
        response = await metadata.stub(leader).WriteTxnMarkers(request, timeout=CALL_TIMEOUT_S)
    except grpc.aio.AioRpcError as exc:
        if exc.code() == grpc.StatusCode.PERMISSION_DENIED:
            raise error_for_code(Errors.CLUSTER_AUTHORIZATION_FAILED,
                                 f"WriteTxnMarkers needs ClusterAction on the cluster ({exc.details()})") from None
        raise NetworkError(f"WriteTxnMarkers to broker {leader}: {exc.code().name}") from None
    codes = [p.error_code for m in response.markers for t in m.topics for p in t.partitions]
    bad = next((c for c in codes if c), Errors.NONE if codes else Errors.UNKNOWN_SERVER_ERROR)
    if bad:
        raise error_for_code(bad, f"WriteTxnMarkers ABORT for producer {producer['producer_id']} "
                             f"at {topic}-{partition}")
    return {"topic": topic, "partition": partition, "producer_id": producer["producer_id"],
            "producer_epoch": producer["producer_epoch"], "start_offset": start_offset}


async def _find_hanging(metadata: Metadata, broker_id: Optional[int], max_timeout_ms: int) -> list[dict[str, Any]]:
    response = await metadata.any_broker("Metadata", bpb.MetadataRequest(topics=[], all_topics=True))
    metadata.learn(response)
    partitions = [(topic, info.partition) for topic, infos in sorted(metadata.topics.items()) for info in infos
                  if broker_id is None or info.leader == broker_id]
    if broker_id is not None and broker_id not in metadata.brokers:
        raise error_for_code(Errors.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not in the cluster's metadata")
    open_txns = [p for p in await _producers_of(metadata, partitions) if p["current_txn_start_offset"] >= 0] \
        if partitions else []
    if not open_txns:
        return []
    listed = await _list(metadata, tpb.ListTransactionsRequest(
        producer_id_filters=sorted({p["producer_id"] for p in open_txns})))
    by_producer: dict[int, dict[str, Any]] = {}
    for t in listed:
        try:
            by_producer[t["producer_id"]] = await _describe(metadata, t["transactional_id"])
        except KafkaError:
            continue  # expired or moved meanwhile: judged as unknown below
    now_ms = int(time.time() * 1000)
    hanging = []
    for p in open_txns:
        described = by_producer.get(p["producer_id"])
        age_ms = now_ms - p["last_timestamp"] if p["last_timestamp"] > 0 else -1
        if described is None:
            reason = "the coordinator knows no transactional id with this producer id"
        elif described["state"] != "Ongoing" or (p["topic"], p["partition"]) not in described["partitions"]:
            reason = (f"{described['transactional_id']} is {described['state']} at the coordinator, "
                      "without this partition")
        elif age_ms > max_timeout_ms:
            reason = f"open {age_ms // 1000} s, longer than the maximum transaction timeout"
        else:
            continue
        hanging.append({**p, "transactional_id": described["transactional_id"] if described else None,
                        "age_ms": age_ms, "reason": reason})
    return hanging


__all__ = ["abort_transaction", "describe_producers", "describe_transaction", "find_hanging", "list_transactions"]
