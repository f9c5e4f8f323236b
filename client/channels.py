"""gRPC channels as every client here opens them.

A node that is starting up or restarting listens again within a second or
so; gRPC's default reconnect backoff would wait up to two minutes after a
refused connection, so the backoff is capped low. Message sizes allow a
full fetch or produce request (8 MiB).
"""
from __future__ import annotations

import grpc

MAX_MESSAGE_BYTES = 8 << 20

CHANNEL_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 500),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
)


def open_channel(address: str) -> grpc.Channel:
    """A channel to HOST:PORT (plaintext)."""
    return grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
