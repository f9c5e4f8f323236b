"""In-order streams (grpc_serving's stream-stream RPCs carrying unary calls)
on a real grpc.aio server on 127.0.0.1: an idle stream is ended after the
server's idle bound (connections.max.idle.ms), UNAVAILABLE; one with
requests inside it is not; the caller's next request, which the ended
stream could not take, goes on a new stream without failing; and a server
whose services were added cannot be given a bound afterwards (as with its
guard). Several requests on a stream are worked on at once, up to the
server's bound, and answered in request order, also when a later one is
done first; a malformed one ends the stream after the answers before it;
a caller's timeout ends the stream and fails the calls still on it, and the
next call goes on a new stream."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import grpc
import pytest

from kafka_protocol import grpc_serving
from kafka_protocol.fetch_framing import fetch_stream
from kafka_protocol.in_order_calls import InOrderCalls, StreamEnded
from kraftlog_api import broker_pb2 as bpb

FETCH_STREAM = bpb.DESCRIPTOR.services_by_name["FetchStream"]
IDLE_MS = 400


async def _echo(request: bpb.FetchRequest, context: grpc.aio.ServicerContext) -> bytes:
    return bpb.FetchResponse(session_id=request.session_id).SerializeToString()


async def _serve(idle_ms: int | None, streams: list | None = None, implementation=_echo,  # type: ignore[no-untyped-def]
                 ) -> tuple[grpc.aio.Server, int]:
    """`streams` gets each stream's context once (the guard runs for every message)."""
    server = grpc.aio.server()
    if streams is not None:
        async def note(path: str, context: grpc.aio.ServicerContext) -> None:
            if not any(context is known for known in streams):
                streams.append(context)
        grpc_serving.guard_server(server, note)
    if idle_ms is not None:
        grpc_serving.limit_idle_streams(server, idle_ms)
    grpc_serving.add_service(server, FETCH_STREAM, SimpleNamespace(Fetch=implementation))
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


class _Slow:
    """Answers request n after (10 - n) x 20 ms, so later requests are done
    first; notes how many it worked on at once."""

    def __init__(self) -> None:
        self.working = 0
        self.most = 0

    async def __call__(self, request: bpb.FetchRequest, context: grpc.aio.ServicerContext) -> bytes:
        self.working += 1
        self.most = max(self.most, self.working)
        try:
            await asyncio.sleep(max(10 - request.session_id, 0) * 0.02)
            return await _echo(request, context)
        finally:
            self.working -= 1


def test_requests_on_a_stream_are_worked_on_at_once_up_to_the_bound_and_answered_in_order() -> None:
    async def scenario() -> None:
        slow = _Slow()
        server, port = await _serve(None, implementation=slow)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stream = fetch_stream(channel)()
                for n in range(12):  # more than the bound, written before any answer is read
                    await stream.write(bpb.FetchRequest(session_id=n))
                await stream.done_writing()
                answers = [(await stream.read()).session_id for _ in range(12)]
                assert answers == list(range(12))
                assert await stream.read() is grpc.aio.EOF
                assert 1 < slow.most <= grpc_serving.IN_PROGRESS_PER_STREAM
        finally:
            await server.stop(None)

    asyncio.run(scenario())


def test_a_malformed_request_ends_the_stream_after_the_answers_to_the_requests_before_it() -> None:
    async def scenario() -> None:
        server, port = await _serve(None, implementation=_Slow())
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                raw = channel.stream_stream(f"/{FETCH_STREAM.full_name}/Fetch", request_serializer=None,
                                            response_deserializer=bpb.FetchResponse.FromString)()
                for n in (1, 2):  # slow ones, still being worked on when the junk arrives
                    await raw.write(bpb.FetchRequest(session_id=n).SerializeToString())
                await raw.write(b"\xff\xff\xff")
                assert [(await raw.read()).session_id for _ in range(2)] == [1, 2]
                with pytest.raises(grpc.aio.AioRpcError) as ended:
                    await raw.read()
                assert ended.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        finally:
            await server.stop(None)

    asyncio.run(scenario())


def test_calls_share_a_stream_and_a_timeout_ends_it_failing_the_calls_still_on_it() -> None:
    async def scenario() -> None:
        streams: list = []
        slow = _Slow()
        server, port = await _serve(None, streams, implementation=slow)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                calls = InOrderCalls(fetch_stream(channel), max_in_flight=4)
                answers = await asyncio.gather(*(calls.call(bpb.FetchRequest(session_id=n), 5) for n in range(6, 10)))
                assert [a.session_id for a in answers] == [6, 7, 8, 9]
                assert len(streams) == 1 and slow.most > 1

                # Request 0 takes 200 ms: its 50 ms timeout ends the stream, and request 9 behind it fails too.
                late, behind = await asyncio.gather(calls.call(bpb.FetchRequest(session_id=0), 0.05),
                                                    calls.call(bpb.FetchRequest(session_id=9), 5),
                                                    return_exceptions=True)
                assert isinstance(late, TimeoutError)
                assert isinstance(behind, StreamEnded) and behind.code == grpc.StatusCode.CANCELLED
                assert (await calls.call(bpb.FetchRequest(session_id=9), 5)).session_id == 9
                assert len(streams) == 2
                calls.end()
        finally:
            await server.stop(None)

    asyncio.run(scenario())
