"""Reassignment benchmark (issue 20): a partition holding `--size-mb`
reassigned to a new replica set through the real reassignment path, once
without and once with a KIP-73 replication throttle, on 1 controller + 3
brokers.

Each run creates a partition on brokers [2, 4] (leader 2), fills it
through its leader, and moves it to [3, 4] as an operator would with
`kafka-reassign-partitions --execute [--throttle]` and `--verify`: the
throttles set as --execute sets them (client/reassignment_throttles.py:
2 and 4 leader-throttled, 3 follower-throttled, the rate on every broker
of the move), then AlterPartitionReassignments (client/reassignments.py);
the move is followed with ListPartitionReassignments until it is no
longer under way, and the throttles are then removed as --verify removes
them. Broker 3 copies the whole partition from the leader, joins the ISR,
broker 2 leaves and leadership moves to 3 (the controller's steps:
metadata_quorum/controller/reassignments.py). The time to complete
is from the request to the move no longer listed; the replicas are then
checked to be the target's.

Meanwhile a producer writes acks=all batches at a fixed rate to other
partitions replicated on brokers 2 and 4 (so the copy's source shares its
disk and loop with them): their produce latency p50/p99 during the move,
next to the same producer on the idle cluster before.

Throttles follow Kafka's quota windows (`replication.quota.window.num`
x `.size.seconds`, 11 x 1 s): the rate is measured over at least 10 s, so
about 10 s worth of the throttle moves at full speed first, as in Kafka.

    python -m bench.reassignment [--size-mb 1024] [--throttle-bytes 10000000] [--out bench/results/reassignment.json]
"""
from __future__ import annotations

import argparse
import os
import platform
import queue
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import grpc

from bench.bench_results import save_results, summarize
from bench.cluster import produce_request
from client.cluster import Cluster
from client.topics import describe_topics
from client.reassignment_throttles import apply_throttles, clear_throttles
from client.reassignments import alter_partition_reassignments, list_partition_reassignments
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until
from kafka_protocol.records import Record, encode_batch
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb

LEADER, NEW, KEPT = 2, 3, 4  # broker ids: controller 1, brokers 2..4
CURRENT, TARGET = [LEADER, KEPT], [NEW, KEPT]  # the move: broker 2's replica to broker 3
RECORD_BYTES = 1000
LOAD_BATCH_RECORDS = 100          # ~100 KB batches to fill the moving partition
LOAD_IN_FLIGHT = 8
OTHER_BATCH_RECORDS = 16          # ~16 KB acks=all batches on the other partitions
OTHER_RATE_PER_S = 20
OTHER_PARTITIONS = 4
IDLE_SECONDS = 5.0
MOVE_LIMIT_S = 1800.0
POLL_S = 0.2  # how often the move is looked at (ListPartitionReassignments): the time's resolution
PROPERTIES = {"offsets.topic.replication.factor": 1}


def batch(records: int) -> bytes:
    now = int(time.time() * 1000)
    return encode_batch([Record(None, os.urandom(RECORD_BYTES), now) for _ in range(records)])


def create(cluster: LocalCluster, name: str, assignments: list[list[int]]) -> None:
    request = cpb.CreateTopicsRequest(topics=[cpb.CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=-1, replication_factor=-1, assignments=[cpb.CreateTopicsRequest.Assignment(partition_index=i, broker_ids=replicas)
                                for i, replicas in enumerate(assignments)])])
    result = cluster.broker_stub(LEADER).CreateTopics(request, timeout=30).topics[0]
    assert result.error_code == 0, result
    cluster.wait_for_leaders(name)


def partition_state(cluster: LocalCluster, topic: str) -> tuple[int, list[int]]:
    answer = cluster.broker_stub(LEADER).Metadata(bpb.MetadataRequest(topics=[topic]), timeout=10)
    [partition] = answer.topics[0].partitions
    return partition.leader_id, sorted(partition.isr_nodes)


def fill(cluster: LocalCluster, topic: str, size_bytes: int) -> dict[str, Any]:
    """Write `size_bytes` to partition 0 through its leader, acks=1, LOAD_IN_FLIGHT at a time."""
    data = batch(LOAD_BATCH_RECORDS)
    needed = -(-size_bytes // len(data))
    stub = cluster.broker_stub(LEADER)
    done: "queue.Queue[Any]" = queue.Queue()
    sent = in_flight = 0
    started = time.monotonic()
    while sent < needed or in_flight:
        while in_flight < LOAD_IN_FLIGHT and sent < needed:
            stub.Produce.future(produce_request(topic, 0, data, 1), timeout=60).add_done_callback(done.put)
            sent += 1
            in_flight += 1
        response = done.get().result()
        in_flight -= 1
        assert response.responses[0].partitions[0].error_code == 0, response
    elapsed = time.monotonic() - started
    return {"bytes": needed * len(data), "seconds": round(elapsed, 2),
            "mb_per_s": round(needed * len(data) / elapsed / 1e6, 1)}


class PacedProducer(threading.Thread):
    """acks=all batches to the other topic's partitions at a fixed rate, until stopped."""

    def __init__(self, cluster: LocalCluster, topic: str, leaders: dict[int, int]) -> None:
        super().__init__(daemon=True)
        self.cluster, self.topic, self.leaders = cluster, topic, leaders
        self.data = batch(OTHER_BATCH_RECORDS)
        self.latencies: list[float] = []
        self.errors = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        next_at, n = time.monotonic(), 0
        while not self.stopping.is_set():
            self.stopping.wait(max(0.0, next_at - time.monotonic()))
            partition = n % len(self.leaders)
            began = time.monotonic()
            try:
                response = self.cluster.broker_stub(self.leaders[partition]).Produce(
                    produce_request(self.topic, partition, self.data, -1), timeout=30)
                ok = response.responses[0].partitions[0].error_code == 0
            except grpc.RpcError:
                ok = False
            if ok:
                self.latencies.append(time.monotonic() - began)
            else:
                self.errors += 1
            n += 1
            next_at += 1 / OTHER_RATE_PER_S

    def stop(self) -> dict[str, Any]:
        self.stopping.set()
        self.join(60)
        return {"errors": self.errors,
                "latency_ms": {k: (round(v * 1000, 2) if k != "count" else v)
                               for k, v in summarize(self.latencies).items()}}


def replicas_of(admin: Cluster, topic: str) -> list[int]:
    [described] = describe_topics(admin, [topic])
    return described["partitions"][0]["replicas"]


def move(cluster: LocalCluster, admin: Cluster, run: str, size_bytes: int, throttle: int | None,
         other: str, other_leaders: dict[int, int]) -> dict[str, Any]:
    topic = f"moving-{run}"
    partition = (topic, 0)
    create(cluster, topic, [CURRENT])
    loaded = fill(cluster, topic, size_bytes)
    wait_until(lambda: partition_state(cluster, topic) == (LEADER, sorted(CURRENT)), 120, "both replicas in the ISR")
    producer = PacedProducer(cluster, other, other_leaders)
    producer.start()
    started = time.monotonic()
    try:
        if throttle is not None:  # --execute --throttle: the throttles first, then the move
            apply_throttles(admin, {partition: (CURRENT, TARGET)}, throttle)
        [outcome] = alter_partition_reassignments(admin, {partition: TARGET})
        assert outcome["error"] is None, outcome
        # --verify's question until it says completed: is the move still under way?
        wait_until(lambda: partition not in list_partition_reassignments(admin, {topic: [0]}), MOVE_LIMIT_S,
                   "the move completed", interval=POLL_S)
        took = time.monotonic() - started
    finally:
        during = producer.stop()
    if throttle is not None:  # what --verify does once every move is done
        clear_throttles(admin, [topic], sorted(set(CURRENT + TARGET)))
    # The controller's answer first, the broker's image a moment later (as --verify reads them).
    wait_until(lambda: replicas_of(admin, topic) == TARGET, 60, f"the replicas {TARGET} in the brokers' view")
    wait_until(lambda: partition_state(cluster, topic)[0] == NEW, 60, "leadership moved to the new replica")
    cluster.broker_stub(KEPT).DeleteTopics(cpb.DeleteTopicsRequest(names=[topic]), timeout=30)
    return {"throttle_bytes_per_s": throttle, "filled": loaded, "from": CURRENT, "to": TARGET, "leader_after": NEW,
            "move_s": round(took, 2), "move_mb_per_s": round(loaded["bytes"] / took / 1e6, 1),
            "other_produce": during}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=1024, help="the partition to copy, MB (default 1024)")
    parser.add_argument("--throttle-bytes", type=int, default=10_000_000, help="bytes/s (default 10 MB/s)")
    parser.add_argument("--out", default="bench/results/reassignment.json")
    args = parser.parse_args()
    size = args.size_mb * 1_000_000
    results: dict[str, Any] = {
        "what": f"a partition reassigned from {CURRENT} to {TARGET} (AlterPartitionReassignments), "
                "request to completion, with and without a replication throttle",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "size_mb": args.size_mb, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="bench-reassign-") as tmp:
        with LocalCluster(Path(tmp), controllers=1, brokers=3, properties=PROPERTIES).running() as cluster:
            other = "other"
            create(cluster, other, [[LEADER, KEPT] if i % 2 else [KEPT, LEADER] for i in range(OTHER_PARTITIONS)])
            other_leaders = {p.partition_index: p.leader_id for p in cluster.wait_for_leaders(other).partitions}
            idle = PacedProducer(cluster, other, other_leaders)
            idle.start()
            time.sleep(IDLE_SECONDS)
            results["other_produce_idle"] = idle.stop()
            with Cluster(cluster.broker_addresses[LEADER]) as admin:
                for run, throttle in (("unthrottled", None), ("throttled", args.throttle_bytes)):
                    results["runs"][run] = move(cluster, admin, run, size, throttle, other, other_leaders)
                    print(run, results["runs"][run], flush=True)
    print(results)
    print("written to", save_results(args.out, results))


if __name__ == "__main__":
    main()
