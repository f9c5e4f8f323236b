"""`kraftlog server`: one node process (role controller, for now).

Opens the node's durable state, starts the quorum shell, and serves gRPC on
the controller listener: the quorum protocol, the QuorumLog service, gRPC
health checking and reflection (so `grpcurl` works). SIGTERM or SIGINT stop
it gracefully: a leader first hands over (EndQuorumEpoch), then the log is
flushed and closed. A storage failure stops it with exit code 1 and one
clear line, as Kafka halts on a metadata log failure.
"""

from __future__ import annotations

import asyncio
import logging
import random
import signal
import sys

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from metadata_quorum import controller_service, log_service, transport
from metadata_quorum.metadata_state import MetadataStateMachine
from metadata_quorum.node import QuorumNode, StateMachine
from metadata_quorum.record_store import RecordStore
from metadata_quorum.storage import StorageError, open_metadata_storage

from metadata_quorum.controller_service import ActiveController

from .server_config import ServerConfig

log = logging.getLogger("kraftlog.server")


class StartupError(Exception):
    """The node cannot start (its listener is taken, ...): one clear line, exit 1."""


def configure_logging(config: ServerConfig) -> None:
    logging.basicConfig(
        level=getattr(logging, str(config.log_level).upper(), logging.INFO),
        format=f"%(asctime)s [node {config.node_id}] %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )


def run(config: ServerConfig) -> int:
    configure_logging(config)
    try:
        return asyncio.run(serve(config))
    except (StorageError, StartupError) as exc:
        log.critical("%s", exc)
        print(f"kraftlog: error: {exc}", file=sys.stderr)
        return 1


async def serve(config: ServerConfig) -> int:
    if config.is_broker:
        raise StartupError("the broker role is not served by this build yet")
    endpoint = config.controller_endpoint()
    storage = open_metadata_storage(
        config.metadata_log_dir,
        cluster_id=config.cluster_id,
        node_id=config.node_id,
        voters=config.voters.keys(),
        segment_bytes=config.metadata_log_segment_bytes,
    )
    log.info(
        "node %d: quorum-state %s, snapshot %s, %d log entries from offset %d",
        config.node_id,
        storage.durable.quorum_state,
        storage.durable.snapshot.snapshot_id if storage.durable.snapshot else None,
        len(storage.durable.entries),
        storage.durable.log_start_offset,
    )
    peers = transport.PeerTransport(
        {i: a for i, a in config.voters.items() if i != config.node_id}, config.quorum.request_timeout_ms
    )
    state_machine: StateMachine
    if config.state_machine == "records":
        state_machine = store = RecordStore()
    else:
        state_machine = metadata = MetadataStateMachine()
    node = QuorumNode(
        config.node_id,
        config.voters.keys(),
        config.cluster_id,
        storage,
        state_machine,
        config=config.quorum,
        max_bytes_between_snapshots=config.max_bytes_between_snapshots,
        send=peers.send,
        rng=random.Random(),
    )
    peers.node = node

    server = grpc.aio.server(options=transport.SERVER_OPTIONS)
    transport.add_to_server(server, node)
    active: ActiveController | None = None
    if config.state_machine == "records":
        log_service.add_to_server(server, node, store)
        app_services = log_service.SERVICE_NAMES
    else:
        active = controller_service.ActiveController(node, metadata, config.controller)
        controller_service.add_to_server(server, active)
        app_services = controller_service.SERVICE_NAMES
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    service_names = (
        *transport.SERVICE_NAMES,
        *app_services,
        health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
        reflection.SERVICE_NAME,
    )
    reflection.enable_server_reflection(service_names, server)
    address = f"{endpoint.host}:{endpoint.port}"
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError as exc:
        bound, reason = 0, str(exc)
    else:
        reason = "address in use or not local"
    if not bound:
        storage.log.close()
        raise StartupError(f"cannot listen on {address}: {reason}")

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    await server.start()
    node.start()
    if active is not None:
        active.start()
    for name in service_names[:2]:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    log.info("node %d serving on %s (voters %s)", config.node_id, address, dict(config.voters))

    stopped = asyncio.create_task(node.stopped.wait())
    asked = asyncio.create_task(stop.wait())
    await asyncio.wait([stopped, asked], return_when=asyncio.FIRST_COMPLETED)
    failure = node.failure
    log.info("node %d shutting down%s", config.node_id, f" after failure: {failure}" if failure else "")
    await health_servicer.enter_graceful_shutdown()
    if failure is None:
        await node.resign()
    # The node first, so that nothing is stepped, written or sent while the
    # server and the channels close.
    if active is not None:
        await active.stop()
    await node.stop()
    await server.stop(grace=0.5)
    await peers.close()
    for task in (stopped, asked):
        task.cancel()
    return 1 if failure else 0
