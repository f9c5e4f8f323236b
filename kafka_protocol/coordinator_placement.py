"""Which partition of an internal topic holds a coordinator's key: Kafka's
rule, abs(key.hashCode()) % partitions - a group id in __consumer_offsets
(offsets.topic.num.partitions), a transactional id in __transaction_state
(transaction.state.log.num.partitions) - with Java's String.hashCode over
UTF-16 code units and Kafka's Utils.abs (which maps Integer.MIN_VALUE to 0),
so a key lands where Kafka would put it.
"""
from __future__ import annotations


def java_string_hash(text: str) -> int:
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(key: str, partitions: int) -> int:
    return kafka_abs(java_string_hash(key)) % partitions
