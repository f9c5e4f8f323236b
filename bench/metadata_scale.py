"""Metadata scale: an image of 100,000 partitions built through the controller's own code.

Registers brokers and creates topics with the real `Controller` handlers,
replaying every record they produce into a `MetadataImage` (as each
controller and broker does), then measures:

- how many records that took, and the image's snapshot size;
- the time to write the snapshot and to load it (a restart); goal <= 5 s;
- the memory of the loaded image per partition (tracemalloc); goal <= 2 KB;
- what a broker holds per replica beside the image, for --broker-replicas
  of them: led or followed but unused (a Partition whose log is opened on
  first use, broker/partition.py), and then with every log opened (Log,
  segment, producer state, in a temporary log directory);
- with --cluster, the same on a real cluster (bench/metadata_cluster.py):
  partitions created through the CLI, time until led, broker RSS per
  replica, controller failover.

    python -m bench.metadata_scale [--topics 10000] [--partitions 10] [--brokers 30]
                                   [--replication-factor 3] [--broker-replicas 1000]
                                   [--cluster --cluster-topics 100 --cluster-partitions 100]
                                   [--out bench/results/metadata_scale.json]
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path


from bench.bench_results import save_results
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import Controller, ControllerConfig, ControllerResult
from metadata_quorum.image import MetadataDelta, MetadataImage

CLUSTER_ID = "bWV0YWRhdGEtc2NhbGUtYmVuY2g"
TOPICS_PER_REQUEST = 100


class Replayer:
    """Applies each result's records to the image at the next offsets, as the quorum would."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.offset = 0
        self.records = 0

    def commit(self, result: ControllerResult) -> None:
        for record in result.records:
            self.image.apply(record, self.offset)
            self.offset += 1
        self.records += len(result.records)


def build(topics: int, partitions: int, brokers: int, rf: int) -> tuple[MetadataImage, int, float]:
    image = MetadataImage()
    controller = Controller(image, ControllerConfig(), cluster_id=CLUSTER_ID, node_id=0, now_ms=0,
                            rng=random.Random(1))
    replay = Replayer(image)
    started = time.perf_counter()
    epochs = {}
    for b in range(brokers):
        result = controller.handle_registration(cpb.BrokerRegistrationRequest(
            broker_id=b, cluster_id=CLUSTER_ID, incarnation_id=f"i{b}", rack=f"rack-{b % 3}",
            listeners=[mpb.BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=9092 + b)]), now_ms=1)
        assert result.response.error_code == 0, result.response
        replay.commit(result)
        epochs[b] = result.response.broker_epoch
    for b, epoch in epochs.items():
        result = controller.handle_heartbeat(cpb.BrokerHeartbeatRequest(
            broker_id=b, broker_epoch=epoch, current_metadata_offset=replay.offset), now_ms=2)
        replay.commit(result)
    for first in range(0, topics, TOPICS_PER_REQUEST):
        request = cpb.CreateTopicsRequest(topics=[
            cpb.CreateTopicsRequest.CreatableTopic(name=f"topic-{t:05d}", num_partitions=partitions,
                                                   replication_factor=rf)
            for t in range(first, min(topics, first + TOPICS_PER_REQUEST))])
        result = controller.handle_create_topics(request)
        bad = [t for t in result.response.topics if t.error_code]
        assert not bad, bad[:3]
        replay.commit(result)
    return image, replay.records, time.perf_counter() - started


def broker_replica_bytes(image: MetadataImage, replicas: int) -> tuple[float, float, float, float]:
    """(traced bytes per replica, seconds per replica) of a broker given
    `replicas` partitions of `image` it is a replica of, beside the image;
    then the same once each replica's log is opened (as by its first append)."""
    from broker.replica_manager import ReplicaManager
    from partition_log.log_manager import LogManager

    broker_id = 0
    delta = MetadataDelta()
    for topic_id, topic in image.topics.items():
        for index, state in topic.partitions.items():
            if broker_id in state.replicas and len(delta.changed_partitions) < replicas:
                delta.changed_partitions.add((topic_id, index))
    with tempfile.TemporaryDirectory(prefix="metadata-scale-broker-") as directory:
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        started = time.perf_counter()
        manager = ReplicaManager(broker_id, LogManager(Path(directory)))
        manager.apply_metadata(image, delta)
        took = time.perf_counter() - started
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        started = time.perf_counter()
        for partition in manager.partitions.values():
            partition.open()
        open_took = time.perf_counter() - started
        gc.collect()
        held_open = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        opened = len(manager.partitions)
        manager.log_manager.close()
    return held / opened, took / opened, held_open / opened, open_took / opened


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--brokers", type=int, default=30)
    parser.add_argument("--replication-factor", type=int, default=3)
    parser.add_argument("--broker-replicas", type=int, default=1000)
    parser.add_argument("--cluster", action="store_true", help="also measure a real 3+3 node cluster")
    parser.add_argument("--cluster-topics", type=int, default=100)
    parser.add_argument("--cluster-partitions", type=int, default=100)
    parser.add_argument("--cluster-parallel", type=int, default=8, help="CLI processes at a time")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "metadata_scale.json"))
    args = parser.parse_args()
    total_partitions = args.topics * args.partitions

    image, records, build_s = build(args.topics, args.partitions, args.brokers, args.replication_factor)
    started = time.perf_counter()
    snapshot = image.snapshot()
    write_s = time.perf_counter() - started
    del image
    gc.collect()

    # Wall and CPU time: on a shared machine the CPU seconds are what the load costs, the wall
    # seconds also what other processes took meanwhile.
    loads, load_cpus = [], []
    for _ in range(3):
        started, started_cpu = time.perf_counter(), time.process_time()
        loaded = MetadataImage.from_snapshot(snapshot)
        loads.append(time.perf_counter() - started)
        load_cpus.append(time.process_time() - started_cpu)
        del loaded
        gc.collect()

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    loaded = MetadataImage.from_snapshot(snapshot)
    gc.collect()
    image_bytes = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert sum(len(t.partitions) for t in loaded.topics.values()) == total_partitions

    load_s = sorted(loads)[len(loads) // 2]
    load_cpu_s = sorted(load_cpus)[len(load_cpus) // 2]
    per_partition = image_bytes / total_partitions
    replica_bytes, replica_s, opened_bytes, opened_s = broker_replica_bytes(loaded, args.broker_replicas)
    results = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "settings": vars(args),
        "partitions": total_partitions,
        "records": records,
        "build_through_controller_s": round(build_s, 3),
        "snapshot_bytes": len(snapshot),
        "snapshot_write_s": round(write_s, 3),
        "snapshot_load_s": round(load_s, 3),
        "snapshot_load_runs_s": [round(x, 3) for x in loads],
        "snapshot_load_cpu_s": round(load_cpu_s, 3),
        "image_bytes": image_bytes,
        "image_bytes_per_partition": round(per_partition, 1),
        "broker_replica_bytes": round(replica_bytes, 1),
        "broker_replica_create_ms": round(replica_s * 1000, 3),
        "broker_replica_opened_bytes": round(opened_bytes, 1),
        "broker_replica_open_ms": round(opened_s * 1000, 2),
        "broker_bytes_per_partition": round(per_partition + replica_bytes, 1),
        "goals": {"snapshot_load_s<=5": load_s <= 5,
                  "broker_bytes_per_partition<=2048": per_partition + replica_bytes <= 2048},
    }
    print(f"{total_partitions:,} partitions ({args.topics:,} topics x {args.partitions}, RF "
          f"{args.replication_factor}, {args.brokers} brokers): {records:,} records, built through the "
          f"controller in {build_s:.2f} s")
    print(f"snapshot {len(snapshot) / 1e6:.2f} MB, written in {write_s:.2f} s, loaded in {load_s:.2f} s "
          f"({load_cpu_s:.2f} s of CPU; goal <= 5 s: {'met' if load_s <= 5 else 'NOT met'})")
    print(f"image memory {image_bytes / 1e6:.1f} MB = {per_partition:.0f} B per partition "
          f"(goal <= 2 KB: {'met' if per_partition <= 2048 else 'NOT met'})")
    print(f"a broker's replica beside the image: {replica_bytes:.0f} B (made in {replica_s * 1000:.3f} ms); "
          f"image + replica {per_partition + replica_bytes:.0f} B per partition "
          f"(goal <= 2 KB: {'met' if per_partition + replica_bytes <= 2048 else 'NOT met'})")
    print(f"the same replica with its log opened (its first append): {opened_bytes:.0f} B "
          f"(opened in {opened_s * 1000:.1f} ms)")
    if args.cluster:
        from bench import metadata_cluster
        results["cluster"] = metadata_cluster.run(args.cluster_topics, args.cluster_partitions,
                                                  args.replication_factor, args.cluster_parallel)
        metadata_cluster.report(results["cluster"])
    out = save_results(args.out, results)
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
