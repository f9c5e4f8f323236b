"""The broker's runtime inside a node process: everything between the
metadata log, the partitions, the controller and the network.

    metadata   the node's QuorumNode (an observer on a broker-only node,
               the voter itself on a combined node) replays the metadata
               log into a MetadataStateMachine; its deltas go to the
               ReplicaManager (lead, follow, stop) and then to the replica
               fetcher (a loop per leader) - once the broker has caught up
               at startup, when the whole image is applied at once
    lifecycle  registration, heartbeats, controlled shutdown (lifecycle.py)
    ISR        the AlterPartition loop (isr_updates.py)
    service    KafkaBroker over gRPC, one per broker listener (service.py)
    groups     the group coordinator of the __consumer_offsets partitions
               led here, and its GroupCoordinator service (groups/)
    txns       the transaction coordinator of the __transaction_state
               partitions led here, its TransactionCoordinator service and
               the partitions' KIP-890 verifier (transactions/)
    fetcher    long-polled Fetch to leaders over gRPC (peer_clients.py)
    logs       the LogManager and its periodic jobs (log_jobs.py)

kraftlog_server/server.py builds the QuorumNode and the gRPC servers and calls,
in order: start(), then on SIGTERM controlled_shutdown(), stop(), and
close() once nothing serves requests any more.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, NamedTuple, Optional

import grpc

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image import Endpoint, MetadataDelta, MetadataImage
from metadata_quorum.metadata_state import MetadataStateMachine
from partition_log import validator
from partition_log.log_manager import LogManager
from security.authorization import NodeAuthorizer
from security.ssl_config import SslConfig

from . import service
from .config import BrokerConfig
from .client_quota_manager import ClientQuotas
from .controller_client import ControllerClient
from .groups import service as group_service
from .groups.coordinator import GroupCoordinator
from .isr_updates import IsrUpdates
from .lifecycle import BrokerLifecycle
from .log_jobs import LogJobIntervals, LogJobs
from .peer_clients import BrokerPeers
from .producer_ids import ProducerIdManager, controller_allocator
from .replica_fetcher import ReplicaFetcher
from .replica_manager import ReplicaManager
from .request_quota import RequestQuota
from .transactions import service as txn_service
from .transactions.coordinator import TransactionCoordinator
from .transactions.markers import MarkerWriter
from .transactions.verifier import CoordinatorVerifier
from .txn_markers import write_txn_markers

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 5.0


def _warm_up_validator() -> None:
    try:
        validator.warm_up()
    except Exception:  # noqa: BLE001 - produce will say what fails; fetches and the rest still serve
        log.exception("loading the record check of the produce path failed")


@dataclass(frozen=True)
class BrokerSettings:
    broker_id: int
    cluster_id: str
    controllers: dict[int, str]  # voter id -> HOST:PORT of its controller listener
    listeners: tuple[Endpoint, ...]  # advertised: what the broker registers
    inter_broker_listener: str
    rack: Optional[str]
    config: BrokerConfig
    log_jobs: LogJobIntervals
    heartbeat_interval_ms: int
    session_timeout_ms: int
    controller_request_timeout_ms: int = 2000  # one attempt at one controller
    replica_request_timeout_ms: int = 30000  # replica.socket.timeout.ms
    request_timeout_ms: int = 30000  # request.timeout.ms: forwarded admin requests
    # How the broker reaches the controllers and the other brokers' inter-broker
    # listener: TLS with this node's keystore (mTLS), or None: plaintext.
    controller_ssl: Optional[SslConfig] = None
    inter_broker_ssl: Optional[SslConfig] = None

    @property
    def controlled_shutdown_timeout_s(self) -> float:
        # Long enough for the controller to move every leadership away and
        # for a controller election on the way; bounded so SIGTERM ends.
        return max(2 * self.session_timeout_ms / 1000, 5.0)


def full_delta(image: MetadataImage, previous: Optional[MetadataImage] = None) -> MetadataDelta:
    """Everything `image` holds as one delta, plus the topics of `previous`
    it no longer has: what a replica manager needs to match `image`."""
    delta = MetadataDelta()
    # Every setting may differ from what the partitions were opened with (a
    # snapshot replaced the image): the cluster-wide key re-reads them all.
    delta.changed_configs.add((mpb.BROKER, ""))
    delta.changed_brokers.update(image.brokers)
    delta.created_topics.update(image.topics)
    for topic_id, topic in image.topics.items():
        delta.changed_partitions.update((topic_id, index) for index in topic.partitions)
    delta.changed_acls.update(image.acls)
    delta.changed_scram_credentials.update(image.scram_credentials)
    delta.changed_client_quotas.update(image.client_quotas)
    if previous is not None:
        for topic_id, topic in previous.topics.items():
            if topic_id not in image.topics:
                delta.removed_topics[topic_id] = topic
        delta.changed_acls.update(previous.acls.keys() - image.acls.keys())
        delta.changed_scram_credentials.update(previous.scram_credentials.keys() - image.scram_credentials.keys())
        delta.changed_client_quotas.update(previous.client_quotas.keys() - image.client_quotas.keys())
    return delta


class ClientServices(NamedTuple):
    """The gRPC servicers of one client listener: KafkaBroker, GroupCoordinator, TransactionCoordinator."""
    broker: Any
    groups: Any
    transactions: Any


class BrokerServer:
    def __init__(self, settings: BrokerSettings, logs: LogManager, metadata: MetadataStateMachine,
                 controller_id: Callable[[], Optional[int]], access: Optional[NodeAuthorizer] = None) -> None:
        self.settings = settings
        self.access = access or NodeAuthorizer.allow_all()  # loaded with the image's ACLs by the node
        self.logs = logs
        self.metadata = metadata
        self._controller_id = controller_id
        broker_id = settings.broker_id
        self.replicas = ReplicaManager(broker_id, logs, config=settings.config)
        self.controllers = ControllerClient(settings.controllers,
                                            attempt_timeout_s=settings.controller_request_timeout_ms / 1000,
                                            ssl=settings.controller_ssl)
        self.peers = BrokerPeers(self.replicas, settings.inter_broker_listener,
                                 request_timeout_s=settings.replica_request_timeout_ms / 1000,
                                 ssl=settings.inter_broker_ssl)
        self.fetcher = ReplicaFetcher(self.replicas, self.peers.fetch, self.peers.list_offsets)
        self.lifecycle = BrokerLifecycle(
            broker_id, settings.cluster_id, settings.listeners, settings.rack, self.controllers,
            lambda: self.metadata.applied_offset, heartbeat_interval_ms=settings.heartbeat_interval_ms,
            request_timeout_s=settings.session_timeout_ms / 1000, previous_broker_epoch=logs.previous_broker_epoch)
        self.isr_updates = IsrUpdates(self.replicas, self.controllers,
                                      request_timeout_s=settings.session_timeout_ms / 1000)
        self.log_jobs = LogJobs(logs, settings.log_jobs)
        self.producer_ids = ProducerIdManager(
            controller_allocator(self.controllers, broker_id, lambda: self.lifecycle.broker_epoch,
                                 timeout_s=settings.request_timeout_ms / 1000))
        self.groups = GroupCoordinator(broker_id, self.replicas, self.controllers, settings.config)
        self.transactions = TransactionCoordinator(
            broker_id, self.replicas, self.controllers, settings.config, new_producer_id=self.producer_ids.generate,
            markers=MarkerWriter(broker_id, lambda: self.replicas.image, self.peers.write_txn_markers,
                                 self._write_local_markers),
            append_timeout_ms=settings.request_timeout_ms)
        self.replicas.txn_verifier = CoordinatorVerifier(self.transactions, self.peers.add_partitions_to_txn)
        # A marker appended to __consumer_offsets makes the group's pending transactional offsets
        # committed or dropped (GroupCoordinator.on_txn_completed).
        self.replicas.txn_marker_listeners.append(self.groups.on_txn_completed)
        self.quotas = ClientQuotas()  # one set of client rates per broker, whichever listener a client uses
        self.published = False  # the image is applied to the replicas (caught up at startup)
        self.serving = asyncio.Event()  # set with `published`
        self.failure: Optional[str] = None
        self.failed = asyncio.Event()
        self._publisher: Optional[asyncio.Task[None]] = None
        self._failure_watch: Optional[asyncio.Task[None]] = None
        metadata.add_listener(self._on_metadata)
        # KIP-112: the partitions' only log directory went offline. Kafka halts a
        # broker whose every log directory failed; this one first asks for a
        # controlled shutdown (the controller moves its leaderships away), then stops.
        self.log_dir_offline: Optional[str] = None
        logs.failure.add_listener(self._on_log_dir_failure)

    @property
    def broker_id(self) -> int:
        return self.settings.broker_id

    async def _write_local_markers(self, request: bpb.WriteTxnMarkersRequest) -> bpb.WriteTxnMarkersResponse:
        return await write_txn_markers(self.replicas, request, self.settings.request_timeout_ms)

    def _request_quota(self) -> RequestQuota:
        return RequestQuota(self.quotas, lambda: self.replicas.image.client_quotas, self.access)

    def client_services(self, listener: str) -> "ClientServices":
        """The services clients of `listener` are served by, each method
        measured against request_percentage and held while muted (one quota
        for the three): what a gRPC listener serves, and what a Kafka-protocol
        listener calls (broker/kafka_api/)."""
        quota = self._request_quota()
        return ClientServices(
            broker=quota.metered(service.KafkaBrokerService(
                self.replicas, self.controllers, cluster_id=self.settings.cluster_id, listener=listener,
                ready=lambda: self.published, controller_id=self.controller_id,
                forward_timeout_s=self.settings.request_timeout_ms / 1000, producer_ids=self.producer_ids,
                access=self.access, quotas=self.quotas, transactions=self.transactions,
                txn_request_timeout_ms=self.settings.request_timeout_ms,
                metadata_offset=lambda: self.metadata.applied_offset), service.SERVICE),
            groups=quota.metered(group_service.GroupCoordinatorService(
                self.groups, listener=listener, ready=lambda: self.published, access=self.access,
                transactions=self.transactions), group_service.SERVICE),
            transactions=quota.metered(txn_service.TransactionCoordinatorService(
                self.transactions, ready=lambda: self.published, access=self.access), txn_service.SERVICE))

    def add_services(self, server: grpc.aio.Server, listener: str) -> tuple[str, ...]:
        """Serve KafkaBroker, GroupCoordinator and TransactionCoordinator for
        clients of `listener` on `server`; the service names."""
        services = self.client_services(listener)
        service.add_to_server(server, services.broker)
        group_service.add_to_server(server, services.groups)
        txn_service.add_to_server(server, services.transactions)
        return (*service.SERVICE_NAMES, *group_service.SERVICE_NAMES, *txn_service.SERVICE_NAMES)

    def controller_id(self) -> int:
        leader = self._controller_id()
        return -1 if leader is None else leader

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self.lifecycle.start()
        self._publisher = asyncio.create_task(self._publish_when_caught_up(), name="broker-publish")
        self._failure_watch = asyncio.create_task(self._watch_lifecycle(), name="broker-failure-watch")
        self.isr_updates.start()
        self.log_jobs.start()

    async def controlled_shutdown(self) -> bool:
        return await self.lifecycle.controlled_shutdown(self.settings.controlled_shutdown_timeout_s,
                                                        quorum_leader=self._controller_id)

    async def stop(self) -> None:
        """Stop every background task (heartbeats, ISR updates, fetchers, log jobs)."""
        for task in (self._publisher, self._failure_watch):
            if task is not None:
                task.cancel()
        await asyncio.gather(*(t for t in (self._publisher, self._failure_watch) if t), return_exceptions=True)
        for what, stopping in (("ISR updates", self.isr_updates.stop()), ("lifecycle", self.lifecycle.stop()),
                               ("replica fetcher", self.fetcher.close()), ("log jobs", self.log_jobs.stop()),
                               ("producer id allocation", self.producer_ids.close()),
                               ("group coordinator", self.groups.stop()),
                               ("transaction coordinator", self.transactions.stop())):
            await self._bounded(what, stopping)

    async def _bounded(self, what: str, stopping: Awaitable[None]) -> None:
        # A task that does not end must not keep the process from exiting.
        try:
            await asyncio.wait_for(stopping, STOP_TIMEOUT_S)
        except asyncio.TimeoutError:
            log.warning("broker %d: the %s did not stop within %gs", self.broker_id, what, STOP_TIMEOUT_S)

    async def close(self) -> None:
        """Close the channels and the logs cleanly (after the servers stopped)."""
        await self.peers.close()
        await self.controllers.close()
        try:
            self.logs.close(self.lifecycle.broker_epoch)  # KIP-966: the marker holds the epoch we stop with
        except OSError:
            log.exception("broker %d: closing the partition logs", self.broker_id)

    # -- metadata ----------------------------------------------------------------------------
    async def _publish_when_caught_up(self) -> None:
        # Beside catching up: the produce path's record kernel, loaded (or compiled) before
        # the first client needs it, in a thread as numba may take seconds on a new machine.
        await asyncio.gather(self.lifecycle.caught_up.wait(), asyncio.to_thread(_warm_up_validator))
        image = self.metadata.image
        self._apply(image, full_delta(image))
        self.published = True
        self.serving.set()
        log.info("broker %d serving: metadata image at offset %d applied, %d partitions here",
                 self.broker_id, image.offset, len(self.replicas.partitions))

    def _on_metadata(self, image: MetadataImage, delta: MetadataDelta) -> None:
        if not self.published:
            return  # the whole image is applied once caught up
        if image is not self.replicas.image:
            # A snapshot replaced the image: topics it lacks are gone too.
            delta = full_delta(image, self.replicas.image)
        self._apply(image, delta)

    def _apply(self, image: MetadataImage, delta: MetadataDelta) -> None:
        try:
            changes = self.replicas.apply_metadata(image, delta)
            self.fetcher.sync(changes)
            self.groups.on_replica_changes(changes)  # load or drop the coordinators of __consumer_offsets
            self.transactions.on_replica_changes(changes)  # and of __transaction_state
            self.groups.on_topics_removed({t.name for t in delta.removed_topics.values()})  # their offsets go
        except Exception as exc:  # noqa: BLE001 - the broker must not serve a view it could not apply
            log.exception("broker %d: cannot apply the metadata at offset %d", self.broker_id, image.offset)
            self._fail(f"cannot apply the metadata at offset {image.offset}: {exc}")
            return
        if changes.failed:
            log.error("broker %d: partitions offline (their logs do not open): %s", self.broker_id,
                      sorted(changes.failed))

    async def _watch_lifecycle(self) -> None:
        await self.lifecycle.failed.wait()
        self._fail(self.lifecycle.failure or "lifecycle failure")

    def _on_log_dir_failure(self, reason: str) -> None:
        self.log_dir_offline = reason
        self._fail(reason)

    def _fail(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
            self.failed.set()
