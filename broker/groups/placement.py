"""Which partition of __consumer_offsets holds a group: Kafka's rule
(kafka_protocol/coordinator_placement.py) over offsets.topic.num.partitions.
"""
from __future__ import annotations

from kafka_protocol.coordinator_placement import partition_for
from kafka_protocol.internal_topics import GROUP_METADATA_TOPIC as OFFSETS_TOPIC

__all__ = ["OFFSETS_TOPIC", "partition_for"]
