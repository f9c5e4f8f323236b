"""The brokers' peer channels against a real gRPC server on loopback.

A follower's fetches go on one FetchStream per leader (in order, one
answer per request); a failed, timed-out or cancelled fetch ends its
stream, so a late answer is never read as the next request's; a leader
that does not serve the stream (an older broker) is fetched from with
unary calls.

On a connection that dies silently (the server behind the chaos link proxy,
stalled in both directions after the first fetch: a black hole, as after a
NAT or proxy lost its state) the follower's next fetch must fail
UNAVAILABLE by keepalive, not sit until its deadline (max wait + request
timeout) as it did."""
from __future__ import annotations

import asyncio
import contextlib

import grpc
import pytest

from types import SimpleNamespace

from broker.peer_clients import BrokerPeers, PeerUnavailable
from chaos.linkproxy import LinkProxy, Toxics
from kafka_protocol import grpc_keepalive, grpc_serving
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum import transport

from .helpers import Cluster

# Far above keepalive's time + timeout: a fetch ending by its deadline fails
# the test (DEADLINE_EXCEEDED) instead of passing slowly.
REQUEST_TIMEOUT_S = 20.0


class FetchServer:
    """A server with the nodes' options: KafkaBroker's Fetch as a unary call
    and, unless `streamed` is False (a leader of an older version), on the
    FetchStream. Each answer echoes its request's session_epoch as its
    session_id, after `delays[epoch]` seconds; it counts the streams opened
    and the unary calls."""

    def __init__(self, streamed: bool = True) -> None:
        self.server = grpc.aio.server(options=transport.SERVER_OPTIONS)
        self.delays: dict[int, float] = {}
        self._stream_contexts: list[grpc.aio.ServicerContext] = []  # kept: their ids stay distinct
        self.unary_calls = 0
        if streamed:
            async def note_stream(path: str, context: grpc.aio.ServicerContext) -> None:
                if not any(context is known for known in self._stream_contexts):
                    self._stream_contexts.append(context)  # the guard runs for each message of a stream
            grpc_serving.guard_server(self.server, note_stream)
            grpc_serving.add_service(self.server, bpb.DESCRIPTOR.services_by_name["FetchStream"],
                                     SimpleNamespace(Fetch=self.fetch))

        async def unary(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            self.unary_calls += 1
            return await self.fetch(bpb.FetchRequest.FromString(request), context)

        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            bpb.DESCRIPTOR.services_by_name["KafkaBroker"].full_name,
            {"Fetch": grpc.unary_unary_rpc_method_handler(unary)}),))

    @property
    def streams_opened(self) -> int:
        return len(self._stream_contexts)

    async def fetch(self, request: bpb.FetchRequest, context: grpc.aio.ServicerContext) -> bytes:
        await asyncio.sleep(self.delays.get(request.session_epoch, 0.0))
        return bpb.FetchResponse(session_id=request.session_epoch).SerializeToString()


def _register(cluster: Cluster, broker_id: int, port: int) -> None:
    """The broker's inter-broker endpoint is the proxy's port."""
    cluster.apply(mpb.MetadataRecord(register_broker=mpb.RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=f"inc-{broker_id}", broker_epoch=100 + broker_id,
        endpoints=[mpb.BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=port)])))


@contextlib.asynccontextmanager
async def _peers_through(proxy: LinkProxy, cluster: Cluster, **toxics: Toxics):
    """Broker 1's peer channels, and a route through the proxy (with `toxics`)
    to a fetch server registered as broker 2: (peers, route)."""
    fetch_server = FetchServer()
    server = fetch_server.server
    server_port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    peers = BrokerPeers(cluster[1], "PLAINTEXT", request_timeout_s=REQUEST_TIMEOUT_S)
    try:
        route = await asyncio.to_thread(proxy.add_route, "127.0.0.1", ("127.0.0.1", server_port), **toxics)
        _register(cluster, 2, route)
        yield peers, route
    finally:
        await peers.close()
        await server.stop(None)


@contextlib.asynccontextmanager
async def _peers_of(cluster: Cluster, streamed: bool = True, request_timeout_s: float = REQUEST_TIMEOUT_S):
    """Broker 1's peer channels, and a FetchServer registered as broker 2 (no proxy): (peers, server)."""
    fetch_server = FetchServer(streamed)
    port = fetch_server.server.add_insecure_port("127.0.0.1:0")
    await fetch_server.server.start()
    peers = BrokerPeers(cluster[1], "PLAINTEXT", request_timeout_s=request_timeout_s)
    try:
        _register(cluster, 2, port)
        yield peers, fetch_server
    finally:
        await peers.close()
        await fetch_server.server.stop(None)


def _fetch(epoch: int, max_wait_ms: int = 0) -> bpb.FetchRequest:
    return bpb.FetchRequest(replica_id=1, max_wait_ms=max_wait_ms, session_epoch=epoch)


def test_a_followers_fetches_share_one_stream_each_answered_in_order(tmp_path) -> None:
    cluster = Cluster(tmp_path, broker_ids=(1,))
    async def scenario() -> None:
        async with _peers_of(cluster) as (peers, server):
            answers = [(await peers.fetch(2, _fetch(epoch))).session_id for epoch in range(1, 21)]
            assert answers == list(range(1, 21))
            assert (server.streams_opened, server.unary_calls) == (1, 0)

    asyncio.run(scenario())


def test_a_fetch_that_times_out_ends_its_stream_and_its_late_answer_is_never_read(tmp_path) -> None:
    cluster = Cluster(tmp_path, broker_ids=(1,))
    async def scenario() -> None:
        async with _peers_of(cluster, request_timeout_s=0.5) as (peers, server):
            server.delays[2] = 3.0  # past the 0.5 s deadline
            assert (await peers.fetch(2, _fetch(1))).session_id == 1
            with pytest.raises(PeerUnavailable, match="DEADLINE_EXCEEDED"):
                await peers.fetch(2, _fetch(2))
            assert (await peers.fetch(2, _fetch(3))).session_id == 3  # not the late answer to 2
            assert server.streams_opened == 2

    asyncio.run(scenario())


def test_a_fetch_cancelled_while_waiting_ends_its_stream(tmp_path) -> None:
    """A fetch loop stopped (its leader changed) while the leader holds its
    fetch: the next loop's fetch gets its own answer on a new stream."""
    cluster = Cluster(tmp_path, broker_ids=(1,))
    async def scenario() -> None:
        async with _peers_of(cluster) as (peers, server):
            server.delays[1] = 2.0
            waiting = asyncio.ensure_future(peers.fetch(2, _fetch(1, max_wait_ms=2000)))
            await asyncio.sleep(0.3)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            assert (await peers.fetch(2, _fetch(2))).session_id == 2
            assert server.streams_opened == 2

    asyncio.run(scenario())


def test_a_leader_without_the_fetch_stream_is_fetched_from_with_unary_calls(tmp_path) -> None:
    """An older broker answers UNIMPLEMENTED for FetchStream: the follower
    falls back to unary Fetch calls, and keeps to them for a while
    (in_order_calls.UNARY_RETRY_S) instead of trying the stream before each fetch."""
    cluster = Cluster(tmp_path, broker_ids=(1,))
    async def scenario() -> None:
        async with _peers_of(cluster, streamed=False) as (peers, server):
            answers = [(await peers.fetch(2, _fetch(epoch))).session_id for epoch in range(1, 6)]
            assert answers == [1, 2, 3, 4, 5]
            assert server.unary_calls == 5

    asyncio.run(scenario())


def test_a_fetch_on_a_silently_dead_connection_fails_by_keepalive_not_deadline(tmp_path) -> None:
    cluster = Cluster(tmp_path, broker_ids=(1,))

    async def scenario(proxy: LinkProxy) -> None:
        async with _peers_through(proxy, cluster) as (peers, route):
            request = bpb.FetchRequest(replica_id=1, max_wait_ms=500)
            assert (await peers.fetch(2, request)).error_code == 0  # connected through the proxy
            stalled = Toxics(stall=True)
            await asyncio.to_thread(proxy.set_toxics, route, upstream=stalled, downstream=stalled)
            with pytest.raises(PeerUnavailable) as failed:
                await asyncio.wait_for(peers.fetch(2, request), REQUEST_TIMEOUT_S + 10)
            assert "UNAVAILABLE" in str(failed.value)
            assert proxy.accepted(route) == 1  # the same connection all along, not a new one refused

    with LinkProxy() as proxy:
        asyncio.run(scenario(proxy))


def test_a_fetch_connects_over_a_link_slower_than_the_reconnect_backoff(tmp_path) -> None:
    """Every answer 1.5 s late (the slow-follower fault's worst is 1.25 s):
    the first fetch on a new channel must connect and be answered, where
    the connection attempt used to give up before the server's HTTP/2
    settings arrived."""
    cluster = Cluster(tmp_path, broker_ids=(1,))

    async def scenario(proxy: LinkProxy) -> None:
        async with _peers_through(proxy, cluster, downstream=Toxics(latency_ms=1500)) as (peers, _):
            response = await asyncio.wait_for(peers.fetch(2, bpb.FetchRequest(replica_id=1, max_wait_ms=0)),
                                              REQUEST_TIMEOUT_S + 10)
            assert response.error_code == 0

    with LinkProxy() as proxy:
        asyncio.run(scenario(proxy))


def test_the_nodes_servers_permit_the_peer_channels_pings() -> None:
    """A server closes a connection pinged more often than it permits
    (GOAWAY too_many_pings, after two strikes): every node's listener
    takes the peer channels' interval, with room for pings arriving early."""
    server = dict(transport.SERVER_OPTIONS)
    client = dict(grpc_keepalive.CHANNEL_OPTIONS)
    assert server["grpc.http2.min_ping_interval_without_data_ms"] < client["grpc.keepalive_time_ms"]
    assert client["grpc.keepalive_timeout_ms"] > 0
    assert client["grpc.http2.ping_timeout_ms"] == client["grpc.keepalive_timeout_ms"]  # not a minute
    assert client["grpc.http2.max_pings_without_data"] == 0  # a long wait keeps pinging
