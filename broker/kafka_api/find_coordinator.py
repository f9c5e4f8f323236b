"""FindCoordinator (v0-v4) through GroupCoordinatorService.FindCoordinator:
key type 0 (a group) or 1 (a transactional id; the service hands those to
the transaction coordinator). Up to v3 a request names one key and the
answer is that key's; v4 batches keys (KIP-699) and answers each."""
from __future__ import annotations

from typing import Any

from kraftlog_api import groups_pb2 as gpb
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build

from .context import KafkaCallContext

BATCHED_VERSION = 4


async def serve(services: Any, request: Any, context: KafkaCallContext) -> Any:
    batched = request.__version__ >= BATCHED_VERSION
    keys = list(request.coordinator_keys) if batched else [request.key]
    answer = await services.groups.FindCoordinator(gpb.FindCoordinatorRequest(
        key_type=getattr(request, "key_type", 0), keys=keys), context)
    found = [{"key": c.key, "node_id": c.node_id, "host": c.host, "port": c.port, "error_code": c.error_code,
              "error_message": c.error_message or None} for c in answer.coordinators]
    if batched:
        return build(response_type(request), {"throttle_time": 0, "coordinators": found})
    return build(response_type(request), {"throttle_time": 0, **found[0]})
