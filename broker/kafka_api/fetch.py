"""Fetch (v4-v12) through KafkaBrokerService.Fetch. The service answers with
its protobuf encoding, record batches spliced in; they are taken out as
views of it (kafka_protocol/fetch_framing.py) and written into the Kafka
answer without being parsed or copied until the frame is joined: the answer
is framed by hand (kafka_protocol/wire/fetch_response.py), not by kio.

Fetch sessions (KIP-227, v7 on): the request's session id, epoch and
forgotten topics go to the service as they are, whose session cache
(broker/fetch_session.py) answers FETCH_SESSION_ID_NOT_FOUND or
INVALID_FETCH_SESSION_EPOCH, or the session id with only the partitions
that changed; v4-v6 fetches are sessionless."""
from __future__ import annotations

from typing import Any

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.errors import Errors
from kafka_protocol.fetch_framing import decode_fetch_response
from kafka_protocol.wire.codec import EncodedResponse, response_type
from kafka_protocol.wire.entities import build, millis
from kafka_protocol.wire.fetch_response import (FIRST_VERSION, LAST_VERSION, FetchedPartitionAnswer,
                                                 encode_fetch_body)

from .context import KafkaCallContext

READ_COMMITTED = 1
NO_EPOCH = -1
NEW_LEADER_ERRORS = (Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH)


async def serve(services: Any, request: Any, context: KafkaCallContext) -> Any:
    isolation = getattr(request, "isolation_level", 0)
    fetch = bpb.FetchRequest(
        replica_id=request.replica_id, replica_epoch=-1, max_wait_ms=millis(request.max_wait),
        min_bytes=request.min_bytes, max_bytes=request.max_bytes, isolation_level=isolation,
        topics=[bpb.FetchRequest.FetchTopic(topic=t.topic, partitions=[bpb.FetchRequest.FetchPartition(
            partition=p.partition, current_leader_epoch=getattr(p, "current_leader_epoch", NO_EPOCH),
            fetch_offset=p.fetch_offset, last_fetched_epoch=NO_EPOCH,
            log_start_offset=getattr(p, "log_start_offset", -1), partition_max_bytes=p.partition_max_bytes)
            for p in t.partitions]) for t in request.topics])
    if hasattr(request, "session_epoch"):  # v7 on
        fetch.session_id, fetch.session_epoch = request.session_id, request.session_epoch
        fetch.forgotten.extend(bpb.FetchRequest.ForgottenTopic(topic=f.topic, partitions=f.partitions)
                               for f in request.forgotten_topics_data)
    answer = decode_fetch_response(await services.broker.Fetch(fetch, context))
    committed = isolation == READ_COMMITTED
    topics = [(t.topic, [partition_answer(p, committed) for p in t.partitions]) for t in answer.responses]
    kind = response_type(request)
    if FIRST_VERSION <= kind.__version__ <= LAST_VERSION:
        return EncodedResponse(kind, encode_fetch_body(kind.__version__, answer.throttle_time_ms, answer.error_code,
                                                       answer.session_id, topics))
    return kio_answer(kind, answer.throttle_time_ms, answer.error_code, topics, answer.session_id)


def kio_answer(kind: type, throttle_ms: int, error_code: int,
               topics: list[tuple[str, list[FetchedPartitionAnswer]]], session_id: int = 0) -> Any:
    """The same answer as a kio message (kio's writer frames it): for a version the hand
    framing does not know, and what tests/kafka_protocol/test_fetch_response.py holds it to."""
    return build(kind, {"throttle_time": throttle_ms, "error_code": error_code, "session_id": session_id,
                        "responses": [
        {"topic": name, "partitions": [
            {"partition_index": p.partition_index, "error_code": p.error_code, "high_watermark": p.high_watermark,
             "last_stable_offset": p.last_stable_offset, "log_start_offset": p.log_start_offset,
             "aborted_transactions": (None if p.aborted_transactions is None else
                                      [{"producer_id": a, "first_offset": b} for a, b in p.aborted_transactions]),
             "preferred_read_replica": p.preferred_read_replica, "records": p.records,
             **({"current_leader": {"leader_id": p.current_leader[0], "leader_epoch": p.current_leader[1]}}
                if p.current_leader is not None else {})}
            for p in partitions]} for name, partitions in topics]})


def partition_answer(p: Any, committed: bool) -> FetchedPartitionAnswer:
    """One partition of the broker's answer (a FetchedPartition) as the Kafka answer carries it."""
    return FetchedPartitionAnswer(
        p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset,
        # Kafka's null for read_uncommitted consumers, who have nothing to drop.
        [(a.producer_id, a.first_offset) for a in p.aborted_transactions] if committed else None,
        -1, p.records,
        # v12 on: who leads now, so the client need not wait for new metadata
        (p.current_leader_id, p.current_leader_epoch) if p.error_code in NEW_LEADER_ERRORS else None)
