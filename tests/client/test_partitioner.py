"""Kafka's key partitioner (murmur2) and the sticky partitioner for keyless records."""
from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from client.metadata_cache import PartitionInfo
from client.partitioner import StickyPartitioner, choose_partition, key_partition, murmur2, to_positive

# Keys and the signed 32-bit hashes of Kafka's own test of Utils.murmur2,
# which kafka-python's murmur2 reproduces (checked below).
KNOWN_HASHES = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
    b"": 275646681,
}


def java_murmur2(data: bytes) -> int:
    """Kafka's algorithm written out with Java's int semantics: every product
    wraps to a signed 32-bit int, >>> is the unsigned shift, bytes are & 0xff."""
    def i32(x: int) -> int:
        x &= 0xFFFFFFFF
        return x - 0x100000000 if x >= 0x80000000 else x

    def ushr(x: int, n: int) -> int:
        return (x & 0xFFFFFFFF) >> n

    length = len(data)
    m, r = i32(0x5BD1E995), 24
    h = i32(i32(0x9747B28C) ^ length)
    for i in range(length // 4):
        i4 = i * 4
        k = i32(data[i4] + (data[i4 + 1] << 8) + (data[i4 + 2] << 16) + (data[i4 + 3] << 24))
        k = i32(k * m)
        k = i32(k ^ ushr(k, r))
        k = i32(k * m)
        h = i32(h * m)
        h = i32(h ^ k)
    rest = length % 4
    base = length & ~3
    if rest == 3:
        h = i32(h ^ (data[base + 2] << 16))
    if rest >= 2:
        h = i32(h ^ (data[base + 1] << 8))
    if rest >= 1:
        h = i32(h ^ data[base])
        h = i32(h * m)
    h = i32(h ^ ushr(h, 13))
    h = i32(h * m)
    h = i32(h ^ ushr(h, 15))
    return h


@pytest.mark.parametrize("key,expected", sorted(KNOWN_HASHES.items()))
def test_known_hashes(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected
    assert java_murmur2(key) == expected
    assert kafka_python_murmur2(key) == expected & 0xFFFFFFFF  # kafka-python answers unsigned


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64))
def test_murmur2_matches_the_java_algorithm_and_kafka_python(key: bytes) -> None:
    h = murmur2(key)
    assert -2**31 <= h < 2**31
    assert h == java_murmur2(key)
    assert h & 0xFFFFFFFF == kafka_python_murmur2(key)


def test_to_positive_clears_the_sign_bit_rather_than_negating() -> None:
    assert to_positive(-973932308) == -973932308 & 0x7FFFFFFF == 1173551340
    assert to_positive(-2**31) == 0  # abs() would overflow in Java; Kafka masks
    assert to_positive(479470107) == 479470107


def test_key_partition_is_kafkas_formula() -> None:
    for key, h in KNOWN_HASHES.items():
        for n in (1, 3, 6, 7, 100):
            assert key_partition(key, n) == (h & 0x7FFFFFFF) % n
    # Keys spread over the partitions: none left empty for 1,000 keys over 6.
    spread = Counter(key_partition(f"user-{i}".encode(), 6) for i in range(1000))
    assert set(spread) == set(range(6))


def parts(n: int, offline: tuple[int, ...] = ()) -> list[PartitionInfo]:
    return [PartitionInfo("t", i, -1 if i in offline else 1, 0, (1,), (1,), 0) for i in range(n)]


def test_keyed_records_ignore_stickiness_and_offline_leaders() -> None:
    sticky = StickyPartitioner(random.Random(1))
    table = parts(6, offline=(0, 1, 2, 3, 4, 5))
    assert choose_partition("t", b"foobar", table, sticky) == (-790332482 & 0x7FFFFFFF) % 6


def test_sticky_partition_holds_until_its_batch_closes_then_moves() -> None:
    sticky = StickyPartitioner(random.Random(7))
    table = parts(4)
    first = choose_partition("t", None, table, sticky)
    assert all(choose_partition("t", None, table, sticky) == first for _ in range(50))
    second = sticky.on_new_batch("t", table, first)
    assert second != first
    assert choose_partition("t", None, table, sticky) == second
    # A stale notice (the partition already moved on) changes nothing.
    assert sticky.on_new_batch("t", table, first) == second
    # Topics stick independently.
    other = sticky.partition("u", table)
    assert sticky.partition("t", table) == second and sticky.partition("u", table) == other


def test_sticky_partitioner_prefers_partitions_with_a_leader_and_visits_them_all() -> None:
    sticky = StickyPartitioner(random.Random(3))
    table = parts(5, offline=(1, 3))
    seen = []
    current = sticky.partition("t", table)
    for _ in range(200):
        seen.append(current)
        current = sticky.on_new_batch("t", table, current)
    assert set(seen) == {0, 2, 4}
    assert all(a != b for a, b in zip(seen, seen[1:]))
    # With every leader offline it still answers (the batch waits for a leader).
    assert sticky.on_new_batch("t", parts(2, offline=(0, 1)), current) in (0, 1)
    # One partition: nothing else to move to.
    assert sticky.on_new_batch("v", parts(1), 0) == 0
