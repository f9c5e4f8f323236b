"""A tiny real grpc.aio service for TLS tests: Whoami answers the caller's principal."""
from __future__ import annotations

import contextlib
from typing import Optional

import grpc

from security.principal_mapping import PrincipalMapper, parse_rules
from security.tls import peer_principal

WHOAMI = "/kraftlog.test.Echo/Whoami"


def whoami_handler(mapper: PrincipalMapper) -> grpc.GenericRpcHandler:
    async def whoami(request: bytes, context) -> bytes:
        return str(peer_principal(context, mapper)).encode()
    return grpc.method_handlers_generic_handler("kraftlog.test.Echo", {
        "Whoami": grpc.unary_unary_rpc_method_handler(whoami)})


@contextlib.asynccontextmanager
async def echo_server(credentials: Optional[grpc.ServerCredentials], rules: str = "DEFAULT"):
    """A started server on 127.0.0.1 at a free port; yields 127.0.0.1:PORT."""
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((whoami_handler(parse_rules(rules)),))
    port = (server.add_secure_port("127.0.0.1:0", credentials) if credentials is not None
            else server.add_insecure_port("127.0.0.1:0"))
    assert port
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


async def whoami(channel: grpc.aio.Channel) -> str:
    return (await channel.unary_unary(WHOAMI)(b"", timeout=10)).decode()


async def refused(channel: grpc.aio.Channel) -> grpc.StatusCode:
    """The status of a call that must fail."""
    try:
        await channel.unary_unary(WHOAMI)(b"", timeout=10)
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    raise AssertionError("the call was expected to be refused")
