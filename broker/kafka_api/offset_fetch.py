"""OffsetFetch (v1-v9) through GroupCoordinatorService.OffsetFetch.

Up to v7 a request names one group; from v8 on it names several (KIP-709),
each asked of the service in turn. A null topic list is every partition
the group has committed (v2 on). v9 carries a KIP-848 member's id and epoch,
which the coordinator checks. require_stable (v7 on): a partition with a
pending transactional offset answers UNSTABLE_OFFSET_COMMIT."""
from __future__ import annotations

from typing import Any

from kraftlog_api import groups_pb2 as gpb
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build

from .context import KafkaCallContext

BATCHED_VERSION = 8
NO_EPOCH = -1


async def _fetch(services: Any, context: KafkaCallContext, group_id: str, topics: Any, member_id: str,
                 member_epoch: int, require_stable: bool) -> dict[str, Any]:
    answer = await services.groups.OffsetFetch(gpb.OffsetFetchRequest(
        group_id=group_id, member_id=member_id, member_epoch=member_epoch, require_stable=require_stable,
        topics=[gpb.TopicPartitions(topic=t.name, partitions=t.partition_indexes) for t in topics or ()]), context)
    return {"group_id": group_id, "error_code": answer.error_code, "topics": [
        {"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "committed_offset": p.committed_offset,
             "committed_leader_epoch": p.committed_leader_epoch, "metadata": p.metadata,
             "error_code": p.error_code} for p in t.partitions]} for t in answer.topics]}


async def serve(services: Any, request: Any, context: KafkaCallContext) -> Any:
    stable = getattr(request, "require_stable", False)
    if request.__version__ >= BATCHED_VERSION:
        groups = [await _fetch(services, context, g.group_id, g.topics, getattr(g, "member_id", None) or "",
                               getattr(g, "member_epoch", NO_EPOCH), stable) for g in request.groups]
        return build(response_type(request), {"throttle_time": 0, "groups": groups})
    group = await _fetch(services, context, request.group_id, request.topics, "", NO_EPOCH, stable)
    if group["error_code"] and request.__version__ < 2:
        # v0-v1 have no group-level error: Kafka's answer repeats it on each partition asked for.
        group["topics"] = [{"name": t.name, "partitions": [
            {"partition_index": i, "committed_offset": -1, "metadata": "", "error_code": group["error_code"]}
            for i in t.partition_indexes]} for t in request.topics or ()]
    return build(response_type(request), {"throttle_time": 0, "error_code": group["error_code"],
                                          "topics": group["topics"]})
