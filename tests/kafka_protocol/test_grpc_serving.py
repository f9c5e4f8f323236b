"""kafka_protocol/grpc_serving.py on a real grpc.aio server: a malformed
request gets INVALID_ARGUMENT, and a guarded server runs the guard before the
request is even decoded, for every service added after the guard."""
from __future__ import annotations

import asyncio
import socket

import grpc
import pytest

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol import grpc_serving

SERVICE = bpb.DESCRIPTOR.services_by_name["KafkaBroker"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Servicer:
    def __init__(self) -> None:
        self.calls = 0

    async def Metadata(self, request, context):
        self.calls += 1
        return bpb.MetadataResponse(cluster_id="c")


async def _call(port: int, payload: bytes, metadata=()) -> tuple[grpc.StatusCode, bytes]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        method = channel.unary_unary(f"/{SERVICE.full_name}/Metadata")
        try:
            return grpc.StatusCode.OK, await method(payload, metadata=metadata, timeout=5)
        except grpc.aio.AioRpcError as exc:
            return exc.code(), (exc.details() or "").encode()


def test_guard_runs_before_decoding_and_can_refuse():
    async def main():
        seen: list[str] = []

        async def guard(path: str, context: grpc.aio.ServicerContext) -> None:
            seen.append(path)
            if dict(context.invocation_metadata()).get("who") != "friend":
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, "who are you")

        server = grpc.aio.server()
        grpc_serving.guard_server(server, guard)
        servicer = Servicer()
        grpc_serving.add_service(server, SERVICE, servicer)
        port = free_port()
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        try:
            good = bpb.MetadataRequest(all_topics=True).SerializeToString()
            assert (await _call(port, good))[0] == grpc.StatusCode.UNAUTHENTICATED
            # garbage from a stranger is refused as a stranger, not parsed
            assert (await _call(port, b"\xff\xff\xff"))[0] == grpc.StatusCode.UNAUTHENTICATED
            assert servicer.calls == 0
            code, body = await _call(port, good, metadata=(("who", "friend"),))
            assert code == grpc.StatusCode.OK and bpb.MetadataResponse.FromString(body).cluster_id == "c"
            assert (await _call(port, b"\xff\xff\xff", metadata=(("who", "friend"),)))[0] == \
                grpc.StatusCode.INVALID_ARGUMENT
            assert servicer.calls == 1
            assert set(seen) == {f"/{SERVICE.full_name}/Metadata"}
        finally:
            await server.stop(None)

    asyncio.run(main())


def test_guarding_a_server_after_a_service_was_added_is_refused():
    async def main():
        server = grpc.aio.server()
        grpc_serving.add_service(server, SERVICE, Servicer())

        async def guard(path, context):
            return None

        with pytest.raises(RuntimeError, match="KafkaBroker"):
            grpc_serving.guard_server(server, guard)

    asyncio.run(main())
