"""One Kafka-protocol connection driven frame by frame, for what a client
would never send: the listener's tests (tests/kafka_protocol/) and the
hostile connections here."""
from __future__ import annotations

import socket
import struct

from devcluster.local_cluster import LocalCluster
from kafka_protocol.wire import codec, versions
from kafka_protocol.wire.entities import build

IO_TIMEOUT_S = 15  # bounds every socket read; never part of an assert


class RawKafka:
    """One Kafka-protocol connection, frame by frame."""

    client_id = "raw-test"  # the request header's; an instance sets its own (what a client-id quota is for)

    def __init__(self, address: str, client_id: str = "raw-test") -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=IO_TIMEOUT_S)
        self.client_id = client_id

    def __enter__(self) -> "RawKafka":
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError(f"closed after {len(data)} of {size} bytes")
            data += chunk
        return data

    def receive(self) -> bytes:
        (size,) = struct.unpack(">i", self._exactly(4))
        return self._exactly(size)

    def answer(self, kind: type) -> tuple[int, object]:
        return codec.decode_response(self.receive(), kind)

    def call(self, body: object, correlation_id: int = 1) -> object:
        self.send(codec.encode_request(body, correlation_id, self.client_id))
        got, answer = self.answer(codec.response_type(body))
        assert got == correlation_id
        return answer

    def closed_by_broker(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


def request(api_key: int, version: int, values: dict) -> object:
    return build(codec.request_type(api_key, version), values)


def api_versions(version: int = 3) -> object:
    return request(versions.API_VERSIONS, version, {"client_software_name": "raw", "client_software_version": "1"})


def kafka_address(cluster: LocalCluster, broker_id: int | None = None) -> str:
    return cluster.client_addresses[broker_id if broker_id is not None else cluster.brokers[0]]
