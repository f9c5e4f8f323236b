"""Every node's listener pings its connections (kafka_protocol/grpc_keepalive.py).

A client that vanished behind a network partition leaves the server's end
of its connection ESTABLISHED with no call on it; the soak found the
controllers' fds growing by one such socket per cut client and partition.
Here a real gRPC server with the listeners' options (metadata_quorum.transport's
SERVER_OPTIONS; only the ping interval and its timeout shortened) takes a
raw HTTP/2 client that completes the handshake and then answers nothing,
as such a dead peer does: the server must ping it and close the connection.
A client that acks the pings must keep its connection, however long idle.
"""
from __future__ import annotations

import asyncio
import struct
from typing import Optional

import grpc

from kafka_protocol import grpc_keepalive
from metadata_quorum import transport

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS, PING, GOAWAY = 0x4, 0x6, 0x7
ACK = 0x1
TIME_MS, TIMEOUT_MS = 500, 1000  # the listeners' ping interval and timeout, shortened for the test
# A bound on each wait (never asserted as a duration): far above an interval plus a timeout.
WAIT_S = 20.0


def _server_options() -> list[tuple[str, int]]:
    options = dict(transport.SERVER_OPTIONS)
    options.update({"grpc.keepalive_time_ms": TIME_MS, "grpc.keepalive_timeout_ms": TIMEOUT_MS,
                    "grpc.http2.ping_timeout_ms": TIMEOUT_MS})
    return list(options.items())


def _frame(kind: int, flags: int = 0, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", 0) + payload


async def _read_frame(reader: asyncio.StreamReader) -> Optional[tuple[int, int, bytes]]:
    """The next frame (type, flags, payload); None at the end of the connection."""
    try:
        header = await reader.readexactly(9)
        length = int.from_bytes(header[:3], "big")
        return header[3], header[4], await reader.readexactly(length)
    except (asyncio.IncompleteReadError, ConnectionResetError):
        return None


async def _connection(ack_pings: bool, pings_wanted: int) -> tuple[int, bool]:
    """A raw HTTP/2 client on a server with the listeners' options: the
    handshake, then no frame but (with `ack_pings`) the pings' acks, until
    the server closes the connection, `pings_wanted` pings came or the
    server sent nothing for WAIT_S. The pings seen, and whether the server
    closed the connection."""
    server = grpc.aio.server(options=_server_options())
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    writer: Optional[asyncio.StreamWriter] = None
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(PREFACE + _frame(SETTINGS))
        pings = 0
        while pings < pings_wanted:
            try:
                frame = await asyncio.wait_for(_read_frame(reader), WAIT_S)
            except asyncio.TimeoutError:
                break  # nothing from the server for WAIT_S: no (more) pings
            if frame is None or frame[0] == GOAWAY:
                return pings, True
            kind, flags, payload = frame
            if kind == SETTINGS and not flags & ACK:
                writer.write(_frame(SETTINGS, ACK))  # the server's settings taken: the handshake is done
            elif kind == PING and not flags & ACK:
                pings += 1
                if ack_pings:
                    writer.write(_frame(PING, ACK, payload))
            await writer.drain()
        return pings, False
    finally:
        if writer is not None:
            writer.close()
        await server.stop(None)


def test_a_listener_closes_an_idle_connection_whose_client_answers_nothing() -> None:
    pings, closed = asyncio.run(_connection(ack_pings=False, pings_wanted=10))
    assert pings >= 1, "the server never pinged the idle connection"
    assert closed, "the server kept a connection whose pings went unanswered"


def test_a_listener_keeps_an_idle_connection_whose_client_acks_its_pings() -> None:
    # More pings than gRPC's default limit of two while no data is sent: the pinging goes on.
    pings, closed = asyncio.run(_connection(ack_pings=True, pings_wanted=4))
    assert not closed
    assert pings == 4


def test_the_listeners_ping_timeout_outlasts_a_paused_client() -> None:
    """A stopped process acks nothing until resumed: the chaos runs pause nodes up
    to 15 s (the soak's fault length), which must not cost a client its connection."""
    assert grpc_keepalive.SERVER_KEEPALIVE_TIMEOUT_MS > 15_000
    options = dict(transport.SERVER_OPTIONS)
    # gRPC closes the connection by the ping's timeout (a minute unless set), not the keepalive one.
    assert options["grpc.http2.ping_timeout_ms"] == options["grpc.keepalive_timeout_ms"]
    assert grpc_keepalive.SERVER_KEEPALIVE_TIME_MS >= grpc_keepalive.KEEPALIVE_TIME_MS
