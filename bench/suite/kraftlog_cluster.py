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
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml
from prometheus_client.parser import text_string_to_metric_families

from bench import cluster as cluster_bench
from bench.bench_results import percentile
from client.admin import describe_quorum
from client.consumer import Consumer, TopicPartition
from client.producer import AsyncProducer
from client.producer_batch import load_compiled_encoder
from devcluster.local_cluster import KAFKA_CLIENTS_PROPERTIES, LocalCluster
from devcluster.local_processes import wait_until
from kraftlog_server.metrics.loop_lag import NAME as LOOP_LAG
from kafka_protocol.batch import batch_extent, iter_headers

from . import REPO_ROOT

PARTITIONS = 6
CHUNK = 1000  # records queued between two turns of the event loop
ARROW_ROWS = 100_000  # rows per produce_arrow() call and at most per poll_arrow()
PRODUCER_SETTINGS = {"batch.size": 65536, "linger.ms": 5, "max.in.flight.requests.per.connection": 5}
LATENCY_LINGER_MS = 1
REQUEST_TIME = "kafka_network_requestmetrics_totaltimems"


def local_yaml_defaults() -> dict[str, Any]:
    """deploy/local.yaml's cluster-wide settings, plus bench/cluster.py's short broker session (failover)."""
    defaults = yaml.safe_load((REPO_ROOT / "deploy" / "local.yaml").read_text())["defaults"]
    return {**defaults, **cluster_bench.PROPERTIES, "kraftlog.log.level": "WARNING"}


def start_cluster(directory: Path, brokers: int, properties: Optional[dict[str, Any]] = None,
                  combined: bool = False) -> LocalCluster:
    """3 controllers + 3 brokers (deploy/local.yaml), or 1 + 1; topics rf1 (and rf3 with 3 brokers).
    Every broker has a second listener, CLIENTS, speaking Kafka's binary protocol (kafka_bootstrap()).
    `properties` are added to every node's; `combined`: `brokers` broker,controller nodes instead
    (half the processes: bench/produce_latency.py)."""
    shape = {"combined": brokers} if combined else {"controllers": 3 if brokers == 3 else 1, "brokers": brokers}
    cluster = LocalCluster(directory, **shape,
                           properties={**local_yaml_defaults(), **KAFKA_CLIENTS_PROPERTIES, **(properties or {})},
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

    async def prepare(self) -> None:
        await super().prepare()
        # The batches' compiled encoder loaded before the clock starts, as ArrowProduceJob's kernel
        # (a producer otherwise loads it in a thread once its first full batch is sent).
        await asyncio.to_thread(load_compiled_encoder)

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
class ArrowProduceJob(_ProducerJob):
    """produce_arrow(): the records as pyarrow tables of ARROW_ROWS rows, built before the clock starts."""
    bootstrap: str
    topic: str
    records: int
    value_bytes: int
    acks: str
    seconds: float

    def settings(self) -> dict[str, Any]:
        return {"acks": self.acks, "enable.idempotence": False}

    async def prepare(self) -> None:
        import pyarrow as pa
        await super().prepare()
        rows = min(ARROW_ROWS, self.records)
        self._table = pa.table({"value": pa.array([bytes(self.value_bytes)] * rows, pa.binary())})
        await self._producer.produce_arrow(self.topic, self._table.slice(0, 10))  # compiles or loads the kernel

    async def run(self) -> dict[str, Any]:
        producer = self._producer
        deadline = time.monotonic() + self.seconds
        sent = 0
        while sent < self.records and time.monotonic() < deadline:
            await producer.wait_for_room()
            table = self._table.slice(0, min(self._table.num_rows, self.records - sent))
            await producer.produce_arrow(self.topic, table)
            sent += table.num_rows
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
    linger_ms: float = LATENCY_LINGER_MS

    def settings(self) -> dict[str, Any]:
        return {"acks": "all", "enable.idempotence": True, "linger.ms": self.linger_ms}

    async def run(self) -> dict[str, Any]:
        producer, value = self._producer, bytes(self.value_bytes)
        latencies: list[float] = []

        def acknowledged_since(sent_at: float):  # type: ignore[no-untyped-def]
            def done(future: asyncio.Future) -> None:
                if not future.cancelled() and future.exception() is None:
                    latencies.append(time.monotonic() - sent_at)
            return done

        started, (ran_from, waited_from) = time.monotonic(), schedstat()
        sent = 0
        lags: list[float] = []  # the client's own scheduling delay: how late each 1 ms tick woke
        while (now := time.monotonic()) - started < self.seconds:
            for _ in range(int((now - started) * self.rate) - sent):
                producer.produce(self.topic, value).add_done_callback(acknowledged_since(time.monotonic()))
                sent += 1
            slept_from = time.monotonic()
            await asyncio.sleep(0.001)
            lags.append(max(time.monotonic() - slept_from - 0.001, 0.0))
        ran, waited = (now - then for now, then in zip(schedstat(), (ran_from, waited_from)))
        await producer.flush(timeout=120)
        ordered, lags = sorted(latencies), sorted(lags)
        ms = {f"p{name}_ms": percentile(ordered, q) * 1000 for name, q in (("50", .5), ("99", .99), ("99.9", .999))}
        client_lag = {f"client_lag_p{name}_ms": percentile(lags, q) * 1000 for name, q in (("50", .5), ("99", .99))}
        return {"records": len(ordered), "target_rate": self.rate, **ms, **client_lag,
                "client_ran_s": ran, "client_runqueue_wait_s": waited}


@dataclass
class ConsumeJob:
    """The consumer, assigned every partition, from the beginning: decoded records until `records`;
    `arrow`: decoded into Arrow rows by poll_arrow() instead of ConsumerRecords by poll()."""
    bootstrap: str
    topic: str
    records: int
    seconds: float
    arrow: bool = False

    async def prepare(self) -> None:
        self._consumer = Consumer({"bootstrap.servers": self.bootstrap, "auto.offset.reset": "earliest",
                                   "max.poll.records": 10_000})
        self._consumer.assign([TopicPartition(self.topic, p) for p in range(PARTITIONS)])
        if self.arrow:  # the compiled decode loaded (or compiled) before the clock starts
            from kafka_protocol.columnar_records import decode_columns
            from kafka_protocol.records import Record, encode_batch
            decode_columns(encode_batch([Record(None, b"warm-up", 0)]), 0, 1, need_headers=False)

    async def run(self) -> dict[str, Any]:
        read = 0
        deadline = time.monotonic() + self.seconds
        if self.arrow:
            while read < self.records and time.monotonic() < deadline:
                read += self._consumer.poll_arrow(1.0, max_records=ARROW_ROWS).num_rows
        else:
            while read < self.records and time.monotonic() < deadline:
                read += len(self._consumer.poll(1.0))
        return {"records": read}

    async def close(self) -> None:
        if hasattr(self, "_consumer"):
            await asyncio.to_thread(self._consumer.close)


Buckets = dict[float, float]  # le -> cumulative samples


def histogram_buckets(address: str, name: str, **labels: str) -> Buckets:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return {float(s.labels["le"]): s.value for f in text_string_to_metric_families(text) if f.name == name
            for s in f.samples if s.name == name + "_bucket"
            and all(s.labels.get(k) == v for k, v in labels.items())}


# What is pooled over the nodes: the event-loop lag (s) and the brokers' time per Produce (ms, the
# client's wait minus its own queueing and the network) and per follower Fetch.
HISTOGRAMS = {"lag": (LOOP_LAG, {}), "produce": (REQUEST_TIME, {"request": "Produce"}),
              "follower_fetch": (REQUEST_TIME, {"request": "FetchFollower"})}


def scrape_histograms(cluster: Any) -> dict[str, dict[int, Buckets]]:
    return {key: {node: histogram_buckets(address, name, **labels)
                  for node, address in cluster.metrics_addresses.items()}
            for key, (name, labels) in HISTOGRAMS.items()}


def quantile_bound(buckets: Buckets, q: float) -> float:
    """The upper bound of the bucket holding the q-quantile (seconds; inf past the last)."""
    ordered = sorted(buckets.items())
    total = ordered[-1][1] if ordered else 0
    for le, count in ordered:
        if total and count >= q * total:
            return le
    return float("nan")


def pooled_delta(after: dict[int, Buckets], before: dict[int, Buckets]) -> Buckets:
    """The samples every node took between two scrapes, pooled."""
    pooled: Counter[float] = Counter()
    for node, buckets in after.items():
        for le, count in buckets.items():
            pooled[le] += count - before[node].get(le, 0)
    return dict(pooled)


def schedstat(pid: int | str = "self") -> tuple[float, float]:
    """(seconds run, seconds waited runnable on a run queue) of the process's main thread, from the
    kernel (/proc/PID/schedstat): the machine's share of the scheduling delay, apart from our own."""
    ran_ns, waited_ns, _ = Path(f"/proc/{pid}/schedstat").read_text().split()
    return int(ran_ns) / 1e9, int(waited_ns) / 1e9


RAW_FETCH_MODES = ("one_at_a_time", "all_in_flight", "pipelined", "aio_pipelined", "aio_streamed")
RAW_FETCH_ROW_MODE = "aio_streamed"  # the suite's kraftlog.fetch.raw, as the consumer fetches (docs/bench.md, "Raw fetch")


@dataclass
class RawFetchJob:
    """Every partition of `topic` read whole from its leader `reads` times,
    batches left undecoded (their headers walked for the next offset), in
    its own process (run_jobs counts its CPU and the servers'). `mode`:
    one_at_a_time (one Fetch, one partition, at a time), all_in_flight (one
    Fetch per partition in flight at once, the next round when all are
    back), pipelined (one Fetch per partition always in flight: a partition's
    next one leaves as its answer arrives, so a leader of several always has
    one to read while gRPC moves another; blocking gRPC's futures), and
    aio_pipelined (the same on grpc.aio, one task per partition), and
    aio_streamed (aio_pipelined's fetches on one FetchStream per leader, all
    of its partitions' fetches in flight on it, as the consumer's fetcher
    sends on the stream). The first two walk every batch header
    (iter_headers: the row as it was); the pipelined ones read four fields a
    batch (batch_extent), all a raw reader needs to go on."""
    leaders: dict[int, str]  # partition -> its leader's address
    topic: str
    mode: str = "one_at_a_time"
    reads: int = 1
    profile: str = ""  # a path: py-spy records this process there while it runs (bench/raw_fetch.py)
    partition_max_bytes: int = 4 << 20

    async def prepare(self) -> None:
        import grpc

        from client.channels import open_channel
        from kafka_protocol.fetch_framing import broker_stub
        if self.mode not in RAW_FETCH_MODES:
            raise ValueError(f"unknown raw fetch mode {self.mode!r}")
        if self.mode.startswith("aio_"):
            from client.channels import open_async_channel
            channels = {address: open_async_channel(address) for address in set(self.leaders.values())}
            for channel in channels.values():
                await asyncio.wait_for(channel.channel_ready(), 30)
        else:
            channels = {address: open_channel(address) for address in set(self.leaders.values())}
            for channel in channels.values():
                grpc.channel_ready_future(channel).result(timeout=30)
        self._channels = list(channels.values())
        self._stubs = {p: broker_stub(channels[a]) for p, a in self.leaders.items()}
        if self.mode == "aio_streamed":
            from kafka_protocol.fetch_framing import fetch_stream
            from kafka_protocol.in_order_calls import InOrderCalls
            led = Counter(self.leaders.values())
            streams = {a: InOrderCalls(fetch_stream(channels[a]), max_in_flight=led[a]) for a in led}
            self._streams = {p: streams[a] for p, a in self.leaders.items()}
        self._spy = None
        if self.profile:
            import os
            import subprocess

            from .processes import py_spy
            self._spy = subprocess.Popen([py_spy(), "record", "--nonblocking", "-r", "200", "-d", "60", "-p",
                                          str(os.getpid()), "-f", "raw", "-o", self.profile],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)  # attached before the clock starts

    async def run(self) -> dict[str, Any]:
        fetched = records = 0
        for _ in range(self.reads):
            got = (await self._aio_pipelined() if self.mode.startswith("aio_")
                   else getattr(self, f"_{self.mode}")())
            fetched, records = fetched + got[0], records + got[1]
        return {"records": records, "bytes": fetched}

    def _request(self, partition: int, offset: int) -> Any:
        return cluster_bench.raw_fetch_request(self.topic, partition, offset, self.partition_max_bytes)

    def _one_at_a_time(self) -> tuple[int, int]:
        positions = dict.fromkeys(self.leaders, 0)
        fetched = records = 0
        pending = set(self.leaders)
        while pending:
            for partition in sorted(pending):
                answer = self._stubs[partition].Fetch(
                    self._request(partition, positions[partition]), timeout=30)
                got = _walk(answer.responses[0].partitions[0].records)
                if got is None:
                    pending.discard(partition)
                    continue
                fetched, records, positions[partition] = fetched + got[0], records + got[1], got[2]
        return fetched, records

    def _all_in_flight(self) -> tuple[int, int]:
        positions = dict.fromkeys(self.leaders, 0)
        fetched = records = 0
        pending = set(self.leaders)
        while pending:
            calls = {partition: self._stubs[partition].Fetch.future(
                         self._request(partition, positions[partition]), timeout=30)
                     for partition in pending}
            for partition, call in calls.items():
                got = _walk(call.result().responses[0].partitions[0].records)
                if got is None:
                    pending.discard(partition)
                    continue
                fetched, records, positions[partition] = fetched + got[0], records + got[1], got[2]
        return fetched, records

    def _pipelined(self) -> tuple[int, int]:
        import queue
        answers: queue.SimpleQueue = queue.SimpleQueue()

        def send(partition: int, offset: int) -> None:
            call = self._stubs[partition].Fetch.future(self._request(partition, offset),
                                                       timeout=30)
            call.add_done_callback(lambda done: answers.put((partition, done)))

        for partition in self.leaders:
            send(partition, 0)
        fetched = records = 0
        pending = len(self.leaders)
        while pending:
            partition, call = answers.get()
            got = _extent(call.result().responses[0].partitions[0].records)
            if got is None:
                pending -= 1
                continue
            fetched, records = fetched + got[0], records + got[1]
            send(partition, got[2])
        return fetched, records

    async def _aio_pipelined(self) -> tuple[int, int]:
        streamed = self.mode == "aio_streamed"

        async def one(partition: int) -> tuple[int, int]:
            fetched = records = offset = 0
            while True:
                request = self._request(partition, offset)
                answer = await (self._streams[partition].call(request, 30) if streamed
                                else self._stubs[partition].Fetch(request, timeout=30))
                got = _extent(answer.responses[0].partitions[0].records)
                if got is None:
                    return fetched, records
                fetched, records, offset = fetched + got[0], records + got[1], got[2]
        done = await asyncio.gather(*(one(p) for p in self.leaders))
        return sum(d[0] for d in done), sum(d[1] for d in done)

    async def close(self) -> None:
        for calls in set(getattr(self, "_streams", {}).values()):
            calls.end()
        if getattr(self, "_spy", None) is not None:
            import signal
            self._spy.send_signal(signal.SIGINT)  # py-spy writes what it sampled
            self._spy.wait(timeout=30)
        for channel in getattr(self, "_channels", ()):
            closed = channel.close()
            if closed is not None:  # grpc.aio's close is a coroutine
                await closed


def _walk(data: Any) -> Optional[tuple[int, int, int]]:
    """(bytes, records, next offset) of a partition's fetched batches; None when there were none."""
    if not len(data):
        return None
    records = 0
    last = None
    for _, header in iter_headers(data, validate=False):
        last = header
        records += header.records_count
    assert last is not None
    return len(data), records, last.last_offset + 1


def _extent(data: Any) -> Optional[tuple[int, int, int]]:
    """_walk's answer from four header fields a batch (batch_extent)."""
    if not len(data):
        return None
    records, next_offset = batch_extent(data)
    return len(data), records, next_offset


def raw_fetch_job(cluster: LocalCluster, topic: str, mode: str, reads: int = 1) -> RawFetchJob:
    led = cluster_bench.leaders(cluster, topic)
    return RawFetchJob({p: cluster.broker_addresses[b] for p, b in led.items()}, topic, mode, reads)


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
