"""The coordinator's server-side assignors (KIP-848), pure functions:

    assign(subscriptions, topics, previous) -> target assignment

`subscriptions` maps each member to the topics it subscribes to (existing
ones only), `topics` maps a topic to its partition count, `previous` is the
last target assignment. Every subscribed partition goes to exactly one
subscribed member.

    uniform  sticky and balanced: a member keeps what it had as long as the
             counts stay within one of each other; only the surplus moves,
             and only to members subscribed to its topic
    range    per topic, consecutive ranges in member-id order (the first
             partitions % members members get one more); not sticky
"""
from __future__ import annotations

from typing import Callable, Mapping

from .records import Assignment, TopicPartition

Subscriptions = Mapping[str, frozenset[str]]
Assignor = Callable[[Subscriptions, Mapping[str, int], Mapping[str, Assignment]], dict[str, Assignment]]

UNIFORM = "uniform"
RANGE = "range"


def uniform(subscriptions: Subscriptions, topics: Mapping[str, int],
            previous: Mapping[str, Assignment]) -> dict[str, Assignment]:
    members = sorted(subscriptions)
    owned: dict[str, set[TopicPartition]] = {m: set() for m in members}
    taken: set[TopicPartition] = set()
    for m in members:  # stickiness: keep every still-valid partition of the last target
        for tp in sorted(previous.get(m, ())):
            if tp[0] in subscriptions[m] and tp[1] < topics.get(tp[0], 0) and tp not in taken:
                owned[m].add(tp)
                taken.add(tp)
    for topic in sorted(t for t in topics if any(t in s for s in subscriptions.values())):
        eligible = [m for m in members if topic in subscriptions[m]]
        for index in range(topics[topic]):
            if (topic, index) not in taken:
                least = min(eligible, key=lambda m: (len(owned[m]), m))
                owned[least].add((topic, index))
    while _move_one(owned, subscriptions):
        pass
    return {m: frozenset(p) for m, p in owned.items()}


def _move_one(owned: dict[str, set[TopicPartition]], subscriptions: Subscriptions) -> bool:
    """Move one partition from a member holding at least two more than a
    member that could take it; False when there is none (balanced). Each
    move lowers the sum of squared counts, so the loop ends."""
    by_count = sorted(owned, key=lambda m: (len(owned[m]), m))
    for poor in by_count:
        for rich in reversed(by_count):
            if len(owned[rich]) <= len(owned[poor]) + 1:
                break
            movable = sorted(tp for tp in owned[rich] if tp[0] in subscriptions[poor])
            if movable:
                owned[rich].discard(movable[-1])
                owned[poor].add(movable[-1])
                return True
    return False


def range_assignor(subscriptions: Subscriptions, topics: Mapping[str, int],
                   previous: Mapping[str, Assignment]) -> dict[str, Assignment]:
    owned: dict[str, set[TopicPartition]] = {m: set() for m in subscriptions}
    for topic in sorted(topics):
        eligible = sorted(m for m, subscribed in subscriptions.items() if topic in subscribed)
        if not eligible:
            continue
        per, extra = divmod(topics[topic], len(eligible))
        start = 0
        for i, m in enumerate(eligible):
            count = per + (1 if i < extra else 0)
            owned[m].update((topic, p) for p in range(start, start + count))
            start += count
    return {m: frozenset(p) for m, p in owned.items()}


ASSIGNORS: dict[str, Assignor] = {UNIFORM: uniform, RANGE: range_assignor}
DEFAULT_ASSIGNOR = UNIFORM
