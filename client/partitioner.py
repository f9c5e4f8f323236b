"""Which partition a record goes to, as Kafka's Java producer decides.

- A keyed record: toPositive(murmur2(key)) % numPartitions over all the
  topic's partitions (offline ones too: a key's partition never depends on
  which brokers are up), so keys land where a Kafka producer puts them.
- A keyless record: the sticky partitioner of KIP-480. Every keyless record
  of a topic goes to one partition until the batch it fills is closed (full
  or sent); then the next one is picked at random among the partitions whose
  leader is known, never the one just used when there is a choice. Batches
  fill faster than with round-robin, so fewer, larger requests.
"""
from __future__ import annotations

import random
import struct
from typing import Optional, Sequence

from .metadata_cache import PartitionInfo

SEED = 0x9747B28C
M = 0x5BD1E995
R = 24
MASK32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """MurmurHash2 as Kafka's Utils.murmur2 computes it: a signed 32-bit int."""
    length = len(data)
    h = (SEED ^ length) & MASK32
    words = length // 4
    for (k,) in struct.iter_unpack("<I", data[:words * 4]):
        k = (k * M) & MASK32
        k ^= k >> R
        k = (k * M) & MASK32
        h = ((h * M) & MASK32) ^ k
    tail = data[words * 4:]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * M) & MASK32
    h ^= h >> 13
    h = (h * M) & MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Kafka's Utils.toPositive: clear the sign bit (not abs(), which differs for MIN_VALUE)."""
    return n & 0x7FFFFFFF


def key_partition(key: bytes, num_partitions: int) -> int:
    return to_positive(murmur2(key)) % num_partitions


class StickyPartitioner:
    """The partition of keyless records, per topic (KIP-480)."""

    def __init__(self, rng: Optional[random.Random] = None) -> None:
        self._sticky: dict[str, int] = {}
        self._rng = rng or random.Random()

    def partition(self, topic: str, partitions: Sequence[PartitionInfo]) -> int:
        current = self._sticky.get(topic)
        if current is None or current >= len(partitions):
            current = self._sticky[topic] = self._pick(partitions, avoid=None)
        return current

    def on_new_batch(self, topic: str, partitions: Sequence[PartitionInfo], previous: int) -> int:
        """The batch of `previous` was closed: move on unless someone already did."""
        if self._sticky.get(topic, previous) == previous:
            self._sticky[topic] = self._pick(partitions, avoid=previous)
        return self._sticky[topic]

    def _pick(self, partitions: Sequence[PartitionInfo], avoid: Optional[int]) -> int:
        available = [p.partition for p in partitions if p.leader >= 0]
        pool = available or [p.partition for p in partitions]
        if len(pool) > 1 and avoid is not None:
            pool = [p for p in pool if p != avoid]
        return self._rng.choice(pool)


def choose_partition(topic: str, key: Optional[bytes], partitions: Sequence[PartitionInfo],
                     sticky: StickyPartitioner) -> int:
    """The partition of a record that names none."""
    if key is not None:
        return key_partition(key, len(partitions))
    return sticky.partition(topic, partitions)
