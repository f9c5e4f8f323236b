"""Producer benchmark: the client library (AsyncProducer) against 3 controllers
+ 3 brokers on this machine (LocalCluster).

100-byte keyless records into a topic of 6 partitions, RF 3,
min.insync.replicas 2, acks=all, Kafka's defaults otherwise (batch.size
16384, linger.ms 5, no compression): records/s and MB/s of acknowledged
records, with enable.idempotence on and off. The producer runs in this
process, so the figures include the client's own CPU cost (one core of the
two this machine has, shared with the six servers).

    python bench/producer.py [--records 200000] [--seconds 60] [--out bench/results/producer.json]
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
from client.producer import AsyncProducer  # noqa: E402
from kraftlog.local_cluster import LocalCluster  # noqa: E402

RECORD_BYTES = 100
PARTITIONS = 6
PROPERTIES = {"broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500}


async def produce(bootstrap: str, topic: str, records: int, seconds: float, idempotence: bool) -> dict[str, Any]:
    value = os.urandom(RECORD_BYTES // 2).hex().encode()
    config = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": idempotence}
    async with AsyncProducer(config) as producer:
        await producer.produce(topic, b"warm-up")  # metadata and producer id before the clock starts
        start = time.perf_counter()
        deadline = start + seconds
        futures = []
        sent = 0
        while sent < records and time.perf_counter() < deadline:
            futures.append(await producer.send(topic, value))  # waits while buffer.memory is full
            sent += 1
            if sent % 5000 == 0:
                await asyncio.sleep(0)  # let the sender run between bursts
        results = await asyncio.gather(*futures, return_exceptions=True)
        elapsed = time.perf_counter() - start
        metrics = producer.metrics()
    failed = sum(1 for r in results if isinstance(r, BaseException))
    acknowledged = len(results) - failed
    return {"idempotence": idempotence, "records": acknowledged, "failed": failed, "seconds": round(elapsed, 3),
            "records_per_s": round(acknowledged / elapsed), "mb_per_s": round(acknowledged * RECORD_BYTES / elapsed / 1e6, 2),
            "requests": metrics["request-total"], "records_per_request": round(metrics["record-send-total"]
                                                                              / max(metrics["request-total"], 1), 1),
            "retried_records": metrics["record-retry-total"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000, help="records per run (default 200000)")
    parser.add_argument("--seconds", type=float, default=60.0, help="at most this long per run (default 60)")
    parser.add_argument("--out", default="bench/results/producer.json")
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-producer-") as tmp, \
            LocalCluster(Path(tmp), properties=PROPERTIES) as cluster:
        cluster.start()
        cluster.wait_for_brokers(timeout=60)
        bootstrap = cluster.bootstrap
        for idempotence in (True, False):
            topic = f"bench-idempotence-{str(idempotence).lower()}"
            cluster.create_topic(topic, PARTITIONS, 3, configs={"min.insync.replicas": "2"})
            cluster.wait_for_leaders(topic)
            run = asyncio.run(produce(bootstrap, topic, args.records, args.seconds, idempotence))
            runs.append(run)
            print(f"idempotence={str(idempotence).lower():5}  {run['records']:>8} records  {run['seconds']:>7.2f} s  "
                  f"{run['records_per_s']:>7} records/s  {run['mb_per_s']:>6.2f} MB/s  "
                  f"{run['records_per_request']:>6} records/request  {run['failed']} failed", flush=True)
    results = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
               "record_bytes": RECORD_BYTES, "partitions": PARTITIONS, "replication_factor": 3, "acks": "all",
               "runs": runs}
    print(f"results: {save_results(args.out, results)}")


if __name__ == "__main__":
    main()
