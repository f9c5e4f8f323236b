"""Topic decisions: CreateTopics, DeleteTopics, CreatePartitions, with Kafka's validation.

A topic becomes a TopicRecord, its ConfigRecords and one PartitionRecord
per partition. An automatically placed partition has all its replicas in
the ISR and its first replica as leader; an explicitly placed one starts
with its live replicas as ISR (at least one must be live).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Callable, Mapping, Optional, Sequence

from google.protobuf.message import Message

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from kafka_protocol.internal_topics import is_internal, is_reserved
from metadata_quorum.image import MetadataImage
from kafka_protocol.errors import InvalidConfigError

from .assignment import place_replicas, usable_brokers, validate_assignments
from .controller_config import ControllerConfig, validate_topic_config
from .elections import live_brokers
from .errors import ControllerError, Error
from .result import MAX_RECORDS_PER_USER_OP, ControllerResult, TooManyRecords, too_many_records

MAX_TOPIC_NAME_LENGTH = 249
LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
# Not Kafka's: a guard against one request asking for billions of records.
MAX_PARTITIONS_PER_TOPIC = 1_000_000
# Names with more '.'/'_' than this are checked for collisions by a scan.
_MAX_COLLISION_VARIANTS_BITS = 12


def validate_topic_name(name: str) -> None:
    """Kafka's rules: 1-249 characters of [a-zA-Z0-9._-], and not "." or ".."."""
    if not name:
        raise ControllerError(Error.INVALID_TOPIC_EXCEPTION, "the topic name is empty")
    if name in (".", ".."):
        raise ControllerError(Error.INVALID_TOPIC_EXCEPTION, f"the topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise ControllerError(
            Error.INVALID_TOPIC_EXCEPTION,
            f"the topic name is {len(name)} characters long, at most {MAX_TOPIC_NAME_LENGTH} are allowed")
    if not LEGAL_TOPIC_NAME.fullmatch(name):
        raise ControllerError(
            Error.INVALID_TOPIC_EXCEPTION,
            f"topic name {name!r} has characters other than ASCII letters, digits, '.', '_' and '-'")


def colliding_topic(name: str, existing: Mapping[str, object]) -> Optional[str]:
    """An existing topic whose name differs from `name` only by '.' versus '_' (their metric names clash)."""
    spots = [i for i, ch in enumerate(name) if ch in "._"]
    if not spots:
        return None
    if len(spots) > _MAX_COLLISION_VARIANTS_BITS:
        unified = name.replace(".", "_")
        return next((t for t in existing if t != name and t.replace(".", "_") == unified), None)
    chars = list(name)
    for mask in range(1 << len(spots)):
        for bit, i in enumerate(spots):
            chars[i] = "_" if mask >> bit & 1 else "."
        variant = "".join(chars)
        if variant != name and variant in existing:
            return variant
    return None


def check_not_reserved(name: str, action: str) -> None:
    """`__cluster_metadata` is the quorum's own log, never a topic: no request
    may create, delete or grow it (Kafka answers INVALID_REQUEST)."""
    if is_reserved(name):
        raise ControllerError(Error.INVALID_REQUEST, f"{action} of internal topic {name} is prohibited.")


def _refused_whole(response: Message, names: Sequence[str], error: ControllerError) -> ControllerResult:
    """A request over the record cap is refused as a whole and writes nothing:
    every topic not already refused for its own reason gets `error`, those
    not looked at yet included."""
    results = response.topics  # type: ignore[attr-defined]
    for name in names[len(results):]:
        results.add(name=name)
    for result in results:
        if result.error_code == Error.NONE:
            name = result.name
            result.Clear()
            result.name = name
            result.error_code = error.error
            result.error_message = error.message
    return ControllerResult([], response)


def _partition_record(
    topic_id: bytes, partition_id: int, replicas: Sequence[int], live: frozenset[int]
) -> mpb.MetadataRecord:
    isr = [b for b in replicas if b in live]
    if not isr:
        raise ControllerError(
            Error.INVALID_REPLICA_ASSIGNMENT, f"every replica of partition {partition_id} is fenced or shutting down")
    return mpb.MetadataRecord(partition=mpb.PartitionRecord(
        partition_id=partition_id, topic_id=topic_id, replicas=replicas, isr=isr, leader=isr[0],
        leader_epoch=0, partition_epoch=0, leader_recovery_state=mpb.RECOVERED))


def _configs(entries: Sequence[cpb.ConfigEntry]) -> dict[str, str]:
    configs: dict[str, str] = {}
    for entry in entries:
        if entry.name in configs:
            raise ControllerError(Error.INVALID_REQUEST, f"config {entry.name} is given twice")
        try:
            validate_topic_config(entry.name, entry.value)
        except InvalidConfigError as exc:
            raise ControllerError(Error.INVALID_CONFIG, str(exc).removeprefix("INVALID_CONFIG: ")) from None
        configs[entry.name] = entry.value
    return configs


def _requested_partitions(config: ControllerConfig, topic: cpb.CreateTopicsRequest.CreatableTopic) -> int:
    """How many partitions the topic asks for (INVALID_PARTITIONS for a count no topic may have)."""
    if topic.assignments:
        return len(topic.assignments)
    count = config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    if count < 1:
        raise ControllerError(Error.INVALID_PARTITIONS, f"{count} partitions: a topic needs at least one")
    if count > MAX_PARTITIONS_PER_TOPIC:
        raise ControllerError(
            Error.INVALID_PARTITIONS, f"{count} partitions: at most {MAX_PARTITIONS_PER_TOPIC} per topic")
    return count


def _placement(
    image: MetadataImage, config: ControllerConfig, topic: cpb.CreateTopicsRequest.CreatableTopic, start: int
) -> list[tuple[int, ...]]:
    if topic.assignments:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            raise ControllerError(
                Error.INVALID_REQUEST,
                "with an explicit assignment, num_partitions and replication_factor must be -1")
        placed = validate_assignments(
            ((a.partition_index, a.broker_ids) for a in topic.assignments),
            range(len(topic.assignments)), image.brokers)
        return list(placed.values())
    count = _requested_partitions(config, topic)
    factor = config.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor
    return place_replicas(usable_brokers(image), count, factor, start)


def create_topics(
    image: MetadataImage, config: ControllerConfig, request: cpb.CreateTopicsRequest,
    new_topic_id: Callable[[set[bytes]], bytes], node_id: int,
) -> ControllerResult:
    """`new_topic_id(taken)` returns a fresh 16-byte id not in `taken` nor in the image."""
    response = cpb.CreateTopicsResponse(controller_id=node_id)
    counts = Counter(t.name for t in request.topics)
    live = live_brokers(image)
    records: list[mpb.MetadataRecord] = []
    created: dict[str, bytes] = {}
    planned = 0  # the records the topics accepted so far would write, validate_only or not
    for index, topic in enumerate(request.topics):
        result = response.topics.add(name=topic.name)
        try:
            if counts[topic.name] > 1:
                raise ControllerError(Error.INVALID_REQUEST, f"topic {topic.name!r} is listed more than once")
            validate_topic_name(topic.name)
            check_not_reserved(topic.name, "Creation")
            if topic.name in image.topic_ids:
                raise ControllerError(Error.TOPIC_ALREADY_EXISTS, f"topic {topic.name!r} already exists")
            clash = colliding_topic(topic.name, image.topic_ids) or colliding_topic(topic.name, created)
            if clash is not None:
                raise ControllerError(
                    Error.INVALID_TOPIC_EXCEPTION,
                    f"topic {topic.name!r} collides with {clash!r} ('.' and '_' are the same in metric names)")
            configs = _configs(topic.configs)
            # Counted before placing replicas: an oversized request costs nothing.
            planned += 1 + len(configs) + _requested_partitions(config, topic)
            if planned > MAX_RECORDS_PER_USER_OP:
                raise too_many_records(planned)
            placement = _placement(image, config, topic, len(image.topic_ids) + index)
            topic_id = new_topic_id(set(created.values()))
            partitions = [_partition_record(topic_id, p, replicas, live) for p, replicas in enumerate(placement)]
        except TooManyRecords as exc:
            return _refused_whole(response, [t.name for t in request.topics], exc)
        except ControllerError as exc:
            result.error_code = exc.error
            result.error_message = exc.message
            continue
        result.num_partitions = len(placement)
        result.replication_factor = len(placement[0])
        result.configs.extend(cpb.ConfigEntry(name=k, value=v) for k, v in configs.items())
        if request.validate_only:
            continue
        created[topic.name] = topic_id
        result.topic_id = topic_id
        records.append(mpb.MetadataRecord(topic=mpb.TopicRecord(name=topic.name, topic_id=topic_id)))
        records += (
            mpb.MetadataRecord(config=mpb.ConfigRecord(
                resource_type=mpb.TOPIC, resource_name=topic.name, name=key, value=value))
            for key, value in configs.items())
        records += partitions
    return ControllerResult(records, response)


def delete_topics(image: MetadataImage, request: cpb.DeleteTopicsRequest, node_id: int) -> ControllerResult:
    response = cpb.DeleteTopicsResponse(controller_id=node_id)
    counts = Counter(request.names)
    records = []
    for name in request.names:
        result = response.topics.add(name=name)
        try:
            if counts[name] > 1:
                raise ControllerError(Error.INVALID_REQUEST, f"topic {name!r} is listed more than once")
            check_not_reserved(name, "Deletion")
            if is_internal(name):
                # The brokers' own topic: deleting it would drop every group's offsets.
                raise ControllerError(
                    Error.INVALID_TOPIC_EXCEPTION,
                    f"Topic {name} is a kafka internal topic and is not allowed to be marked for deletion.")
            if name not in image.topic_ids:
                raise ControllerError(Error.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
            if len(records) == MAX_RECORDS_PER_USER_OP:
                raise too_many_records(len(records) + 1)
        except TooManyRecords as exc:
            return _refused_whole(response, request.names, exc)
        except ControllerError as exc:
            result.error_code = exc.error
            result.error_message = exc.message
            continue
        records.append(mpb.MetadataRecord(remove_topic=mpb.RemoveTopicRecord(topic_id=image.topic_ids[name])))
    return ControllerResult(records, response)


def create_partitions(
    image: MetadataImage, request: cpb.CreatePartitionsRequest, node_id: int
) -> ControllerResult:
    """Grow topics to `count` partitions. Explicit assignments name the new partitions by their ids."""
    response = cpb.CreatePartitionsResponse(controller_id=node_id)
    counts = Counter(t.name for t in request.topics)
    live = live_brokers(image)
    records: list[mpb.MetadataRecord] = []
    planned = 0  # the partitions the topics accepted so far would add, validate_only or not
    for item in request.topics:
        result = response.topics.add(name=item.name)
        try:
            if counts[item.name] > 1:
                raise ControllerError(Error.INVALID_REQUEST, f"topic {item.name!r} is listed more than once")
            check_not_reserved(item.name, "Adding partitions")
            if is_internal(item.name):
                # Their partition count is part of the group (and transaction) placement rule.
                raise ControllerError(
                    Error.INVALID_TOPIC_EXCEPTION,
                    f"The number of partitions for the internal topic {item.name} cannot be changed.")
            topic = image.topic(item.name)
            if topic is None:
                raise ControllerError(Error.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {item.name!r}")
            current = len(topic.partitions)
            if item.count < current:
                raise ControllerError(
                    Error.INVALID_PARTITIONS,
                    f"topic {item.name!r} has {current} partitions; the count cannot shrink to {item.count}")
            if item.count == current:
                raise ControllerError(Error.INVALID_PARTITIONS, f"topic {item.name!r} already has {current} partitions")
            if item.count > MAX_PARTITIONS_PER_TOPIC:
                raise ControllerError(
                    Error.INVALID_PARTITIONS, f"{item.count} partitions: at most {MAX_PARTITIONS_PER_TOPIC} per topic")
            planned += item.count - current
            if planned > MAX_RECORDS_PER_USER_OP:
                raise too_many_records(planned)
            factor = len(topic.partitions[min(topic.partitions)].replicas) if topic.partitions else 1
            new = range(current, item.count)
            if item.assignments:
                placed = validate_assignments(
                    ((a.partition_index, a.broker_ids) for a in item.assignments), new, image.brokers, factor)
                placement = list(placed.values())
            else:
                placement = place_replicas(usable_brokers(image), len(new), factor, start=current)
            partitions = [_partition_record(topic.topic_id, p, r, live) for p, r in zip(new, placement)]
        except TooManyRecords as exc:
            return _refused_whole(response, [t.name for t in request.topics], exc)
        except ControllerError as exc:
            result.error_code = exc.error
            result.error_message = exc.message
            continue
        if not request.validate_only:
            records += partitions
    return ControllerResult(records, response)
