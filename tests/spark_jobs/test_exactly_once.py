"""The exactly-once sink (kraftlog.sink.exactlyOnce=true) and the
read_committed source (kafka.isolation.level), on the shared cluster and
SparkSession: a micro-batch whose task fails and a query stopped mid-batch
leave, once restarted from the checkpoint, every row exactly once for a
read_committed reader; the driver's commit is idempotent per task; an aborted
transaction is invisible to the read_committed source."""
from __future__ import annotations

import os
import time

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from client.cluster import Cluster
from client.errors import KafkaError
from client.producer import Producer
from kafka_protocol.records import Record
from spark_jobs.options import LATEST
from spark_jobs.topic_offsets import list_offsets
from spark_jobs.exactly_once_sink import commit_prepared, transactional_id, write_prepared
from spark_jobs.write_options import parse_write_options

from .conftest import bootstrap, make_records, new_topic, produce
from .test_stream_read import QUERY_TIMEOUT_S

PER_PARTITION = 200
STALL_S = 15


def read_values(spark, cluster, topic: str, isolation: str) -> list[str]:
    df = (spark.read.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster))
          .option("subscribe", topic).option("kafka.isolation.level", isolation).load())
    return [r.value.decode() for r in df.select("value").collect()]


def run_copy(spark, cluster, source: str, target: str, checkpoint: str, gates: str):
    """availableNow copy of `source` into `target` with the exactly-once sink.
    Row p0-50 fails its task the first time it is seen, row p1-50 stalls its
    task for STALL_S the first time (marker files in `gates`), long enough for
    the query to be stopped while that task is still in its micro-batch (stop()
    waits for the stalled Python worker, so no longer). The query, started."""

    @F.udf(returnType=StringType())
    def gate(value: str) -> str:
        for row, kind in (("p0-50", "fail"), ("p1-50", "stall")):
            marker = os.path.join(gates, kind)
            if value == row and not os.path.exists(marker):
                open(marker, "w").close()
                if kind == "fail":
                    raise RuntimeError("injected task failure")
                time.sleep(STALL_S)
        return value

    stream = (spark.readStream.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster))
              .option("subscribe", source).option("startingOffsets", "earliest").load())
    return (stream.select("key", gate(F.col("value").cast("string")).alias("value"))
            .writeStream.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster))
            .option("topic", target).option("kraftlog.sink.exactlyOnce", "true")
            .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())


def test_a_failed_task_and_a_query_stopped_mid_batch_leave_every_row_once(spark, cluster, tmp_path) -> None:
    source = new_topic(cluster, "eos-source", partitions=2)
    target = new_topic(cluster, "eos-target", partitions=3)
    for p in (0, 1):
        produce(cluster, source, p, make_records(f"p{p}", PER_PARTITION))
    expected = sorted(f"p{p}-{i}" for p in (0, 1) for i in range(PER_PARTITION))
    checkpoint, gates = str(tmp_path / "checkpoint"), str(tmp_path / "gates")
    os.mkdir(gates)

    query = run_copy(spark, cluster, source, target, checkpoint, gates)  # the p0 task fails
    try:
        with pytest.raises(StreamingQueryException, match="injected task failure"):
            query.awaitTermination(QUERY_TIMEOUT_S)
    finally:
        query.stop()

    query = run_copy(spark, cluster, source, target, checkpoint, gates)  # the p1 task stalls: stopped mid-batch
    try:
        deadline = time.monotonic() + QUERY_TIMEOUT_S
        with Cluster(bootstrap(cluster)) as client:
            # Until the p0 task's rows are in the target (its transaction prepared, not committed).
            while sum(list_offsets(client, {(target, p): LATEST for p in range(3)}).values()) < PER_PARTITION:
                assert time.monotonic() < deadline and query.exception() is None, query.exception()
                time.sleep(0.5)
    finally:
        query.stop()

    query = run_copy(spark, cluster, source, target, checkpoint, gates)  # restarted: the batch again
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S) and query.exception() is None
    finally:
        query.stop()
    assert sorted(read_values(spark, cluster, target, "read_committed")) == expected  # each row once
    # The failed and the stopped attempts had written rows that read_uncommitted still sees.
    assert len(read_values(spark, cluster, target, "read_uncommitted")) > len(expected)


def test_the_drivers_commit_is_idempotent_per_task_and_refuses_a_stale_attempt(spark, cluster) -> None:
    """A Spark task retry (a second attempt of the task), the replay of a batch
    a dead driver had committed, and a commit message naming a transaction
    that is no longer the open one - without Spark, at the sink's functions."""
    target = new_topic(cluster, "eos-direct", partitions=1)
    options = parse_write_options({"kraftlog.bootstrap.servers": bootstrap(cluster), "topic": target,
                                   "kraftlog.sink.exactlyOnce": "true"},
                                  StructType([StructField("value", StringType())]), streaming=True)
    tid = transactional_id("direct-query", 0)

    def rows(batch: int):
        # Timestamped now: records of 1970 would roll their segment at the next batch and be
        # deleted by the cluster's retention check (every 500 ms) before they are read.
        now_ms = int(time.time() * 1000)
        return ((target, None, Record(None, f"b{batch}-{i}".encode(), now_ms)) for i in range(10))

    stale = write_prepared(options, rows(0), tid, 0)   # its result never reached the driver
    retried = write_prepared(options, rows(0), tid, 0)  # the retry's init aborted the first attempt
    assert (stale.records, retried.records) == (10, 10) and stale.prepared != retried.prepared
    commit_prepared(options, [retried], 0)
    replayed = write_prepared(options, rows(0), tid, 0)  # batch 0 replayed after a driver crash: done already
    assert (replayed.records, replayed.prepared) == (0, None)
    commit_prepared(options, [replayed], 0)  # nothing to complete
    following = write_prepared(options, rows(1), tid, 1)
    with pytest.raises(KafkaError, match="were not the ones their tasks prepared"):
        commit_prepared(options, [stale], 1)  # the open transaction is batch 1's, not this one: aborted
    assert following.records == 10
    assert sorted(read_values(spark, cluster, target, "read_committed")) == sorted(f"b0-{i}" for i in range(10))


def test_the_read_committed_source_sees_no_row_of_an_aborted_transaction(spark, cluster) -> None:
    topic = new_topic(cluster, "eos-aborted", partitions=1)
    with Producer({"bootstrap.servers": bootstrap(cluster), "transactional.id": "eos-source-writer"}) as producer:
        producer.init_transactions(60)
        for outcome in ("committed-1", "aborted", "committed-2"):
            producer.begin_transaction()
            for i in range(30):
                producer.produce(topic, f"{outcome}-{i}".encode())
            if outcome == "aborted":
                assert producer.flush(60) == 0
                producer.abort_transaction(60)
            else:
                producer.commit_transaction(60)
    produce(cluster, topic, 0, make_records("plain", 5))  # a non-transactional batch after them
    committed = read_values(spark, cluster, topic, "read_committed")
    assert committed == ([f"committed-1-{i}" for i in range(30)] + [f"committed-2-{i}" for i in range(30)]
                         + [f"plain-{i}" for i in range(5)])
    everything = read_values(spark, cluster, topic, "read_uncommitted")
    assert len(everything) == 95 and sum(v.startswith("aborted") for v in everything) == 30
    with pytest.raises(Exception, match="option 'kafka.isolation.level': 'snapshot' is not read_uncommitted"):
        read_values(spark, cluster, topic, "snapshot")
