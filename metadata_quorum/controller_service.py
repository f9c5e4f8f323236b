"""The KRaftController gRPC service: the pure Controller run as the active controller.

Only the Raft leader is the active controller, and only once it has applied
every committed record (its image is complete): until then, and on every
other controller, requests get NOT_CONTROLLER with the leader's id.

Decisions are pipelined, as Kafka's controller works on its uncommitted
state: the Controller decides on a working copy of the committed image,
each decision's records are appended (QuorumNode.submit) and applied to
that copy at once, and the next request is decided while earlier ones are
still committing (at most MAX_IN_FLIGHT). Each answer goes out once its
records have committed (Raft commits in order, so everything decided before
them has too); an answer without records waits for the last decision
submitted, so none shows state that may not commit. Deciding stays one
decision at a time in append order, so the Controller is the same
deterministic state machine the seeded simulator drives. If an append is
lost (a leader change), the working copy holds records that never commit:
it and the Controller are dropped, with its soft state (broker sessions);
the next active controller copies the committed image and starts every
session afresh, as Kafka does.

Before its first decision, an active controller appends the bootstrap
records of its own bootstrap.checkpoint (`kraftlog storage format
--add-scram`) unless the image shows they were appended already: one entry,
once per cluster (controller/bootstrap.py says why once).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import Counter
from types import SimpleNamespace
from typing import Callable, Optional, Sequence

import grpc
from google.protobuf.message import Message

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb

from kafka_protocol import grpc_serving
from security.authorization import NodeAuthorizer, require_cluster_operations

from .controller import Controller, ControllerConfig, ControllerResult, Error, error_response
from .controller.bootstrap import bootstrap_step
from .controller.elections import elections_in
from .controller.features import gate
from .controller.result import MAX_RECORDS_PER_USER_OP
from .image import MetadataImage, decision_entry
from .metadata_state import MetadataStateMachine
from .node import AppendLostError, QuorumNode, StorageFailure
from .raft import NotLeaderError

log = logging.getLogger(__name__)

TICK_INTERVAL_S = 0.1
# Decisions appended and not yet committed, at most: each holds its request
# and answer until the quorum commits it (Kafka bounds its controller's
# queue likewise). Enough to keep every fetch of the followers full.
MAX_IN_FLIGHT = 64
# The largest decision entry: a follower must be able to fetch it whole in one
# Fetch answer under the transport's 8 MiB message limit (an entry no
# Fetch can carry would stop replication for good). Kafka's KRaft batches
# are bounded likewise (8 MiB). Only a hostile request gets near it: the
# record cap keeps an ordinary decision well under a megabyte.
MAX_DECISION_BYTES = 4 << 20

# RPC name -> (Controller method, whether it takes now_ms).
HANDLERS: dict[str, tuple[str, bool]] = {
    "BrokerRegistration": ("handle_registration", True),
    "BrokerHeartbeat": ("handle_heartbeat", True),
    "AlterPartition": ("handle_alter_partition", False),
    "CreateTopics": ("handle_create_topics", False),
    "DeleteTopics": ("handle_delete_topics", False),
    "CreatePartitions": ("handle_create_partitions", False),
    "ElectLeaders": ("handle_elect_leaders", False),
    "AllocateProducerIds": ("handle_allocate_producer_ids", False),
    "IncrementalAlterConfigs": ("handle_incremental_alter_configs", False),
    "CreateAcls": ("handle_create_acls", False),
    "DeleteAcls": ("handle_delete_acls", False),
    "AlterUserScramCredentials": ("handle_alter_user_scram_credentials", False),
    "AlterClientQuotas": ("handle_alter_client_quotas", False),
    "UpdateFeatures": ("handle_update_features", False),
    "AlterPartitionReassignments": ("handle_alter_partition_reassignments", False),
    "ListPartitionReassignments": ("handle_list_partition_reassignments", False),
    "UnregisterBroker": ("handle_unregister_broker", False),
}
RESPONSES: dict[str, type[Message]] = {
    name: getattr(cpb, method.output_type.name)
    for name, method in cpb.DESCRIPTOR.services_by_name["KRaftController"].methods_by_name.items()
}


def decision_entries(records: Sequence[mpb.MetadataRecord]) -> list[bytes]:
    """The Raft entries of one decision. A client's request is at most
    MAX_RECORDS_PER_USER_OP records (refused whole above that), so it is one
    entry and commits whole or not at all. Only the controller's own work
    (fencing a broker that is in many ISRs) can be longer; its records do not
    depend on each other, so it goes in entries of that many records, as
    Kafka splits non-atomic controller work into several batches."""
    step = MAX_RECORDS_PER_USER_OP
    return [decision_entry(records[i:i + step]) for i in range(0, len(records), step)]


class ActiveController:
    """Runs the Controller while this node leads, its decisions pipelined."""

    def __init__(self, node: QuorumNode, metadata: MetadataStateMachine, config: ControllerConfig,
                 bootstrap: Sequence[mpb.MetadataRecord] = ()) -> None:
        """`bootstrap`: the records of this node's bootstrap.checkpoint (checked), marker first."""
        self.node = node
        self.metadata = metadata
        self.config = config
        self._bootstrap = list(bootstrap)
        # Held while deciding and submitting (never while waiting for a commit):
        # decisions are taken one after another, in the order they are appended.
        self._lock = asyncio.Lock()
        self._in_flight = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._controller: Optional[Controller] = None
        self._epoch = -1
        # The committed image the working image was copied from (a follower's
        # snapshot install replaces it); the working image is the Controller's.
        self._committed_image: Optional[MetadataImage] = None
        # The commit of the last decision submitted: an answer without records
        # waits for it, so no answer shows state that has not committed.
        self._last_submitted: Optional[asyncio.Future[None]] = None
        self._ticker: Optional[asyncio.Task[None]] = None
        # ElectionKind -> leaders elected by this node's committed decisions (metrics; Kafka's ControllerStats)
        self.elections: Counter[int] = Counter()

    def start(self) -> None:
        self._ticker = asyncio.create_task(self._tick_loop(), name="controller-tick")

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)

    def controller_id(self) -> int:
        leader = self.node.leader()
        return -1 if leader is None else leader

    def _active(self) -> Optional[Controller]:
        node = self.node
        if not node.leader_ready():
            if self._controller is not None and not node.is_leader():
                self._lost_leadership("")
            self._controller = None
            return None
        if (self._controller is None or self._epoch != node.epoch()
                or self._committed_image is not self.metadata.image):
            # Leader-ready: everything before this epoch has committed and been
            # applied, and nothing of this controller is in flight yet.
            self._epoch = node.epoch()
            self._committed_image = self.metadata.image
            self._last_submitted = None
            self._controller = Controller(
                self.metadata.image.copy(), self.config,
                cluster_id=node.cluster_id, node_id=node.node_id, now_ms=node.now_ms(),
            )
            log.info("node %d is the active controller (epoch %d, image at offset %d)",
                     node.node_id, self._epoch, self.metadata.image.offset)
        return self._controller

    async def serve(self, rpc_name: str, request: Message, context: grpc.aio.ServicerContext) -> Message:
        return await self.handle(rpc_name, request)

    async def handle(self, rpc_name: str, request: Message) -> Message:
        method, takes_now = HANDLERS[rpc_name]
        if rpc_name == "BrokerHeartbeat" and self._controller is not None:
            # A heartbeat queued behind many decisions (thousands of partitions
            # being created) must still keep its broker's session, or the
            # controller fences live brokers.
            self._controller.heartbeat_arrived(request, self.node.now_ms())  # type: ignore[arg-type]
        async with self._in_flight:
            async with self._lock:
                controller = self._active()
                if controller is None or not await self._bootstrapped(controller):
                    return self.not_controller(rpc_name)
                handler: Callable[..., ControllerResult] = getattr(controller, method)
                result = handler(request, self.node.now_ms()) if takes_now else handler(request)
                forbidden = gate(controller.image, result)
                if forbidden is not None:
                    # A newer controller in a cluster still at an older metadata.version: write nothing older nodes cannot read.
                    log.error("node %d refuses %s: %s", self.node.node_id, rpc_name, forbidden)
                    return error_response(RESPONSES[rpc_name], Error.UNSUPPORTED_VERSION, self.node.node_id, forbidden)
                entries = decision_entries(result.records)
                if len(entries) == 1 and len(entries[0]) > MAX_DECISION_BYTES:
                    # Nothing was appended and nothing applied: refusing leaves no trace.
                    return error_response(
                        RESPONSES[rpc_name], Error.POLICY_VIOLATION, self.node.node_id,
                        f"Unable to perform excessively large batch operation: its {len(result.records)} "
                        f"metadata records take {len(entries[0])} bytes, at most {MAX_DECISION_BYTES} are allowed")
                committed = (self._submit(controller, entries, result.records, rpc_name) if entries
                             else self._last_submitted)
                if entries and committed is None:
                    return self.not_controller(rpc_name)
            # Outside the lock: the next decisions are taken and appended while this one commits.
            if committed is not None and not await self._committed(controller, committed, len(result.records),
                                                                    rpc_name):
                return self.not_controller(rpc_name)
            self.elections.update(elections_in(result.records))
            assert result.response is not None
            return result.response

    async def _bootstrapped(self, controller: Controller) -> bool:
        """Append the bootstrap records if the image has not seen them yet (one
        entry, waiting for its commit under the lock, so nothing else is decided
        before them); False if leadership was lost first."""
        if not self._bootstrap:
            return True
        step = bootstrap_step(controller.image, self._bootstrap)
        if not step.records:
            log.info("node %d appends no bootstrap records: %s", self.node.node_id, step.reason)
        else:
            what = "the bootstrap records"
            committed = self._submit(controller, [decision_entry(step.records)], step.records, what)
            if committed is None or not await self._committed(controller, committed, len(step.records), what):
                return False
            log.info("node %d appended its %d bootstrap records (%s)", self.node.node_id, len(step.records),
                     step.reason)
        # Done for this node: the image holds the marker (or never will take these records).
        self._bootstrap = []
        return True

    def _submit(self, controller: Controller, entries: list[bytes], records: Sequence[mpb.MetadataRecord],
                what: str) -> Optional[asyncio.Future[None]]:
        """Append a decision's entries and apply its records to the working
        image at their offsets (the next decision sees them); the future of
        their commit, or None if this node no longer leads."""
        try:
            base, _, committed = self.node.submit(entries)
        except (NotLeaderError, StorageFailure) as exc:
            self._drop(controller, f" before the {len(records)} records of {what} were appended ({exc})")
            return None
        step = MAX_RECORDS_PER_USER_OP
        for i, first in enumerate(range(0, len(records), step)):
            controller.image.apply_decision(records[first:first + step], base + i)
        self._last_submitted = committed
        return committed

    async def _committed(self, controller: Controller, committed: asyncio.Future[None], count: int,
                         what: str) -> bool:
        """Wait for a submitted decision's commit; False if it will never commit."""
        try:
            await asyncio.shield(committed)
        except (NotLeaderError, AppendLostError, StorageFailure) as exc:
            self._drop(controller, f" before the {count} records of {what} committed ({exc})")
            return False
        return True

    def _drop(self, controller: Controller, during: str) -> None:
        """The working image holds records that will never commit: forget it
        (once; a later controller, of a later epoch, is kept)."""
        if self._controller is controller:
            self._lost_leadership(during)
            self._controller = None
            self._last_submitted = None

    def _lost_leadership(self, during: str) -> None:
        """An active controller that stops being one says so, and why, at WARNING:
        its pending decisions are answered NOT_CONTROLLER and brokers move on."""
        node = self.node
        state = type(node.core.state).__name__
        # A leader resigns when it shuts down (handing over) or when check-quorum fails.
        why = ("it resigned (shutting down, or no majority of voters fetched from it within "
               "controller.quorum.fetch.timeout.ms)" if state == "Resigned"
               else f"the quorum moved on (now {state}, leader {node.leader()})")
        log.warning("node %d is no longer the active controller of epoch %d%s: %s",
                    node.node_id, self._epoch, during, why)

    def not_controller(self, rpc_name: str) -> Message:
        return RESPONSES[rpc_name](error_code=Error.NOT_CONTROLLER, controller_id=self.controller_id())

    async def _tick_loop(self) -> None:
        while True:
            await asyncio.sleep(TICK_INTERVAL_S)
            async with self._lock:
                controller = self._active()
                if controller is None or not await self._bootstrapped(controller):
                    continue
                result = controller.tick(self.node.now_ms())
                forbidden = gate(controller.image, result)
                committed = None
                if forbidden is not None:
                    log.error("node %d writes nothing of its own work: %s", self.node.node_id, forbidden)
                elif result.records:
                    committed = self._submit(controller, decision_entries(result.records), result.records,
                                             "the controller's own work")
            if committed is not None and await self._committed(controller, committed, len(result.records),
                                                               "the controller's own work"):
                self.elections.update(elections_in(result.records))


def add_to_server(server: grpc.aio.Server, active: ActiveController,
                  access: Optional[NodeAuthorizer] = None) -> None:
    """Only nodes call the controller (ClusterAction): brokers for themselves,
    and for the admin requests they checked and forwarded."""
    # Every RPC takes the same path: one handler per name, bound to it.
    methods = {name: functools.partial(active.serve, name) for name in HANDLERS}
    service = cpb.DESCRIPTOR.services_by_name["KRaftController"]
    servicer = require_cluster_operations(SimpleNamespace(**methods), service, access or NodeAuthorizer.allow_all())
    grpc_serving.add_service(server, service, servicer)


SERVICE_NAMES = (cpb.DESCRIPTOR.services_by_name["KRaftController"].full_name,)
