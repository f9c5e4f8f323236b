"""Which partition of __consumer_offsets holds a group: Kafka's rule,
abs(groupId.hashCode()) % offsets.topic.num.partitions, with Java's
String.hashCode over UTF-16 code units and Kafka's Utils.abs (which maps
Integer.MIN_VALUE to 0), so a group lands where Kafka would put it.
"""
from __future__ import annotations

from kafka_protocol.internal_topics import GROUP_METADATA_TOPIC as OFFSETS_TOPIC


def java_string_hash(text: str) -> int:
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(group_id: str, partitions: int) -> int:
    return kafka_abs(java_string_hash(group_id)) % partitions
