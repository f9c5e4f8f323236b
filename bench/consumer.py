"""Consumer benchmark: the client library's Consumer against 3 controllers +
3 brokers on this machine (LocalCluster).

The suite's topic rf3 (6 partitions, RF 3, 100-byte records) is filled by
bench/producer.py's producer (acks=all, idempotent), then a Consumer
assigned every partition reads it all from the earliest offset
(max.poll.records 10000, Kafka's defaults otherwise): records/s and MB/s from the first poll() to the last record,
and this process's CPU time per record.
The consumer runs in this process, so the figures include its own CPU cost
(decoding every record), on a machine of two cores shared with the servers.

    python -m bench.consumer [--records 200000] [--seconds 120] [--out bench/results/consumer.json]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from bench.bench_results import save_results
from bench.producer import RECORD_BYTES, produce
from bench.suite import kraftlog_cluster as kl
from client.consumer import Consumer, TopicPartition


def consume(bootstrap: str, topic: str, records: int, seconds: float,
            extra: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """Read `records` records of every partition of `topic` from the earliest offset; `extra`: more consumer settings."""
    settings = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest", "max.poll.records": 10_000,
                **(extra or {})}
    with Consumer(settings) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(kl.PARTITIONS)])
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
    with tempfile.TemporaryDirectory(prefix="bench-consumer-") as tmp:
        cluster = kl.start_cluster(Path(tmp), 3)  # the suite's cluster, with its topic "rf3" (RF 3, min ISR 2)
        with cluster:
            job = kl.ProduceJob(cluster.bootstrap, "rf3", args.records, RECORD_BYTES, "all", True, args.seconds)
            produced = asyncio.run(produce(job))
            produced["records_per_s"] = round(produced["records"] / produced["seconds"])
            # The producer's warm-up record is in the topic too.
            run = consume(cluster.bootstrap, "rf3", produced["records"] + 1, args.seconds)
    print(f"produced {produced['records']} records ({produced['records_per_s']} records/s); consumed "
          f"{run['records']} records in {run['seconds']:.2f} s: {run['records_per_s']} records/s, "
          f"{run['mb_per_s']:.2f} MB/s, client CPU {run['client_cpu_us_per_record']} µs/record "
          f"(load average {run['cpu_load_average']:.2f})", flush=True)
    results = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
               "record_bytes": RECORD_BYTES, "partitions": kl.PARTITIONS, "replication_factor": 3,
               "produce": produced, "consume": run}
    print(f"results: {save_results(args.out, results)}")


if __name__ == "__main__":
    main()
