"""FindCoordinator (v0-v4) through GroupCoordinatorService.FindCoordinator:
a group's (key type 0) or a transactional id's (1) coordinator, as its
endpoint on this listener. v0-v3 ask for one key, v4 for a batch (KIP-699).
Another key type (v6's share groups) is INVALID_REQUEST for its keys.

Written for the transactional producers of librdkafka and kafka-python
(issue 19's transaction APIs); the group helper's adapter may replace it.
"""
from __future__ import annotations

from typing import Any

from kraftlog_api import groups_pb2 as gpb
from kafka_protocol.errors import Errors
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build

from .context import KafkaCallContext

KEY_TYPES = (0, 1)  # group, transaction


async def serve(services: Any, request: Any, context: KafkaCallContext) -> Any:
    batched = hasattr(request, "coordinator_keys")
    keys = list(request.coordinator_keys) if batched else [request.key]
    key_type = getattr(request, "key_type", 0)
    if key_type in KEY_TYPES:
        answer = await services.groups.FindCoordinator(gpb.FindCoordinatorRequest(key_type=key_type, keys=keys),
                                                       context)
        found = [{"key": c.key, "node_id": c.node_id, "host": c.host, "port": c.port, "error_code": c.error_code,
                  "error_message": c.error_message or None} for c in answer.coordinators]
    else:
        found = [{"key": key, "node_id": -1, "host": "", "port": -1, "error_code": Errors.INVALID_REQUEST,
                  "error_message": f"key type {key_type}: only groups (0) and transactions (1)"} for key in keys]
    if batched:
        return build(response_type(request), {"throttle_time": 0, "coordinators": found})
    return build(response_type(request), {"throttle_time": 0, **found[0]})
