"""A small TCP proxy for the faults of a slow link that this kernel cannot
make with `tc` (no netem): delay, jitter, stalls and resets - what toxiproxy
offers, which is not packaged here.

One `LinkProxy` runs an asyncio loop in a thread of its own (the chaos run
is threaded) and holds any number of routes, each a listening port in front
of one target address. Every connection accepted on a route gets its own
connection to the target and two pumps: upstream (client to target) and
downstream (target to client), each with its own `Toxics`, so a delay can be
one way only (asymmetric). The chaos testbed puts one route per directed
link and port between two hosts (chaos/testbed.py steers the source's
connections to it).

Bytes keep their order: a chunk is released at max(previous release,
arrival + latency ± jitter), so jitter spreads chunks out but never
reorders a stream (TCP could not). A stall holds every byte, keeping the
connection open (a black hole the peer's timeouts must notice); a reset
closes each connection with a TCP RST some time after it opened, again and
again as the peer reconnects. Toxics can change while connections run;
`close()` resets every connection and stops the loop.
"""
from __future__ import annotations

import asyncio
import random
import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Optional

CHUNK = 64 * 1024
QUEUE_CHUNKS = 256  # per direction: a stalled pump stops reading after this much (16 MiB)
CONNECT_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Toxics:
    """What one direction of a route does to the bytes it carries."""

    latency_ms: float = 0.0
    jitter_ms: float = 0.0  # each chunk's delay drawn from latency ± jitter (never below 0)
    stall: bool = False  # hold every byte until the toxics change

    def __post_init__(self) -> None:
        if self.latency_ms < 0 or self.jitter_ms < 0:
            raise ValueError(f"latency and jitter are >= 0 ms: {self}")

    def describe(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v}


def release_at(arrival: float, previous: float, toxics: Toxics, rng: random.Random) -> float:
    """When a chunk that arrived at `arrival` (seconds) may leave, given that
    the one before it leaves at `previous`: delayed, jittered, never before
    its predecessor."""
    delay_ms = toxics.latency_ms
    if toxics.jitter_ms:
        delay_ms += rng.uniform(-toxics.jitter_ms, toxics.jitter_ms)
    return max(previous, arrival + max(0.0, delay_ms) / 1000.0)


@dataclass
class _Route:
    target: tuple[str, int]
    upstream: Toxics
    downstream: Toxics
    reset_after_ms: Optional[float]
    rng: random.Random
    server: Optional[asyncio.base_events.Server] = None
    connections: set = field(default_factory=set)  # the writers of both ends of every live connection
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    accepted: int = 0

    def toxics(self, direction: str) -> Toxics:
        return self.upstream if direction == "upstream" else self.downstream


class LinkProxy:
    def __init__(self, seed: int = 0) -> None:
        self._seed = seed
        self._loop = asyncio.new_event_loop()
        self._routes: dict[int, _Route] = {}
        self._thread = threading.Thread(target=self._loop.run_forever, name="chaos-linkproxy", daemon=True)
        self._thread.start()

    # -- from any thread ----------------------------------------------------------------------
    def add_route(self, listen_host: str, target: tuple[str, int], *, upstream: Toxics = Toxics(),
                  downstream: Toxics = Toxics(), reset_after_ms: Optional[float] = None) -> int:
        """Listen on a free port of `listen_host` in front of `target`; the port."""
        if reset_after_ms is not None and reset_after_ms < 0:
            raise ValueError(f"reset_after_ms is >= 0: {reset_after_ms}")
        return self._call(self._add_route(listen_host, target, upstream, downstream, reset_after_ms))

    def set_toxics(self, port: int, *, upstream: Toxics = Toxics(), downstream: Toxics = Toxics(),
                   reset_after_ms: Optional[float] = None) -> None:
        """Change a route's toxics; running connections follow from their next byte."""
        self._call(self._set_toxics(port, upstream, downstream, reset_after_ms))

    def accepted(self, port: Optional[int] = None) -> int:
        """How many connections the route (every route, without a port) has accepted so far."""
        if port is None:
            return sum(route.accepted for route in list(self._routes.values()))
        return self._routes[port].accepted

    def close(self) -> None:
        """Reset every connection, stop listening, end the thread; safe to call twice."""
        if self._loop.is_closed():
            return
        if self._loop.is_running():
            self._call(self._shutdown())
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(STOP_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> "LinkProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, coroutine):  # type: ignore[no-untyped-def]
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(STOP_TIMEOUT_S)

    # -- on the loop --------------------------------------------------------------------------
    async def _add_route(self, listen_host: str, target: tuple[str, int], upstream: Toxics, downstream: Toxics,
                         reset_after_ms: Optional[float]) -> int:
        route = _Route(target, upstream, downstream, reset_after_ms,
                       random.Random(f"{self._seed}-{target[0]}-{target[1]}"))
        route.server = await asyncio.start_server(lambda r, w: self._serve(route, r, w), listen_host, 0)
        port = route.server.sockets[0].getsockname()[1]
        self._routes[port] = route
        return port

    async def _set_toxics(self, port: int, upstream: Toxics, downstream: Toxics,
                          reset_after_ms: Optional[float]) -> None:
        route = self._routes[port]
        route.upstream, route.downstream, route.reset_after_ms = upstream, downstream, reset_after_ms
        route.changed.set()  # wakes stalled pumps; each waits on a fresh event from now on
        route.changed = asyncio.Event()

    async def _shutdown(self) -> None:
        for route in self._routes.values():
            if route.server is not None:
                route.server.close()
            for writer in list(route.connections):
                _reset(writer)
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _serve(self, route: _Route, client_reader: asyncio.StreamReader,
                     client_writer: asyncio.StreamWriter) -> None:
        route.accepted += 1
        ends = [client_writer]
        # Registered before anything is awaited: close() must reset a connection
        # still waiting for its target too, or the client is left with an open
        # socket nobody answers (a black hole until its own deadline).
        route.connections.add(client_writer)
        pumps: list[asyncio.Future] = []
        resetter: Optional[asyncio.Future] = None
        try:
            try:
                target_reader, target_writer = await asyncio.wait_for(asyncio.open_connection(*route.target),
                                                                      CONNECT_TIMEOUT_S)
            except (OSError, asyncio.TimeoutError):
                return  # reset below: the client sees the target refuse, as it would without the proxy
            ends.append(target_writer)
            route.connections.add(target_writer)
            pumps = [asyncio.ensure_future(self._pump(route, "upstream", client_reader, target_writer)),
                     asyncio.ensure_future(self._pump(route, "downstream", target_reader, client_writer))]
            resetter = asyncio.ensure_future(self._reset_later(route, tuple(ends)))
            await asyncio.gather(*pumps)
        except (OSError, asyncio.IncompleteReadError):
            pass  # one end went away: the other is reset below, as a broken path would do
        except asyncio.CancelledError:
            pass  # close(): end normally, or asyncio's stream callback reports the cancellation as an error
        finally:
            if resetter is not None:
                resetter.cancel()
            for pump in pumps:
                pump.cancel()
            for writer in ends:
                _reset(writer)
            route.connections.difference_update(ends)

    async def _reset_later(self, route: _Route, ends: tuple[asyncio.StreamWriter, ...]) -> None:
        opened = self._loop.time()
        while True:
            if route.reset_after_ms is not None:
                await asyncio.sleep(max(0.0, opened + route.reset_after_ms / 1000 - self._loop.time()))
                if route.reset_after_ms is not None:
                    for writer in ends:
                        _reset(writer)
                    return
            await route.changed.wait()

    async def _pump(self, route: _Route, direction: str, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue = asyncio.Queue(QUEUE_CHUNKS)
        sender = asyncio.ensure_future(self._send(route, direction, queue, writer))
        previous = 0.0
        try:
            while True:
                chunk = await reader.read(CHUNK)
                previous = release_at(self._loop.time(), previous, route.toxics(direction), route.rng)
                await queue.put((previous, chunk))
                if not chunk:
                    break
            await sender
        finally:
            sender.cancel()

    async def _send(self, route: _Route, direction: str, queue: asyncio.Queue,
                    writer: asyncio.StreamWriter) -> None:
        while True:
            at, chunk = await queue.get()
            while route.toxics(direction).stall:
                await route.changed.wait()
            await asyncio.sleep(max(0.0, at - self._loop.time()))
            if not chunk:  # the reader's end closed: pass the half-close on
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(chunk)
            await writer.drain()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0), as a broken link or toxiproxy's reset_peer does."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()
