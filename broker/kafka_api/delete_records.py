"""DeleteRecords (v0-v2) through KafkaBrokerService.DeleteRecords
(broker/delete_records.py): the leaders move their log start offsets and
answer the low watermark once the in-sync replicas follow."""
from __future__ import annotations

from typing import Any

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build, millis

from .context import KafkaCallContext


async def serve(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.DeleteRecords(bpb.DeleteRecordsRequest(
        timeout_ms=millis(request.timeout), topics=[bpb.DeleteRecordsRequest.Topic(name=t.name, partitions=[
            bpb.DeleteRecordsRequest.Partition(partition_index=p.partition_index, offset=p.offset)
            for p in t.partitions]) for t in request.topics]), context)
    return build(response_type(request), {"throttle_time": 0, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p.partition_index, "low_watermark": p.low_watermark,
                                         "error_code": p.error_code} for p in t.partitions]}
        for t in answer.topics]})
