"""The quorum over gRPC: outgoing requests to peers, and the KRaftQuorum service.

Outgoing: the core's requests become unary calls on a channel per peer; the
answer is stepped into the core. A call that fails or times out is simply
dropped: the core's own timers retry (that is how Raft treats a lost
message), so the transport never retries by itself.

Incoming: a request is translated (metadata_quorum.raft_codec), stepped into the
core with a correlation id of our own, and answered with the response the
core addresses to (sender, correlation id). A request the core leaves
unanswered (a fetch superseded by a newer one, a leader change while it was
parked) ends in DEADLINE_EXCEEDED; the peer has moved on by then.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Mapping, Optional, Sequence

import grpc

from kraftlog_api import quorum_pb2 as pb
from kraftlog_api import quorum_pb2_grpc as pb_grpc

from kafka_protocol import grpc_serving
from kafka_protocol.addresses import format_address
from security.acl import AclOperation
from security.authorization import NodeAuthorizer, require_cluster_operations
from security.ssl_config import SslConfig
from security.tls import open_aio_channel

from . import raft_codec
from .node import QuorumNode
from .raft import Errors, FetchRequest, Message, NotLeaderError

log = logging.getLogger(__name__)

# A fetch may carry up to fetch_max_bytes of records plus framing; snapshots
# chunks likewise. Anything beyond this is refused by gRPC (RESOURCE_EXHAUSTED).
MAX_MESSAGE_BYTES = 8 << 20

CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    # gRPC's default reconnect backoff grows to two minutes; a restarted
    # controller must be reachable again within an election timeout.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
]
SERVER_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]


class PeerTransport:
    """Sends the core's requests to the other voters (and, for observers, to voters)."""

    def __init__(self, addresses: dict[int, tuple[str, int]], request_timeout_ms: int,
                 ssl: Optional[SslConfig] = None) -> None:
        self._addresses = addresses
        self._ssl = ssl  # the controller listener's: TLS and this node's keystore (mTLS); None: plaintext
        self._request_timeout_s = request_timeout_ms / 1000
        self._stubs: dict[int, pb_grpc.KRaftQuorumStub] = {}
        self._channels: list[grpc.aio.Channel] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self.node: Optional[QuorumNode] = None

    def _stub(self, node_id: int) -> Optional[pb_grpc.KRaftQuorumStub]:
        stub = self._stubs.get(node_id)
        if stub is None:
            address = self._addresses.get(node_id)
            if address is None:
                return None
            channel = open_aio_channel(format_address(*address), CHANNEL_OPTIONS, self._ssl)
            self._channels.append(channel)
            stub = self._stubs[node_id] = pb_grpc.KRaftQuorumStub(channel)
        return stub

    def send(self, request: Message) -> None:
        if self._closed:
            return
        task = asyncio.create_task(self._call(request))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _call(self, request: Message) -> None:
        stub = self._stub(request.dst)
        if stub is None:
            log.warning("no address for node %d; dropping %s", request.dst, type(request).__name__)
            return
        method, pb_request = raft_codec.request_to_proto(request)
        timeout = self._request_timeout_s
        if isinstance(request, FetchRequest):
            timeout += request.max_wait_ms / 1000  # the leader may hold it that long
        try:
            pb_response = await getattr(stub, method)(pb_request, timeout=timeout)
        except grpc.aio.UsageError:
            return  # the channel closed under us: the node is shutting down
        except grpc.aio.AioRpcError as exc:
            log.debug("%s to %d failed: %s", method, request.dst, exc.code())
            if exc.code() is grpc.StatusCode.UNAVAILABLE and self.node is not None:
                # Refused or reset: no process listens there. (A paused or
                # partitioned peer times out instead, and is not reported.)
                self.node.peer_unreachable(request.dst)
            return
        try:
            response = raft_codec.response_from_proto(pb_response, request)
        except raft_codec.MalformedResponse as exc:
            log.warning("dropping malformed %s response from %d: %s", method, request.dst, exc)
            return
        if self.node is not None:
            self.node.handle_response(response)

    async def close(self) -> None:
        """Cancel calls in flight and close the channels; bounded, so shutdown cannot hang here."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=1.0) if tasks else None
        if self._channels:
            await asyncio.wait([asyncio.ensure_future(c.close()) for c in self._channels], timeout=1.0)


class KRaftQuorumService(pb_grpc.KRaftQuorumServicer):
    """Serves the quorum protocol and DescribeQuorum for one node."""

    def __init__(self, node: QuorumNode, voter_nodes: Sequence[pb.DescribeQuorumResponse.Node] = ()) -> None:
        self.node = node
        self._voter_nodes = list(voter_nodes)
        self._correlation_ids = itertools.count(1)
        self._request_timeout_s = node.config.request_timeout_ms / 1000

    async def _serve(self, method: str, pb_request, context: grpc.aio.ServicerContext):  # type: ignore[no-untyped-def]
        node = self.node
        if node.failure is not None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"node {node.node_id} stopped: {node.failure}")
        try:
            request = raft_codec.request_from_proto(
                method, pb_request, receiver_id=node.node_id, correlation_id=next(self._correlation_ids)
            )
        except raft_codec.MisroutedRequest:
            return raft_codec.error_response(method, Errors.INCONSISTENT_VOTER_SET, node.epoch(), node.leader())
        except raft_codec.MalformedRequest as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed {method} request: {exc}")
        timeout = self._request_timeout_s
        if isinstance(request, FetchRequest):
            timeout += request.max_wait_ms / 1000
        response = await node.handle_request(request, timeout)
        if response is None:
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, f"no answer to {method} within {timeout:.1f}s")
        return raft_codec.response_to_proto(response)

    async def Vote(self, request, context):  # type: ignore[no-untyped-def]
        return await self._serve("Vote", request, context)

    async def BeginQuorumEpoch(self, request, context):  # type: ignore[no-untyped-def]
        return await self._serve("BeginQuorumEpoch", request, context)

    async def EndQuorumEpoch(self, request, context):  # type: ignore[no-untyped-def]
        return await self._serve("EndQuorumEpoch", request, context)

    async def Fetch(self, request, context):  # type: ignore[no-untyped-def]
        return await self._serve("Fetch", request, context)

    async def FetchSnapshot(self, request, context):  # type: ignore[no-untyped-def]
        return await self._serve("FetchSnapshot", request, context)

    async def DescribeQuorum(self, request, context):  # type: ignore[no-untyped-def]
        node = self.node
        try:
            info = node.describe_quorum()
        except NotLeaderError:
            response = raft_codec.describe_quorum_response(None, Errors.NOT_LEADER_OR_FOLLOWER, node.leader(), node.epoch(),
                                                     node.wall_ms)
        else:
            response = raft_codec.describe_quorum_response(info, Errors.NONE, node.leader(), node.epoch(), node.wall_ms)
        response.nodes.extend(self._voter_nodes)  # a follower's answer too: it leads the client to the leader
        return response


def voter_nodes(voters: Mapping[int, tuple[str, int]], listener_name: str) -> list[pb.DescribeQuorumResponse.Node]:
    """controller.quorum.voters as DescribeQuorum's `nodes` (KIP-853): each voter on its controller listener."""
    return [pb.DescribeQuorumResponse.Node(node_id=node_id, listeners=[
        pb.DescribeQuorumResponse.Listener(name=listener_name, host=host, port=port)])
        for node_id, (host, port) in sorted(voters.items())]


def add_to_server(server: grpc.aio.Server, node: QuorumNode,
                  nodes: Sequence[pb.DescribeQuorumResponse.Node] = (),
                  access: Optional[NodeAuthorizer] = None) -> None:
    """The quorum's RPCs are the nodes' own (ClusterAction); DescribeQuorum is
    an operator's question (Describe on the cluster), as in Kafka."""
    service = pb.DESCRIPTOR.services_by_name["KRaftQuorum"]
    servicer = require_cluster_operations(KRaftQuorumService(node, nodes), service,
                                          access or NodeAuthorizer.allow_all(),
                                          {"DescribeQuorum": AclOperation.DESCRIBE})
    grpc_serving.add_service(server, service, servicer)


SERVICE_NAMES = (pb.DESCRIPTOR.services_by_name["KRaftQuorum"].full_name,)
