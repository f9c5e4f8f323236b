"""The metadata image: what the replicated metadata log says, replayed.

(Skeleton: the API is fixed, the replay is being filled in.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional

from kraftlog_api import metadata_pb2 as mpb


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    incarnation_id: str
    broker_epoch: int
    endpoints: tuple[Endpoint, ...]
    rack: Optional[str]
    fenced: bool
    in_controlled_shutdown: bool


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition; replaced (never mutated) on every change."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: int = mpb.RECOVERED
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()


@dataclass(slots=True)
class TopicImage:
    name: str
    topic_id: bytes
    partitions: dict[int, PartitionState]


class MetadataReplayError(Exception):
    """A record contradicts the image: the log is corrupt and the node must stop."""


@dataclass(slots=True)
class MetadataDelta:
    """What one or more apply() calls changed, for listeners."""

    changed_brokers: set[int] = field(default_factory=set)
    changed_partitions: set[tuple[bytes, int]] = field(default_factory=set)
    created_topics: set[bytes] = field(default_factory=set)
    removed_topics: dict[bytes, TopicImage] = field(default_factory=dict)
    changed_configs: set[tuple[int, str]] = field(default_factory=set)
    producer_ids_changed: bool = False

    def is_empty(self) -> bool:
        raise NotImplementedError


class MetadataImage:
    offset: int
    brokers: dict[int, BrokerRegistration]
    topics: dict[bytes, TopicImage]
    topic_ids: dict[str, bytes]
    configs: dict[tuple[int, str], dict[str, str]]
    features: dict[str, int]
    next_producer_id: int

    def __init__(self) -> None:
        self.offset = -1
        self.brokers = {}
        self.topics = {}
        self.topic_ids = {}
        self.configs = {}
        self.features = {}
        self.next_producer_id = 0

    def apply(self, record: mpb.MetadataRecord, offset: int,
              delta: Optional[MetadataDelta] = None) -> None:
        raise NotImplementedError

    def apply_bytes(self, data: bytes, offset: int,
                    delta: Optional[MetadataDelta] = None) -> None:
        raise NotImplementedError

    def topic(self, name: str) -> Optional[TopicImage]:
        raise NotImplementedError

    def partition(self, topic_id: bytes, partition_id: int) -> Optional[PartitionState]:
        raise NotImplementedError

    def topic_config(self, name: str) -> dict[str, str]:
        raise NotImplementedError

    def cluster_config(self) -> dict[str, str]:
        raise NotImplementedError

    def partitions_led_by(self, broker_id: int) -> Iterator[tuple[bytes, int, PartitionState]]:
        raise NotImplementedError

    def partitions_with_replica(self, broker_id: int) -> Iterator[tuple[bytes, int, PartitionState]]:
        raise NotImplementedError

    def to_records(self) -> Iterator[mpb.MetadataRecord]:
        raise NotImplementedError

    def snapshot(self) -> bytes:
        raise NotImplementedError

    @classmethod
    def from_snapshot(cls, data: bytes) -> "MetadataImage":
        raise NotImplementedError
