"""Metadata scale: an image of 100,000 partitions built through the controller's own code.

Registers brokers and creates topics with the real `Controller` handlers,
replaying every record they produce into a `MetadataImage` (as each
controller and broker does), then measures:

- how many records that took, and the image's snapshot size;
- the time to write the snapshot and to load it (a restart); goal <= 5 s;
- the memory of the loaded image per partition (tracemalloc); goal <= 2 KB.

    python -m bench.metadata_scale [--topics 10000] [--partitions 10] [--brokers 30]
                                   [--replication-factor 3] [--out bench/results/metadata_scale.json]
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import sys
import time
import tracemalloc
from pathlib import Path


from bench.bench_results import save_results
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import Controller, ControllerConfig, ControllerResult
from metadata_quorum.image import MetadataImage

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--brokers", type=int, default=30)
    parser.add_argument("--replication-factor", type=int, default=3)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "metadata_scale.json"))
    args = parser.parse_args()
    total_partitions = args.topics * args.partitions

    image, records, build_s = build(args.topics, args.partitions, args.brokers, args.replication_factor)
    started = time.perf_counter()
    snapshot = image.snapshot()
    write_s = time.perf_counter() - started
    del image
    gc.collect()

    loads = []
    for _ in range(3):
        started = time.perf_counter()
        loaded = MetadataImage.from_snapshot(snapshot)
        loads.append(time.perf_counter() - started)
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
    per_partition = image_bytes / total_partitions
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
        "image_bytes": image_bytes,
        "image_bytes_per_partition": round(per_partition, 1),
        "goals": {"snapshot_load_s<=5": load_s <= 5, "bytes_per_partition<=2048": per_partition <= 2048},
    }
    print(f"{total_partitions:,} partitions ({args.topics:,} topics x {args.partitions}, RF "
          f"{args.replication_factor}, {args.brokers} brokers): {records:,} records, built through the "
          f"controller in {build_s:.2f} s")
    print(f"snapshot {len(snapshot) / 1e6:.2f} MB, written in {write_s:.2f} s, loaded in {load_s:.2f} s "
          f"(goal <= 5 s: {'met' if load_s <= 5 else 'NOT met'})")
    print(f"image memory {image_bytes / 1e6:.1f} MB = {per_partition:.0f} B per partition "
          f"(goal <= 2 KB: {'met' if per_partition <= 2048 else 'NOT met'})")
    out = save_results(args.out, results)
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
