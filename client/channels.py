"""gRPC channels as every client here opens them.

A node that is starting up or restarting listens again within a second or
so; gRPC's default reconnect backoff would wait up to two minutes after a
refused connection, so the backoff is capped low. Message sizes allow a
full fetch or produce request (8 MiB), and answers up to MAX_ANSWER_BYTES.
"""
from __future__ import annotations

from typing import Optional

import grpc

from kafka_protocol import grpc_keepalive
from kafka_protocol.grpc_serving import CLIENT_ID_METADATA, MAX_ANSWER_BYTES
from security.client_security import ClientSecurity
from security.sasl_client import sasl_aio_channel, sasl_channel
from security.tls import channel_credentials, open_aio_channel, open_sync_channel

MAX_MESSAGE_BYTES = 8 << 20

CHANNEL_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 500),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_ANSWER_BYTES),
    # A broker's host gone without a RST: pings find the dead connection under a long-polled fetch
    # or a produce waiting on acks=all, instead of the call sitting to its deadline.
    *grpc_keepalive.CHANNEL_OPTIONS,
)


def open_channel(address: str, security: Optional[ClientSecurity] = None) -> grpc.Channel:
    """A channel to HOST:PORT: plaintext, or TLS when `security.protocol` uses
    it; with SASL, every call carries a session the channel logs in for."""
    channel = open_sync_channel(address, CHANNEL_OPTIONS, security.ssl if security else None)
    if security is not None and security.sasl is not None:
        return sasl_channel(channel, security.sasl)
    return channel


class ClientIdInterceptor(grpc.aio.UnaryUnaryClientInterceptor):
    """Sends Kafka's client.id as `client-id` metadata with every call (brokers
    apply client-id quotas by it, group descriptions show it)."""

    def __init__(self, client_id: str) -> None:
        self._client_id = client_id

    async def intercept_unary_unary(self, continuation, client_call_details, request):  # type: ignore[no-untyped-def]
        metadata = grpc.aio.Metadata(*tuple(client_call_details.metadata or ()))
        metadata.add(CLIENT_ID_METADATA, self._client_id)
        return await continuation(client_call_details._replace(metadata=metadata), request)


def open_async_channel(address: str, security: Optional[ClientSecurity] = None,
                       client_id: str = "") -> grpc.aio.Channel:
    """The grpc.aio twin of open_channel; with a client id, every call carries it."""
    interceptors = [ClientIdInterceptor(client_id)] if client_id else []
    if security is not None and security.sasl is not None:
        return sasl_aio_channel(address, security.sasl, options=CHANNEL_OPTIONS, interceptors=interceptors,
                                credentials=channel_credentials(security.ssl) if security.ssl else None)
    return open_aio_channel(address, CHANNEL_OPTIONS, security.ssl if security else None, interceptors)
