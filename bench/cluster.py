"""Cluster benchmark: 3 controllers + 3 brokers (LocalCluster) on this machine.

1. produce throughput, 100-byte records in ~16 KiB batches: RF 1 with acks=1,
   and RF 3 with acks=all (several batches in flight);
2. produce latency p50/p99 at a fixed moderate rate (RF 3, acks=all);
3. consume throughput (fetching everything back from the leaders);
4. partition-leader failover after kill -9 of a broker, with
   broker.session.timeout.ms=2000: from the kill until the partition it led
   takes an acks=all write again;
5. 10,000 partitions (RF 3, --per-topic partitions a topic) on a cluster of
   its own with Kafka's default timeouts (as deploy/local.yaml): the time the
   CreateTopics requests took, the time until a broker's Metadata shows a
   leader for every one of them, how many leader elections that took (the
   highest leader epoch: 0 means none beyond creation), then each broker's
   RSS, open file descriptors and CPU use while the partitions sit idle
   (followers long-poll every partition: replica.fetch.wait.max.ms).

    python -m bench.cluster [--seconds 10] [--quick] [--out bench/results/cluster.json]
    python -m bench.cluster --partitions-only [--partitions 10000] [--per-topic 100]
"""
from __future__ import annotations

import argparse
import os
import platform
import queue
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional


import grpc

from bench.bench_results import save_results, summarize
from devcluster.local_cluster import LocalCluster
from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.batch import iter_headers
from kafka_protocol.records import Record, encode_batch

RECORD_BYTES = 100
BATCH_RECORDS = 160  # 160 x ~110 bytes on disk ≈ 16 KiB
IN_FLIGHT = 8
PROPERTIES = {"broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500}


def batch_bytes() -> bytes:
    now = int(time.time() * 1000)
    return encode_batch([Record(None, os.urandom(RECORD_BYTES // 2).hex().encode(), now)
                         for _ in range(BATCH_RECORDS)])


def produce_request(topic: str, partition: int, data: bytes, acks: int) -> bpb.ProduceRequest:
    return bpb.ProduceRequest(acks=acks, timeout_ms=30_000, topics=[bpb.ProduceRequest.TopicData(
        name=topic, partitions=[bpb.ProduceRequest.PartitionData(index=partition, records=data)])])


def _ms(seconds: list[float]) -> dict[str, Any]:
    return {k: (round(v * 1000, 2) if k != "count" else v) for k, v in summarize(seconds).items()}


def leaders(cluster: LocalCluster, topic: str) -> dict[int, int]:
    found = cluster.wait_for_leaders(topic)
    return {p.partition_index: p.leader_id for p in found.partitions}


def throughput(cluster: LocalCluster, topic: str, acks: int, seconds: float) -> dict[str, Any]:
    """Keep IN_FLIGHT produce calls going round the partitions for `seconds`."""
    led = leaders(cluster, topic)
    data = batch_bytes()
    finished: "queue.Queue[tuple[Any, float]]" = queue.Queue()
    in_flight = 0
    latencies: list[float] = []
    errors = 0
    sent = 0
    deadline = time.monotonic() + seconds
    started = time.monotonic()
    while time.monotonic() < deadline or in_flight:
        while in_flight < IN_FLIGHT and time.monotonic() < deadline:
            partition = sent % len(led)
            began = time.monotonic()
            future = cluster.broker_stub(led[partition]).Produce.future(
                produce_request(topic, partition, data, acks), timeout=30)
            future.add_done_callback(lambda f, began=began: finished.put((f, began)))
            in_flight += 1
            sent += 1
        future, began = finished.get()
        in_flight -= 1
        try:
            ok = future.result().responses[0].partitions[0].error_code == 0
        except grpc.RpcError:
            ok = False
        if ok:
            latencies.append(time.monotonic() - began)
        else:
            errors += 1
    elapsed = time.monotonic() - started
    records = len(latencies) * BATCH_RECORDS
    return {"records_per_s": round(records / elapsed), "mb_per_s": round(records * RECORD_BYTES / elapsed / 1e6, 2),
            "batches": len(latencies), "errors": errors, "batch_bytes": len(data),
            "latency_ms": _ms(latencies)}


def paced_latency(cluster: LocalCluster, topic: str, rate_per_s: float, seconds: float) -> dict[str, Any]:
    """One acks=all batch at a time at a fixed rate: the latency a moderate load sees."""
    led = leaders(cluster, topic)
    data = batch_bytes()
    latencies = []
    interval = 1 / rate_per_s
    next_at = time.monotonic()
    deadline = next_at + seconds
    n = 0
    while time.monotonic() < deadline:
        time.sleep(max(0.0, next_at - time.monotonic()))
        partition = n % len(led)
        began = time.monotonic()
        response = cluster.broker_stub(led[partition]).Produce(produce_request(topic, partition, data, -1), timeout=30)
        if response.responses[0].partitions[0].error_code == 0:
            latencies.append(time.monotonic() - began)
        n += 1
        next_at += interval
    return {"batches_per_s": rate_per_s, "records_per_s": rate_per_s * BATCH_RECORDS, "latency_ms": _ms(latencies)}


def raw_fetch_request(topic: str, partition: int, offset: int,
                      partition_max_bytes: int = 4 << 20) -> bpb.FetchRequest:
    """A consumer's Fetch of one partition, 4 MiB at most (`partition_max_bytes`), no long poll."""
    fetch = bpb.FetchRequest.FetchPartition(partition=partition, current_leader_epoch=-1, fetch_offset=offset,
                                            last_fetched_epoch=-1, partition_max_bytes=partition_max_bytes)
    return bpb.FetchRequest(replica_id=-1, max_wait_ms=0, max_bytes=max(8 << 20, partition_max_bytes),
                            topics=[bpb.FetchRequest.FetchTopic(topic=topic, partitions=[fetch])])


def consume_throughput(cluster: LocalCluster, topic: str,
                       stub: Optional[Callable[[int], Any]] = None) -> dict[str, Any]:
    """Fetch every partition whole from its leader; `stub(broker_id)`: the
    broker stub to fetch with (default: the cluster's own)."""
    stub = stub or cluster.broker_stub
    led = leaders(cluster, topic)
    positions = dict.fromkeys(led, 0)
    records = fetched_bytes = 0
    started = time.monotonic()
    while True:
        got = 0
        for partition, leader in led.items():
            response = stub(leader).Fetch(raw_fetch_request(topic, partition, positions[partition]), timeout=30)
            data = response.responses[0].partitions[0].records
            if data:
                fetched_bytes += len(data)
                last = None
                for _, header in iter_headers(data, validate=False):
                    last = header
                    records += header.records_count
                    got += 1
                positions[partition] = last.last_offset + 1
        if not got:
            break
    elapsed = time.monotonic() - started
    return {"records": records, "records_per_s": round(records / elapsed),
            "mb_per_s": round(records * RECORD_BYTES / elapsed / 1e6, 2),
            "fetched_mb_per_s": round(fetched_bytes / elapsed / 1e6, 2)}


def failover(cluster: LocalCluster, topic: str, trials: int) -> dict[str, Any]:
    times = []
    data = batch_bytes()
    for _ in range(trials):
        led = leaders(cluster, topic)
        partition, victim = 0, led[0]
        cluster.kill(victim)
        killed = time.monotonic()
        while True:
            new = cluster.metadata(topics=[topic])
            leader = None
            if new is not None and new.topics and not new.topics[0].error_code:
                leader = new.topics[0].partitions[0].leader_id
            if leader not in (None, -1, victim):
                try:
                    response = cluster.broker_stub(leader).Produce(
                        produce_request(topic, partition, data, -1), timeout=5)
                    if response.responses[0].partitions[0].error_code == 0:
                        break
                except grpc.RpcError:
                    pass
            time.sleep(0.02)
        times.append(time.monotonic() - killed)
        cluster.start(victim)
        cluster.wait_for_brokers()
        # Back into every ISR before the next trial.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = cluster.metadata(topics=[topic])
            if found and all(victim in p.isr_nodes for p in found.topics[0].partitions):
                break
            time.sleep(0.2)
    return {"trials": trials, "median_s": round(statistics.median(times), 3), "max_s": round(max(times), 3),
            "all_s": [round(t, 3) for t in times]}


IDLE_SAMPLE_S = 10.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def idle_cpu_percent(pids: list[int], seconds: float) -> dict[int, float]:
    before = {pid: cpu_seconds(pid) for pid in pids}
    time.sleep(seconds)
    return {pid: round(100 * (cpu_seconds(pid) - before[pid]) / seconds, 1) for pid in pids}


def many_partitions(cluster: LocalCluster, count: int, per_topic: int = 100,
                    wait_s: float = 900) -> dict[str, Any]:
    started = time.monotonic()
    for t in range(count // per_topic):
        cluster.create_topic(f"scale-{t:04d}", per_topic, 3, timeout=120)
    created = time.monotonic() - started
    deadline = time.monotonic() + wait_s
    led = max_epoch = 0
    while time.monotonic() < deadline:
        answer = cluster.metadata(timeout=30)
        if answer is not None:
            scale = [p for topic in answer.topics if topic.name.startswith("scale-") for p in topic.partitions]
            led = sum(1 for p in scale if p.leader_id >= 0)
            max_epoch = max((p.leader_epoch for p in scale), default=0)
            if led >= count:
                break
        time.sleep(1)
    settled = time.monotonic() - started
    idle = idle_cpu_percent([cluster.pids[b] for b in cluster.brokers], IDLE_SAMPLE_S)
    brokers = {}
    for b in cluster.brokers:
        pid = cluster.pids[b]
        rss_kb = int(next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                          if line.startswith("VmRSS:")))
        brokers[b] = {"rss_mb": round(rss_kb / 1024, 1), "open_fds": len(os.listdir(f"/proc/{pid}/fd")),
                      "idle_cpu_percent": idle[cluster.pids[b]]}
    return {"partitions": count, "topics": count // per_topic, "replication_factor": 3,
            "create_requests_s": round(created, 2), "all_led": led >= count, "led": led,
            "all_led_s": round(settled, 2), "max_leader_epoch": max_epoch, "brokers": brokers}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--per-topic", type=int, default=100, help="partitions a topic in the --partitions run")
    parser.add_argument("--partitions-only", action="store_true", help="only the many-partitions run")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.trials, args.partitions = 3, 1, 600
    if args.out is None:
        name = "cluster-partitions.json" if args.partitions_only else "cluster.json"
        args.out = str(Path(__file__).parent / "results" / name)
    results: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                               "settings": {**vars(args), "sections_1_to_4": PROPERTIES, "record_bytes": RECORD_BYTES,
                                            "batch_records": BATCH_RECORDS, "in_flight": IN_FLIGHT}}
    if not args.partitions_only:
        with tempfile.TemporaryDirectory(prefix="kraftlog-bench-cluster-") as workdir, \
                LocalCluster(Path(workdir), properties=PROPERTIES) as cluster:
            cluster.start()
            cluster.wait_for_brokers(timeout=60)
            run_client_benchmarks(cluster, args, results)
    with tempfile.TemporaryDirectory(prefix="kraftlog-bench-cluster-") as workdir, \
            LocalCluster(Path(workdir)) as cluster:
        cluster.start()
        cluster.wait_for_brokers(timeout=60)
        results["many_partitions"] = many_partitions(cluster, args.partitions, args.per_topic)
        print(f"{args.partitions:,} partitions:", results["many_partitions"], flush=True)
    out = save_results(args.out, results)
    print(f"written to {out}")
    return 0


def run_client_benchmarks(cluster: LocalCluster, args: argparse.Namespace, results: dict[str, Any]) -> None:
    """Sections 1-4 (module docstring)."""
    cluster.create_topic("rf1", 6, 1)
    cluster.create_topic("rf3", 6, 3, {"min.insync.replicas": "2"})
    results["produce_rf1_acks1"] = throughput(cluster, "rf1", 1, args.seconds)
    print("produce RF 1 acks=1:", results["produce_rf1_acks1"], flush=True)
    results["produce_rf3_acks_all"] = throughput(cluster, "rf3", -1, args.seconds)
    print("produce RF 3 acks=all:", results["produce_rf3_acks_all"], flush=True)
    results["latency_rf3_acks_all_paced"] = paced_latency(cluster, "rf3", 50, args.seconds)
    print("latency at 50 batches/s (8,000 records/s), RF 3 acks=all:", results["latency_rf3_acks_all_paced"],
          flush=True)
    results["consume_rf3"] = consume_throughput(cluster, "rf3")
    print("consume RF 3:", results["consume_rf3"], flush=True)
    results["failover"] = failover(cluster, "rf3", args.trials)
    print("partition-leader failover after kill -9 (session timeout 2 s):", results["failover"], flush=True)


if __name__ == "__main__":
    sys.exit(main())
