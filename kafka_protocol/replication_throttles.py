"""KIP-73 replication throttles: the four dynamic configs under Kafka's
names, their values' checks, and what a broker reads from them.

Two broker settings, per broker id or as the cluster-wide default, in
bytes per second (Kafka's default, a Java long's maximum, means none):
`leader.replication.throttled.rate` bounds what a broker sends to the
followers of its throttled replicas, `follower.replication.throttled.rate`
what it fetches for its own throttled replicas.

Two topic settings list which replicas are throttled, as
`partition:broker` pairs (or `*`, every replica of the topic):
`leader.replication.throttled.replicas` names the leaders whose sending is
throttled, `follower.replication.throttled.replicas` the followers whose
fetching is. A broker reads only the pairs naming itself.

Shared by the controller (validation), the brokers (the quotas) and the
admin client (what kafka-reassign-partitions --throttle sets).
"""
from __future__ import annotations

import re
from typing import Optional

from .config_values import LONG_MAX, parse_int
from .errors import InvalidConfigError

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
RATES = (LEADER_RATE, FOLLOWER_RATE)
REPLICA_LISTS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)

UNLIMITED = LONG_MAX  # Kafka's QuotaConfigs default byte rate: no throttle
ALL_REPLICAS = "*"
INT_MAX = 2**31 - 1

_PAIR = re.compile(r"([0-9]+):([0-9]+)")
_FORMAT = ("must be the literal '*' or a list of replicas in the following format: "
           "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


def check_rate(key: str, raw: str) -> None:
    """A throttle rate: a long, at least 0 (0 holds throttled replicas still)."""
    parse_int(key, raw, 0)


def parse_rate(raw: Optional[str]) -> int:
    """The bytes/s a stored rate means; absent or unreadable (never validated) is no throttle."""
    if raw is None:
        return UNLIMITED
    try:
        return parse_int("rate", raw, 0)
    except InvalidConfigError:
        return UNLIMITED


def parse_replicas(key: str, raw: str) -> Optional[list[tuple[int, int]]]:
    """The (partition, broker) pairs of a throttled-replicas value, None for
    `*`; an empty value is an empty list. Kafka's rule: `*` alone, or
    comma-separated `digits:digits` (blanks around each allowed). Ids past
    an int32 are refused too: no partition or broker has one."""
    items = [item.strip() for item in raw.split(",")]
    if "".join(items) == ALL_REPLICAS:
        return None
    pairs = []
    for item in items:
        if not item:
            continue
        match = _PAIR.fullmatch(item)
        if match is None or int(match[1]) > INT_MAX or int(match[2]) > INT_MAX:
            raise InvalidConfigError(f"{key}={raw!r}: {key} {_FORMAT}")
        pairs.append((int(match[1]), int(match[2])))
    return pairs


def check_replicas(key: str, raw: str) -> None:
    parse_replicas(key, raw)


def throttled_partitions(raw: Optional[str], broker_id: int) -> Optional[frozenset[int]]:
    """The partitions a topic's throttled-replicas value throttles on
    `broker_id`: None for every one (`*`), an empty set for none. A value
    that does not parse (an old log; the controller checks new ones)
    throttles nothing."""
    if raw is None:
        return frozenset()
    try:
        pairs = parse_replicas("replicas", raw)
    except InvalidConfigError:
        return frozenset()
    if pairs is None:
        return None
    return frozenset(partition for partition, broker in pairs if broker == broker_id)


def format_replicas(pairs: list[tuple[int, int]]) -> str:
    """`partition:broker,...` in partition then broker order, each pair once."""
    return ",".join(f"{p}:{b}" for p, b in sorted(set(pairs)))
