"""InitProducerId (v0-v1) through KafkaBrokerService.InitProducerId: the id
an idempotent producer (kafka-python 3's default) stamps on its batches."""
from __future__ import annotations

from typing import Any

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build, millis

from .context import KafkaCallContext


async def serve(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.InitProducerId(bpb.InitProducerIdRequest(
        transactional_id=request.transactional_id or "",
        transaction_timeout_ms=millis(request.transaction_timeout), producer_id=-1, producer_epoch=-1), context)
    return build(response_type(request), {"throttle_time": 0, "error_code": answer.error_code,
                                          "producer_id": answer.producer_id, "producer_epoch": answer.producer_epoch})
