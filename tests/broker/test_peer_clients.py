"""The brokers' peer channels on a connection that dies silently: a real
gRPC server behind the chaos link proxy on loopback, stalled in both
directions after the first fetch (a black hole: the connection stays open,
no byte and no RST comes back, as after a NAT or proxy lost its state).
The follower's next fetch must fail UNAVAILABLE by keepalive, not sit
until its deadline (max wait + request timeout) as it did."""
from __future__ import annotations

import asyncio
import contextlib

import grpc
import pytest

from broker.peer_clients import BrokerPeers, PeerUnavailable
from chaos.linkproxy import LinkProxy, Toxics
from kafka_protocol import grpc_keepalive
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum import transport

from .helpers import Cluster

# Far above keepalive's time + timeout: a fetch ending by its deadline fails
# the test (DEADLINE_EXCEEDED) instead of passing slowly.
REQUEST_TIMEOUT_S = 20.0


def _fetch_server() -> grpc.aio.Server:
    """A server with the nodes' options whose Fetch answers at once (empty)."""
    service = bpb.DESCRIPTOR.services_by_name["KafkaBroker"]

    async def fetch(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return bpb.FetchResponse().SerializeToString()

    server = grpc.aio.server(options=transport.SERVER_OPTIONS)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        service.full_name, {"Fetch": grpc.unary_unary_rpc_method_handler(fetch)}),))
    return server


def _register(cluster: Cluster, broker_id: int, port: int) -> None:
    """The broker's inter-broker endpoint is the proxy's port."""
    cluster.apply(mpb.MetadataRecord(register_broker=mpb.RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=f"inc-{broker_id}", broker_epoch=100 + broker_id,
        endpoints=[mpb.BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=port)])))


@contextlib.asynccontextmanager
async def _peers_through(proxy: LinkProxy, cluster: Cluster, **toxics: Toxics):
    """Broker 1's peer channels, and a route through the proxy (with `toxics`)
    to a fetch server registered as broker 2: (peers, route)."""
    server = _fetch_server()
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
