"""InitProducerId (v0-v4) through KafkaBrokerService.InitProducerId: the id
an idempotent producer (kafka-python 3's default) stamps on its batches, and
a transactional producer's id and epoch.

From v3 (KIP-360) a producer may name the id and epoch it has, to have the
epoch bumped rather than get a new id: librdkafka does so to carry on after
an abortable error (an unknown producer id, an out-of-order sequence), and
with v0-v2 such an error is fatal to it. v4 (KIP-588) knows PRODUCER_FENCED;
below it that is INVALID_PRODUCER_EPOCH, as in the other transaction APIs."""
from __future__ import annotations

from typing import Any

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build, millis

from .context import KafkaCallContext
from .transactions import client_error

NO_PRODUCER = -1
PRODUCER_FENCED_SINCE = 4  # InitProducerId's first version that knows PRODUCER_FENCED


async def serve(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.InitProducerId(bpb.InitProducerIdRequest(
        transactional_id=request.transactional_id or "",
        transaction_timeout_ms=millis(request.transaction_timeout),
        producer_id=getattr(request, "producer_id", NO_PRODUCER),
        producer_epoch=getattr(request, "producer_epoch", NO_PRODUCER)), context)
    return build(response_type(request), {
        "throttle_time": 0,
        "error_code": client_error(answer.error_code, request.__version__, PRODUCER_FENCED_SINCE),
        "producer_id": answer.producer_id, "producer_epoch": answer.producer_epoch})
