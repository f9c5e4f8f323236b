"""What a consumer hands to and gets from its application, with the names of
Kafka's Java consumer: TopicPartition, ConsumerRecord, OffsetAndMetadata,
OffsetAndTimestamp, TimestampType, ConsumerGroupMetadata.

A TopicPartition is only (topic, partition), hashable, so offsets travel as
mappings TopicPartition -> offset, as in Kafka's Java API.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple, Optional

from kafka_protocol.records import Headers


class TimestampType(IntEnum):
    """Kafka's ids: a record's timestamp is the producer's (CreateTime) or the
    broker's append time (LogAppendTime, a topic's message.timestamp.type)."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


@dataclass(frozen=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class ConsumerRecord(NamedTuple):
    """One record as poll() returns it. A named tuple (as kafka-python's):
    the consumer makes one per record, and tuples are several times cheaper
    to build than frozen dataclasses."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: TimestampType
    key: Optional[bytes]
    value: Optional[bytes]
    headers: Headers
    leader_epoch: Optional[int]  # the epoch of the leader that appended it; None if unknown

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class OffsetAndMetadata:
    """A committed offset: the offset of the next record to consume."""

    offset: int
    metadata: str = ""
    leader_epoch: Optional[int] = None


@dataclass(frozen=True)
class OffsetAndTimestamp:
    offset: int
    timestamp: int
    leader_epoch: Optional[int] = None


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    """Who a consumer is in its group, as `consumer.group_metadata()` gives it
    for a transactional producer's send_offsets_to_transaction(): the group
    coordinator checks member_id and member_epoch (Kafka's generationId) so
    a member that lost its partitions cannot commit offsets for them (KIP-447).
    Outside a group's membership (assign()): member "" and epoch -1, not checked."""

    group_id: str
    member_id: str = ""
    member_epoch: int = -1
    group_instance_id: Optional[str] = None
