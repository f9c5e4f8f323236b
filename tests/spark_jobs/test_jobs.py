"""The Spark jobs against a real cluster: wordcount's changelog into a
compacted topic and the table rebuilt from it, the enrich stream-table join,
and SQL over topics."""
from __future__ import annotations

import json

from client.cluster import Cluster
from kafka_protocol.records import Record
from spark_jobs.jobs import enrich, sql, word_table, wordcount

from .conftest import bootstrap, new_topic, produce

TIMEOUT_S = 240


def lines(*texts: str) -> list[Record]:
    return [Record(None, t.encode(), 1_700_000_000_000) for t in texts]


def test_wordcount_changelog_rebuilds_the_running_counts(spark, cluster, tmp_path) -> None:
    source = new_topic(cluster, "wc-lines", partitions=2)
    produce(cluster, source, 0, lines("the cat and the dog", "The end."))
    produce(cluster, source, 1, lines("a cat's tale"))
    servers, checkpoint = bootstrap(cluster), str(tmp_path / "checkpoint")
    wordcount(spark, servers, source, "wc-table", checkpoint, available_now=True, timeout_s=TIMEOUT_S)
    table = {r.word: r["count"] for r in word_table(spark, servers, "wc-table").collect()}
    assert table == {"the": 3, "cat": 1, "and": 1, "dog": 1, "end": 1, "a": 1, "cat's": 1, "tale": 1}

    produce(cluster, source, 1, lines("cat CAT dog"))
    wordcount(spark, servers, source, "wc-table", checkpoint, available_now=True, timeout_s=TIMEOUT_S)
    table = {r.word: r["count"] for r in word_table(spark, servers, "wc-table").collect()}
    assert table["cat"] == 3 and table["dog"] == 2 and table["the"] == 3
    # a changelog: the second run wrote only the words whose count changed
    changelog = spark.read.format("kraftlog").option("kraftlog.bootstrap.servers", servers) \
        .option("subscribe", "wc-table").load().selectExpr("CAST(key AS STRING) k", "CAST(value AS STRING) v")
    assert sorted((r.k, r.v) for r in changelog.collect() if r.k in ("cat", "dog", "the")) == \
        [("cat", "1"), ("cat", "3"), ("dog", "1"), ("dog", "2"), ("the", "3")]
    with Cluster(servers) as client:
        client.refresh(["wc-table"])
        assert client.topics["wc-table"]  # created by the job


def test_enrich_joins_events_with_the_latest_reference_value(spark, cluster, tmp_path) -> None:
    reference = new_topic(cluster, "enrich-users", partitions=1, configs={"cleanup.policy": "compact"})
    produce(cluster, reference, 0, [Record(b"u1", b"alice", 1), Record(b"u2", b"bob", 2),
                                    Record(b"u1", b"alice-renamed", 3)])
    events = new_topic(cluster, "enrich-clicks", partitions=2)
    produce(cluster, events, 0, [Record(b"u1", b"click-1", 10), Record(b"u3", b"click-2", 11)])
    produce(cluster, events, 1, [Record(b"u2", b"click-3", 12)])
    servers = bootstrap(cluster)
    enrich(spark, servers, events, reference, "enrich-out", str(tmp_path / "checkpoint"), available_now=True,
           timeout_s=TIMEOUT_S)
    out = spark.read.format("kraftlog").option("kraftlog.bootstrap.servers", servers) \
        .option("subscribe", "enrich-out").load().collect()
    assert sorted((r.key.decode(), json.loads(r.value)["event"], json.loads(r.value).get("ref")) for r in out) == [
        ("u1", "click-1", "alice-renamed"), ("u2", "click-3", "bob"), ("u3", "click-2", None)]


def test_sql_over_topics_as_views(spark, cluster) -> None:
    topic = new_topic(cluster, "sql.orders", partitions=2)
    produce(cluster, topic, 0, [Record(b"eu", b"10", 1), Record(b"us", b"5", 2), Record(b"eu", b"7", 3)])
    produce(cluster, topic, 1, [Record(b"us", b"1", 4)])
    result = sql(spark, bootstrap(cluster),
                 "SELECT key AS region, SUM(CAST(value AS INT)) AS total, COUNT(*) AS n FROM sql_orders "
                 "GROUP BY key ORDER BY region", [topic])
    assert [(r.region, r.total, r.n) for r in result.collect()] == [("eu", 17, 2), ("us", 6, 2)]


def test_the_sql_job_from_the_command_line(cluster) -> None:
    """`python -m spark_jobs sql` (the `kraftlog spark sql` app) in its own Spark driver process."""
    import os
    import subprocess
    import sys

    topic = new_topic(cluster, "cli-sql", partitions=1)
    produce(cluster, topic, 0, [Record(b"a", b"1", 1), Record(b"b", b"2", 2), Record(b"a", b"3", 3)])
    done = subprocess.run(
        [sys.executable, "-m", "spark_jobs", "sql", "SELECT key, COUNT(*) AS n FROM cli_sql GROUP BY key ORDER BY key",
         "--topic", topic, "--json", "--bootstrap", bootstrap(cluster)],
        capture_output=True, text=True, timeout=TIMEOUT_S, env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    assert done.returncode == 0, done.stderr[-3000:]
    assert [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")] == [
        {"key": "a", "n": 2}, {"key": "b", "n": 1}]
    unknown = subprocess.run([sys.executable, "-m", "spark_jobs", "sql", "SELECT * FROM cli_sql", "--topic", topic,
                              "--bootstrap", "127.0.0.1:1"], capture_output=True, text=True, timeout=TIMEOUT_S)
    assert unknown.returncode == 1
    last = unknown.stderr.strip().splitlines()[-1]
    assert last.startswith("kraftlog spark: error: NETWORK_EXCEPTION: option 'kraftlog.bootstrap.servers': no broker "
                           "of 127.0.0.1:1 could be reached"), unknown.stderr[-3000:]
