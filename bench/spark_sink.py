"""Rows/s of the kraftlog streaming sink, exactly-once (kraftlog.sink.exactlyOnce:
a prepared transaction per task, committed by the driver) against the
idempotent one (the default), in the same run, on the same input.

A 4-partition topic (RF 3, three combined nodes, as the tests' cluster) is
filled with N 100-byte keyed records; each sink copies it with a streaming
query (trigger availableNow, maxOffsetsPerTrigger so that there are several
micro-batches) into a fresh topic; the best of the runs counts. The copies
are checked: the exactly-once one, read read_committed, has every row (once).

    python -m bench.spark_sink [--records 200000] [--batches 4] [--runs 2] [--out bench/results/spark_sink.json]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["PYSPARK_PYTHON"] = sys.executable

from bench.bench_results import save_results  # noqa: E402
from bench.spark_read import fill  # noqa: E402
from devcluster.local_cluster import LocalCluster  # noqa: E402

PARTITIONS = 4


def timed_copy(spark, bootstrap: str, source: str, target: str, checkpoint: str, per_trigger: int,
               exactly_once: bool) -> float:
    stream = (spark.readStream.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap)
              .option("subscribe", source).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", per_trigger).load())
    writer = (stream.select("key", "value").writeStream.format("kraftlog")
              .option("kraftlog.bootstrap.servers", bootstrap).option("topic", target)
              .option("checkpointLocation", checkpoint).trigger(availableNow=True))
    if exactly_once:
        writer = writer.option("kraftlog.sink.exactlyOnce", "true")
    started = time.perf_counter()
    query = writer.start()
    try:
        query.awaitTermination()
    finally:
        query.stop()
    if query.exception() is not None:
        raise RuntimeError(f"the copy failed: {query.exception()}")
    return time.perf_counter() - started


def count(spark, bootstrap: str, topic: str, isolation: str) -> int:
    df = (spark.read.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("kafka.isolation.level", isolation).load())
    return df.count()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batches", type=int, default=4, help="micro-batches per copy")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out", default=str(HERE / "results" / "spark_sink.json"))
    args = parser.parse_args()
    records = args.records // PARTITIONS * PARTITIONS

    from pyspark.sql import SparkSession

    from spark_jobs import register

    with tempfile.TemporaryDirectory(prefix="bench-spark-sink-") as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster", combined=3,
                               properties={"transaction.state.log.num.partitions": 5})
        try:
            cluster.start()
            cluster.wait_for_brokers(timeout=60)
            cluster.create_topic("source", PARTITIONS, 3)
            load_rate = fill(cluster, "source", records)
            print(f"loaded {records:,} records at {load_rate:,.0f} records/s")
            spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                     .config("spark.sql.shuffle.partitions", "2").getOrCreate())
            spark.sparkContext.setLogLevel("ERROR")
            register(spark)
            bootstrap = cluster.bootstrap
            per_trigger = max(1, records // args.batches)
            results: dict = {"records": records, "partitions": PARTITIONS, "micro_batches": args.batches,
                             "replication_factor": 3, "load_records_per_s": load_rate,
                             "runs_s": {"idempotent": [], "exactly_once": []}}
            for run in range(args.runs):
                for name in ("idempotent", "exactly_once"):
                    target = f"{name.replace('_', '-')}-{run}"
                    cluster.create_topic(target, PARTITIONS, 3)
                    cluster.wait_for_leaders(target)
                    seconds = timed_copy(spark, bootstrap, "source", target, str(Path(tmp) / f"ck-{target}"),
                                         per_trigger, exactly_once=name == "exactly_once")
                    results["runs_s"][name].append(seconds)
                    print(f"{name} run {run}: {records / seconds:,.0f} rows/s")
                    if run == 0:
                        isolation = "read_committed" if name == "exactly_once" else "read_uncommitted"
                        assert count(spark, bootstrap, target, isolation) == records, name
            for name in ("idempotent", "exactly_once"):
                results[f"{name}_rows_per_s"] = records / min(results["runs_s"][name])
            results["exactly_once_over_idempotent"] = (results["exactly_once_rows_per_s"]
                                                       / results["idempotent_rows_per_s"])
            print(f"idempotent sink: {results['idempotent_rows_per_s']:,.0f} rows/s; exactly-once sink: "
                  f"{results['exactly_once_rows_per_s']:,.0f} rows/s; ratio "
                  f"{results['exactly_once_over_idempotent']:.2f}")
            print(f"written {save_results(args.out, results)}")
            spark.stop()
        finally:
            cluster.close()


if __name__ == "__main__":
    main()
