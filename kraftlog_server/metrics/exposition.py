"""The metrics listener: Prometheus' text format over plain HTTP.

prometheus_client's own HTTP server answers from a thread of its own; its
scrapes would read the broker's and the controller's state while the event
loop changes it. This one answers on the node's event loop instead, so a
scrape sees the state between two steps of the loop, as every request does.
It speaks just enough HTTP/1.1 for a scraper or curl: GET (or HEAD) of
/metrics (or /), one answer per connection.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Optional

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 10.0  # a client that does not finish its request head in time is dropped
MAX_HEADER_LINES = 100
PATHS = (b"/metrics", b"/")


async def start_metrics_server(registry: CollectorRegistry, host: str, port: int) -> asyncio.AbstractServer:
    """Listen on host:port (an empty host: every interface). Raises OSError
    when the address cannot be bound."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(_read_head(reader), READ_TIMEOUT_S)
            writer.write(_answer(registry, head))
            await writer.drain()
        except (asyncio.TimeoutError, ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass  # a client that went away or sent garbage: nothing to answer
        finally:
            writer.close()

    return await asyncio.start_server(handle, host or None, port, reuse_address=True)


async def _read_head(reader: asyncio.StreamReader) -> Optional[bytes]:
    """The request line, once the whole request head has arrived."""
    request_line = await reader.readline()
    for _ in range(MAX_HEADER_LINES):
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            return request_line
    return None


def _answer(registry: CollectorRegistry, request_line: Optional[bytes]) -> bytes:
    parts = request_line.split() if request_line else []
    if len(parts) != 3:
        return _response(b"400 Bad Request", b"text/plain", b"bad request\n")
    method, target, _ = parts
    if method not in (b"GET", b"HEAD"):
        return _response(b"405 Method Not Allowed", b"text/plain", b"only GET\n", b"Allow: GET, HEAD\r\n")
    if target.split(b"?", 1)[0] not in PATHS:
        return _response(b"404 Not Found", b"text/plain", b"metrics are at /metrics\n")
    body = generate_latest(registry)
    return _response(b"200 OK", CONTENT_TYPE_LATEST.encode(), body if method == b"GET" else b"", length=len(body))


def _response(status: bytes, content_type: bytes, body: bytes, extra: bytes = b"",
              length: Optional[int] = None) -> bytes:
    head = (b"HTTP/1.1 " + status + b"\r\nContent-Type: " + content_type +
            b"\r\nContent-Length: " + str(len(body) if length is None else length).encode() +
            b"\r\nConnection: close\r\n" + extra + b"\r\n")
    return head + body
