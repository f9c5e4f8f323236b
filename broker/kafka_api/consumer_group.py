"""ConsumerGroupHeartbeat (v0-v1) and ConsumerGroupDescribe (v0-v1): the
KIP-848 protocol, through the GroupCoordinator service that gRPC consumers
use, so librdkafka's group.protocol=consumer members and gRPC members share
a group.

Kafka's messages name partitions by topic id, the service by topic name:
the ids are the metadata image's, as KafkaBrokerService.Metadata tells them
(asked only when a message carries partitions). A partition of a topic id
the image does not know is left out of the request (the topic is gone)."""
from __future__ import annotations

import uuid
from typing import Any, Iterable, Optional

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import groups_pb2 as gpb
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build, millis

from .context import KafkaCallContext

CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1  # ConsumerGroupDescribe v1's member_type (-1: unknown)


async def _topic_ids(services: Any, context: KafkaCallContext) -> dict[str, uuid.UUID]:
    answer = await services.broker.Metadata(bpb.MetadataRequest(all_topics=True), context)
    return {t.name: uuid.UUID(bytes=t.topic_id) for t in answer.topics if len(t.topic_id) == 16}


def _by_id(topics: Iterable[gpb.TopicPartitions], ids: dict[str, uuid.UUID]) -> list[dict[str, Any]]:
    return [{"topic_id": ids[t.topic], "topic_name": t.topic, "partitions": tuple(t.partitions)}
            for t in topics if t.topic in ids]


async def serve_heartbeat(services: Any, request: Any, context: KafkaCallContext) -> Any:
    ids: Optional[dict[str, uuid.UUID]] = None
    pb = gpb.ConsumerGroupHeartbeatRequest(
        group_id=request.group_id, member_id=request.member_id, member_epoch=request.member_epoch,
        instance_id=request.instance_id or "", rack_id=request.rack_id or "",
        rebalance_timeout_ms=millis(request.rebalance_timeout))
    if request.subscribed_topic_names is not None:
        pb.subscribed_topic_names.names.extend(request.subscribed_topic_names)
    regex = getattr(request, "subscribed_topic_regex", None)  # v1 on
    if regex is not None:
        pb.subscribed_topic_regex = regex
    if request.server_assignor is not None:
        pb.server_assignor = request.server_assignor
    if request.topic_partitions is not None:
        ids = await _topic_ids(services, context)
        names = {v: k for k, v in ids.items()}
        pb.owned_partitions.SetInParent()
        pb.owned_partitions.topic_partitions.extend(
            gpb.TopicPartitions(topic=names[t.topic_id], partitions=t.partitions)
            for t in request.topic_partitions if t.topic_id in names)
    answer = await services.groups.ConsumerGroupHeartbeat(pb, context)
    assignment = None
    if answer.HasField("assignment"):
        ids = ids if ids is not None else await _topic_ids(services, context)
        assignment = {"topic_partitions": [{k: v for k, v in t.items() if k != "topic_name"}
                                           for t in _by_id(answer.assignment.topic_partitions, ids)]}
    return build(response_type(request), {
        "throttle_time": 0, "error_code": answer.error_code, "error_message": answer.error_message or None,
        "member_id": answer.member_id or None, "member_epoch": answer.member_epoch,
        "heartbeat_interval": answer.heartbeat_interval_ms, "assignment": assignment})


async def serve_describe(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.groups.ConsumerGroupDescribe(gpb.ConsumerGroupDescribeRequest(
        group_ids=request.group_ids, include_authorized_operations=request.include_authorized_operations), context)
    described = [g for g in answer.groups if g.members]
    ids = await _topic_ids(services, context) if described else {}
    return build(response_type(request), {"throttle_time": 0, "groups": [
        {"error_code": g.error_code, "error_message": g.error_message or None, "group_id": g.group_id,
         "group_state": g.group_state, "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch,
         "assignor_name": g.assignor_name, "authorized_operations": g.authorized_operations,
         "members": [{"member_id": m.member_id, "instance_id": m.instance_id or None, "rack_id": m.rack_id or None,
                      "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
                      "subscribed_topic_names": tuple(m.subscribed_topic_names),
                      "subscribed_topic_regex": m.subscribed_topic_regex or None,
                      "assignment": {"topic_partitions": _by_id(m.assignment, ids)},
                      "target_assignment": {"topic_partitions": _by_id(m.target_assignment, ids)},
                      "member_type": CLASSIC_MEMBER if m.classic else CONSUMER_MEMBER} for m in g.members]} for g in answer.groups]})
