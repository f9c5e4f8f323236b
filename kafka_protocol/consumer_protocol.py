"""Kafka's embedded consumer protocol: what a classic consumer puts in its
JoinGroup protocol metadata (ConsumerProtocolSubscription) and what it
expects in its SyncGroup assignment (ConsumerProtocolAssignment). Each is
an int16 version followed by that version's (non-flexible) struct; kio has
the structs. As Kafka's ConsumerProtocol, a version newer than the newest
known is read as the newest (later versions only add fields at the end).
"""
from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Iterable, Optional

from kio.schema.consumer_protocol_assignment.v0 import data as a0
from kio.schema.consumer_protocol_assignment.v1 import data as a1
from kio.schema.consumer_protocol_assignment.v2 import data as a2
from kio.schema.consumer_protocol_assignment.v3 import data as a3
from kio.schema.consumer_protocol_subscription.v0 import data as s0
from kio.schema.consumer_protocol_subscription.v1 import data as s1
from kio.schema.consumer_protocol_subscription.v2 import data as s2
from kio.schema.consumer_protocol_subscription.v3 import data as s3
from kio.serial import entity_reader, entity_writer

from .schema_types import SchemaError

_SUBSCRIPTIONS = (s0, s1, s2, s3)
_ASSIGNMENTS = (a0, a1, a2, a3)
TopicPartitions = frozenset[tuple[str, int]]


@dataclass(frozen=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: TopicPartitions  # empty before version 1 (an eager consumer owns nothing when it joins)
    user_data: Optional[bytes]
    rack_id: Optional[str]


def _version_and_body(data: bytes, newest: int) -> tuple[int, memoryview]:
    if len(data) < 2:
        raise SchemaError(f"{len(data)} bytes: no version")
    (version,) = struct.unpack_from(">h", data)
    if version < 0:
        raise SchemaError(f"consumer protocol version {version}")
    return min(version, newest), memoryview(data)[2:]


def decode_subscription(data: bytes) -> Subscription:
    """Raises SchemaError for bytes that are not a subscription."""
    version, body = _version_and_body(data, len(_SUBSCRIPTIONS) - 1)
    module = _SUBSCRIPTIONS[version]
    try:
        sub, _ = entity_reader(module.ConsumerProtocolSubscription)(body, 0)
    except Exception as exc:  # noqa: BLE001 - kio's reader fails in many ways on hostile bytes
        raise SchemaError(f"malformed ConsumerProtocolSubscription v{version}: {exc}") from None
    owned = frozenset((t.topic, int(p)) for t in getattr(sub, "owned_partitions", ()) for p in t.partitions)
    return Subscription(version, tuple(sub.topics), owned, sub.user_data, getattr(sub, "rack_id", None))


def decode_assignment(data: bytes) -> TopicPartitions:
    """The partitions of an assignment; an empty one (b"") assigns nothing."""
    if not data:
        return frozenset()
    version, body = _version_and_body(data, len(_ASSIGNMENTS) - 1)
    try:
        assignment, _ = entity_reader(_ASSIGNMENTS[version].ConsumerProtocolAssignment)(body, 0)
    except Exception as exc:  # noqa: BLE001
        raise SchemaError(f"malformed ConsumerProtocolAssignment v{version}: {exc}") from None
    return frozenset((t.topic, int(p)) for t in assignment.assigned_partitions for p in t.partitions)


def encode_assignment(partitions: Iterable[tuple[str, int]], version: int = 0) -> bytes:
    """At the version the member's subscription used (as Kafka answers), at most the newest."""
    version = max(0, min(version, len(_ASSIGNMENTS) - 1))
    module = _ASSIGNMENTS[version]
    by_topic: dict[str, list[int]] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(index)
    message = module.ConsumerProtocolAssignment(assigned_partitions=tuple(
        module.TopicPartition(topic=t, partitions=tuple(sorted(p))) for t, p in sorted(by_topic.items())))
    buffer = io.BytesIO()
    buffer.write(struct.pack(">h", version))
    entity_writer(module.ConsumerProtocolAssignment)(buffer, message)
    return buffer.getvalue()


def encode_subscription(topics: Iterable[str], owned: Iterable[tuple[str, int]] = (), version: int = 1) -> bytes:
    """A classic consumer's side (tests and tools)."""
    version = max(0, min(version, len(_SUBSCRIPTIONS) - 1))
    module = _SUBSCRIPTIONS[version]
    fields: dict = {"topics": tuple(sorted(set(topics)))}
    if version >= 1:
        by_topic: dict[str, list[int]] = {}
        for topic, index in owned:
            by_topic.setdefault(topic, []).append(index)
        fields["owned_partitions"] = tuple(module.TopicPartition(topic=t, partitions=tuple(sorted(p)))
                                           for t, p in sorted(by_topic.items()))
    buffer = io.BytesIO()
    buffer.write(struct.pack(">h", version))
    entity_writer(module.ConsumerProtocolSubscription)(buffer, module.ConsumerProtocolSubscription(**fields))
    return buffer.getvalue()
