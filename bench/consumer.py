"""Consumer benchmark: the client library's Consumer against 3 controllers +
3 brokers on this machine (LocalCluster).

The topic of bench/producer.py (6 partitions, RF 3, 100-byte records) is
filled by its producer, then a Consumer assigned every partition reads it
all from the earliest offset (max.poll.records 10000, Kafka's defaults
otherwise): records/s and MB/s from the first poll() to the last record,
and this process's CPU time per record.
The consumer runs in this process, so the figures include its own CPU cost
(decoding every record), on a machine of two cores shared with the servers.

    python bench/consumer.py [--records 200000] [--seconds 120] [--out bench/results/consumer.json]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_results import save_results  # noqa: E402
from client.consumer import Consumer, TopicPartition  # noqa: E402
from kraftlog.local_cluster import LocalCluster  # noqa: E402
from producer import PARTITIONS, PROPERTIES, RECORD_BYTES, produce  # noqa: E402


def consume(bootstrap: str, topic: str, records: int, seconds: float) -> dict[str, Any]:
    settings = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest", "max.poll.records": 10_000}
    with Consumer(settings) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        read = 0
        cpu_start = time.process_time()  # this process's threads: the application's and the consumer's loop
        start = time.perf_counter()
        deadline = start + seconds
        while read < records and time.perf_counter() < deadline:
            read += len(consumer.poll(1.0))
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
    return {"records": read, "seconds": round(elapsed, 3), "records_per_s": round(read / elapsed),
            "mb_per_s": round(read * RECORD_BYTES / elapsed / 1e6, 2), "client_cpu_s": round(cpu, 3),
            "client_cpu_us_per_record": round(cpu / max(read, 1) * 1e6, 2), "cpu_load_average": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000, help="records to produce, then read (default 200000)")
    parser.add_argument("--seconds", type=float, default=120.0, help="at most this long for each phase (default 120)")
    parser.add_argument("--out", default="bench/results/consumer.json")
    args = parser.parse_args()
    topic = "bench-consume"
    with tempfile.TemporaryDirectory(prefix="bench-consumer-") as tmp, \
            LocalCluster(Path(tmp), properties=PROPERTIES) as cluster:
        cluster.start()
        cluster.wait_for_brokers(timeout=60)
        bootstrap = cluster.bootstrap
        cluster.create_topic(topic, PARTITIONS, 3, configs={"min.insync.replicas": "2"})
        cluster.wait_for_leaders(topic)
        produced = asyncio.run(produce(bootstrap, topic, args.records, args.seconds, idempotence=True))
        # The producer's warm-up record is in the topic too.
        run = consume(bootstrap, topic, produced["records"] + 1, args.seconds)
    print(f"produced {produced['records']} records ({produced['records_per_s']} records/s); consumed "
          f"{run['records']} records in {run['seconds']:.2f} s: {run['records_per_s']} records/s, "
          f"{run['mb_per_s']:.2f} MB/s, client CPU {run['client_cpu_us_per_record']} µs/record "
          f"(load average {run['cpu_load_average']:.2f})", flush=True)
    results = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
               "record_bytes": RECORD_BYTES, "partitions": PARTITIONS, "replication_factor": 3,
               "produce": produced, "consume": run}
    print(f"results: {save_results(args.out, results)}")


if __name__ == "__main__":
    main()
