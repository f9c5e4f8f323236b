"""Stream-processing jobs on Spark over kraftlog topics.

- wordcount: a streaming word count, stateful in Spark's RocksDB state store,
  whose running counts go out as a changelog (key word, value count) into a
  compacted topic: the table side of the stream-table duality. `word_table`
  rebuilds the table from that topic with a batch read (the latest value of
  each key).
- enrich: a stream-table join: events joined by key with the latest value of
  each key of a compacted reference topic, written to an output topic.
- sql: topics registered as temporary views (key and value as strings, plus
  Spark's Kafka columns) and Spark SQL run over them, as a batch or,
  streaming, continuously to the console or a topic.

Each function takes a SparkSession with the source registered (`session()`),
the bootstrap servers, and, for a secured cluster, `settings`: the client's
security.protocol, ssl.* and sasl.* with Kafka's names (a --command-config
file's), which every read and write of the job passes on as the source's
kraftlog.-prefixed options.
"""
from __future__ import annotations

import os
import sys
from typing import Iterable, Mapping, Optional

from client.cluster import Cluster
from client.errors import KafkaError
from client.topics import create_topic

from .options import cluster_options, parse_security

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
TOPIC_ALREADY_EXISTS = "TOPIC_ALREADY_EXISTS"
Settings = Optional[Mapping[str, str]]  # a client's security.protocol, ssl.*, sasl.* (None: plaintext)
DEFAULT_MASTER = "local[2]"
# Set by spark-submit for the Python driver it starts: its JVM, which holds spark-submit's --master.
GATEWAY_PORT_ENV = "PYSPARK_GATEWAY_PORT"


def started_by_spark_submit() -> bool:
    return GATEWAY_PORT_ENV in os.environ


def session(app_name: str, master: Optional[str] = None):  # type: ignore[no-untyped-def]
    """A SparkSession whose Python workers use this interpreter, with RocksDB
    state and the kraftlog source registered. `master` None: spark-submit's
    (its --master; a master set here would override it), or local[2] when
    this process was not started by spark-submit."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from . import register

    builder = SparkSession.builder
    if master is not None or not started_by_spark_submit():
        builder = builder.master(master or DEFAULT_MASTER)
    spark = (builder.appName(app_name)
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def ensure_topic(bootstrap: str, name: str, *, partitions: int = -1, compacted: bool = False,
                 settings: Settings = None) -> None:
    """Create a topic unless it exists (a compacted one for tables)."""
    with Cluster(bootstrap, parse_security(settings) if settings else None) as cluster:
        try:
            create_topic(cluster, name, partitions, -1, {"cleanup.policy": "compact"} if compacted else None)
        except KafkaError as exc:
            if exc.name != TOPIC_ALREADY_EXISTS:
                raise


def _read(spark, bootstrap: str, topic: str, *, stream: bool, starting: str = "earliest",  # type: ignore[no-untyped-def]
          settings: Settings = None):
    reader = spark.readStream if stream else spark.read
    return (reader.format("kraftlog").options(**cluster_options(bootstrap, settings))
            .option("subscribe", topic).option("startingOffsets", starting).load())


def _run(query, timeout_s: Optional[float]) -> None:  # type: ignore[no-untyped-def]
    """Until the query ends (availableNow) or `timeout_s` passes; its error raised."""
    try:
        query.awaitTermination(timeout_s) if timeout_s else query.awaitTermination()
        error = query.exception()
        if error is not None:
            raise error
    finally:
        query.stop()


def wordcount(spark, bootstrap: str, source: str, table_topic: str, checkpoint: str, *,  # type: ignore[no-untyped-def]
              available_now: bool = False, timeout_s: Optional[float] = None, settings: Settings = None) -> None:
    """Running counts of the words of `source`'s values into the compacted
    `table_topic` (key: word, value: count), a changelog with Spark's update
    output mode: each micro-batch writes the words whose count changed."""
    from pyspark.sql import functions as F

    ensure_topic(bootstrap, table_topic, compacted=True, settings=settings)
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    lines = _read(spark, bootstrap, source, stream=True, settings=settings).select(F.col("value").cast("string").alias("line"))
    words = lines.select(F.explode(F.split(F.lower("line"), r"[^\p{L}\p{N}']+")).alias("word")).where("word != ''")
    counts = words.groupBy("word").count()
    changes = counts.select(F.col("word").alias("key"), F.col("count").cast("string").alias("value"))
    trigger = {"availableNow": True} if available_now else {"processingTime": "1 second"}
    # Python sinks have no Update mode: the changed counts go out through
    # foreachBatch, idempotent per micro-batch (writerId: the checkpoint).
    query = (changes.writeStream.outputMode("update")
             .foreachBatch(lambda df, batch_id: write_batch(df, bootstrap, table_topic, checkpoint, batch_id, settings))
             .option("checkpointLocation", checkpoint).trigger(**trigger).start())
    _run(query, timeout_s)


def write_batch(df, bootstrap: str, topic: str, writer_id: str, batch_id: int,  # type: ignore[no-untyped-def]
                settings: Settings = None) -> None:
    """One micro-batch's rows to `topic`, deduplicated if Spark runs it again."""
    (df.write.format("kraftlog").options(**cluster_options(bootstrap, settings)).option("topic", topic)
     .option("writerId", writer_id).option("batchId", str(batch_id)).mode("append").save())


def latest_per_key(df):  # type: ignore[no-untyped-def]
    """The table a compacted topic stands for: each key's last value (by
    partition order; a key lives in one partition) - a null value deletes it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    last = Window.partitionBy("key").orderBy(F.col("offset").desc())
    return (df.withColumn("rank", F.row_number().over(last)).where("rank = 1 AND value IS NOT NULL")
            .drop("rank"))


def word_table(spark, bootstrap: str, table_topic: str, settings: Settings = None):  # type: ignore[no-untyped-def]
    """The word counts rebuilt from the compacted topic: (word, count), largest first."""
    from pyspark.sql import functions as F

    raw = _read(spark, bootstrap, table_topic, stream=False, settings=settings)
    return (latest_per_key(raw.select(F.col("key").cast("string").alias("key"), "value", "offset"))
            .select(F.col("key").alias("word"), F.col("value").cast("string").cast("long").alias("count"))
            .orderBy(F.col("count").desc(), "word"))


def enrich(spark, bootstrap: str, events: str, reference: str, output: str, checkpoint: str, *,  # type: ignore[no-untyped-def]
           available_now: bool = False, timeout_s: Optional[float] = None, settings: Settings = None) -> None:
    """Each event of `events` joined by key with the latest value of that key
    in the compacted `reference` topic; out: key, value = the event's value
    and the reference value as JSON ({"event": ..., "ref": ...}; ref null when
    the key has none)."""
    from pyspark.sql import functions as F

    ensure_topic(bootstrap, output, settings=settings)
    table = latest_per_key(_read(spark, bootstrap, reference, stream=False, settings=settings).select(
        F.col("key").cast("string").alias("key"), F.col("value").cast("string").alias("value"), "offset"))
    stream = _read(spark, bootstrap, events, stream=True, settings=settings).select(
        F.col("key").cast("string").alias("key"), F.col("value").cast("string").alias("event"))
    joined = stream.join(table.select("key", F.col("value").alias("ref")), "key", "left_outer")
    trigger = {"availableNow": True} if available_now else {"processingTime": "1 second"}
    query = (joined.select("key", F.to_json(F.struct("event", "ref")).alias("value"))
             .writeStream.format("kraftlog").options(**cluster_options(bootstrap, settings))
             .option("topic", output).option("checkpointLocation", checkpoint).trigger(**trigger).start())
    _run(query, timeout_s)


def register_views(spark, bootstrap: str, topics: Iterable[str], *, stream: bool,  # type: ignore[no-untyped-def]
                   settings: Settings = None) -> list[str]:
    """Each topic (NAME or NAME=VIEW) as a temporary view with key and value as
    strings plus topic, partition, offset, timestamp, timestampType."""
    views = []
    for spec in topics:
        topic, _, view = spec.partition("=")
        view = view or topic.replace("-", "_").replace(".", "_")
        df = _read(spark, bootstrap, topic, stream=stream, settings=settings)
        df.selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "topic", "partition",
                      "offset", "timestamp", "timestampType").createOrReplaceTempView(view)
        views.append(view)
    return views


def sql(spark, bootstrap: str, statement: str, topics: Iterable[str], *, stream: bool = False,  # type: ignore[no-untyped-def]
        output: Optional[str] = None, checkpoint: Optional[str] = None, available_now: bool = False,
        timeout_s: Optional[float] = None, settings: Settings = None):
    """Run `statement` over the topics' views. Batch: the result DataFrame.
    Streaming: runs the query to the console, or to `output` (which needs a
    `value` column) with `checkpoint`, until it ends."""
    register_views(spark, bootstrap, topics, stream=stream, settings=settings)
    result = spark.sql(statement)
    if not stream:
        return result
    trigger = {"availableNow": True} if available_now else {"processingTime": "1 second"}
    # update: an aggregation emits the rows that changed, anything else every new row
    writer = result.writeStream.outputMode("update")
    if output:
        ensure_topic(bootstrap, output, settings=settings)
        sink_id = checkpoint or f"sql:{output}"
        writer = writer.foreachBatch(lambda df, batch_id: write_batch(df, bootstrap, output, sink_id, batch_id, settings))
    else:
        writer = writer.format("console").option("truncate", "false")
    if checkpoint:
        writer = writer.option("checkpointLocation", checkpoint)
    _run(writer.trigger(**trigger).start(), timeout_s)
    return None
