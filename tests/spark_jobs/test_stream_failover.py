"""A partition leader killed (kill -9) while a streaming query reads: the
tasks find the new leader and the query loses and repeats nothing."""
from __future__ import annotations

from devcluster.local_processes import wait_until

from .conftest import bootstrap, make_records, new_topic, produce

TIMEOUT_S = 240


def test_a_leader_killed_during_a_streaming_read_loses_and_repeats_nothing(spark, cluster) -> None:
    topic = new_topic(cluster, "failover", partitions=2, configs={"min.insync.replicas": "2"})
    produced = {0: [], 1: []}
    for round_ in range(4):
        for p in (0, 1):
            records = make_records(f"p{p}-r{round_}", 50)
            produce(cluster, topic, p, records)
            produced[p] += [r.value.decode() for r in records]
    stream = (spark.readStream.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster))
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "40").load())
    query = (stream.selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
             .writeStream.format("memory").queryName("failover_sink").trigger(processingTime="500 milliseconds")
             .start())
    victim = None
    try:
        def sink_count(at_least: int):
            assert query.exception() is None, query.exception()
            count = spark.sql("SELECT count(*) AS n FROM failover_sink").first().n
            return count if count >= at_least else None

        wait_until(lambda: sink_count(40), TIMEOUT_S, "the first micro-batch")
        victim = next(p.leader_id for p in cluster.wait_for_leaders(topic).partitions if p.partition_index == 0)
        cluster.kill(victim)
        for p in (0, 1):  # written to the new leaders while the query goes on
            records = make_records(f"p{p}-after", 50)
            produce(cluster, topic, p, records)
            produced[p] += [r.value.decode() for r in records]
        wait_until(lambda: sink_count(500), TIMEOUT_S, "all 500 records in the sink")
        rows = spark.sql("SELECT partition, offset, value FROM failover_sink").collect()
    finally:
        query.stop()
        if victim is not None:
            cluster.start(victim)
            cluster.wait_for_brokers(timeout=60)
    assert len(rows) == 500
    for p in (0, 1):
        mine = sorted((r.offset, r.value) for r in rows if r.partition == p)
        assert mine == list(enumerate(produced[p]))  # every offset once, with the value written there
