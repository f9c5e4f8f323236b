"""The cluster as the brokers describe it: brokers, topics, partition leaders.

Any broker answers Metadata from its copy of the metadata image. A client
starts from its bootstrap brokers, then talks to partition leaders directly,
and refreshes this view when a broker answers NOT_LEADER_OR_FOLLOWER or
UNKNOWN_TOPIC_OR_PARTITION, or cannot be reached.

`MetadataCache` is the one place that takes in Metadata answers and answers
lookups; it does no I/O. Two faces ask the brokers and feed it:
`client.cluster.Cluster`, blocking, for the CLI, Spark's driver and tasks
and the local-cluster harness; and `client.metadata.Metadata`, on an asyncio
loop, with the producer's and consumer's refresh policy.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from kafka_protocol.errors import Errors
from kraftlog_api import broker_pb2 as bpb

from .admin import parse_bootstrap

# Answers that mean "your idea of the leader is out of date": refresh, then
# try again. A reader (the consumer's fetcher, Spark's tasks) retries these
# and no others, as Kafka's consumer does; a producer retries every error
# Kafka calls retriable (`kafka_protocol.errors.is_retriable`).
STALE_METADATA_ERRORS = frozenset({Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.LEADER_NOT_AVAILABLE,
                                   Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH,
                                   Errors.UNKNOWN_LEADER_EPOCH})


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int  # -1: offline
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int


class MetadataCache:
    def __init__(self, bootstrap: str | Sequence[str]) -> None:
        self.bootstrap = parse_bootstrap(bootstrap if isinstance(bootstrap, str) else ",".join(bootstrap))
        self.brokers: dict[int, str] = {}                # broker id -> HOST:PORT
        self.topics: dict[str, list[PartitionInfo]] = {}  # by partition number
        self._topic_errors: dict[str, int] = {}          # topics the last answer refused, with its error code
        # Called with a topic's name when an answer drops it or changes its partition count.
        self.topic_listeners: list[Callable[[str], None]] = []
        self.cluster_id = ""
        self.controller_id = -1

    def learn(self, response: bpb.MetadataResponse) -> bool:
        """Take in a Metadata answer; whether a topic it names is unknown or has a partition without a
        reachable leader (worth asking again soon)."""
        self.cluster_id = response.cluster_id
        self.controller_id = response.controller_id
        if response.brokers:
            self.brokers = {b.node_id: f"{b.host}:{b.port}" for b in response.brokers}
        incomplete = False
        for topic in response.topics:
            if topic.error_code:
                if self.topics.pop(topic.name, None) is not None:
                    self._topic_changed(topic.name)
                self._topic_errors[topic.name] = topic.error_code
                incomplete = True
                continue
            self._topic_errors.pop(topic.name, None)
            parts = sorted(
                (PartitionInfo(topic.name, p.partition_index, p.leader_id, p.leader_epoch,
                               tuple(p.replica_nodes), tuple(p.isr_nodes), p.error_code)
                 for p in topic.partitions),
                key=lambda p: p.partition,
            )
            known = self.topics.get(topic.name)
            self.topics[topic.name] = parts
            if known is not None and len(known) != len(parts):
                self._topic_changed(topic.name)
            if any(p.leader < 0 or p.leader not in self.brokers for p in parts):
                incomplete = True
        return incomplete

    def _topic_changed(self, topic: str) -> None:
        for listener in self.topic_listeners:
            listener(topic)

    # --- lookups -----------------------------------------------------------

    def partitions(self, topic: str) -> list[PartitionInfo]:
        """The topic's partitions as last seen (empty: unknown so far)."""
        return self.topics.get(topic, [])

    def topic_error(self, topic: str) -> int:
        """The error code the last answer gave for this topic (0: none)."""
        return self._topic_errors.get(topic, 0)

    def leader_for(self, topic: str, partition: int) -> Optional[PartitionInfo]:
        """The partition when its leader is known and reachable, else None."""
        parts = self.topics.get(topic)
        if parts is None or not 0 <= partition < len(parts):
            return None
        info = parts[partition]
        if info.leader < 0 or info.leader not in self.brokers:
            return None
        return info
