"""A real grpc.aio server on 127.0.0.1 for the SASL tests: TLS with a
trustme CA, the SaslAuthentication service, and a tiny `Whoami` service that
answers the caller's principal, guarded by `require_session`. It runs its
own event loop in a thread, so a test can drive it with blocking channels
and with asyncio channels (on the test's own loop) alike."""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable, Optional

import grpc
import trustme

from security import sasl_server as sasl_server_module
from security.sasl_server import SaslServer, require_session
from security.scram_credentials import ScramCredential, ScramMechanism, make_credential

WHOAMI = "/kraftlog.test.Echo/Whoami"
CA = trustme.CA()
_CERT = CA.issue_cert("127.0.0.1")
CLIENT_TLS = grpc.ssl_channel_credentials(CA.cert_pem.bytes())
# Each channel its own TCP connection: channels with equal arguments may
# otherwise share one from gRPC's global subchannel pool.
OWN_CONNECTION = (("grpc.use_local_subchannel_pool", 1),)


class Clock:
    """A monotonic clock a test can move forward."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Users:
    """Credentials by (name, mechanism), made once per test module."""

    def __init__(self, passwords: dict[str, str]) -> None:
        self.credentials = {(name, mechanism): make_credential(mechanism, password)
                            for name, password in passwords.items() for mechanism in ScramMechanism}

    def __call__(self, username: str, mechanism: ScramMechanism) -> Optional[ScramCredential]:
        return self.credentials.get((username, mechanism))


class ServerThread:
    """One grpc.aio server (TLS, 127.0.0.1, a port the OS picks) with the
    given services, on an event loop of its own thread."""

    def __init__(self, add_services: Callable[[grpc.aio.Server], None]) -> None:
        self._add_services = add_services
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: Optional[grpc.aio.Server] = None
        self.port = 0

    def __enter__(self) -> "ServerThread":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            asyncio.run_coroutine_threadsafe(self._server.stop(None), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _start(self) -> None:
        self._server = grpc.aio.server()
        self._add_services(self._server)
        chain = b"".join(pem.bytes() for pem in _CERT.cert_chain_pems)
        credentials = grpc.ssl_server_credentials([(_CERT.private_key_pem.bytes(), chain)])
        self.port = self._server.add_secure_port("127.0.0.1:0", credentials)
        await self._server.start()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def channel(self) -> grpc.Channel:
        return grpc.secure_channel(self.target, CLIENT_TLS, options=OWN_CONNECTION)


def add_whoami(server: grpc.aio.Server, sasl: SaslServer) -> None:
    """The guarded service: answers `User:name` of the caller's session."""
    async def whoami(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        principal = await require_session(sasl, context)
        return str(principal).encode()

    handler = grpc.unary_unary_rpc_method_handler(whoami)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("kraftlog.test.Echo",
                                                                          {"Whoami": handler}),))


def sasl_services(sasl: SaslServer) -> Callable[[grpc.aio.Server], None]:
    def add(server: grpc.aio.Server) -> None:
        sasl_server_module.add_to_server(server, sasl)
        add_whoami(server, sasl)
    return add


def whoami(channel: grpc.Channel, metadata: Any = None) -> str:
    return channel.unary_unary(WHOAMI)(b"", metadata=metadata, timeout=10).decode()


async def whoami_async(channel: grpc.aio.Channel) -> str:
    return (await channel.unary_unary(WHOAMI)(b"", timeout=10)).decode()
