"""Writes through Spark: batch round trip, bad input, and the streaming
sink's idempotence when Spark replays a micro-batch that died half-written."""
from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException, StreamingQueryException
from pyspark.sql import functions as F

from .conftest import bootstrap, make_records, new_topic, produce
from .test_stream_read import QUERY_TIMEOUT_S


def kraftlog_read(spark, cluster, topic: str, **options):
    return (spark.read.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster))
            .option("subscribe", topic).options(**options).load())


def test_batch_write_round_trip_with_keys_partitions_and_headers(spark, cluster) -> None:
    topic = new_topic(cluster, "write-round-trip", partitions=3)
    rows = [(f"k{i % 7}", f"v{i}", i % 3 if i % 2 else None, [("h", f"{i}".encode())]) for i in range(300)]
    df = spark.createDataFrame(rows, "key string, value string, partition int, headers array<struct<key:string,value:binary>>")
    (df.write.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster)).option("topic", topic)
     .option("kraftlog.compression.type", "lz4").option("acks", "all").mode("append").save())
    back = kraftlog_read(spark, cluster, topic, includeHeaders="true").collect()
    assert sorted(r.value.decode() for r in back) == sorted(v for _, v, _, _ in rows)
    by_value = {r.value.decode(): r for r in back}
    keyed_partition = {}
    for key, value, partition, headers in rows:
        got = by_value[value]
        assert got.key == key.encode() and [(h.key, h.value) for h in got.headers] == headers
        if partition is not None:
            assert got.partition == partition
        else:  # the key's murmur2 partition: the same key always lands in the same one
            assert keyed_partition.setdefault(key, got.partition) == got.partition


def test_writer_bad_input_names_the_column_or_option(spark, cluster) -> None:
    df = spark.createDataFrame([("a",)], "v string")
    with pytest.raises(AnalysisException, match="INVALID_CONFIG: column 'value': required, but the input has only v"):
        df.write.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster)) \
            .option("topic", "x").mode("append").save()
    values = spark.createDataFrame([("a",)], "value string")
    with pytest.raises(AnalysisException, match="option 'topic': required when the input has no 'topic' column"):
        values.write.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster)).mode("append").save()
    with pytest.raises(AnalysisException, match="producer option lingerr.ms: not a producer setting"):
        values.write.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster)) \
            .option("topic", "x").option("lingerr.ms", "5").mode("append").save()


def run_copy(spark, cluster, source: str, target: str, checkpoint: str, *, fail: bool):
    """availableNow copy of `source` to `target` through the kraftlog sink,
    one record per produce batch (batch.size 1); with `fail`, the row 'r-13'
    names partition 99, so the sink fails mid-batch after sending the rows
    before it. The error, None when the query finished."""
    partition = F.when(F.lit(fail) & (F.col("value") == "r-13"), F.lit(99)).otherwise(F.lit(None).cast("int"))
    stream = (spark.readStream.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster))
              .option("subscribe", source).option("startingOffsets", "earliest").load()
              .select("key", F.col("value").cast("string").alias("value")))
    query = (stream.select("key", "value", partition.alias("partition"))
             .writeStream.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster))
             .option("topic", target).option("batch.size", "1").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination(QUERY_TIMEOUT_S)
        return query.exception()
    except StreamingQueryException as exc:
        return exc
    finally:
        query.stop()


def test_a_micro_batch_replayed_after_a_failure_mid_batch_writes_nothing_twice(spark, cluster, tmp_path) -> None:
    source = new_topic(cluster, "replay-source", partitions=1)
    target = new_topic(cluster, "replay-target", partitions=2)
    produce(cluster, source, 0, make_records("r", 40))
    checkpoint = str(tmp_path / "checkpoint")

    error = run_copy(spark, cluster, source, target, checkpoint, fail=True)
    assert error is not None and "column 'partition': replay-target has no partition 99" in str(error)
    half = kraftlog_read(spark, cluster, target).collect()
    # The task had sent r-0..r-12 but the last open batch of each of the 2 partitions when it failed:
    # more batches per partition than the 5 the broker caches per producer.
    sent = [r.value.decode() for r in half]
    assert len(set(sent)) == len(sent) >= 11 and set(sent) <= {f"r-{i}" for i in range(13)}

    assert run_copy(spark, cluster, source, target, checkpoint, fail=False) is None
    values = sorted(r.value.decode() for r in kraftlog_read(spark, cluster, target).collect())
    assert values == sorted(f"r-{i}" for i in range(40))  # each once: the replay's resent batches were duplicates


def test_a_batch_write_with_writer_and_batch_id_is_not_repeated(spark, cluster) -> None:
    """foreachBatch's way to idempotence: the same (writerId, batchId) written twice lands once."""
    topic = new_topic(cluster, "write-once", partitions=2)
    df = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(50)], "key string, value string")

    def write(batch_id: int) -> None:
        (df.write.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster)).option("topic", topic)
         .option("writerId", "test-writer").option("batchId", str(batch_id)).mode("append").save())

    write(7)
    write(7)  # Spark running the same micro-batch again
    assert kraftlog_read(spark, cluster, topic).count() == 50
    write(8)  # the next batch is new data
    assert kraftlog_read(spark, cluster, topic).count() == 100
