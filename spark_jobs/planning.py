"""Offset ranges, without I/O: what each Spark task reads, how a trigger's
admission limit is shared among partitions, and the checkpoint's offset JSON.

The rules are those of Spark's Kafka source: `minPartitions` splits large
ranges in proportion to their size, and `maxOffsetsPerTrigger` is shared in
proportion to each partition's lag (KafkaSource.rateLimit).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional

from .options import EARLIEST, TopicPartition


@dataclass(frozen=True)
class OffsetRange:
    """Offsets [start, end) of one partition; start EARLIEST: the log start
    offset at read time (a partition that appeared after the last trigger)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - max(self.start, 0))


def offset_ranges(starts: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int],
                  min_partitions: Optional[int] = None) -> list[OffsetRange]:
    """One range per partition of `ends` with something to read (a partition
    missing from `starts` starts at EARLIEST), split per `min_partitions`."""
    ranges = [OffsetRange(tp[0], tp[1], starts.get(tp, EARLIEST), end) for tp, end in sorted(ends.items())]
    ranges = [r for r in ranges if (r.start == EARLIEST and r.end > 0) or 0 <= r.start < r.end]
    if not min_partitions or min_partitions <= len(ranges):
        return ranges
    total = sum(r.size for r in ranges)
    out: list[OffsetRange] = []
    for r in ranges:
        parts = max(1, round(r.size / total * min_partitions)) if total and r.start != EARLIEST else 1
        out.extend(_split(r, parts))
    return out


def _split(r: OffsetRange, parts: int) -> list[OffsetRange]:
    if parts <= 1 or r.size <= 1:
        return [r]
    parts = min(parts, r.size)
    bounds = [r.start + r.size * i // parts for i in range(parts + 1)]
    return [OffsetRange(r.topic, r.partition, lo, hi) for lo, hi in zip(bounds, bounds[1:])]


def rate_limit(starts: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
               max_rows: int) -> dict[TopicPartition, int]:
    """The end offsets of a trigger reading at most `max_rows` records,
    shared in proportion to each partition's lag (a partition with a little
    lag still moves by at least one)."""
    lags = {tp: max(0, end - starts.get(tp, end)) for tp, end in latest.items()}
    total = sum(lags.values())
    if total <= max_rows:
        return dict(latest)
    ends: dict[TopicPartition, int] = {}
    for tp, end in latest.items():
        begin = starts.get(tp, end)
        share = max_rows * lags[tp] / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        ends[tp] = min(end, begin + step)
    return ends


def to_offset_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """{("t", 0): 5} -> {"t": {"0": 5}}, the shape of Spark's Kafka offsets."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def from_offset_json(data: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    return {(topic, int(p)): int(o) for topic, parts in data.items() for p, o in parts.items()}
