"""The transaction APIs through TransactionCoordinatorService's methods:
AddPartitionsToTxn (v0-v3), AddOffsetsToTxn (v0-v3), EndTxn (v0-v3),
DescribeTransactions (v0), ListTransactions (v0-v1); and DescribeProducers
(v0) through KafkaBrokerService.DescribeProducers.

Kafka clients of these versions run transaction version 1 (they keep their
epoch from one transaction to the next and read no epoch from EndTxn), so
EndTxn asks the coordinator for exactly that (keep_epoch). AddPartitionsToTxn
v4+ is the brokers' batched verification (KIP-890) and EndTxn v5 transaction
version 2: neither is served.

Errors newer than the version asked for are given as Kafka gives them to
older clients: TRANSACTION_ABORTABLE (the coordinator aborted the
transaction on its timeout and bumped the epoch) is PRODUCER_FENCED, as a
version 1 coordinator fences the producer then; PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH below v2 (KIP-588).
"""
from __future__ import annotations

from typing import Any

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import transactions_pb2 as tpb
from kafka_protocol.errors import Errors
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build, millis

from .context import KafkaCallContext

PRODUCER_FENCED_SINCE = 2  # the version of AddPartitionsToTxn, AddOffsetsToTxn and EndTxn that knows it


def client_error(code: int, version: int, fenced_since: int = PRODUCER_FENCED_SINCE) -> int:
    """`code` as a client of `version` (below the one that knows TRANSACTION_ABORTABLE) reads it;
    `fenced_since` is the API's first version that knows PRODUCER_FENCED."""
    if code == Errors.TRANSACTION_ABORTABLE:
        code = Errors.PRODUCER_FENCED
    if code == Errors.PRODUCER_FENCED and version < fenced_since:
        code = Errors.INVALID_PRODUCER_EPOCH
    return code


async def add_partitions_to_txn(services: Any, request: Any, context: KafkaCallContext) -> Any:
    topics = request.v3_and_below_topics
    answer = await services.transactions.AddPartitionsToTxn(tpb.AddPartitionsToTxnRequest(
        transactional_id=request.v3_and_below_transactional_id, producer_id=request.v3_and_below_producer_id,
        producer_epoch=request.v3_and_below_producer_epoch,
        topics=[tpb.TxnTopic(name=t.name, partitions=t.partitions) for t in topics]), context)
    found = {(t.name, p.partition_index): p.error_code for t in answer.results for p in t.results}
    fallback = answer.error_code or Errors.UNKNOWN_SERVER_ERROR  # a partition the answer left out is not added
    version = request.__version__
    return build(response_type(request), {"throttle_time": answer.throttle_time_ms, "results_by_topic_v3_and_below": [
        {"name": t.name, "results_by_partition": [
            {"partition_index": p, "partition_error_code": client_error(found.get((t.name, p), fallback), version)}
            for p in t.partitions]} for t in topics]})


async def add_offsets_to_txn(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.transactions.AddOffsetsToTxn(tpb.AddOffsetsToTxnRequest(
        transactional_id=request.transactional_id, producer_id=request.producer_id,
        producer_epoch=request.producer_epoch, group_id=request.group_id), context)
    return build(response_type(request), {"throttle_time": answer.throttle_time_ms,
                                          "error_code": client_error(answer.error_code, request.__version__)})


async def end_txn(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.transactions.EndTxn(tpb.EndTxnRequest(
        transactional_id=request.transactional_id, producer_id=request.producer_id,
        producer_epoch=request.producer_epoch, committed=request.committed, keep_epoch=True), context)
    return build(response_type(request), {"throttle_time": answer.throttle_time_ms,
                                          "error_code": client_error(answer.error_code, request.__version__)})


async def describe_transactions(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.transactions.DescribeTransactions(tpb.DescribeTransactionsRequest(
        transactional_ids=request.transactional_ids), context)
    return build(response_type(request), {"throttle_time": answer.throttle_time_ms, "transaction_states": [
        {"error_code": s.error_code, "transactional_id": s.transactional_id, "transaction_state": s.transaction_state,
         "transaction_timeout": s.transaction_timeout_ms,
         "transaction_start_time": s.transaction_start_time_ms,
         "producer_id": s.producer_id, "producer_epoch": s.producer_epoch,
         "topics": [{"topic": t.name, "partitions": t.partitions} for t in s.topics]}
        for s in answer.transaction_states]})


async def list_transactions(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.transactions.ListTransactions(tpb.ListTransactionsRequest(
        state_filters=request.state_filters, producer_id_filters=request.producer_id_filters,
        duration_filter_ms=millis(getattr(request, "duration_filter", -1))), context)
    return build(response_type(request), {
        "throttle_time": answer.throttle_time_ms, "error_code": answer.error_code,
        "unknown_state_filters": tuple(answer.unknown_state_filters),
        "transaction_states": [{"transactional_id": s.transactional_id, "producer_id": s.producer_id,
                                "transaction_state": s.transaction_state} for s in answer.transaction_states]})


async def describe_producers(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.DescribeProducers(bpb.DescribeProducersRequest(topics=[
        bpb.DescribeProducersRequest.Topic(name=t.name, partition_indexes=t.partition_indexes)
        for t in request.topics]), context)
    return build(response_type(request), {"throttle_time": 0, "topics": [
        {"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": p.error_code,
             "error_message": p.error_message or None, "active_producers": [
                 {"producer_id": a.producer_id, "producer_epoch": a.producer_epoch,
                  "last_sequence": a.last_sequence, "last_timestamp": a.last_timestamp,
                  "coordinator_epoch": a.coordinator_epoch, "current_txn_start_offset": a.current_txn_start_offset}
                 for a in p.active_producers]} for p in t.partitions]} for t in answer.topics]})
