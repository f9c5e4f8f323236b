"""Rows/s into Spark (noop sink, local[2]) from a kraftlog topic, against the
ceiling of Spark's Python data source path: an in-memory Arrow source with
the same rows (bench/spark_arrow_ceiling.py), in the same run. Before Spark
starts, one partition is also read in this process, fetched only and fetched
and turned into Arrow (what a Spark task does), to show the decode's share.

A 4-partition topic (RF 1, one combined node) is filled with N 100-byte
keyless records in batches of 4,000, then read three times by each source; the
best of three runs counts (the first also warms Spark's Python workers).

Then the same read on a Spark standalone cluster on this machine
(devcluster.spark_standalone: a master and two workers of 1 core each, so
two tasks at once as in local[2]), the driver in this process: what the
executors' own JVMs and Python workers, and the rows' way back to the
driver, cost against local[2], where the tasks run in the driver's JVM.

    python -m bench.spark_read [--records 1000000] [--no-standalone] [--out bench/results/spark_read.json]
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
from devcluster.local_cluster import LocalCluster  # noqa: E402
from kraftlog_api import broker_pb2 as bpb  # noqa: E402
from kafka_protocol.records import Record, encode_batch  # noqa: E402

PARTITIONS = 4
BATCH_RECORDS = 4000
VALUE_BYTES = 100


def fill(cluster: LocalCluster, topic: str, records: int) -> float:
    """records/s of the load (acks=1, one batch per request)."""
    leaders = {p.partition_index: p.leader_id for p in cluster.wait_for_leaders(topic).partitions}
    value = b"x" * VALUE_BYTES
    started = time.perf_counter()
    per_partition = records // PARTITIONS
    template = [Record(None, value, 1_700_000_000_000) for _ in range(BATCH_RECORDS)]
    for p in range(PARTITIONS):
        for start in range(0, per_partition, BATCH_RECORDS):
            data = encode_batch(template[:min(BATCH_RECORDS, per_partition - start)])
            answer = cluster.broker_stub(leaders[p]).Produce(bpb.ProduceRequest(acks=1, timeout_ms=30_000, topics=[bpb.ProduceRequest.TopicData(
                name=topic, partitions=[bpb.ProduceRequest.PartitionData(index=p, records=data)])]), timeout=60)
            assert answer.responses[0].partitions[0].error_code == 0, answer
    return per_partition * PARTITIONS / (time.perf_counter() - started)


def in_process(bootstrap: str, topic: str, records: int) -> dict:
    """Seconds (best of three) to fetch partition 0, and to fetch it and make
    Arrow of it as a Spark task does, in this process; and of the latter, the
    seconds inside chunk_to_arrow. The fetch runs a chunk ahead on its own
    thread, so the decode adds less than its own time to the read's."""
    from spark_jobs.arrow_rows import chunk_to_arrow
    from spark_jobs.planning import OffsetRange
    from spark_jobs.range_fetch import FetchSettings, fetch_range

    rng = OffsetRange(topic, 0, 0, records // PARTITIONS)
    settings = FetchSettings(bootstrap)
    times: dict = {"fetch_s": [], "fetch_and_arrow_s": [], "arrow_s": []}
    for _ in range(3):
        started = time.perf_counter()
        for _chunk in fetch_range(settings, rng):
            pass
        times["fetch_s"].append(time.perf_counter() - started)
        rows, decoding = 0, 0.0
        started = time.perf_counter()
        for chunk in fetch_range(settings, rng):
            decode_started = time.perf_counter()
            batch = chunk_to_arrow(chunk, topic, 0, False)
            decoding += time.perf_counter() - decode_started
            rows += batch.num_rows if batch is not None else 0
        times["fetch_and_arrow_s"].append(time.perf_counter() - started)
        times["arrow_s"].append(decoding)
        assert rows == rng.end, rows
    best = {name: min(runs) for name, runs in times.items()}
    return {"records": rng.end, "runs": times, **best, "arrow_us_per_record": best["arrow_s"] / rng.end * 1e6}


def timed_noop(df) -> float:
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def best_rows_per_s(reader, records: int, runs: list[float]) -> float:  # type: ignore[no-untyped-def]
    """Three noop reads of `reader` timed into `runs`; rows/s of the best."""
    for _ in range(3):
        runs.append(timed_noop(reader.load()))
    return records / min(runs)


def on_standalone(directory: Path, bootstrap: str, records: int) -> dict:
    """The kraftlog read on a standalone cluster (its driver: a new
    SparkSession in this process, after the local one stopped)."""
    from pyspark.sql import SparkSession

    from devcluster.spark_standalone import HOST, SparkStandalone
    from spark_jobs import register

    started = time.perf_counter()
    with SparkStandalone(directory).running(timeout=180) as standalone:
        up_s = time.perf_counter() - started
        spark = (SparkSession.builder.master(standalone.master_url).config("spark.ui.enabled", "false")
                 .config("spark.driver.host", HOST).config("spark.driver.bindAddress", HOST)
                 .config("spark.driver.memory", "2g").getOrCreate())
        try:
            spark.sparkContext.setLogLevel("ERROR")
            register(spark)
            reader = (spark.read.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap)
                      .option("subscribe", "bench"))
            runs: list[float] = []
            rows_per_s = best_rows_per_s(reader, records, runs)
            assert reader.load().count() == records
        finally:
            spark.stop()
    return {"workers": len(standalone.workers), "cores_per_worker": 1, "cluster_start_s": up_s, "runs_s": runs,
            "kraftlog_rows_per_s": rows_per_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--out", default=str(HERE / "results" / "spark_read.json"))
    parser.add_argument("--no-standalone", dest="standalone", action="store_false",
                        help="skip the read on a Spark standalone cluster")
    args = parser.parse_args()
    records = args.records // PARTITIONS * PARTITIONS

    from pyspark.sql import SparkSession

    from bench.spark_arrow_ceiling import ArrowCeilingSource
    from spark_jobs import register

    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
        cluster = LocalCluster(Path(tmp), combined=1)
        try:
            cluster.start()
            cluster.wait_for_brokers(timeout=60)
            cluster.create_topic("bench", PARTITIONS, 1)
            load_rate = fill(cluster, "bench", records)
            print(f"loaded {records:,} records at {load_rate:,.0f} records/s")
            one = in_process(cluster.broker_addresses[1], "bench", records)
            print(f"in process, partition 0 ({one['records']:,} records): fetch {one['fetch_s']:.2f} s, fetch and "
                  f"Arrow {one['fetch_and_arrow_s']:.2f} s, of which in chunk_to_arrow {one['arrow_s']:.2f} s "
                  f"({one['arrow_us_per_record']:.2f} µs/record)")
            spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                     .config("spark.driver.memory", "2g").getOrCreate())
            spark.sparkContext.setLogLevel("ERROR")
            register(spark)
            spark.dataSource.register(ArrowCeilingSource)
            kraftlog = (spark.read.format("kraftlog")
                        .option("kraftlog.bootstrap.servers", cluster.broker_addresses[1])
                        .option("subscribe", "bench"))
            ceiling = (spark.read.format("arrow_ceiling").option("partitions", PARTITIONS)
                       .option("rows", records).option("value_bytes", VALUE_BYTES))
            results: dict = {"records": records, "partitions": PARTITIONS, "value_bytes": VALUE_BYTES,
                             "load_records_per_s": load_rate,
                             "in_process_partition": one, "runs_s": {"kraftlog": [], "arrow_ceiling": []}}
            for _ in range(3):
                for name, reader in (("kraftlog", kraftlog), ("arrow_ceiling", ceiling)):
                    results["runs_s"][name].append(timed_noop(reader.load()))
            assert kraftlog.load().count() == records
            for name in ("kraftlog", "arrow_ceiling"):
                results[f"{name}_rows_per_s"] = records / min(results["runs_s"][name])
            results["ratio_of_ceiling"] = results["kraftlog_rows_per_s"] / results["arrow_ceiling_rows_per_s"]
            print(f"kraftlog source: {results['kraftlog_rows_per_s']:,.0f} rows/s; in-memory Arrow ceiling: "
                  f"{results['arrow_ceiling_rows_per_s']:,.0f} rows/s; ratio {results['ratio_of_ceiling']:.0%}")
            spark.stop()
            if args.standalone:
                standalone = on_standalone(Path(tmp) / "spark-standalone", cluster.broker_addresses[1], records)
                standalone["ratio_of_local"] = standalone["kraftlog_rows_per_s"] / results["kraftlog_rows_per_s"]
                results["standalone"] = standalone
                print(f"standalone cluster (2 workers x 1 core): {standalone['kraftlog_rows_per_s']:,.0f} rows/s, "
                      f"{standalone['ratio_of_local']:.0%} of local[2]'s (cluster up in "
                      f"{standalone['cluster_start_s']:.1f} s)")
            print(f"written {save_results(args.out, results)}")
        finally:
            cluster.close()


if __name__ == "__main__":
    main()
