"""gRPC channels as every client here opens them.

A node that is starting up or restarting listens again within a second or
so; gRPC's default reconnect backoff would wait up to two minutes after a
refused connection, so the backoff is capped low. Message sizes allow a
full fetch or produce request (8 MiB).
"""
from __future__ import annotations

from typing import Optional

import grpc

from security.client_security import ClientSecurity
from security.sasl_client import sasl_aio_channel, sasl_channel
from security.tls import channel_credentials, open_aio_channel, open_sync_channel

MAX_MESSAGE_BYTES = 8 << 20

CHANNEL_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 500),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
)


def open_channel(address: str, security: Optional[ClientSecurity] = None) -> grpc.Channel:
    """A channel to HOST:PORT: plaintext, or TLS when `security.protocol` uses
    it; with SASL, every call carries a session the channel logs in for."""
    channel = open_sync_channel(address, CHANNEL_OPTIONS, security.ssl if security else None)
    if security is not None and security.sasl is not None:
        return sasl_channel(channel, security.sasl)
    return channel


def open_async_channel(address: str, security: Optional[ClientSecurity] = None) -> grpc.aio.Channel:
    """The grpc.aio twin of open_channel."""
    if security is not None and security.sasl is not None:
        return sasl_aio_channel(address, security.sasl, options=CHANNEL_OPTIONS,
                                credentials=channel_credentials(security.ssl) if security.ssl else None)
    return open_aio_channel(address, CHANNEL_OPTIONS, security.ssl if security else None)
