"""The blocking face of the metadata cache: one call at a time, sync gRPC.

For code without an event loop: the `kraftlog` CLI, Spark's driver and
each Spark task (which opens its own channels, so this stays cheap: no
thread, no loop), and the local-cluster harness. It asks a broker when told
to (`refresh`) or when a topic is not known yet (`partitions`); the
producer and consumer use the async face, `client.metadata.Metadata`, with
its refresh policy. Both keep what they learn in `MetadataCache`.
"""
from __future__ import annotations

import os
from typing import Iterable, Optional

import grpc

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import broker_pb2_grpc as bpb_grpc
from kafka_protocol.fetch_framing import broker_stub
from security.client_security import ClientSecurity

from .channels import open_channel
from .errors import InvalidConfigError, NetworkError
from .metadata_cache import MetadataCache, PartitionInfo

BOOTSTRAP_ENV = "KRAFTLOG_BOOTSTRAP"
CALL_TIMEOUT_S = 5.0


def bootstrap_from(option: Optional[str]) -> str:
    """--bootstrap, else $KRAFTLOG_BOOTSTRAP."""
    value = option or os.environ.get(BOOTSTRAP_ENV)
    if not value:
        raise InvalidConfigError(f"bootstrap: give --bootstrap HOST:PORT or set {BOOTSTRAP_ENV}")
    return value


class Cluster(MetadataCache):
    def __init__(self, bootstrap: str, security: Optional[ClientSecurity] = None) -> None:
        super().__init__(bootstrap)
        self.security = security  # None: plaintext
        self._channels: dict[str, grpc.Channel] = {}

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
            channel = self._channels[address] = open_channel(address, self.security)
        return broker_stub(channel)

    def broker_stub(self, broker_id: int) -> bpb_grpc.KafkaBrokerStub:
        return self.stub(self.brokers[broker_id])

    def any_broker_calls(self) -> Iterable[bpb_grpc.KafkaBrokerStub]:
        """Stubs of every broker known, bootstrap brokers first."""
        for address in dict.fromkeys([*self.bootstrap, *self.brokers.values()]):
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
            self.learn(response)
            return response
        raise NetworkError(f"no broker answered Metadata ({', '.join(problems) or 'none known'})")

    def partitions(self, topic: str) -> list[PartitionInfo]:
        """The topic's partitions, from the last refresh (refreshing if it is unknown)."""
        if topic not in self.topics:
            self.refresh([topic])
        return super().partitions(topic)
