"""The cluster as the brokers describe it: brokers, topics, partition leaders.

Any broker answers Metadata from its copy of the metadata image. A client
starts from its bootstrap brokers, then talks to partition leaders directly,
and refreshes this view when a broker answers NOT_LEADER_OR_FOLLOWER or
UNKNOWN_TOPIC_OR_PARTITION, or cannot be reached.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Optional

import grpc

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import broker_pb2_grpc as bpb_grpc
from kafka_protocol.fetch_framing import broker_stub

from .admin import parse_bootstrap
from .channels import open_channel
from .errors import InvalidConfigError, NetworkError

BOOTSTRAP_ENV = "KRAFTLOG_BOOTSTRAP"
CALL_TIMEOUT_S = 5.0


def bootstrap_from(option: Optional[str]) -> str:
    """--bootstrap, else $KRAFTLOG_BOOTSTRAP."""
    value = option or os.environ.get(BOOTSTRAP_ENV)
    if not value:
        raise InvalidConfigError(f"bootstrap: give --bootstrap HOST:PORT or set {BOOTSTRAP_ENV}")
    return value


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int  # -1: offline
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int


def broker_addresses(response: bpb.MetadataResponse) -> dict[int, str]:
    """Broker id -> HOST:PORT of the brokers a Metadata answer names."""
    return {b.node_id: f"{b.host}:{b.port}" for b in response.brokers}


def partition_infos(topic: bpb.MetadataResponse.Topic) -> list[PartitionInfo]:
    """A topic's partitions from a Metadata answer, by partition number."""
    return sorted(
        (PartitionInfo(topic.name, p.partition_index, p.leader_id, p.leader_epoch,
                       tuple(p.replica_nodes), tuple(p.isr_nodes), p.error_code)
         for p in topic.partitions),
        key=lambda p: p.partition,
    )


class Cluster:
    def __init__(self, bootstrap: str) -> None:
        self._bootstrap = parse_bootstrap(bootstrap)
        self._channels: dict[str, grpc.Channel] = {}
        self.brokers: dict[int, str] = {}
        self.topics: dict[str, list[PartitionInfo]] = {}
        self.cluster_id = ""
        self.controller_id = -1

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stub(self, address: str) -> bpb_grpc.KafkaBrokerStub:
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = open_channel(address)
        return broker_stub(channel)

    def broker_stub(self, broker_id: int) -> bpb_grpc.KafkaBrokerStub:
        return self.stub(self.brokers[broker_id])

    def any_broker_calls(self) -> Iterable[bpb_grpc.KafkaBrokerStub]:
        """Stubs of every broker known, bootstrap brokers first."""
        for address in dict.fromkeys([*self._bootstrap, *self.brokers.values()]):
            yield self.stub(address)

    def refresh(self, topics: Optional[Iterable[str]] = None) -> bpb.MetadataResponse:
        """Ask a broker for the metadata of `topics` (None: all topics)."""
        names = list(topics) if topics is not None else []
        request = bpb.MetadataRequest(topics=names, all_topics=topics is None)
        problems = []
        for stub in self.any_broker_calls():
            try:
                response = stub.Metadata(request, timeout=CALL_TIMEOUT_S)
            except grpc.RpcError as exc:
                problems.append(exc.code().name)  # type: ignore[attr-defined]
                continue
            self._learn(response)
            return response
        raise NetworkError(f"no broker answered Metadata ({', '.join(problems) or 'none known'})")

    def _learn(self, response: bpb.MetadataResponse) -> None:
        self.cluster_id = response.cluster_id
        self.controller_id = response.controller_id
        if response.brokers:
            self.brokers = broker_addresses(response)
        for topic in response.topics:
            if topic.error_code:
                self.topics.pop(topic.name, None)
                continue
            self.topics[topic.name] = partition_infos(topic)

    def partitions(self, topic: str) -> list[PartitionInfo]:
        """The topic's partitions, from the last refresh (refreshing if it is unknown)."""
        if topic not in self.topics:
            self.refresh([topic])
        return self.topics.get(topic, [])
