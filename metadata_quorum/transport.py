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

Addresses (KIP-853): a static quorum's come from controller.quorum.voters.
A dynamic quorum's come from the voter set in force (each voter's endpoint
on the controller listener, from the VotersRecord); until the node knows
one, it asks the bootstrap servers (controller.quorum.bootstrap.servers),
which the core names by negative ids, and learns the voters' addresses from
their DescribeQuorum answer. AddRaftVoter, RemoveRaftVoter and
UpdateRaftVoter are operators' requests, stepped into the core like the
peers' and answered when the leader's core answers.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Iterable, Mapping, Optional, Sequence

import grpc

from kraftlog_api import quorum_pb2 as pb
from kraftlog_api import quorum_pb2_grpc as pb_grpc

from kafka_protocol import grpc_keepalive, grpc_serving
from kafka_protocol.addresses import format_address
from security.acl import AclOperation
from security.authorization import NodeAuthorizer, require_cluster_operations
from security.ssl_config import SslConfig
from security.tls import open_aio_channel

from . import raft_codec
from .node import QuorumNode
from .raft import Errors, FetchRequest, Message, NotLeaderError
from .raft.messages import VoterChangeResponse
from .raft.voters import Voter

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
    # A fetch held by the leader sends nothing until its answer: a dead connection under it is found by pings.
    *grpc_keepalive.CHANNEL_OPTIONS,
]
SERVER_OPTIONS = [
    ("grpc.max_send_message_length", grpc_serving.MAX_ANSWER_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    *grpc_keepalive.SERVER_OPTIONS,  # the brokers' peer channels ping (every node's listeners use these)
]


class PeerTransport:
    """Sends the core's requests to the other voters (and, for observers, to voters)."""

    def __init__(self, addresses: dict[int, tuple[str, int]], request_timeout_ms: int,
                 ssl: Optional[SslConfig] = None, *, bootstrap: Sequence[tuple[str, int]] = (),
                 listener_name: Optional[str] = None) -> None:
        self._addresses = addresses  # static: controller.quorum.voters
        # controller.quorum.bootstrap.servers, named -2, -3, ... (Kafka names them by negative ids too).
        self.bootstrap = {-2 - i: address for i, address in enumerate(bootstrap)}
        self._listener_name = listener_name  # the controller listener voters' endpoints are looked up on
        self._learned: dict[int, tuple[str, int]] = {}  # voter addresses a bootstrap server told us
        self._learning: Optional[asyncio.Task[None]] = None
        self._ssl = ssl  # the controller listener's: TLS and this node's keystore (mTLS); None: plaintext
        self._request_timeout_s = request_timeout_ms / 1000
        self._stubs: dict[int, tuple[tuple[str, int], grpc.aio.Channel, pb_grpc.KRaftQuorumStub]] = {}
        self._retired: set[grpc.aio.Channel] = set()  # a moved voter's old channels, closing
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self.node: Optional[QuorumNode] = None

    def address(self, node_id: int) -> Optional[tuple[str, int]]:
        """Where node `node_id` listens, as far as this node knows."""
        if node_id in self._addresses:
            return self._addresses[node_id]
        if node_id in self.bootstrap:
            return self.bootstrap[node_id]
        if self.node is not None:
            endpoint = self.node.endpoint(node_id, self._listener_name)
            if endpoint is not None:
                return endpoint.host, endpoint.port
        return self._learned.get(node_id)

    def _stub(self, node_id: int) -> Optional[pb_grpc.KRaftQuorumStub]:
        address = self.address(node_id)
        if address is None:
            self._learn()
            return None
        cached = self._stubs.get(node_id)
        if cached is not None:
            if cached[0] == address:
                return cached[2]
            self._retire(cached[1])  # a voter that moved (UpdateRaftVoter) gets a new channel
        channel = open_aio_channel(format_address(*address), CHANNEL_OPTIONS, self._ssl)
        stub = pb_grpc.KRaftQuorumStub(channel)
        self._stubs[node_id] = (address, channel, stub)
        return stub

    def _retire(self, channel: grpc.aio.Channel) -> None:
        """Close a moved voter's old channel once the calls on it have had their time, so a voter
        that moves again and again does not leave a connection behind each time."""
        self._retired.add(channel)

        async def close() -> None:
            await channel.close(grace=self._request_timeout_s)
            self._retired.discard(channel)

        task = asyncio.create_task(close())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _learn(self) -> None:
        """Ask the bootstrap servers where the voters listen (once at a time)."""
        if self._closed or not self.bootstrap or (self._learning is not None and not self._learning.done()):
            return
        self._learning = asyncio.create_task(self._ask_bootstrap())

    async def _ask_bootstrap(self) -> None:
        for bootstrap_id in self.bootstrap:
            stub = self._stub(bootstrap_id)
            if stub is None:
                continue
            try:
                answer = await stub.DescribeQuorum(pb.DescribeQuorumRequest(), timeout=self._request_timeout_s)
            except (grpc.aio.AioRpcError, grpc.aio.UsageError):
                continue
            for voter in answer.nodes:
                for listener in voter.listeners:
                    if self._listener_name in (None, listener.name):
                        self._learned[voter.node_id] = (listener.host, listener.port)
                        break
            if answer.nodes:
                return

    def send(self, request: Message) -> None:
        if self._closed:
            return
        task = asyncio.create_task(self._call(request))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _call(self, request: Message) -> None:
        stub = self._stub(request.dst)
        if stub is None and self._learning is not None and not self._learning.done():
            # A dynamic quorum's observer can know the leader's id before its
            # endpoint: send once the bootstrap servers have said where the
            # voters listen, rather than drop the request and wait out the
            # core's fetch timeout.
            try:
                await asyncio.wait_for(asyncio.shield(self._learning), self._request_timeout_s)
            except Exception:  # noqa: BLE001 - unanswered or failed: dropped below, as before
                pass
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
        if self._learning is not None:
            self._learning.cancel()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=1.0) if tasks else None
        channels = [channel for _, channel, _ in self._stubs.values()] + list(self._retired)
        if channels:
            await asyncio.wait([asyncio.ensure_future(c.close()) for c in channels], timeout=1.0)


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

    async def _voter_change(self, method: str, pb_request, context: grpc.aio.ServicerContext):  # type: ignore[no-untyped-def]
        node = self.node
        if node.failure is not None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"node {node.node_id} stopped: {node.failure}")
        try:
            request = raft_codec.voter_change_from_proto(
                method, pb_request, receiver_id=node.node_id, correlation_id=next(self._correlation_ids))
        except raft_codec.MalformedRequest as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed {method} request: {exc}")
        timeout = (getattr(request, "timeout_ms", 0) or node.config.request_timeout_ms) / 1000
        # The leader answers by its own timer; a little more here covers the answer's way back.
        response = await node.handle_request(request, timeout + self._request_timeout_s)
        if response is None:
            response = VoterChangeResponse(node.node_id, -1, 0, Errors.REQUEST_TIMED_OUT, node.epoch(),
                                           node.leader(), "no answer from the quorum in time")
        assert isinstance(response, VoterChangeResponse)
        return raft_codec.voter_change_response_to_proto(response)

    async def AddRaftVoter(self, request, context):  # type: ignore[no-untyped-def]
        return await self._voter_change("AddRaftVoter", request, context)

    async def RemoveRaftVoter(self, request, context):  # type: ignore[no-untyped-def]
        return await self._voter_change("RemoveRaftVoter", request, context)

    async def UpdateRaftVoter(self, request, context):  # type: ignore[no-untyped-def]
        return await self._voter_change("UpdateRaftVoter", request, context)

    async def DescribeQuorum(self, request, context):  # type: ignore[no-untyped-def]
        node = self.node
        try:
            info = node.describe_quorum()
        except NotLeaderError:
            response = raft_codec.describe_quorum_response(None, Errors.NOT_LEADER_OR_FOLLOWER, node.leader(), node.epoch(),
                                                     node.wall_ms)
        else:
            response = raft_codec.describe_quorum_response(info, Errors.NONE, node.leader(), node.epoch(), node.wall_ms)
        # A follower's answer too: it leads the client to the leader. A dynamic
        # quorum's voters are those of the set in force, with their endpoints.
        if node.core.dynamic:
            voters = list(node.voter_set())
            leader = node.known_voter(node.leader()) if node.leader() is not None else None
            if leader is not None and leader.key.id not in node.voter_set().ids:
                voters.append(leader)  # a removed leader still leads until the removal commits
            response.nodes.extend(dynamic_voter_nodes(voters))
        else:
            response.nodes.extend(self._voter_nodes)
        return response


def voter_nodes(voters: Mapping[int, tuple[str, int]], listener_name: str) -> list[pb.DescribeQuorumResponse.Node]:
    """controller.quorum.voters as DescribeQuorum's `nodes` (KIP-853): each voter on its controller listener."""
    return [pb.DescribeQuorumResponse.Node(node_id=node_id, listeners=[
        pb.DescribeQuorumResponse.Listener(name=listener_name, host=host, port=port)])
        for node_id, (host, port) in sorted(voters.items())]


def dynamic_voter_nodes(voters: Iterable[Voter]) -> list[pb.DescribeQuorumResponse.Node]:
    """The voter set in force as DescribeQuorum's `nodes` (every endpoint a voter registered)."""
    return [pb.DescribeQuorumResponse.Node(node_id=voter.key.id, listeners=[
        pb.DescribeQuorumResponse.Listener(name=e.name, host=e.host, port=e.port) for e in voter.endpoints])
        for voter in voters]


def add_to_server(server: grpc.aio.Server, node: QuorumNode,
                  nodes: Sequence[pb.DescribeQuorumResponse.Node] = (),
                  access: Optional[NodeAuthorizer] = None) -> None:
    """The quorum's RPCs are the nodes' own (ClusterAction); DescribeQuorum is
    an operator's question (Describe on the cluster), as in Kafka."""
    service = pb.DESCRIPTOR.services_by_name["KRaftQuorum"]
    # Voter changes are an operator's, as Kafka's AddRaftVoter/RemoveRaftVoter
    # (Alter on the cluster); UpdateRaftVoter is a voter's own (ClusterAction).
    servicer = require_cluster_operations(KRaftQuorumService(node, nodes), service,
                                          access or NodeAuthorizer.allow_all(),
                                          {"DescribeQuorum": AclOperation.DESCRIBE,
                                           "AddRaftVoter": AclOperation.ALTER,
                                           "RemoveRaftVoter": AclOperation.ALTER})
    grpc_serving.add_service(server, service, servicer)


SERVICE_NAMES = (pb.DESCRIPTOR.services_by_name["KRaftQuorum"].full_name,)
