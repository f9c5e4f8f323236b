"""End-to-end latency of a streaming query over kraftlog: records produced
at a steady rate (default 1,000/s, in batches of 10 every 10 ms, acks=all,
RF 3 on three combined nodes), read by a Spark streaming query (local[2],
trigger as fast as possible), and timed when its foreachBatch sink sees
them: latency = seen - the record's CreateTime. The run is measured after the
query's cold start (a few records sent until the sink sees one; its time is
reported apart), and Spark's own floor is measured beside it: the same sink
and trigger on Spark's built-in rate source.

    python -m bench.spark_latency [--rate 1000] [--seconds 30] [--no-floor] [--out bench/results/spark_latency.json]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
os.environ["PYSPARK_PYTHON"] = sys.executable

from bench.bench_results import save_results, summarize  # noqa: E402
from devcluster.local_cluster import LocalCluster  # noqa: E402
from kraftlog_api import broker_pb2 as bpb  # noqa: E402
from kafka_protocol.records import Record, encode_batch  # noqa: E402

PER_SEND = 10
COLD_START_LIMIT_S = 180.0


def leader_stub(cluster: LocalCluster, topic: str):  # type: ignore[no-untyped-def]
    return cluster.broker_stub(cluster.wait_for_leaders(topic).partitions[0].leader_id)


def send_batch(stub, topic: str) -> None:  # type: ignore[no-untyped-def]
    """PER_SEND records stamped now to partition 0, acks=all."""
    now_ms = int(time.time() * 1000)
    data = encode_batch([Record(None, b"x" * 100, now_ms) for _ in range(PER_SEND)])
    stub.Produce(bpb.ProduceRequest(acks=-1, timeout_ms=10_000, topics=[bpb.ProduceRequest.TopicData(
        name=topic, partitions=[bpb.ProduceRequest.PartitionData(index=0, records=data)])]), timeout=30)


def produce_steadily(stub, topic: str, rate: int, seconds: float) -> int:  # type: ignore[no-untyped-def]
    sent, started = 0, time.monotonic()
    while time.monotonic() - started < seconds:
        send_batch(stub, topic)
        sent += PER_SEND
        time.sleep(max(0.0, started + sent / rate - time.monotonic()))
    return sent


class Seen:
    """The foreachBatch sink: each row's latency (now - its timestamp) and each non-empty micro-batch's size."""

    def __init__(self) -> None:
        self.latencies_ms: list[float] = []
        self.batches: list[int] = []

    def __call__(self, df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        stamps = [r.t for r in df.selectExpr("unix_millis(timestamp) AS t").collect()]
        now_ms = time.time() * 1000
        if stamps:
            self.batches.append(len(stamps))
        self.latencies_ms.extend(now_ms - t for t in stamps)

    def reset(self) -> None:
        self.latencies_ms, self.batches = [], []


def batch_durations(query) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Spark's own split of its micro-batches' time (StreamingQueryProgress.durationMs), medians in ms,
    over the batches that read rows."""
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    keys = sorted({k for p in progress for k in p["durationMs"]})
    return {k: statistics.median(p["durationMs"].get(k, 0) for p in progress) for k in keys} if progress else {}


def warm_up(seen: Seen, send: Callable[[], None]) -> float:
    """Seconds from the first record sent until the query's sink saw one: the query's cold start (its
    first read starts the Python workers, loads the compiled decode, and plans the first data batch).
    The measured run starts after it, as a steady-state latency should."""
    started = time.monotonic()
    while not seen.latencies_ms:
        if time.monotonic() - started > COLD_START_LIMIT_S:
            raise RuntimeError(f"the query saw no record within {COLD_START_LIMIT_S:g} s")
        send()
        time.sleep(0.5)
    return time.monotonic() - started


def spark_floor(spark, rate: int, seconds: float, checkpoint: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The same sink and trigger on Spark's built-in rate source (rows made in the JVM, no fetch, no Python
    reader): Spark's own micro-batch latency on this machine, the floor under the kraftlog figure."""
    seen = Seen()
    query = (spark.readStream.format("rate").option("rowsPerSecond", rate).load()
             .writeStream.foreachBatch(seen).option("checkpointLocation", checkpoint).start())
    try:
        deadline = time.monotonic() + COLD_START_LIMIT_S
        while not seen.latencies_ms and time.monotonic() < deadline:
            time.sleep(0.2)
        seen.reset()
        time.sleep(seconds)
        durations = batch_durations(query)
    finally:
        query.stop()
    return {"micro_batches": len(seen.batches), "latency_ms": summarize(seen.latencies_ms),
            "batch_duration_ms": durations}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--no-floor", dest="floor", action="store_false",
                        help="skip the run on Spark's rate source")
    parser.add_argument("--out", default=str(HERE / "results" / "spark_latency.json"))
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    from spark_jobs import register

    seen = Seen()
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
            stub = leader_stub(cluster, "latency")
            cold_start_s = warm_up(seen, lambda: send_batch(stub, "latency"))
            seen.reset()
            sent = produce_steadily(stub, "latency", args.rate, args.seconds)
            deadline = time.monotonic() + 60
            while len(seen.latencies_ms) < sent and time.monotonic() < deadline:
                time.sleep(0.2)
            durations = batch_durations(query)
            query.stop()
            floor = spark_floor(spark, args.rate, args.seconds, f"{tmp}/floor-checkpoint") if args.floor else None
            spark.stop()
        finally:
            cluster.close()
    results = {"rate": args.rate, "seconds": args.seconds, "sent": sent, "seen": len(seen.latencies_ms),
               "cold_start_s": cold_start_s, "micro_batches": len(seen.batches),
               "latency_ms": summarize(seen.latencies_ms), "batch_duration_ms": durations, "spark_rate_source": floor}
    lat = results["latency_ms"]
    print(f"cold start: the query saw its first record {cold_start_s:.1f} s after it was sent")
    print(f"{sent:,} records at {args.rate}/s: seen {len(seen.latencies_ms):,} in {results['micro_batches']} "
          f"micro-batches; latency p50 {lat.get('p50', 0):.0f} ms, p99 {lat.get('p99', 0):.0f} ms, "
          f"max {lat.get('max', 0):.0f} ms; batch time (Spark's split, medians) {durations}")
    if floor is not None:
        fl = floor["latency_ms"]
        print(f"Spark's rate source, same sink and trigger: {floor['micro_batches']} micro-batches; latency p50 "
              f"{fl.get('p50', 0):.0f} ms, p99 {fl.get('p99', 0):.0f} ms; batch time {floor['batch_duration_ms']}")
    print(f"written {save_results(args.out, results)}")


if __name__ == "__main__":
    main()
