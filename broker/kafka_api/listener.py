"""The asyncio server of one Kafka-protocol listener.

Per connection, requests are read, served and answered one at a time, in
the order they came: a Kafka broker, too, stops reading a connection while
its request is being served (it mutes the channel), so a client that
pipelines several requests gets the answers in request order. A request
that needs no answer (Produce with acks=0) frees the connection at once.

What closes a connection, with one log line, while everyone else is still
served: a frame over `socket.request.max.bytes` (refused before it is
read), one that does not decode, an API or version not served (except
ApiVersions, answered with UNSUPPORTED_VERSION and the versions that are),
a request the service refuses as a whole (the broker still starting), a
client that closes mid-frame, and one that sends nothing for
`connections.max.idle.ms` - between requests (Kafka's idle connection) or
within one (a slowloris: a frame must be whole within that time of its
size prefix).

The listener binds when the node starts (a taken port fails the start) and
serves once the broker has caught up with the metadata log, as a Kafka
broker opens its listeners only then.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Optional

from kafka_protocol.wire.codec import decode_request, encode_response, unsupported_api_versions
from kafka_protocol.wire.errors import UnsupportedRequest, WireError
from kafka_protocol.wire.framing import SIZE_BYTES, frame_size
from kafka_protocol.wire.versions import API_VERSIONS
from security.request_context import anonymous_session, set_session

from .apis import KafkaApis
from .context import CallAborted, KafkaCallContext

log = logging.getLogger("kraftlog.kafka_api")


class KafkaListener:
    def __init__(self, name: str, apis: KafkaApis, *, max_request_bytes: int, idle_timeout_ms: int) -> None:
        self.name = name
        self.apis = apis
        self.max_request_bytes = max_request_bytes
        self.idle_timeout_s = idle_timeout_ms / 1000
        self._server: Optional[asyncio.Server] = None
        self._connections: set[asyncio.Task[None]] = set()

    async def bind(self, host: str, port: int) -> None:
        """Listen on host:port (every interface for an empty host); raises OSError."""
        self._server = await asyncio.start_server(self._connection, host or None, port, start_serving=False)

    async def serve_when(self, ready: asyncio.Event) -> None:
        await ready.wait()
        assert self._server is not None
        await self._server.start_serving()

    async def close(self) -> None:
        """Stop accepting, and end every connection (a request being served is cancelled)."""
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peername = writer.get_extra_info("peername") or ("", 0)
        host, port = str(peername[0]), peername[1]
        peer = f"{host}:{port}"
        # PLAINTEXT: everyone is User:ANONYMOUS (SSL and SASL listeners come later).
        set_session(anonymous_session(self.name, host))
        try:
            reason = await self._serve(reader, writer, peer)
            if reason:
                log.info("%s: closing the Kafka connection from %s: %s", self.name, peer, reason)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:  # noqa: BLE001 - a bug in serving one request must not end the listener
            log.exception("%s: closing the Kafka connection from %s after an unexpected error", self.name, peer)
        finally:
            self._connections.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str) -> str:
        """Serve requests until the connection ends; why it ended, when that is worth a log line."""
        while True:
            try:
                prefix = await asyncio.wait_for(reader.readexactly(SIZE_BYTES), self.idle_timeout_s)
            except asyncio.IncompleteReadError as exc:
                return f"closed by the client within a frame's size ({len(exc.partial)} bytes)" if exc.partial else ""
            except asyncio.TimeoutError:
                return f"idle for connections.max.idle.ms ({self.idle_timeout_s * 1000:.0f} ms)"
            try:
                size = frame_size(prefix, self.max_request_bytes)
                frame = await asyncio.wait_for(reader.readexactly(size), self.idle_timeout_s)
                request = decode_request(frame)
            except asyncio.IncompleteReadError as exc:
                return f"closed by the client {len(exc.partial)} bytes into a frame of {size}"
            except asyncio.TimeoutError:
                return f"a frame of {size} bytes not whole within connections.max.idle.ms"
            except UnsupportedRequest as exc:
                if exc.api_key != API_VERSIONS:
                    return str(exc)
                writer.write(unsupported_api_versions(exc.correlation_id))
                await writer.drain()
                continue
            except WireError as exc:
                return str(exc)
            context = KafkaCallContext(peer, request.header.client_id)
            try:
                response = await self.apis.handle(request, context)
            except CallAborted as exc:
                return f"request refused: {exc}"
            if response is not None:
                writer.write(encode_response(request.header.correlation_id, response))
                await writer.drain()
