"""`kraftlog server`: one node process, a controller, a broker, or both.

Every node runs one QuorumNode over its durable metadata state: a
controller as a voter, a broker-only node as an observer that fetches the
metadata log from the voters. Above it, the roles:

- controller: on the controller listener, the quorum protocol and the
  KRaftController service (the active controller while this node leads);
  in the records-only test and benchmark mode, the QuorumLog service
  instead (metadata_quorum/records_only/);
- broker: on each broker listener, the KafkaBroker service, fed by the
  same node's metadata image (broker/server.py); on the listeners named in
  `kraftlog.kafka.protocol.listeners`, the same service in Kafka's binary
  protocol instead of gRPC (an asyncio server, broker/kafka_api/).

Every gRPC server has health checking and reflection (so `grpcurl` works).
With `kraftlog.metrics.listener` set, the node serves Prometheus metrics
there (kraftlog_server/metrics), and every gRPC server counts and times requests.
SIGTERM or SIGINT stop the node gracefully: a broker first shuts down in a
controlled way (the controller moves its leaderships away), a leading
controller hands over (EndQuorumEpoch); then the logs are flushed and
closed. A storage failure stops it with exit code 1 and one clear line, as
Kafka halts on a metadata log failure.
"""

from __future__ import annotations

import asyncio
import logging
import random
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Sequence

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from kraftlog_api import metadata_pb2 as mpb

from metadata_quorum import controller_service, transport
from metadata_quorum.controller_service import ActiveController
from metadata_quorum.image import Endpoint as RegisteredEndpoint
from metadata_quorum.metadata_state import MetadataStateMachine
from metadata_quorum.node import QuorumNode, StateMachine
from metadata_quorum.records_only import quorum_log_service
from metadata_quorum.records_only.record_store import RecordStore
from metadata_quorum.controller.bootstrap import check_bootstrap_records
from metadata_quorum.storage import StorageError, open_metadata_storage
from metadata_quorum.storage.bootstrap_checkpoint import (FILE_NAME as BOOTSTRAP_FILE, read_bootstrap_checkpoint,
                                                         read_bootstrap_voters)
from metadata_quorum.raft import Entry
from metadata_quorum.raft.voters import VoterSet
from kafka_protocol.errors import InvalidConfigError, KafkaStorageError
from partition_log import disk_faults
from partition_log.log_manager import LogManager
from kafka_protocol import grpc_serving
from security import sasl_server
from security.authorization import NodeAuthorizer
from security.listener_guard import listener_guard
from security.listeners import SecurityProtocol
from security.sasl_protocol import SASL_SERVICE
from security.ssl_config import SslConfig
from security.tls import server_credentials

from .allocator import tune_allocator
from .metrics import NodeMetrics
from .node_security import SaslServers, follow_acls
from .server_config import Endpoint, ServerConfig, format_address

if TYPE_CHECKING:  # imported where a broker is made: a controller-only node skips the broker's code (and numba)
    from broker.kafka_api.listener import KafkaListener
    from broker.server import BrokerServer, BrokerSettings

log = logging.getLogger("kraftlog.server")

NODE_STOP_TIMEOUT_S = 3.0
HEALTH_SERVICE = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name


class StartupError(Exception):
    """The node cannot start (its listener is taken, ...): one clear line, exit 1."""


def configure_logging(config: ServerConfig) -> None:
    logging.basicConfig(
        level=getattr(logging, str(config.log_level).upper(), logging.INFO),
        format=f"%(asctime)s [node {config.node_id}] %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )
    for name, level in config.logger_levels:
        logging.getLogger(name).setLevel(getattr(logging, level))


def loop_factory(config: ServerConfig) -> Optional[Callable[[], asyncio.AbstractEventLoop]]:
    """kraftlog.event.loop: None for the standard library's loop, or uvloop's
    (a StartupError when it is not installed)."""
    if config.event_loop != "uvloop":
        return None
    try:
        import uvloop
    except ImportError:
        raise StartupError("kraftlog.event.loop is uvloop, which is not installed") from None
    return uvloop.new_event_loop


def run(config: ServerConfig) -> int:
    configure_logging(config)
    tune_allocator()
    try:
        with asyncio.Runner(loop_factory=loop_factory(config)) as runner:
            return runner.run(serve(config))
    except (StorageError, KafkaStorageError, StartupError) as exc:
        log.critical("%s", exc)
        print(f"kraftlog: error: {exc}", file=sys.stderr)
        return 1


@dataclass
class Listener:
    """One gRPC server: a listener's address and what it serves."""

    endpoint: Endpoint
    server: grpc.aio.Server
    health: health.aio.HealthServicer
    services: tuple[str, ...]  # application services (health and reflection aside)
    ready: Optional[asyncio.Event] = field(default=None)  # SERVING once set (None: at once)
    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT  # listener.security.protocol.map
    ssl: Optional[SslConfig] = None  # the listener's ssl.* settings when its protocol uses TLS
    sasl_services: tuple[str, ...] = ()  # SaslAuthentication on a SASL listener


def new_listener(endpoint: Endpoint, config: ServerConfig, metrics: Optional[NodeMetrics] = None,
                 sasl: Optional[SaslServers] = None) -> Listener:
    """A listener's server, guarded (security/listener_guard.py) before any
    service is added: every call on it runs as the principal its protocol
    authenticates. A SASL listener serves SaslAuthentication too."""
    interceptors = (metrics.interceptor,) if metrics is not None else ()
    server = grpc.aio.server(options=transport.SERVER_OPTIONS, interceptors=interceptors)
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    protocol = config.listener_protocol(endpoint.name)
    ssl = config.listener_ssl.get(endpoint.name)
    authenticator = sasl.for_listener(protocol) if sasl is not None and protocol.uses_sasl else None
    grpc_serving.guard_server(server, listener_guard(endpoint.name, protocol, sasl=authenticator,
                                                     mapper=ssl.principal_mapper if ssl is not None else None))
    grpc_serving.limit_idle_streams(server, config.connections_max_idle_ms)  # FetchStream, like a connection
    listener = Listener(endpoint, server, servicer, (), protocol=protocol, ssl=ssl)
    if authenticator is not None:
        sasl_server.add_to_server(server, authenticator)
        listener.sasl_services = (SASL_SERVICE,)
    return listener


def broker_settings(config: ServerConfig) -> BrokerSettings:
    from broker.server import BrokerSettings
    return BrokerSettings(
        broker_id=config.node_id,
        cluster_id=config.cluster_id,
        controllers=config.voter_addresses(),
        listeners=tuple(RegisteredEndpoint(e.name, e.host, e.port) for e in config.advertised_listeners),
        inter_broker_listener=config.inter_broker_listener_name,
        rack=config.rack,
        config=config.broker,
        log_jobs=config.log_jobs,
        heartbeat_interval_ms=config.controller.broker_heartbeat_interval_ms,
        session_timeout_ms=config.controller.broker_session_timeout_ms,
        controller_request_timeout_ms=config.quorum.request_timeout_ms,
        controller_ssl=config.controller_client_ssl,
        inter_broker_ssl=config.client_ssl(config.inter_broker_listener_name),
    )


def controller_bootstrap(config: ServerConfig) -> list[mpb.MetadataRecord]:
    """A controller's bootstrap records (`kraftlog storage format`), checked; none
    without the file. Brokers ignore the file: only an active controller appends."""
    if not config.is_controller or config.state_machine == "records":
        return []
    records = read_bootstrap_checkpoint(Path(config.metadata_log_dir)) or []
    try:
        if records:
            check_bootstrap_records(records)
    except ValueError as exc:
        raise StorageError(f"{Path(config.metadata_log_dir) / BOOTSTRAP_FILE}: {exc}") from None
    return records


def quorum_voters(config: ServerConfig) -> "Iterable[int] | VoterSet":
    """What the quorum core is built from: the static voter ids, or (KIP-853)
    the initial voters `storage format` wrote for a controller, none for a
    controller formatted to join and for a broker (they learn them from the log)."""
    if not config.dynamic_quorum:
        return config.voters.keys()
    if config.is_controller:
        return read_bootstrap_voters(Path(config.metadata_log_dir)) or VoterSet()
    return VoterSet()


def follow_controllers(node: QuorumNode, broker: "BrokerServer", listener_name: str) -> None:
    """A dynamic quorum's broker asks the voters in force for the active controller,
    wherever their VotersRecord says they listen."""
    def moved(base: int, entries: Sequence[Entry]) -> None:
        if not any(entry.control for entry in entries):
            return
        addresses = {}
        for voter in node.voter_set():
            endpoint = node.voter_set().endpoint(voter.key.id, listener_name)
            if endpoint is not None:
                addresses[voter.key.id] = format_address(endpoint.host, endpoint.port)
        broker.controllers.update(addresses)
    node.add_listener(moved)


async def serve(config: ServerConfig) -> int:
    # The chaos testbed's disk faults: only with its environment variable set (never from a config file).
    disk_faults.install_from_env([*config.log_dirs, config.metadata_log_dir])
    bootstrap = controller_bootstrap(config)
    # The partition logs (LogManager leaves the metadata log, which may share
    # their directory, to the quorum).
    logs: Optional[LogManager] = None
    if config.is_broker:
        logs = LogManager(Path(config.log_dirs[0]), config.broker.log)
    try:
        storage = open_metadata_storage(
            config.metadata_log_dir,
            cluster_id=config.cluster_id,
            node_id=config.node_id,
            voters=None if config.dynamic_quorum else config.voters.keys(),
            segment_bytes=config.metadata_log_segment_bytes,
        )
    except BaseException:
        if logs is not None:
            logs.close()
        raise
    log.info(
        "node %d (%s): quorum-state %s, snapshot %s, %d log entries from offset %d",
        config.node_id,
        ",".join(config.process_roles),
        storage.durable.quorum_state,
        storage.durable.snapshot.snapshot_id if storage.durable.snapshot else None,
        len(storage.durable.entries),
        storage.durable.log_start_offset,
    )
    peers = transport.PeerTransport(
        {i: a for i, a in config.voters.items() if i != config.node_id}, config.quorum.request_timeout_ms,
        ssl=config.controller_client_ssl, bootstrap=config.quorum_bootstrap,
        listener_name=config.controller_listener_names[0],
    )
    voters = quorum_voters(config)
    state_machine: StateMachine
    metadata: Optional[MetadataStateMachine] = None
    if config.state_machine == "records":
        state_machine = store = RecordStore()
    else:
        state_machine = metadata = MetadataStateMachine()
    node = QuorumNode(
        config.node_id,
        voters,
        config.cluster_id,
        storage,
        state_machine,
        config=config.quorum,
        max_bytes_between_snapshots=config.max_bytes_between_snapshots,
        send=peers.send,
        rng=random.Random(),
        bootstrap_ids=peers.bootstrap,
    )
    peers.node = node
    metrics = NodeMetrics() if config.metrics_listener is not None else None
    if metrics is not None:
        metrics.add_quorum(node)

    access = NodeAuthorizer(config.security.authorizer)
    if metadata is not None:
        follow_acls(access, metadata)
    sasl = SaslServers(config, metadata)
    if metrics is not None:
        metrics.add_security(access.decisions, sasl.outcomes,
                             lambda: len(metadata.image.acls) if metadata is not None else 0)
    listeners: list[Listener] = []
    active: Optional[ActiveController] = None
    if config.is_controller:
        controller = new_listener(config.controller_endpoint(), config, metrics, sasl)
        transport.add_to_server(controller.server, node,
                                transport.voter_nodes(config.voters, config.controller_endpoint().name), access)
        if metadata is None:
            quorum_log_service.add_to_server(controller.server, node, store)
            app_services = quorum_log_service.SERVICE_NAMES
        else:
            active = controller_service.ActiveController(node, metadata, config.controller, bootstrap)
            controller_service.add_to_server(controller.server, active, access)
            if metrics is not None:
                metrics.add_controller(node, metadata, active.elections)
            app_services = controller_service.SERVICE_NAMES
        controller.services = (*transport.SERVICE_NAMES, *app_services)
        listeners.append(controller)
    broker: Optional[BrokerServer] = None
    kafka_listeners: list[tuple[Endpoint, KafkaListener]] = []
    if config.is_broker:
        assert metadata is not None and logs is not None  # the config insists on the metadata image
        from broker.server import BrokerServer
        broker = BrokerServer(broker_settings(config), logs, metadata, node.leader, access)
        if metrics is not None:
            metrics.add_broker(broker, node)
        if config.dynamic_quorum:
            follow_controllers(node, broker, config.controller_listener_names[0])
        for endpoint in config.broker_listeners():
            if config.is_kafka_protocol(endpoint):
                kafka_listeners.append((endpoint, new_kafka_listener(endpoint, config, broker, sasl, metrics)))
                continue
            listener = new_listener(endpoint, config, metrics, sasl)
            listener.services = broker.add_services(listener.server, endpoint.name)
            listener.ready = broker.serving
            listeners.append(listener)
    for listener in listeners:
        reflection.enable_server_reflection((*listener.services, *listener.sasl_services, HEALTH_SERVICE,
                                             reflection.SERVICE_NAME),
                                            listener.server)
    try:
        for listener in listeners:
            bind(listener)
        for endpoint, kafka_listener in kafka_listeners:
            await bind_kafka(endpoint, kafka_listener)
        if metrics is not None:
            await serve_metrics(metrics, config)
    except StartupError:
        for _, kafka_listener in kafka_listeners:
            await kafka_listener.close()
        storage.log.close()
        if logs is not None:
            logs.close()
        raise

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    for listener in listeners:
        if listener.ready is not None:  # grpc's servicer starts with the whole server ("") SERVING
            await listener.health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        await listener.server.start()
    node.start()
    if active is not None:
        active.start()
    if broker is not None:
        broker.start()
    health_tasks = [asyncio.create_task(report_serving(listener)) for listener in listeners]
    # Kafka's clients are let in once the broker has caught up (a Kafka broker opens its listeners then).
    kafka_serving = [asyncio.create_task(kafka_listener.serve_when(broker.serving))
                     for _, kafka_listener in kafka_listeners if broker is not None]
    log.info("node %d serving on %s (voters %s)", config.node_id,
             ", ".join([*(str(listener.endpoint) for listener in listeners),
                        *(f"{endpoint} (Kafka protocol)" for endpoint, _ in kafka_listeners)]), dict(config.voters))

    waits = [asyncio.create_task(node.stopped.wait()), asyncio.create_task(stop.wait())]
    if broker is not None:
        waits.append(asyncio.create_task(broker.failed.wait()))
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    failure = node.failure or (broker.failure if broker is not None else None)
    log.info("node %d shutting down%s", config.node_id, f" after failure: {failure}" if failure else "")
    # A partition log directory gone offline (KIP-112) leaves the node able to hand over in order.
    orderly = failure is None or (broker is not None and failure == broker.log_dir_offline)
    if broker is not None and orderly:
        # While the controller moves leaderships away, followers still fetch
        # here (after a log directory failure they get KAFKA_STORAGE_ERROR).
        await broker.controlled_shutdown()
    for listener in listeners:
        await listener.health.enter_graceful_shutdown()
    if broker is not None:
        await broker.stop()
    if orderly:
        await node.resign()
    # The node first, so that nothing is stepped, written or sent while the
    # servers and the channels close.
    if active is not None:
        await active.stop()
    await stop_node(node)
    for listener in listeners:
        await listener.server.stop(grace=0.5)
    for _, kafka_listener in kafka_listeners:
        await kafka_listener.close()
    if metrics is not None:
        await metrics.close()
    await peers.close()
    if broker is not None:
        await broker.close()  # the partition logs, once no request can touch them
    for task in (*waits, *health_tasks, *kafka_serving):
        task.cancel()
    log.info("node %d stopped", config.node_id)
    return 1 if failure else 0


async def stop_node(node: QuorumNode) -> None:
    """node.stop(), bounded. One of its loops may ignore the cancellation
    (Python 3.11's asyncio.wait_for swallows one that arrives as its wake-up
    event is set), and node.stop() would wait on it forever: cancelling
    again reaches that loop anew, and node.stop() goes on closing the log."""
    stopping = asyncio.create_task(node.stop())
    for _ in range(3):
        done, _ = await asyncio.wait([stopping], timeout=NODE_STOP_TIMEOUT_S)
        if done:
            return
        log.warning("node %d: the quorum node did not stop within %gs; cancelling its tasks again",
                    node.node_id, NODE_STOP_TIMEOUT_S)
        stopping.cancel()


def bind(listener: Listener) -> None:
    address = listener.endpoint.address
    try:
        if listener.ssl is not None:
            bound = listener.server.add_secure_port(address, server_credentials(listener.ssl, listener.endpoint.name))
        else:
            bound = listener.server.add_insecure_port(address)
    except InvalidConfigError as exc:  # a keystore or truststore that does not read
        raise StartupError(f"cannot listen on {address} ({listener.endpoint.name}): {exc}") from None
    except RuntimeError as exc:
        bound, reason = 0, str(exc)
    else:
        reason = "address in use or not local"
    if not bound:
        raise StartupError(f"cannot listen on {address} ({listener.endpoint.name}): {reason}")


def new_kafka_listener(endpoint: Endpoint, config: ServerConfig, broker: BrokerServer,
                       sasl: SaslServers, metrics: Optional[NodeMetrics] = None) -> KafkaListener:
    """A Kafka-protocol listener over the broker's client services for this
    listener name (its Metadata lists this listener's endpoints), secured by
    its protocol as a gRPC listener of that name would be: the same ssl.*
    settings and the same SASL server (mechanisms, credentials, login metrics)."""
    from broker.kafka_api.apis import KafkaApis
    from broker.kafka_api.listener import KafkaListener, ListenerSecurity
    protocol = config.listener_protocol(endpoint.name)
    security = ListenerSecurity(protocol, config.listener_ssl.get(endpoint.name),
                                sasl.for_listener(protocol) if protocol.uses_sasl else None,
                                config.security.max_reauth_ms)
    timers = metrics.requests.stats if metrics is not None else None  # counted as a gRPC listener's requests
    return KafkaListener(endpoint.name, KafkaApis(broker.client_services(endpoint.name), timers),
                         max_request_bytes=config.socket_request_max_bytes,
                         idle_timeout_ms=config.connections_max_idle_ms, security=security)


async def bind_kafka(endpoint: Endpoint, listener: KafkaListener) -> None:
    try:
        await listener.bind(endpoint.host, endpoint.port)
    except InvalidConfigError as exc:  # a keystore or truststore that does not read
        raise StartupError(f"cannot listen on {endpoint.address} ({endpoint.name}): {exc}") from None
    except OSError as exc:
        raise StartupError(f"cannot listen on {endpoint.address} ({endpoint.name}): "
                           f"{exc.strerror or exc}") from None


async def serve_metrics(metrics: NodeMetrics, config: ServerConfig) -> None:
    assert config.metrics_listener is not None
    host, port = config.metrics_listener
    try:
        await metrics.serve(host, port)
    except OSError as exc:
        raise StartupError(f"cannot listen on {format_address(host, port)} (metrics): {exc.strerror or exc}") from None
    log.info("node %d serves metrics on http://%s/metrics", config.node_id, format_address(host or "0.0.0.0", port))


async def report_serving(listener: Listener) -> None:
    """Health SERVING for the listener's services once it is ready."""
    if listener.ready is not None:
        await listener.ready.wait()
    for name in (*listener.services, ""):
        await listener.health.set(name, health_pb2.HealthCheckResponse.SERVING)
