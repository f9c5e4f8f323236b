"""A Kafka connection's request, as the KafkaBroker service's methods see a
gRPC call: its peer (the key client quotas mute) and its client id (the
header's, where gRPC clients send call metadata)."""
from __future__ import annotations

from typing import Any, NoReturn, Optional

from kafka_protocol.grpc_serving import CLIENT_ID_METADATA


class CallAborted(Exception):
    """A service method refused the request as a whole (gRPC would end the
    call with `code`): Kafka's protocol has no such answer, the connection closes."""

    def __init__(self, code: Any, details: str) -> None:
        super().__init__(f"{getattr(code, 'name', code)}: {details}")
        self.code = code
        self.details = details


class KafkaCallContext:
    __slots__ = ("_peer", "_metadata")

    def __init__(self, peer: str, client_id: Optional[str]) -> None:
        self._peer = peer
        self._metadata = ((CLIENT_ID_METADATA, client_id),) if client_id else ()

    def peer(self) -> str:
        return self._peer

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    async def abort(self, code: Any, details: str = "") -> NoReturn:
        raise CallAborted(code, details)
