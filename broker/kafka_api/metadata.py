"""Metadata (v1-v12) through KafkaBrokerService.Metadata. The brokers listed
are those with an endpoint of this same listener name, as a Kafka broker
answers per listener (the service was made for this listener).

The controller id a Kafka client sees is a broker's, as in Kafka's KRaft
mode: clients send admin requests to "the controller", and only brokers
are reachable by them (they forward to the active controller).

From v10 on topics carry their ids; from v12 a client may ask for a topic
by id alone (librdkafka does, for the topic ids of a KIP-848 assignment).
The service looks topics up by name: the ids are resolved to names through
an every-topic answer of the service first (so only topics the caller may
describe resolve); an id that does not resolve is UNKNOWN_TOPIC_ID.
"""
from __future__ import annotations

import uuid
from typing import Any, Iterable, Optional

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.errors import Errors
from kafka_protocol.internal_topics import is_internal
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build

from .context import KafkaCallContext


async def serve(services: Any, request: Any, context: KafkaCallContext) -> Any:
    # From v1 on, a null topic list is every topic and an empty one none.
    every = request.topics is None
    asked = () if every else request.topics
    names = {}
    if any(t.name is None for t in asked):
        known = await services.broker.Metadata(bpb.MetadataRequest(all_topics=True), context)
        names = {topic_uuid(t.topic_id): t.name for t in known.topics}
    wanted = [t.name if t.name is not None else names.get(t.topic_id) for t in asked]
    answer = await services.broker.Metadata(bpb.MetadataRequest(
        all_topics=every, topics=[name for name in wanted if name is not None]), context)
    by_id_only = [{"error_code": Errors.UNKNOWN_TOPIC_ID, "name": None, "topic_id": t.topic_id, "partitions": ()}
                  for t, name in zip(asked, wanted) if name is None]
    return build(response_type(request), {
        "throttle_time": 0, "cluster_id": answer.cluster_id, "controller_id": client_controller_id(answer),
        "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port,
                     "rack": b.rack if b.HasField("rack") else None} for b in answer.brokers],
        "topics": [{"error_code": t.error_code, "name": t.name, "topic_id": topic_uuid(t.topic_id),
                    "is_internal": is_internal(t.name),
                    "partitions": [{"error_code": p.error_code, "partition_index": p.partition_index,
                                    "leader_id": p.leader_id, "leader_epoch": p.leader_epoch,
                                    "replica_nodes": tuple(p.replica_nodes), "isr_nodes": tuple(p.isr_nodes),
                                    "offline_replicas": tuple(p.offline_replicas)} for p in t.partitions]}
                   for t in answer.topics] + by_id_only})


def topic_uuid(topic_id: bytes) -> Optional[uuid.UUID]:
    """A topic id of the image (16 bytes) as kio's UUID; None (the zero id) when unknown."""
    return uuid.UUID(bytes=topic_id) if len(topic_id) == 16 else None


def client_controller_id(answer: bpb.MetadataResponse) -> int:
    return controller_for_clients(answer.controller_id, [b.node_id for b in answer.brokers])


def controller_for_clients(controller_id: int, brokers: Iterable[int]) -> int:
    """The active controller when it is a listed broker (combined mode), else
    the lowest listed broker (Kafka picks a random live one); -1 without any."""
    listed = sorted(brokers)
    if controller_id in listed:
        return controller_id
    return listed[0] if listed else -1
