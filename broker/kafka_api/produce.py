"""Produce (v3-v9) through KafkaBrokerService.Produce: the record batches
go to the broker as the client sent them. acks=0 is answered with nothing
at all, as Kafka does (the client expects no response)."""
from __future__ import annotations

from typing import Any, Optional

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build, millis

from .context import KafkaCallContext


async def serve(services: Any, request: Any, context: KafkaCallContext) -> Optional[Any]:
    answer = await services.broker.Produce(produce_request(request), context)
    if request.acks == 0:
        return None
    return build(response_type(request), {
        "throttle_time": answer.throttle_time_ms,
        "responses": [{"name": t.name, "partition_responses": [
            {"index": p.index, "error_code": p.error_code, "base_offset": p.base_offset,
             "log_append_time": p.log_append_time_ms, "log_start_offset": p.log_start_offset,
             "record_errors": (), "error_message": p.error_message or None} for p in t.partitions]}
            for t in answer.responses]})


def produce_request(request: Any) -> bpb.ProduceRequest:
    """The protobuf ProduceRequest of a kio one. Built in place with add():
    a submessage handed to a protobuf constructor is copied whole, and
    copying hundreds of kilobytes of records once per nesting level cost
    more than the rest of serving the request (bench/kafka_clients.py)."""
    message = bpb.ProduceRequest(acks=request.acks, timeout_ms=millis(request.timeout),
                                 transactional_id=request.transactional_id or "")
    for t in request.topic_data:
        topic = message.topics.add(name=t.name)
        for p in t.partition_data:
            topic.partitions.add(index=p.index, records=p.records or b"")
    return message
