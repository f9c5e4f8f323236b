"""CreateTopics (v2-v7), DeleteTopics (v1-v6) and CreatePartitions (v0-v3)
through KafkaBrokerService's methods of the same names, which check the
ACLs and forward to the active controller; the controller validates names,
counts, placements and configs.

What the Kafka messages carry that the gRPC ones do not, and how it is
bridged:
- CreateTopics' answer (v5+) lists the created topic's configs: here the
  ones the request set (the controller's answer), as DYNAMIC_TOPIC_CONFIG;
  the inherited ones are DescribeConfigs' to tell.
- DeleteTopics v6 may name a topic by id: the id is looked up in this
  broker's metadata (Metadata, so the caller's Describe right applies) and
  the topic deleted by that name; an id it does not know is UNKNOWN_TOPIC_ID.
- CreatePartitions' assignments list brokers for the new partitions in
  order; the controller wants their partition ids, which start at the
  topic's current count (from this broker's metadata; the controller checks
  them against its own, so a count that moved meanwhile fails the topic).
The request's timeout is not used: the controller answers once its decision
is committed.
"""
from __future__ import annotations

from typing import Any, Optional

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kafka_protocol.errors import Errors
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build

from .context import KafkaCallContext
from .metadata import topic_uuid
from .results import ItemResults

DYNAMIC_TOPIC_CONFIG = 1


async def create_topics(services: Any, request: Any, context: KafkaCallContext) -> Any:
    null_config = {t.name for t in request.topics if any(c.value is None for c in t.configs)}
    wanted = [t for t in request.topics if t.name not in null_config]
    answer = cpb.CreateTopicsResponse()
    if wanted:
        answer = await services.broker.CreateTopics(cpb.CreateTopicsRequest(validate_only=request.validate_only, topics=[
            cpb.CreateTopicsRequest.CreatableTopic(
                name=t.name, num_partitions=t.num_partitions, replication_factor=t.replication_factor,
                assignments=[cpb.CreateTopicsRequest.Assignment(partition_index=a.partition_index,
                                                                broker_ids=a.broker_ids) for a in t.assignments],
                configs=[cpb.ConfigEntry(name=c.name, value=c.value) for c in t.configs]) for t in wanted]), context)
    results = ItemResults(answer, answer.topics, lambda r: r.name)
    topics = []
    for topic in request.topics:
        if topic.name in null_config:
            topics.append(_created(topic.name, None, Errors.INVALID_CONFIG, "a topic config's value may not be null"))
            continue
        code, message = results.error(topic.name)
        topics.append(_created(topic.name, results.get(topic.name) if code == Errors.NONE else None, code, message))
    return build(response_type(request), {"throttle_time": 0, "topics": topics})


def _created(name: str, result: Optional[cpb.CreateTopicsResponse.Result], code: int,
             message: Optional[str]) -> dict[str, Any]:
    if result is None:  # Kafka's -1s and no configs for a topic not created
        return {"name": name, "topic_id": None, "error_code": code, "error_message": message,
                "num_partitions": -1, "replication_factor": -1, "configs": None}
    return {"name": name, "topic_id": topic_uuid(result.topic_id), "error_code": code, "error_message": message,
            "num_partitions": result.num_partitions, "replication_factor": result.replication_factor,
            "configs": [{"name": c.name, "value": c.value, "read_only": False,
                         "config_source": DYNAMIC_TOPIC_CONFIG, "is_sensitive": False} for c in result.configs]}


async def delete_topics(services: Any, request: Any, context: KafkaCallContext) -> Any:
    if hasattr(request, "topic_names"):  # v1-v5: by name only
        asked = [(name, None) for name in request.topic_names]
    else:
        asked = [(t.name, t.topic_id) for t in request.topics]
    names_of_ids = await _names_of_ids(services, [i for n, i in asked if n is None and i is not None], context)
    refused: dict[int, tuple[int, str]] = {}
    names: list[Optional[str]] = []
    for index, (name, topic_id) in enumerate(asked):
        if name is not None and topic_id is not None:
            refused[index] = (Errors.INVALID_REQUEST, "name a topic by its name or by its id, not both")
        elif name is None and topic_id is None:
            refused[index] = (Errors.INVALID_REQUEST, "a topic needs a name or an id")
        elif name is None and topic_id not in names_of_ids:
            refused[index] = (Errors.UNKNOWN_TOPIC_ID, f"no topic with id {topic_id}")
        names.append(name if name is not None else names_of_ids.get(topic_id))
    wanted = [n for i, n in enumerate(names) if i not in refused]
    answer = cpb.DeleteTopicsResponse()
    if wanted:
        answer = await services.broker.DeleteTopics(cpb.DeleteTopicsRequest(names=wanted), context)
    results = ItemResults(answer, answer.topics, lambda r: r.name)
    responses = []
    for index, (name, topic_id) in enumerate(asked):
        code, message = refused[index] if index in refused else results.error(names[index])
        responses.append({"name": names[index] if index not in refused else name, "topic_id": topic_id,
                          "error_code": code, "error_message": message})
    return build(response_type(request), {"throttle_time": 0, "responses": responses})


async def _names_of_ids(services: Any, topic_ids: list[Any], context: KafkaCallContext) -> dict[Any, str]:
    """topic id (kio's UUID) -> name, for the ids this broker knows and the caller may describe."""
    if not topic_ids:
        return {}
    answer = await services.broker.Metadata(bpb.MetadataRequest(all_topics=True), context)
    known = {topic_uuid(t.topic_id): t.name for t in answer.topics if t.error_code == Errors.NONE}
    return {i: known[i] for i in topic_ids if i in known}


async def create_partitions(services: Any, request: Any, context: KafkaCallContext) -> Any:
    placed = [t.name for t in request.topics if t.assignments]
    counts = await _partition_counts(services, placed, context)
    answer = await services.broker.CreatePartitions(cpb.CreatePartitionsRequest(
        validate_only=request.validate_only, topics=[cpb.CreatePartitionsRequest.Topic(
            name=t.name, count=t.count, assignments=[
                cpb.CreateTopicsRequest.Assignment(partition_index=counts.get(t.name, 0) + i, broker_ids=a.broker_ids)
                for i, a in enumerate(t.assignments or ())]) for t in request.topics]), context)
    results = ItemResults(answer, answer.topics, lambda r: r.name)
    return build(response_type(request), {"throttle_time": 0, "results": [
        dict(zip(("error_code", "error_message"), results.error(t.name)), name=t.name) for t in request.topics]})


async def _partition_counts(services: Any, names: list[str], context: KafkaCallContext) -> dict[str, int]:
    if not names:
        return {}
    answer = await services.broker.Metadata(bpb.MetadataRequest(topics=names), context)
    return {t.name: len(t.partitions) for t in answer.topics if t.error_code == Errors.NONE}
