"""Streaming reads through Spark: Trigger.AvailableNow runs into a file sink
resume from the checkpoint, maxOffsetsPerTrigger splits micro-batches, and
partitions added to a topic are picked up."""
from __future__ import annotations

import json

from pyspark.errors import StreamingQueryException

from devcluster.local_processes import wait_until
from kraftlog_api import controller_pb2 as cpb

from .conftest import bootstrap, make_records, new_topic, produce

QUERY_TIMEOUT_S = 240


def run_available_now(spark, cluster, topic: str, tmp_path, *, expect_error: bool = False, **options):
    """One Trigger.AvailableNow run into a parquet sink; its progress reports
    (with `expect_error`: the error it ended with)."""
    stream = (spark.readStream.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster))
              .option("subscribe", topic).option("startingOffsets", "earliest").options(**options).load())
    query = (stream.selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
             .writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    try:
        try:
            assert query.awaitTermination(QUERY_TIMEOUT_S), "the availableNow query did not finish"
        except StreamingQueryException as exc:
            if expect_error:
                return exc
            raise
        assert not expect_error, "the query should have failed"
        assert query.exception() is None, query.exception()
        return [p for p in query.recentProgress if p["numInputRows"] or p["sources"]]
    finally:
        query.stop()


def sink_rows(spark, tmp_path) -> list[tuple[int, int, str]]:
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    return sorted((r.partition, r.offset, r.value) for r in rows)


def input_rows(progress) -> int:
    return sum(p["numInputRows"] for p in progress)


def test_available_now_reads_everything_then_nothing_then_exactly_the_new_records(spark, cluster, tmp_path) -> None:
    topic = new_topic(cluster, "stream-resume", partitions=2)
    produce(cluster, topic, 0, make_records("a", 20))
    produce(cluster, topic, 1, make_records("b", 10))
    first = run_available_now(spark, cluster, topic, tmp_path)
    assert input_rows(first) == 30
    expected = [(0, i, f"a-{i}") for i in range(20)] + [(1, i, f"b-{i}") for i in range(10)]
    assert sink_rows(spark, tmp_path) == expected

    second = run_available_now(spark, cluster, topic, tmp_path)
    assert input_rows(second) == 0
    assert sink_rows(spark, tmp_path) == expected

    produce(cluster, topic, 1, make_records("c", 7))
    third = run_available_now(spark, cluster, topic, tmp_path)
    assert input_rows(third) == 7
    assert sink_rows(spark, tmp_path) == expected + [(1, 10 + i, f"c-{i}") for i in range(7)]
    # the checkpoint holds Spark's Kafka offsets JSON, one offset per partition
    assert json.loads(third[-1]["sources"][0]["endOffset"]) == {topic: {"0": 20, "1": 17}}


def test_max_offsets_per_trigger_splits_available_now_into_batches(spark, cluster, tmp_path) -> None:
    topic = new_topic(cluster, "stream-limited", partitions=2)
    produce(cluster, topic, 0, make_records("a", 25))
    produce(cluster, topic, 1, make_records("b", 10))
    progress = run_available_now(spark, cluster, topic, tmp_path, maxOffsetsPerTrigger="10")
    sizes = [p["numInputRows"] for p in progress if p["numInputRows"]]
    assert sum(sizes) == 35 and len(sizes) >= 4, sizes
    # a partition with a small share still moves by one offset (as Spark's Kafka source), so at most 10 + 2
    assert max(sizes) <= 12, sizes
    assert len(sink_rows(spark, tmp_path)) == 35


def test_partitions_added_to_a_topic_are_read_from_their_start(spark, cluster, tmp_path) -> None:
    topic = new_topic(cluster, "stream-grows", partitions=1)
    produce(cluster, topic, 0, make_records("a", 5))
    assert input_rows(run_available_now(spark, cluster, topic, tmp_path)) == 5

    request = cpb.CreatePartitionsRequest(topics=[cpb.CreatePartitionsRequest.Topic(name=topic, count=3)])
    answer = cluster.broker_stub(cluster.live_brokers()[0]).CreatePartitions(request, timeout=30)
    assert answer.error_code == 0 and answer.topics[0].error_code == 0, answer
    wait_until(lambda: len(cluster.wait_for_leaders(topic).partitions) == 3 or None, 30, "3 partitions")
    produce(cluster, topic, 2, make_records("new", 4))
    produce(cluster, topic, 0, make_records("more", 1))

    assert input_rows(run_available_now(spark, cluster, topic, tmp_path)) == 5
    assert sink_rows(spark, tmp_path) == [(0, i, f"a-{i}") for i in range(5)] + [(0, 5, "more-0")] + \
        [(2, i, f"new-{i}") for i in range(4)]
