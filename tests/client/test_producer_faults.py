"""The producer through faults of a real cluster (3 controllers + 3 brokers):
idempotence keeps a partition free of duplicates and reordering across a
kill -9 of its leader and across lost responses (a SIGSTOPped follower holds
acks=all back until the client times out and resends batches the leader has
already appended); acks, retries and delivery.timeout.ms with a broker down."""
from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from typing import Iterator

import pytest

from client.errors import KafkaError
from client.producer import AsyncProducer, Producer, RecordMetadata
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until

from .producer_helpers import leader_of, read_records

# A stopped broker is fenced (and leaves the ISR) only after 8 s: time for
# several request timeouts of 1 s while acks=all waits for it.
PROPERTIES = {"broker.session.timeout.ms": 8000, "broker.heartbeat.interval.ms": 500,
              "replica.lag.time.max.ms": 10000}
STREAM_DEADLINE_S = 120  # bounds every produce loop; never part of an assert


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("producer-faults"), properties=PROPERTIES).running() as c:
        yield c


def bootstrap(cluster: LocalCluster) -> str:
    return cluster.bootstrap


def restart(cluster: LocalCluster, broker: int) -> None:
    cluster.start(broker)
    cluster.wait_for_brokers(timeout=60)


@contextlib.contextmanager
def brought_back(cluster: LocalCluster, broker: int) -> Iterator[None]:
    """The broker a test kills or stops is started again when the block ends, also when the test
    fails: the module's tests share the cluster, and each needs every broker."""
    try:
        yield
    finally:
        if not cluster.alive(broker):
            restart(cluster, broker)


def isr(cluster: LocalCluster, topic: str) -> set[int]:
    return set(cluster.wait_for_leaders(topic).partitions[0].isr_nodes)


def assert_exactly_once_in_order(cluster: LocalCluster, topic: str, count: int,
                                 results: list) -> None:
    failed = [r for r in results if not isinstance(r, RecordMetadata)]
    assert not failed, failed[:3]
    stored = [int(r.value) for r in read_records(cluster, topic, 0, count)]
    assert stored == list(range(count)), (len(stored), [v for v in stored if stored.count(v) > 1][:5])
    offsets = [r.offset for r in results if r.offset >= 0]  # -1: a duplicate whose offset the broker forgot
    assert offsets == sorted(set(offsets))


async def wait_for_metric(producer: AsyncProducer, name: str, at_least: int) -> None:
    deadline = time.monotonic() + STREAM_DEADLINE_S
    while producer.metrics()[name] < at_least:
        assert time.monotonic() < deadline, f"{name} stayed at {producer.metrics()[name]}"
        await asyncio.sleep(0.05)


def test_kill_9_of_the_leader_during_a_stream_leaves_no_duplicate_and_no_gap(cluster) -> None:
    name = "killed-leader"
    cluster.create_topic(name, 1, 3, configs={"min.insync.replicas": "2"})
    victim = leader_of(cluster, name, 0)
    count = 20000

    async def stream() -> tuple[list, dict]:
        async with AsyncProducer({"bootstrap.servers": bootstrap(cluster), "batch.size": 2048,
                                  "request.timeout.ms": 5000}) as producer:
            futures = []
            for i in range(count):
                futures.append(producer.produce(name, str(i), partition=0))
                if i % 500 == 499:
                    await asyncio.wait_for(futures[-500], STREAM_DEADLINE_S)  # keep ~500 records in flight
                if i == count // 3:
                    await asyncio.get_running_loop().run_in_executor(None, cluster.kill, victim)
            results = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), STREAM_DEADLINE_S)
            return results, producer.metrics()

    with brought_back(cluster, victim):
        results, metrics = asyncio.run(stream())
        assert metrics["record-retry-total"] > 0  # the kill caught batches on their way
        assert leader_of(cluster, name, 0) != victim
        assert_exactly_once_in_order(cluster, name, count, results)


@pytest.mark.parametrize("idempotent", [False, True])
def test_resent_batches_the_leader_already_appended_are_not_duplicated(cluster, idempotent: bool) -> None:
    """A stopped follower holds acks=all back; the producer times out after
    request.timeout.ms and sends the same batches again while the leader
    already has them. Without idempotence that duplicates (which shows the
    fault really happens); with it, nothing is duplicated."""
    name = f"lost-responses-{idempotent}"
    cluster.create_topic(name, 1, 3, configs={"min.insync.replicas": "2"})
    leader = leader_of(cluster, name, 0)
    wait_until(lambda: isr(cluster, name) == set(cluster.brokers), 30, "full ISR")
    follower = next(b for b in cluster.brokers if b != leader)
    count = 400

    async def run() -> tuple[list, dict]:
        async with AsyncProducer({"bootstrap.servers": bootstrap(cluster), "enable.idempotence": idempotent,
                                  "batch.size": 1024, "linger.ms": 0, "request.timeout.ms": 1000,
                                  "retry.backoff.ms": 50}) as producer:
            cluster.signal(follower, signal.SIGSTOP)
            try:
                futures = [producer.produce(name, str(i), partition=0) for i in range(count)]
                # Every batch is on the leader; wait until some were sent twice.
                await wait_for_metric(producer, "record-retry-total", 100)
            finally:
                cluster.signal(follower, signal.SIGCONT)
            results = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), STREAM_DEADLINE_S)
            return results, producer.metrics()

    results, metrics = asyncio.run(run())
    assert metrics["record-retry-total"] >= 100
    if idempotent:
        assert_exactly_once_in_order(cluster, name, count, results)
    else:
        stored = [int(r.value) for r in read_records(cluster, name, 0, count + 1)]
        assert len(stored) > count and set(stored) == set(range(count))  # duplicates
    wait_until(lambda: isr(cluster, name) == set(cluster.brokers), 60, "follower back in the ISR")


def test_an_epoch_bump_does_not_renumber_retries_the_leader_already_appended(cluster) -> None:
    """slow-follower seed 2 (docs/chaos.md): a stopped follower holds acks=all
    back, so appended batches are retried; the oldest expire (delivery.timeout.ms)
    and the producer bumps its epoch. A retry renumbered under the new epoch
    would be appended a second time; kept under its first stamp it is answered
    as a duplicate."""
    name = "bump-after-expiry"
    cluster.create_topic(name, 1, 3, configs={"min.insync.replicas": "2"})
    leader = leader_of(cluster, name, 0)
    wait_until(lambda: isr(cluster, name) == set(cluster.brokers), 30, "full ISR")
    follower = next(b for b in cluster.brokers if b != leader)
    count = 40

    async def run() -> tuple[list, dict]:
        async with AsyncProducer({"bootstrap.servers": bootstrap(cluster), "linger.ms": 0,
                                  "request.timeout.ms": 1000, "delivery.timeout.ms": 2500,
                                  "retry.backoff.ms": 50}) as producer:
            cluster.signal(follower, signal.SIGSTOP)
            try:
                futures = []
                for i in range(count):  # one batch every 100 ms: some expire, later ones are retried
                    futures.append(producer.produce(name, str(i), partition=0))
                    await asyncio.sleep(0.1)
                await wait_for_metric(producer, "record-error-total", 1)  # the oldest expired
            finally:
                cluster.signal(follower, signal.SIGCONT)
            results = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), STREAM_DEADLINE_S)
            await wait_for_metric(producer, "producer-epoch-bump-total", 1)
            return results, producer.metrics()

    results, metrics = asyncio.run(run())
    assert metrics["record-retry-total"] > 0
    delivered = {i for i, r in enumerate(results) if isinstance(r, RecordMetadata)}
    assert delivered and len(delivered) < count  # some expired (outcome unknown), some got through
    stored = [int(r.value) for r in read_records(cluster, name, 0, len(delivered))]
    assert sorted(stored) == sorted(set(stored)), sorted(v for v in set(stored) if stored.count(v) > 1)
    assert delivered <= set(stored) <= set(range(count))
    offsets = [r.offset for r in results if isinstance(r, RecordMetadata) and r.offset >= 0]
    assert len(offsets) == len(set(offsets))
    wait_until(lambda: isr(cluster, name) == set(cluster.brokers), 60, "follower back in the ISR")


def test_acks_retries_and_delivery_timeout_with_a_broker_down(cluster) -> None:
    cluster.create_topic("strict", 1, 3, configs={"min.insync.replicas": "3"})
    cluster.create_topic("offline", 1, 1)
    victim = leader_of(cluster, "offline", 0)
    # Stopped (SIGTERM: a controlled shutdown takes it out of every ISR at once, where a kill -9
    # leaves it there for the 8 s session timeout; kill -9 is the test above).
    with brought_back(cluster, victim):
        cluster.stop(victim)
        wait_until(lambda: victim not in isr(cluster, "strict"), 60, f"broker {victim} out of the ISR")
        boot = bootstrap(cluster)

        async def one(topic: str, **config) -> tuple[object, dict]:
            async with AsyncProducer({"bootstrap.servers": boot, "enable.idempotence": False, "linger.ms": 0,
                                      "request.timeout.ms": 1000, "delivery.timeout.ms": 4000,
                                      "retry.backoff.ms": 50, **config}) as producer:
                [result] = await asyncio.gather(producer.produce(topic, b"x"), return_exceptions=True)
                return result, producer.metrics()

        # acks=all with 2 of 3 replicas in sync and min.insync.replicas=3: refused,
        # retried until delivery.timeout.ms, then failed with the broker's error
        # (or expired while it waited out a backoff, as Kafka reports it).
        refused, metrics = asyncio.run(one("strict", acks="all"))
        assert isinstance(refused, KafkaError) and refused.name in ("NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT")
        assert metrics["record-retry-total"] >= 1 and metrics["record-error-total"] == 1
        # retries=0: the first refusal is final.
        refused_once, metrics = asyncio.run(one("strict", acks="all", retries=0))
        assert isinstance(refused_once, KafkaError) and refused_once.name == "NOT_ENOUGH_REPLICAS"
        assert metrics["record-send-total"] == 1 and metrics["record-retry-total"] == 0
        # acks=1 needs the leader only.
        accepted, _ = asyncio.run(one("strict", acks=1))
        assert isinstance(accepted, RecordMetadata) and accepted.offset == 0
        # The only replica is down: no leader to send to, the batch expires.
        expired, metrics = asyncio.run(one("offline", acks=1))
        assert isinstance(expired, KafkaError) and expired.name in ("REQUEST_TIMED_OUT", "NETWORK_EXCEPTION")
        assert metrics["record-error-total"] == 1
        # Records that cannot leave fill buffer.memory: send() and the sync
        # produce() wait max.block.ms for room, then give up.
        full_config = {"bootstrap.servers": boot, "buffer.memory": 10000, "batch.size": 2000, "max.block.ms": 500,
                       "request.timeout.ms": 1000, "delivery.timeout.ms": 4000}

        async def full_buffer() -> tuple[list, BaseException]:
            async with AsyncProducer(full_config) as producer:
                # Each record is larger than batch.size: a batch of its own, 2082 bytes of buffer.memory.
                queued = [await producer.send("offline", b"y" * 2000) for _ in range(5)]
                with pytest.raises(KafkaError) as blocked:
                    await producer.send("offline", b"z")
                return await asyncio.gather(*queued, return_exceptions=True), blocked.value

        queued, blocked = asyncio.run(full_buffer())
        assert blocked.name == "REQUEST_TIMED_OUT" and "buffer.memory" in str(blocked)
        assert {getattr(r, "name", None) for r in queued} <= {"REQUEST_TIMED_OUT", "NETWORK_EXCEPTION"}
        with Producer(full_config) as producer:
            waiting = [producer.produce("offline", b"y" * 2000) for _ in range(5)]
            wait_until(lambda: producer.buffered_bytes >= 10000, 30, "records buffered")
            with pytest.raises(KafkaError, match="REQUEST_TIMED_OUT.*buffer.memory"):
                producer.produce("offline", b"z")
            assert all(f.exception(timeout=30) is not None for f in waiting)
    assert read_records(cluster, "offline", 0) == []  # nothing of it was written
