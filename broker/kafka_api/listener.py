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

Security, by the listener's protocol (listener.security.protocol.map):
SSL and SASL_SSL connections are TLS (asyncio's ssl, with the context
security/ssl_context.py builds from the listener's ssl.* settings; a TLS
handshake, and the TLS shutdown of a closing connection, must end within
connections.max.idle.ms). A PLAINTEXT connection
runs as User:ANONYMOUS, an SSL one as its client certificate's mapped subject
(ANONYMOUS without one), a SASL one as the user it logged in as (sasl.py
gates its requests until then; frames are at most sasl.server.max.receive.size
until then too). The principal is the RequestSession of every request of
the connection, so the broker's ACL checks decide as on a gRPC listener. A
refused login is answered after Kafka's connection.failed.authentication.delay.ms.

The listener binds when the node starts (a taken port fails the start) and
serves once the broker has caught up with the metadata log, as a Kafka
broker opens its listeners only then.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Optional

from kafka_protocol.wire.codec import decode_request, encode_response, unsupported_api_versions
from kafka_protocol.wire.errors import UnsupportedRequest, WireError
from kafka_protocol.wire.framing import SIZE_BYTES, frame_size, size_prefix
from kafka_protocol.wire.versions import API_VERSIONS
from security.listeners import SecurityProtocol
from security.principal import ANONYMOUS
from security.principal_mapping import NoMatchingRule
from security.request_context import RequestSession, set_session
from security.sasl_server import SaslServer
from security.ssl_config import SslConfig
from security.ssl_context import connection_principal, server_ssl_context

from .apis import KafkaApis
from .context import CallAborted, KafkaCallContext
from .sasl import SASL_APIS, ConnectionAuth, Outcome

log = logging.getLogger("kraftlog.kafka_api")

# Kafka's connection.failed.authentication.delay.ms default: a refused login
# is answered this much later, which slows a password guesser down.
FAILED_AUTHENTICATION_DELAY_S = 0.1


@dataclass(frozen=True)
class ListenerSecurity:
    """How a listener's connections prove who they are."""

    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    ssl: Optional[SslConfig] = None  # SSL, SASL_SSL: the listener's ssl.* (its mapping rules too)
    sasl: Optional[SaslServer] = None  # SASL_PLAINTEXT, SASL_SSL
    max_reauth_ms: int = 0  # connections.max.reauth.ms

    def __post_init__(self) -> None:
        if self.protocol.uses_tls != (self.ssl is not None):
            raise ValueError(f"a {self.protocol.value} listener {'needs' if self.protocol.uses_tls else 'takes no'} "
                             "ssl.* settings")
        if self.protocol.uses_sasl != (self.sasl is not None):
            raise ValueError(f"a {self.protocol.value} listener {'needs' if self.protocol.uses_sasl else 'takes no'} "
                             "SASL server")


class KafkaListener:
    def __init__(self, name: str, apis: KafkaApis, *, max_request_bytes: int, idle_timeout_ms: int,
                 security: ListenerSecurity = ListenerSecurity()) -> None:
        self.name = name
        self.apis = apis
        self.security = security
        self.max_request_bytes = max_request_bytes
        self.idle_timeout_s = idle_timeout_ms / 1000
        self._server: Optional[asyncio.Server] = None
        self._connections: set[asyncio.Task[None]] = set()

    async def bind(self, host: str, port: int) -> None:
        """Listen on host:port (every interface for an empty host); raises
        OSError, or InvalidConfigError for a TLS store that does not read."""
        ssl_config = self.security.ssl
        tls = server_ssl_context(ssl_config, self.name) if ssl_config is not None else None
        timeouts = {"ssl_handshake_timeout": self.idle_timeout_s, "ssl_shutdown_timeout": self.idle_timeout_s}
        self._server = await asyncio.start_server(self._connection, host or None, port, start_serving=False, ssl=tls,
                                                  **(timeouts if tls else {}))

    @property
    def bound_port(self) -> int:
        """The port bound (the one the OS chose, for port 0)."""
        assert self._server is not None and self._server.sockets
        return self._server.sockets[0].getsockname()[1]

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
        try:
            auth = self._authentication(writer, peer)
        except NoMatchingRule:
            log.info("%s: closing the Kafka connection from %s: no ssl.principal.mapping.rules rule applies to "
                     "its certificate", self.name, peer)
            self._connections.discard(task)
            writer.close()
            return
        self._set_session(auth, host)
        try:
            reason = await self._serve(reader, writer, peer, auth, host)
            if reason:
                log.info("%s: closing the Kafka connection from %s: %s", self.name, peer, reason)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:  # noqa: BLE001 - a bug in serving one request must not end the listener
            log.exception("%s: closing the Kafka connection from %s after an unexpected error", self.name, peer)
        finally:
            self._connections.discard(task)
            writer.close()

    def _authentication(self, writer: asyncio.StreamWriter, peer: str) -> ConnectionAuth:
        """The connection's SASL state; its principal from the start when the listener has no SASL."""
        security = self.security
        if security.sasl is not None:
            return ConnectionAuth(security.sasl, peer, max_reauth_ms=security.max_reauth_ms)
        principal = ANONYMOUS
        if security.protocol is SecurityProtocol.SSL:
            assert security.ssl is not None
            principal = connection_principal(writer.get_extra_info("ssl_object"), security.ssl.principal_mapper)
        return ConnectionAuth(None, peer, principal=principal)

    def _set_session(self, auth: ConnectionAuth, host: str) -> None:
        # The connection's task is the only one its requests run in: the contextvar set here is theirs.
        set_session(RequestSession(auth.principal or ANONYMOUS, host, self.name, self.security.protocol.value))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str,
                     auth: ConnectionAuth, host: str) -> str:
        """Serve requests until the connection ends; why it ended, when that is worth a log line."""
        while True:
            try:
                prefix = await asyncio.wait_for(reader.readexactly(SIZE_BYTES), self.idle_timeout_s)
            except asyncio.IncompleteReadError as exc:
                return f"closed by the client within a frame's size ({len(exc.partial)} bytes)" if exc.partial else ""
            except asyncio.TimeoutError:
                return f"idle for connections.max.idle.ms ({self.idle_timeout_s * 1000:.0f} ms)"
            limit = auth.max_frame_bytes
            try:
                size = (frame_size(prefix, self.max_request_bytes) if limit is None else
                        frame_size(prefix, min(limit, self.max_request_bytes), "sasl.server.max.receive.size"))
                frame = await asyncio.wait_for(reader.readexactly(size), self.idle_timeout_s)
                if auth.expects_raw_token:   # after a v0 SaslHandshake
                    outcome = await auth.raw_token(bytes(frame))
                    framed = b"" if outcome.close else size_prefix(len(outcome.response)) + outcome.response
                    closing = await self._answer_login(writer, outcome, auth, host, framed)
                    if closing:
                        return closing
                    continue
                request = decode_request(frame)
            except asyncio.IncompleteReadError as exc:
                return f"closed by the client {len(exc.partial)} bytes into a frame of {size}"
            except asyncio.TimeoutError:
                return f"a frame of {size} bytes not whole within connections.max.idle.ms"
            except UnsupportedRequest as exc:
                if exc.api_key != API_VERSIONS or auth.refusal(API_VERSIONS):
                    return str(exc)
                writer.write(unsupported_api_versions(exc.correlation_id))
                await writer.drain()
                continue
            except WireError as exc:
                return str(exc)
            api_key = request.header.api_key
            refusal = auth.refusal(api_key)
            if refusal:
                return refusal
            if api_key in SASL_APIS:
                outcome = await auth.serve(request)
                closing = await self._answer_login(writer, outcome, auth, host,
                                                   encode_response(request.header.correlation_id, outcome.response))
                if closing:
                    return closing
                continue
            context = KafkaCallContext(peer, request.header.client_id)
            try:
                response = await self.apis.handle(request, context)
            except CallAborted as exc:
                return f"request refused: {exc}"
            if response is not None:
                writer.write(encode_response(request.header.correlation_id, response))
                await writer.drain()

    async def _answer_login(self, writer: asyncio.StreamWriter, outcome: Outcome, auth: ConnectionAuth, host: str,
                            answer: bytes) -> Optional[str]:
        """Write a step of the login (`answer`: its bytes, if any), a refusal
        after Kafka's delay; the connection's session follows its principal.
        Why the connection closes now, or None."""
        if outcome.failed_login:
            await asyncio.sleep(FAILED_AUTHENTICATION_DELAY_S)
        self._set_session(auth, host)
        if answer:
            writer.write(answer)
            await writer.drain()
        return outcome.close
