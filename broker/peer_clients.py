"""The broker's calls to other brokers over gRPC: the replica fetcher's Fetch
(on a FetchStream kept per leader: kafka_protocol/in_order_calls.py) and
ListOffsets, the transaction coordinator's WriteTxnMarkers, and a
partition leader's AddPartitionsToTxn(verify_only) to a transaction
coordinator; each broker found in the metadata image by its
`inter.broker.listener.name` endpoint. One channel per address, kept while
the address is in use; a leader that re-registers elsewhere gets a new one.
Failures raise: the callers back off and retry.
"""
from __future__ import annotations

import asyncio
from typing import Optional

import grpc

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import broker_pb2_grpc as bpb_grpc
from kraftlog_api import transactions_pb2 as tpb
from kraftlog_api import transactions_pb2_grpc as tpb_grpc
from kafka_protocol.addresses import format_address
from kafka_protocol.fetch_framing import broker_stub, fetch_stream
from kafka_protocol.in_order_calls import InOrderStreams, StreamEnded
from kafka_protocol import grpc_keepalive
from security.ssl_config import SslConfig
from security.tls import open_aio_channel

from .controller_client import CHANNEL_OPTIONS, reraise_cancellation
from .metadata import client_endpoint
from .replica_manager import ReplicaManager


# gRPC's min reconnect backoff is also the least time a connection attempt
# gets (TCP and the HTTP/2 settings exchange). The 100 ms set for a quick
# reconnect to a restarted node left an attempt about the reconnect backoff
# (< 1 s), so a follower behind a link slower than that never connected.
# Kafka gives a connection setup 10 s (socket.connection.setup.timeout.ms);
# a refused connection still fails at once and is retried after the backoff.
CONNECTION_SETUP_TIMEOUT_MS = 10_000
# A follower's fetch waits for its answer on a connection that may have died
# silently; keepalive finds that within seconds (kafka_protocol/grpc_keepalive.py).
PEER_CHANNEL_OPTIONS = (*(o for o in CHANNEL_OPTIONS if o[0] != "grpc.min_reconnect_backoff_ms"),
                        ("grpc.min_reconnect_backoff_ms", CONNECTION_SETUP_TIMEOUT_MS),
                        *grpc_keepalive.CHANNEL_OPTIONS)


class UnknownLeader(Exception):
    """The image has no endpoint for the leader on the inter-broker listener."""


class PeerUnavailable(Exception):
    """The call to another broker failed in transport (refused, reset, timed out)."""


class BrokerPeers:
    def __init__(self, replicas: ReplicaManager, listener: str, *, request_timeout_s: float,
                 ssl: Optional[SslConfig] = None) -> None:
        self.replicas = replicas
        self.listener = listener
        self.request_timeout_s = request_timeout_s
        self.ssl = ssl  # the inter-broker listener's, None: plaintext
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._stubs: dict[str, bpb_grpc.KafkaBrokerStub] = {}
        self._txn_stubs: dict[str, tpb_grpc.TransactionCoordinatorStub] = {}
        # A leader without FetchStream (an older broker) gets unary fetches (in_order_calls.UNARY_RETRY_S).
        self._fetch_streams = InOrderStreams(lambda address: fetch_stream(self._channel(address)))

    def address(self, broker_id: int) -> str:
        broker = self.replicas.image.brokers.get(broker_id)
        endpoint = client_endpoint(broker, self.listener) if broker is not None else None
        if endpoint is None:
            raise UnknownLeader(f"broker {broker_id} has no {self.listener} endpoint in the metadata")
        return format_address(endpoint.host, endpoint.port)

    def _channel(self, address: str) -> grpc.aio.Channel:
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = open_aio_channel(address, PEER_CHANNEL_OPTIONS, self.ssl)
        return channel

    def _stub(self, broker_id: int) -> bpb_grpc.KafkaBrokerStub:
        address = self.address(broker_id)
        stub = self._stubs.get(address)
        if stub is None:
            stub = self._stubs[address] = broker_stub(self._channel(address))
        return stub

    def _txn_stub(self, broker_id: int) -> tpb_grpc.TransactionCoordinatorStub:
        address = self.address(broker_id)
        stub = self._txn_stubs.get(address)
        if stub is None:
            stub = self._txn_stubs[address] = tpb_grpc.TransactionCoordinatorStub(self._channel(address))
        return stub

    async def fetch(self, leader_id: int, request: bpb.FetchRequest) -> bpb.FetchResponse:
        # The leader may hold a long-polled fetch for max_wait_ms.
        timeout = request.max_wait_ms / 1000 + self.request_timeout_s
        try:
            return await self._fetch_streams.call(self.address(leader_id), request, timeout,
                                                  lambda: self._stub(leader_id).Fetch(request, timeout=timeout))
        except grpc.aio.AioRpcError as exc:
            reraise_cancellation()
            raise PeerUnavailable(self._describe(leader_id, exc)) from None
        except StreamEnded as exc:
            raise PeerUnavailable(f"broker {leader_id}: {exc}") from None
        except TimeoutError:
            raise PeerUnavailable(f"broker {leader_id}: {grpc.StatusCode.DEADLINE_EXCEEDED.name}") from None

    async def list_offsets(self, leader_id: int, request: bpb.ListOffsetsRequest) -> bpb.ListOffsetsResponse:
        return await self._call(leader_id, lambda: self._stub(leader_id).ListOffsets, request)

    async def write_txn_markers(self, broker_id: int,
                                request: bpb.WriteTxnMarkersRequest) -> bpb.WriteTxnMarkersResponse:
        return await self._call(broker_id, lambda: self._stub(broker_id).WriteTxnMarkers, request)

    async def add_partitions_to_txn(self, broker_id: int, request: tpb.AddPartitionsToTxnRequest,
                                    ) -> tpb.AddPartitionsToTxnResponse:
        return await self._call(broker_id, lambda: self._txn_stub(broker_id).AddPartitionsToTxn, request)

    async def _call(self, broker_id: int, method, request):
        try:
            return await method()(request, timeout=self.request_timeout_s)
        except grpc.aio.AioRpcError as exc:
            reraise_cancellation()
            raise PeerUnavailable(self._describe(broker_id, exc)) from None

    def _describe(self, broker_id: int, exc: grpc.aio.AioRpcError) -> str:
        """One line (gRPC's own text of an error spans several)."""
        details = (exc.details() or "").splitlines()
        return f"broker {broker_id}: {exc.code().name}" + (f" ({details[0]})" if details else "")

    async def close(self) -> None:
        channels = list(self._channels.values())
        self._channels.clear()
        self._stubs.clear()
        self._txn_stubs.clear()
        self._fetch_streams.close()
        if channels:
            await asyncio.wait([asyncio.ensure_future(c.close()) for c in channels], timeout=1.0)
