"""kraftlog in the suite: a cluster shaped and configured as deploy/local.yaml
(3 controllers + 3 brokers, on free ports) and a one-broker variant; the
client library's producer and consumer in their own processes (jobs below);
raw fetch and partition failover from bench/cluster.py; controller failover.

Producer settings: batch.size 64 KiB, linger.ms 5 (Kafka's default linger),
5 requests in flight per broker; values of `value_bytes` zero bytes, no key
(sticky partitioning), no compression - the same bytes the peers are sent.
"""
from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from bench import cluster as cluster_bench
from bench.bench_results import percentile
from client.admin import describe_quorum
from client.consumer import Consumer, TopicPartition
from client.producer import AsyncProducer
from devcluster.local_cluster import KAFKA_CLIENTS_PROPERTIES, LocalCluster
from devcluster.local_processes import wait_until

from . import REPO_ROOT

PARTITIONS = 6
CHUNK = 1000  # records queued between two turns of the event loop
PRODUCER_SETTINGS = {"batch.size": 65536, "linger.ms": 5, "max.in.flight.requests.per.connection": 5}
LATENCY_LINGER_MS = 1


def local_yaml_defaults() -> dict[str, Any]:
    """deploy/local.yaml's cluster-wide settings, plus bench/cluster.py's short broker session (failover)."""
    defaults = yaml.safe_load((REPO_ROOT / "deploy" / "local.yaml").read_text())["defaults"]
    return {**defaults, **cluster_bench.PROPERTIES, "kraftlog.log.level": "WARNING"}


def start_cluster(directory: Path, brokers: int) -> LocalCluster:
    """3 controllers + 3 brokers (deploy/local.yaml), or 1 + 1; topics rf1 (and rf3 with 3 brokers).
    Every broker has a second listener, CLIENTS, speaking Kafka's binary protocol (kafka_bootstrap())."""
    cluster = LocalCluster(directory, controllers=3 if brokers == 3 else 1, brokers=brokers,
                           properties={**local_yaml_defaults(), **KAFKA_CLIENTS_PROPERTIES},
                           client_listener="PLAINTEXT")
    try:
        cluster.start()
        cluster.wait_for_brokers(timeout=120)
        cluster.create_topic("rf1", PARTITIONS, 1, timeout=60)
        cluster.wait_for_leaders("rf1", timeout=60)
        if brokers == 3:
            cluster.create_topic("rf3", PARTITIONS, 3, {"min.insync.replicas": "2"}, timeout=60)
            cluster.wait_for_leaders("rf3", timeout=60)
    except BaseException:
        cluster.close()
        raise
    return cluster


def bootstrap(cluster: LocalCluster) -> str:
    return cluster.bootstrap


def kafka_bootstrap(cluster: LocalCluster) -> str:
    """The brokers' Kafka-protocol listeners, for Kafka's own clients (librdkafka)."""
    return cluster.client_bootstrap


class _ProducerJob:
    """A job with an AsyncProducer, warmed up (metadata, producer id) before the clock starts."""
    bootstrap: str
    topic: str

    def settings(self) -> dict[str, Any]:
        raise NotImplementedError

    async def prepare(self) -> None:
        self._producer = AsyncProducer({"bootstrap.servers": self.bootstrap, **PRODUCER_SETTINGS, **self.settings()})
        await self._producer.produce(self.topic, b"warm-up")

    async def close(self) -> None:
        if hasattr(self, "_producer"):
            await self._producer.close(timeout=10)


@dataclass
class ProduceJob(_ProducerJob):
    bootstrap: str
    topic: str
    records: int
    value_bytes: int
    acks: str
    idempotence: bool
    seconds: float
    client_security: dict[str, Any] = field(default_factory=dict)  # security.protocol, sasl.*, ssl.*

    def settings(self) -> dict[str, Any]:
        return {**self.client_security, "acks": self.acks, "enable.idempotence": self.idempotence}

    async def run(self) -> dict[str, Any]:
        producer, value = self._producer, bytes(self.value_bytes)
        deadline = time.monotonic() + self.seconds
        sent = 0
        while sent < self.records and time.monotonic() < deadline:
            await producer.wait_for_room()
            n = min(CHUNK, self.records - sent)
            for _ in range(n):
                producer.produce(self.topic, value)
            sent += n
            await asyncio.sleep(0)  # let the sender drain
        undelivered = await producer.flush(timeout=300)
        errors = producer.metrics()["record-error-total"]
        return {"records": sent - errors - undelivered, "errors": errors, "undelivered": undelivered}


@dataclass
class LatencyJob(_ProducerJob):
    """Records at a fixed rate (in 1 ms ticks); each record's time from produce() to its acknowledgement."""
    bootstrap: str
    topic: str
    rate: float
    seconds: float
    value_bytes: int

    def settings(self) -> dict[str, Any]:
        return {"acks": "all", "enable.idempotence": True, "linger.ms": LATENCY_LINGER_MS}

    async def run(self) -> dict[str, Any]:
        producer, value = self._producer, bytes(self.value_bytes)
        latencies: list[float] = []

        def acknowledged_since(sent_at: float):  # type: ignore[no-untyped-def]
            def done(future: asyncio.Future) -> None:
                if not future.cancelled() and future.exception() is None:
                    latencies.append(time.monotonic() - sent_at)
            return done

        started = time.monotonic()
        sent = 0
        while (now := time.monotonic()) - started < self.seconds:
            for _ in range(int((now - started) * self.rate) - sent):
                producer.produce(self.topic, value).add_done_callback(acknowledged_since(time.monotonic()))
                sent += 1
            await asyncio.sleep(0.001)
        await producer.flush(timeout=120)
        ordered = sorted(latencies)
        ms = {f"p{name}_ms": percentile(ordered, q) * 1000 for name, q in (("50", .5), ("99", .99), ("99.9", .999))}
        return {"records": len(ordered), "target_rate": self.rate, **ms}


@dataclass
class ConsumeJob:
    """The consumer, assigned every partition, from the beginning: decoded records until `records`."""
    bootstrap: str
    topic: str
    records: int
    seconds: float

    async def prepare(self) -> None:
        self._consumer = Consumer({"bootstrap.servers": self.bootstrap, "auto.offset.reset": "earliest",
                                   "max.poll.records": 10_000})
        self._consumer.assign([TopicPartition(self.topic, p) for p in range(PARTITIONS)])

    async def run(self) -> dict[str, Any]:
        read = 0
        deadline = time.monotonic() + self.seconds
        while read < self.records and time.monotonic() < deadline:
            read += len(self._consumer.poll(1.0))
        return {"records": read}

    async def close(self) -> None:
        if hasattr(self, "_consumer"):
            await asyncio.to_thread(self._consumer.close)


def raw_fetch_mb_per_s(cluster: LocalCluster, topic: str) -> float:
    """Fetch RPCs straight to the leaders, batches left undecoded (bench/cluster.py)."""
    return cluster_bench.consume_throughput(cluster, topic)["fetched_mb_per_s"]


def partition_failover_s(cluster: LocalCluster, topic: str, trials: int) -> list[float]:
    """kill -9 of partition 0's leader until that partition takes an acks=all write again (bench/cluster.py)."""
    return cluster_bench.failover(cluster, topic, trials)["all_s"]


def controller_failover_s(cluster: LocalCluster, trials: int) -> list[float]:
    """kill -9 of the active controller until a metadata change (CreateTopics) commits again."""
    quorum = ",".join(cluster.controller_addresses.values())
    times = []
    for _ in range(trials):
        leader = describe_quorum(quorum, timeout=60)["leader_id"]
        cluster.kill(leader)
        killed = time.monotonic()
        cluster.create_topic(f"controller-failover-{uuid.uuid4().hex[:8]}", 1, 1, timeout=120)
        times.append(time.monotonic() - killed)
        cluster.start(leader)
        _wait_caught_up(quorum, leader)
    return times


def _wait_caught_up(quorum: str, voter: int) -> None:
    def caught_up() -> Optional[bool]:
        try:
            described = describe_quorum(quorum, timeout=5)
        except Exception:  # noqa: BLE001 - still electing
            return None
        return any(v["replica_id"] == voter and v["log_end_offset"] >= described["high_watermark"]
                   for v in described["voters"]) or None
    wait_until(caught_up, 120, f"controller {voter} caught up", interval=0.2)
