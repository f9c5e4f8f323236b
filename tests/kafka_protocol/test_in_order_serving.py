"""In-order streams (grpc_serving's stream-stream RPCs carrying unary calls)
on a real grpc.aio server on 127.0.0.1: an idle stream is ended after the
server's idle bound (connections.max.idle.ms), UNAVAILABLE; one with
requests inside it is not; the caller's next request, which the ended
stream could not take, goes on a new stream without failing; and a server
whose services were added cannot be given a bound afterwards (as with its
guard)."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import grpc
import pytest

from kafka_protocol import grpc_serving
from kafka_protocol.fetch_framing import fetch_stream
from kafka_protocol.in_order_calls import InOrderCalls
from kraftlog_api import broker_pb2 as bpb

FETCH_STREAM = bpb.DESCRIPTOR.services_by_name["FetchStream"]
IDLE_MS = 400


async def _echo(request: bpb.FetchRequest, context: grpc.aio.ServicerContext) -> bytes:
    return bpb.FetchResponse(session_id=request.session_id).SerializeToString()


async def _serve(idle_ms: int | None, streams: list | None = None) -> tuple[grpc.aio.Server, int]:
    """`streams` gets each stream's context once (the guard runs for every message)."""
    server = grpc.aio.server()
    if streams is not None:
        async def note(path: str, context: grpc.aio.ServicerContext) -> None:
            if not any(context is known for known in streams):
                streams.append(context)
        grpc_serving.guard_server(server, note)
    if idle_ms is not None:
        grpc_serving.limit_idle_streams(server, idle_ms)
    grpc_serving.add_service(server, FETCH_STREAM, SimpleNamespace(Fetch=_echo))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, port


def test_a_stream_idle_past_the_bound_is_ended_and_the_next_request_goes_on_a_new_one() -> None:
    async def scenario() -> None:
        streams: list = []
        server, port = await _serve(IDLE_MS, streams)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                open_stream = fetch_stream(channel)
                calls = InOrderCalls(open_stream)
                for n in range(1, 6):  # requests closer together than the bound keep the stream
                    assert (await calls.call(bpb.FetchRequest(session_id=n), 5)).session_id == n
                    await asyncio.sleep(IDLE_MS / 1000 / 4)
                assert len(streams) == 1
                await asyncio.sleep(IDLE_MS / 1000 * 2.5)
                assert (await calls.call(bpb.FetchRequest(session_id=6), 5)).session_id == 6
                assert len(streams) == 2

                # What the server said, seen on a stream of our own left idle.
                idle = open_stream()
                await idle.write(bpb.FetchRequest(session_id=7))
                assert (await idle.read()).session_id == 7
                with pytest.raises(grpc.aio.AioRpcError) as ended:
                    await idle.read()
                assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
                assert "connections.max.idle.ms" in ended.value.details()
        finally:
            await server.stop(None)

    asyncio.run(scenario())


def test_the_idle_bound_is_set_before_services_are_added() -> None:
    async def scenario() -> None:
        server, _ = await _serve(None)
        try:
            with pytest.raises(RuntimeError, match="after services were added"):
                grpc_serving.limit_idle_streams(server, IDLE_MS)
        finally:
            await server.stop(None)

    asyncio.run(scenario())


def test_a_unary_method_cannot_be_served_in_order() -> None:
    with pytest.raises(ValueError, match="only stream-stream"):
        grpc_serving._in_order_handler(bpb.DESCRIPTOR.services_by_name["KafkaBroker"].methods_by_name["Fetch"],
                                       _echo)
