"""The broker's shell in one process: finding the active controller,
registration and heartbeats, controlled shutdown, and the KafkaBroker
service's readiness and forwarding - against scripted controllers served
by grpc.aio on 127.0.0.1."""
from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import grpc
import pytest

from broker.controller_client import ControllerClient, ControllerUnavailable
from broker.lifecycle import BrokerLifecycle
from broker.log_jobs import LogJobIntervals, LogJobs
from broker.replica_manager import ReplicaManager
from broker.server import full_delta
from kafka_protocol.errors import Errors
from partition_log.log_manager import LogManager
from broker.service import KafkaBrokerService, add_to_server
from devcluster.local_processes import free_ports
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import broker_pb2_grpc as bpb_grpc
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from kafka_protocol import grpc_serving
from metadata_quorum.image import Endpoint, MetadataImage
from metadata_quorum.storage import open_metadata_storage
from partition_log.config import LogConfig

from .helpers import batch_of, run

SERVICE = cpb.DESCRIPTOR.services_by_name["KRaftController"]


class ScriptedController:
    """A KRaftController whose answers a test decides; it records every request."""

    def __init__(self, node_id: int, answer: Callable[[str, object], object]) -> None:
        self.node_id = node_id
        self.answer = answer
        self.requests: list[tuple[str, object]] = []

    def servicer(self) -> SimpleNamespace:
        def method(name: str):
            async def handle(request, context):
                self.requests.append((name, request))
                return self.answer(name, request)
            return handle
        return SimpleNamespace(**{m.name: method(m.name) for m in SERVICE.methods})


async def until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def response(name: str, **fields) -> object:
    return getattr(cpb, SERVICE.methods_by_name[name].output_type.name)(**fields)


async def serve(controllers: list[ScriptedController], ports: list[int]) -> list[grpc.aio.Server]:
    servers = []
    for controller, port in zip(controllers, ports):
        server = grpc.aio.server()
        grpc_serving.add_service(server, SERVICE, controller.servicer())
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        servers.append(server)
    return servers


@contextlib.asynccontextmanager
async def scripted_lifecycle(answer: Callable[[str, object], object], *, heartbeat_interval_ms: int):
    """A started BrokerLifecycle (broker 7) against one ScriptedController; all stopped after."""
    ports = free_ports(1)
    controller = ScriptedController(1, answer)
    servers = await serve([controller], ports)
    client = ControllerClient({1: f"127.0.0.1:{ports[0]}"}, attempt_timeout_s=1.0)
    lifecycle = BrokerLifecycle(7, "c", [], None, client, lambda: 5, heartbeat_interval_ms=heartbeat_interval_ms,
                                request_timeout_s=2)
    lifecycle.start()
    try:
        yield controller, lifecycle
    finally:
        await lifecycle.stop()
        await client.close()
        for server in servers:
            await server.stop(0)


def test_the_active_controller_is_found_through_not_controller_answers():
    async def scenario():
        ports = free_ports(3)
        # 1 does not know the leader, 2 names 3, 3 answers; nothing listens for 4.
        one = ScriptedController(1, lambda name, _: response(name, error_code=Errors.NOT_CONTROLLER, controller_id=-1))
        two = ScriptedController(2, lambda name, _: response(name, error_code=Errors.NOT_CONTROLLER, controller_id=3))
        three = ScriptedController(3, lambda name, _: response(name, error_code=0, controller_id=3))
        servers = await serve([one, two, three], ports)
        dead = free_ports(1)[0]
        addresses = {1: f"127.0.0.1:{ports[0]}", 2: f"127.0.0.1:{ports[1]}", 3: f"127.0.0.1:{ports[2]}",
                     4: f"127.0.0.1:{dead}"}
        client = ControllerClient(addresses, attempt_timeout_s=1.0)
        try:
            for _ in range(3):
                answer = await client.call("CreateTopics", cpb.CreateTopicsRequest(), timeout_s=10)
                assert answer.error_code == 0 and client.active_id == 3
            # Once found, the active controller is asked first.
            assert len(three.requests) == 3 and len(two.requests) <= 1 and len(one.requests) <= 1
        finally:
            await client.close()
            for server in servers:
                await server.stop(0)

    run(scenario())


def test_a_call_with_no_active_controller_ends_at_its_deadline():
    async def scenario():
        ports = free_ports(1)
        nobody = ScriptedController(
            1, lambda name, _: response(name, error_code=Errors.NOT_CONTROLLER, controller_id=-1))
        servers = await serve([nobody], ports)
        client = ControllerClient({1: f"127.0.0.1:{ports[0]}"}, attempt_timeout_s=1.0)
        try:
            with pytest.raises(ControllerUnavailable, match="CreateTopics: no active controller within 0.5s"):
                await client.call("CreateTopics", cpb.CreateTopicsRequest(), timeout_s=0.5)
        finally:
            await client.close()
            for server in servers:
                await server.stop(0)

    run(scenario())


def test_a_call_in_flight_survives_the_bootstrap_servers_giving_way_to_the_voters():
    """A dynamic quorum's broker asks its bootstrap servers (ids -2, -3, ...)
    until the metadata log names the voters; `update` then replaces them.
    grpc.aio cancels the calls of a channel it closes, and a registration in
    flight on a bootstrap server's channel used to end in CancelledError,
    which ended the broker's lifecycle task without a word (a broker of the
    multi-host test never registered). The call must finish on the voters."""
    async def scenario():
        ports = free_ports(1)
        active = ScriptedController(1, lambda name, _: response(name, error_code=0, controller_id=1))
        servers = await serve([active], ports)
        address = f"127.0.0.1:{ports[0]}"
        try:
            for _ in range(5):  # the window is a loop turn wide: open it a few times
                client = ControllerClient({-2: address}, attempt_timeout_s=1.0)
                try:
                    call = asyncio.ensure_future(
                        client.call("BrokerRegistration", cpb.BrokerRegistrationRequest(broker_id=7), timeout_s=5))
                    await asyncio.sleep(0)  # the call is on the bootstrap server's channel
                    client.update({1: address})
                    assert (await call).error_code == 0
                    # and the next call goes to the voter, not to the bootstrap id it replaced
                    answer = await client.call("BrokerHeartbeat", cpb.BrokerHeartbeatRequest(broker_id=7), timeout_s=5)
                    assert answer.error_code == 0 and client.active_id == 1
                finally:
                    await client.close()
            assert len(active.requests) >= 10
        finally:
            for server in servers:
                await server.stop(0)

    run(scenario())


def test_a_lifecycle_task_that_ends_unexpectedly_stops_the_broker():
    """Registration and heartbeats are the broker's lease: their task ending
    for any reason but a stop is a failure the broker reports, not silence."""
    async def scenario():
        answers = {"BrokerRegistration": response("BrokerRegistration", error_code=0, broker_epoch=3)}
        async with scripted_lifecycle(lambda name, _: answers.get(name) or response(name, error_code=0),
                                      heartbeat_interval_ms=50) as (_, lifecycle):
            await until(lambda: lifecycle.broker_epoch == 3)
            lifecycle._task.cancel()  # as a cancelled gRPC call used to end it
            await asyncio.wait_for(lifecycle.failed.wait(), 5)
            assert "ended unexpectedly (cancelled)" in lifecycle.failure

    run(scenario())


def test_registration_heartbeats_reregistration_and_controlled_shutdown():
    epochs = iter([10, 20])
    state = {"heartbeats": 0, "stale": False}

    def answer(name, request):
        if name == "BrokerRegistration":
            return response(name, controller_id=1, broker_epoch=next(epochs))
        assert name == "BrokerHeartbeat"
        state["heartbeats"] += 1
        if state["stale"] and request.broker_epoch == 10:
            return response(name, error_code=Errors.STALE_BROKER_EPOCH, controller_id=1)
        caught_up = request.current_metadata_offset >= request.broker_epoch
        return response(name, controller_id=1, is_caught_up=caught_up, is_fenced=not caught_up,
                        should_shut_down=request.want_shut_down and state["heartbeats"] > 6)

    async def scenario():
        ports = free_ports(1)
        controller = ScriptedController(1, answer)
        servers = await serve([controller], ports)
        client = ControllerClient({1: f"127.0.0.1:{ports[0]}"}, attempt_timeout_s=1.0)
        offset = {"applied": 5}
        lifecycle = BrokerLifecycle(
            7, "cluster", [Endpoint("PLAINTEXT", "127.0.0.1", 9092)], "rack-1", client, lambda: offset["applied"],
            heartbeat_interval_ms=20, request_timeout_s=2)
        lifecycle.start()
        try:
            await until(lambda: state["heartbeats"] >= 2)
            assert lifecycle.broker_epoch == 10 and not lifecycle.caught_up.is_set() and lifecycle.fenced
            offset["applied"] = 10  # the registration record is applied: caught up, unfenced
            await asyncio.wait_for(lifecycle.caught_up.wait(), 5)
            await until(lambda: not lifecycle.fenced)
            state["stale"] = True  # the registration is gone: register again
            await until(lambda: lifecycle.broker_epoch == 20)
            assert await lifecycle.controlled_shutdown(5)
        finally:
            await lifecycle.stop()
            await client.close()
            for server in servers:
                await server.stop(0)
        registrations = [r for name, r in controller.requests if name == "BrokerRegistration"]
        assert len(registrations) == 2 and registrations[0].rack == "rack-1"
        assert registrations[0].listeners[0].port == 9092 and registrations[0].cluster_id == "cluster"
        assert registrations[0].incarnation_id == registrations[1].incarnation_id  # the same process
        assert [r.want_shut_down for name, r in controller.requests if name == "BrokerHeartbeat"][-1]

    run(scenario())


def test_the_service_refuses_data_until_caught_up_and_forwards_admin_requests(tmp_path: Path):
    async def scenario():
        ports = free_ports(2)
        logs = LogManager(tmp_path / "logs", LogConfig())
        replicas = ReplicaManager(1, logs)
        ready = {"caught_up": False}
        nobody = ControllerClient({1: f"127.0.0.1:{ports[1]}"}, attempt_timeout_s=0.2)  # nothing listens
        server = grpc.aio.server()
        add_to_server(server, KafkaBrokerService(
            replicas, nobody, cluster_id="c", listener="PLAINTEXT", ready=lambda: ready["caught_up"],
            controller_id=lambda: 3, forward_timeout_s=0.5))
        server.add_insecure_port(f"127.0.0.1:{ports[0]}")
        await server.start()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{ports[0]}")
        stub = bpb_grpc.KafkaBrokerStub(channel)
        try:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.Metadata(bpb.MetadataRequest(all_topics=True), timeout=5)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "not caught up" in refused.value.details()
            ready["caught_up"] = True
            described = await stub.Metadata(bpb.MetadataRequest(all_topics=True), timeout=5)
            assert described.cluster_id == "c" and described.controller_id == 3
            produced = await stub.Produce(bpb.ProduceRequest(acks=1, timeout_ms=100, topics=[
                bpb.ProduceRequest.TopicData(name="t", partitions=[
                    bpb.ProduceRequest.PartitionData(index=0, records=batch_of([b"v"]))])]), timeout=5)
            assert produced.responses[0].partitions[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
            forwarded = await stub.CreateTopics(cpb.CreateTopicsRequest(), timeout=5)
            assert forwarded.error_code == Errors.REQUEST_TIMED_OUT and forwarded.controller_id == -1
        finally:
            await channel.close()
            await server.stop(0)
            await nobody.close()
            logs.close()

    run(scenario())


def test_the_log_manager_never_opens_the_metadata_log_as_a_partition(tmp_path: Path):
    storage = open_metadata_storage(tmp_path, cluster_id="c", node_id=4, voters=[1])
    storage.log.close()
    assert (tmp_path / "__cluster_metadata-0").is_dir()
    logs = LogManager(tmp_path, LogConfig())
    logs.get_or_create("orders", 0)
    assert list(logs.logs) == [("orders", 0)]
    logs.close()
    assert "__cluster_metadata" not in (tmp_path / "recovery-point-offset-checkpoint").read_text()


def test_a_replaced_image_removes_the_topics_it_lacks():
    before, after = MetadataImage(), MetadataImage()
    before.apply(mpb.MetadataRecord(topic=mpb.TopicRecord(name="gone", topic_id=b"g" * 16)), 1)
    after.apply(mpb.MetadataRecord(topic=mpb.TopicRecord(name="kept", topic_id=b"k" * 16)), 1)
    after.apply(mpb.MetadataRecord(partition=mpb.PartitionRecord(
        partition_id=0, topic_id=b"k" * 16, replicas=[1], isr=[1], leader=1)), 2)
    delta = full_delta(after, before)
    assert set(delta.removed_topics) == {b"g" * 16}
    assert delta.created_topics == {b"k" * 16} and delta.changed_partitions == {(b"k" * 16, 0)}


def test_log_jobs_follow_kafkas_intervals(tmp_path: Path):
    logs = LogManager(tmp_path, LogConfig())
    names = [name for name, _, _ in LogJobs(logs, LogJobIntervals()).jobs()]
    # the flush scheduler is off by default, as in Kafka
    assert names == ["retention", "checkpoint", "high-watermark-checkpoint", "idle-segments", "cleaner"]
    fast = LogJobs(logs, LogJobIntervals(flush_scheduler_ms=10, recovery_point_checkpoint_ms=10, cleaner_enable=False))
    assert [(n, ms) for n, ms, _ in fast.jobs()] == [("flush", 10), ("retention", 300_000), ("checkpoint", 10),
                                                    ("high-watermark-checkpoint", 5000), ("idle-segments", 60_000)]

    checkpoint = tmp_path / "recovery-point-offset-checkpoint"

    async def scenario():
        fast.start()
        logs.get_or_create("t", 0)
        await until(lambda: checkpoint.exists() and "t 0 0" in checkpoint.read_text())
        await fast.stop()

    run(scenario())
    logs.close()


def test_a_controlled_shutdown_with_no_quorum_leader_is_skipped(caplog):
    """The last node of a combined cluster: no controller answers, and the
    quorum has no leader - the wait ends without its (long) timeout. With a
    leader known, the same silence is waited out to the timeout."""
    def answer(name, request):
        if name == "BrokerRegistration":
            return response(name, controller_id=1, broker_epoch=1)
        return response(name, controller_id=1, is_caught_up=True, should_shut_down=False)

    async def scenario():
        async with scripted_lifecycle(answer, heartbeat_interval_ms=50) as (_, lifecycle):
            await until(lambda: lifecycle.broker_epoch == 1)
            with caplog.at_level("WARNING", logger="broker.lifecycle"):
                assert not await lifecycle.controlled_shutdown(0.5, quorum_leader=lambda: 1)
                assert "no controlled shutdown within 0.5s" in caplog.text
                caplog.clear()
                assert not await lifecycle.controlled_shutdown(600, quorum_leader=lambda: None)
                assert "the metadata quorum has had no leader" in caplog.text

    run(scenario())


def test_stopping_the_lifecycle_as_it_is_woken_ends_it():
    """asyncio.wait_for (Python 3.11) swallows a cancellation that comes with
    the event it waits on: stop() must end the loop all the same."""
    async def scenario():
        answer = lambda name, _: response(  # noqa: E731
            name, controller_id=1, **({"broker_epoch": 1} if name == "BrokerRegistration" else {}))
        async with scripted_lifecycle(answer, heartbeat_interval_ms=10_000) as (controller, lifecycle):
            await until(lambda: len(controller.requests) >= 2)  # registered, first heartbeat answered:
            await asyncio.sleep(0.3)  # now it sleeps for the heartbeat interval
            lifecycle._wake.set()
            async with asyncio.timeout(5):  # stop() runs at once, in this very loop iteration
                await lifecycle.stop()
            assert lifecycle._task is not None and lifecycle._task.done()

    run(scenario())


def test_a_replaced_image_brings_its_topic_settings_to_partitions_already_open(tmp_path: Path):
    from .helpers import Cluster as ReplicaCluster

    cluster = ReplicaCluster(tmp_path, broker_ids=(1,))
    cluster.create_topic("t", {0: [1]})
    partition = cluster[1].partitions[("t", 0)]
    assert partition.log.config.retention_ms != 1234
    # The image a snapshot brings: the same topic, with a setting the broker never saw as a delta.
    snapshot_image = MetadataImage.from_snapshot(cluster.image.snapshot())
    snapshot_image.apply(mpb.MetadataRecord(config=mpb.ConfigRecord(
        resource_type=mpb.TOPIC, resource_name="t", name="retention.ms", value="1234")), cluster.offset + 1)
    delta = full_delta(snapshot_image, cluster.image)
    assert (mpb.BROKER, "") in delta.changed_configs
    cluster[1].apply_metadata(snapshot_image, delta)
    assert partition.log.config.retention_ms == 1234
