"""gRPC's per-call cost on this machine: a unary call per round trip against
one message each way on a kept stream-stream call (what FetchStream does,
docs/architecture.md), grpc.aio on both sides, the server in a process of
its own on 127.0.0.1. Prints round trips/s and the CPU µs of client and
server per round trip (issue 21, docs/bench.md "Issue 21 on a quiet machine").

    python -m bench.grpc_call_cost [--round-trips 20000] [--rounds 2] [--bytes 200]
"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import time
from typing import Any

import grpc

from .suite.parallel import cpu_seconds

SERVICE = "kraftlog.bench.Echo"


def serve(ports: Any, stop: Any) -> None:
    async def main() -> None:
        server = grpc.aio.server()

        async def unary(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            return request

        async def stream(requests: Any, context: grpc.aio.ServicerContext) -> Any:
            async for request in requests:
                yield request

        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {
            "Unary": grpc.unary_unary_rpc_method_handler(unary),
            "Stream": grpc.stream_stream_rpc_method_handler(stream),
        }),))
        ports.put(server.add_insecure_port("127.0.0.1:0"))
        await server.start()
        while not stop.is_set():
            await asyncio.sleep(0.1)
        await server.stop(0)

    asyncio.run(main())


async def measure(port: int, server_pid: int, round_trips: int, rounds: int, size: int) -> None:
    message = bytes(size)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        unary = channel.unary_unary(f"/{SERVICE}/Unary")
        open_stream = channel.stream_stream(f"/{SERVICE}/Stream")
        await unary(message)

        def report(name: str, wall: float, client_s: float, server_s: float) -> None:
            print(f"{name:>8}: {round_trips / wall:8,.0f} round trips/s, client {client_s / round_trips * 1e6:6.1f} µs, "
                  f"server {server_s / round_trips * 1e6:6.1f} µs a round trip", flush=True)

        for _ in range(rounds):
            wall, client, server = time.perf_counter(), time.process_time(), cpu_seconds(server_pid)
            for _ in range(round_trips):
                await unary(message)
            report("unary", time.perf_counter() - wall, time.process_time() - client,
                   cpu_seconds(server_pid) - server)
            call = open_stream()
            await call.write(message)
            await call.read()
            wall, client, server = time.perf_counter(), time.process_time(), cpu_seconds(server_pid)
            for _ in range(round_trips):
                await call.write(message)
                await call.read()
            report("stream", time.perf_counter() - wall, time.process_time() - client,
                   cpu_seconds(server_pid) - server)
            await call.done_writing()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--round-trips", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--bytes", type=int, default=200)
    args = parser.parse_args()
    ports, stop = multiprocessing.Queue(), multiprocessing.Event()
    server = multiprocessing.Process(target=serve, args=(ports, stop))
    server.start()
    try:
        asyncio.run(measure(ports.get(timeout=30), server.pid, args.round_trips, args.rounds, args.bytes))
    finally:
        stop.set()
        server.join(5)
        if server.is_alive():
            server.kill()
            server.join(5)


if __name__ == "__main__":
    main()
