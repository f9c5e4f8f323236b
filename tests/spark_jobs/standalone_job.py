"""The spark-submit driver of test_standalone.py's cluster test.

    spark-submit --master spark://... standalone_job.py BOOTSTRAP TOPIC OUTPUT DIR

One driver, for the fixed cost of a driver and its executors is most of
such a test's time:
1. a batch read of TOPIC (partition and offset of each row) whose tasks
   park before they pass their rows on: each attempt leaves
   `task-<partition>-<attempt>-<pid>` in DIR, holding where its Python
   worker caches the record walk's machine code (after decoding a batch
   with it), and waits until DIR/release exists (at most PARK_LIMIT_S), so
   the test can kill a worker while its executor is inside a task;
2. the job of `kraftlog spark sql` over TOPIC, its rows written by the
   executors to OUTPUT as the streaming jobs write (jobs.write_batch).
The session is `jobs.session`'s, without a master: spark-submit's.
The rows and the attempts with their reports go to DIR/result.json.

What the tasks run is defined here (pickled by value) or imported from
spark_jobs and kafka_protocol, which the executors' Python workers import.
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

PARK_LIMIT_S = 180.0
SQL = "SELECT key, upper(value) AS value FROM {view}"


def cache_report() -> dict:
    """In an executor's Python worker: the walk run once, then where it is cached."""
    from kafka_protocol.records import Record, encode_batch
    from kafka_protocol.columnar_records import decode_columns, kernel_cache

    decoded = decode_columns(encode_batch([Record(b"k", b"v", 1)]), 0, 1, need_headers=False)
    return {**asdict(kernel_cache()), "decoded": decoded is not None and len(decoded.offsets) == 1,
            "pid": os.getpid()}


def parked(directory: Path):  # type: ignore[no-untyped-def]
    release = directory / "release"

    def park(batches):  # type: ignore[no-untyped-def]
        from pyspark import TaskContext

        task = TaskContext.get()
        name = f"task-{task.partitionId()}-{task.attemptNumber()}-{os.getpid()}"
        written = directory / f".{name}"  # renamed whole: the test acts once it sees the name
        written.write_text(json.dumps(cache_report()))
        written.replace(directory / name)
        deadline = time.monotonic() + PARK_LIMIT_S
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        yield from batches
    return park


def main() -> None:
    bootstrap, topic, output, directory = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
    from spark_jobs.jobs import ensure_topic, session, sql, write_batch

    spark = session("kraftlog-standalone-test")
    df = (spark.read.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap)
          .option("subscribe", topic).load().select("partition", "offset"))
    rows = df.mapInArrow(parked(directory), df.schema).collect()
    result = {"master": spark.sparkContext.master, "rows": [[r["partition"], r["offset"]] for r in rows],
              "attempts": {p.name: json.loads(p.read_text()) for p in directory.glob("task-*")}}
    ensure_topic(bootstrap, output)
    write_batch(sql(spark, bootstrap, SQL.format(view=topic.replace("-", "_")), [topic]), bootstrap, output,
                "standalone-test", 0)
    (directory / "result.json").write_text(json.dumps(result))
    spark.stop()


if __name__ == "__main__":
    main()
