"""End-to-end latency of a streaming query over kraftlog: records produced
at a steady rate (default 1,000/s, in batches of 10 every 10 ms, acks=all,
RF 3 on three combined nodes), read by a Spark streaming query (local[2],
trigger as fast as possible), and timed when its foreachBatch sink sees
them: latency = seen - the record's CreateTime.

    python -m bench.spark_latency [--rate 1000] [--seconds 30] [--out bench/results/spark_latency.json]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["PYSPARK_PYTHON"] = sys.executable

from bench.bench_results import save_results, summarize  # noqa: E402
from devcluster.local_cluster import LocalCluster  # noqa: E402
from kraftlog_api import broker_pb2 as bpb  # noqa: E402
from kafka_protocol.records import Record, encode_batch  # noqa: E402

PER_SEND = 10
WARM_UP_S = 5.0


def produce_steadily(cluster: LocalCluster, topic: str, rate: int, seconds: float, stop: threading.Event) -> int:
    stub = cluster.broker_stub(cluster.wait_for_leaders(topic).partitions[0].leader_id)
    sent, started = 0, time.monotonic()
    while not stop.is_set() and time.monotonic() - started < seconds:
        now_ms = int(time.time() * 1000)
        data = encode_batch([Record(None, b"x" * 100, now_ms) for _ in range(PER_SEND)])
        stub.Produce(bpb.ProduceRequest(acks=-1, timeout_ms=10_000, topics=[bpb.ProduceRequest.TopicData(
            name=topic, partitions=[bpb.ProduceRequest.PartitionData(index=0, records=data)])]), timeout=30)
        sent += PER_SEND
        time.sleep(max(0.0, started + sent / rate - time.monotonic()))
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--out", default=str(HERE / "results" / "spark_latency.json"))
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    from spark_jobs import register

    latencies_ms: list[float] = []
    batches: list[int] = []

    def seen(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        stamps = [r.t for r in df.selectExpr("unix_millis(timestamp) AS t").collect()]
        now_ms = time.time() * 1000
        batches.append(len(stamps))
        latencies_ms.extend(now_ms - t for t in stamps)

    with tempfile.TemporaryDirectory(prefix="bench-spark-latency-") as tmp:
        cluster = LocalCluster(Path(tmp), combined=3)
        try:
            cluster.start()
            cluster.wait_for_brokers(timeout=60)
            cluster.create_topic("latency", 1, 3, {"min.insync.replicas": "2"})
            spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                     .config("spark.sql.shuffle.partitions", "2").getOrCreate())
            spark.sparkContext.setLogLevel("ERROR")
            register(spark)
            query = (spark.readStream.format("kraftlog")
                     .option("kraftlog.bootstrap.servers", cluster.bootstrap)
                     .option("subscribe", "latency").load()
                     .writeStream.foreachBatch(seen).option("checkpointLocation", f"{tmp}/checkpoint").start())
            time.sleep(WARM_UP_S)  # the query's first (empty) batches start its Python workers
            stop = threading.Event()
            sent = produce_steadily(cluster, "latency", args.rate, args.seconds, stop)
            deadline = time.monotonic() + 60
            while len(latencies_ms) < sent and time.monotonic() < deadline:
                time.sleep(0.2)
            query.stop()
            spark.stop()
        finally:
            cluster.close()
    results = {"rate": args.rate, "seconds": args.seconds, "sent": sent, "seen": len(latencies_ms),
               "micro_batches": len([b for b in batches if b]), "latency_ms": summarize(latencies_ms)}
    lat = results["latency_ms"]
    print(f"{sent:,} records at {args.rate}/s: seen {len(latencies_ms):,} in {results['micro_batches']} micro-batches; "
          f"latency p50 {lat.get('p50', 0):.0f} ms, p99 {lat.get('p99', 0):.0f} ms, max {lat.get('max', 0):.0f} ms")
    print(f"written {save_results(args.out, results)}")


if __name__ == "__main__":
    main()
