"""A partition reassignment's replication throttles (KIP-73), set and
cleared as `kafka-reassign-partitions.sh --execute --throttle` and
`--verify` do.

For every moving partition, its current replicas are leader-throttled
(`leader.replication.throttled.replicas`: they send the data) and its
moving-in replicas, those of the target not among the current ones,
follower-throttled (`follower.replication.throttled.replicas`: they fetch
it); each topic's lists are SET whole. Every broker among the current and
target replicas gets `leader.replication.throttled.rate` and
`follower.replication.throttled.rate` set to the throttle. Clearing
deletes the two lists of each topic and the two rates of each broker.

All of it goes in one IncrementalAlterConfigs; each resource is decided
on its own by the controller, so a refused one (named in the error) leaves
the others applied, as Kafka's admin call would.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping, Optional, Sequence

from kafka_protocol.replication_throttles import (
    FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS, check_rate, format_replicas,
)
from kafka_protocol.errors import Errors
from kraftlog_api import controller_pb2 as cpb

from .admin import BROKER, DELETE, SET, TOPIC, ask_any_broker
from .errors import error_for_code, error_name

if TYPE_CHECKING:
    from .cluster import Cluster

TopicPartition = tuple[str, int]
Moves = Mapping[TopicPartition, tuple[Sequence[int], Sequence[int]]]  # -> (current replicas, target replicas)
Resource = tuple[int, str]  # (Kafka's ConfigResource type, name)


def throttle_configs(moves: Moves, rate_bytes: int) -> dict[Resource, dict[str, str]]:
    """What apply_throttles sets: resource -> {config: value}."""
    check_rate(LEADER_RATE, str(rate_bytes))
    leaders: dict[str, list[tuple[int, int]]] = {}
    followers: dict[str, list[tuple[int, int]]] = {}
    brokers: set[int] = set()
    for (topic, partition), (current, target) in moves.items():
        leaders.setdefault(topic, []).extend((partition, b) for b in current)
        followers.setdefault(topic, []).extend((partition, b) for b in target if b not in current)
        brokers.update(current, target)
    configs: dict[Resource, dict[str, str]] = {
        (TOPIC, topic): {LEADER_REPLICAS: format_replicas(leaders[topic]),
                         FOLLOWER_REPLICAS: format_replicas(followers[topic])}
        for topic in sorted(leaders)}
    for broker in sorted(brokers):
        configs[(BROKER, str(broker))] = {LEADER_RATE: str(rate_bytes), FOLLOWER_RATE: str(rate_bytes)}
    return configs


def apply_throttles(admin: "Cluster", moves: Moves, rate_bytes: int) -> None:
    """Throttle the reassignment `moves` ((topic, partition) -> (current
    replicas, target replicas)) at `rate_bytes` bytes/s per broker."""
    _alter(admin, throttle_configs(moves, rate_bytes))


def clear_throttles(admin: "Cluster", topics: Iterable[str], brokers: Iterable[int]) -> None:
    """Remove the throttled-replicas lists of `topics` and the throttle rates
    of `brokers`. A topic deleted meanwhile has none left: not an error."""
    changes: dict[Resource, dict[str, Optional[str]]] = {
        (TOPIC, topic): {LEADER_REPLICAS: None, FOLLOWER_REPLICAS: None} for topic in sorted(set(topics))}
    for broker in sorted(set(brokers)):
        changes[(BROKER, str(broker))] = {LEADER_RATE: None, FOLLOWER_RATE: None}
    _alter(admin, changes, tolerated=(Errors.UNKNOWN_TOPIC_OR_PARTITION,))


def _alter(admin: "Cluster", changes: Mapping[Resource, Mapping[str, Optional[str]]],
           tolerated: tuple[int, ...] = ()) -> None:
    """One IncrementalAlterConfigs: SET each value, DELETE each None."""
    if not changes:
        return
    request = cpb.IncrementalAlterConfigsRequest()
    for (kind, name), settings in changes.items():
        resource = request.resources.add(resource_type=kind, resource_name=name)
        for key, value in settings.items():
            config = resource.configs.add(name=key, op=DELETE if value is None else SET)
            if value is not None:
                config.value = value
    response = ask_any_broker(admin, "IncrementalAlterConfigs", request)
    for result in response.results:
        if result.error_code and result.error_code not in tolerated:
            kind = "topic" if result.resource_type == TOPIC else "broker"
            raise error_for_code(result.error_code, f"{kind} {result.resource_name!r}: "
                                 f"{error_name(result.error_code)}: {result.error_message}")
