"""The Spark source reads and the sink writes a SASL_SSL cluster, the client
settings given as Spark's Kafka source takes them (`kraftlog.security.protocol`,
`kraftlog.ssl.*`, `kraftlog.sasl.*`) and shipped to every task; the password
shows in no plan. Without them the cluster cannot be reached. The word count
job runs as alice from her settings with Kafka's names (what `kraftlog spark
wordcount --command-config FILE` passes), its table topic created by her."""
from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException

from security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from spark_jobs.jobs import word_table, wordcount
from spark_jobs.options import cluster_options

from ..security.secured_cluster import secured_cluster, user_settings

TOPIC = "spark-secured"
PASSWORDS = {"admin": "spark-Admin-Secret-1", "alice": "spark-Alice-Secret-2"}
ALICE_ACLS = [AclBinding(ResourceType.TOPIC, "spark-", PatternType.PREFIXED, "User:alice", "*", AclOperation.ALL,
                         AclPermissionType.ALLOW)]


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    with secured_cluster(tmp_path_factory.mktemp("spark-secured"), PASSWORDS, ALICE_ACLS) as c:
        c.create_topic(TOPIC, partitions=2, replication_factor=3)
        c.wait_for_leaders(TOPIC)
        yield c


def alice_options(cluster) -> dict[str, str]:
    return cluster_options(cluster.client_bootstrap, user_settings(cluster, "alice", PASSWORDS["alice"]))


def test_without_security_options_the_cluster_cannot_be_reached(spark, secured) -> None:
    plain = {"kraftlog.bootstrap.servers": secured.client_bootstrap}
    with pytest.raises(AnalysisException, match="no broker of .* could be reached"):
        spark.read.format("kraftlog").options(**plain).option("subscribe", TOPIC).load().collect()
    with pytest.raises(AnalysisException, match="sasl.mechanism SCRAM-SHA-1 is not supported"):
        spark.read.format("kraftlog").options(**alice_options(secured)) \
            .option("kraftlog.sasl.mechanism", "SCRAM-SHA-1").option("subscribe", TOPIC).load().collect()


def test_wordcount_as_alice(spark, secured, tmp_path, capsys) -> None:
    """The sink writes (a batch) and the source reads (a batch, and the word
    count's stream, whose counts the sink writes again) as alice."""
    settings = user_settings(secured, "alice", PASSWORDS["alice"])
    rows = [(f"k{i}", "the cat and the dog" if i % 2 else "The end.") for i in range(20)]
    lines = spark.createDataFrame(rows, "key string, value string")
    lines.write.format("kraftlog").options(**alice_options(secured)).option("topic", TOPIC).mode("append").save()
    read = spark.read.format("kraftlog").options(**alice_options(secured)).option("subscribe", TOPIC).load()
    back = read.collect()
    assert sorted((r.key.decode(), r.value.decode()) for r in back) == sorted(rows)
    assert {r.partition for r in back} == {0, 1}  # both partitions' tasks logged in
    read.explain(True)
    plan = capsys.readouterr().out
    assert "kraftlog" in plan.lower() and PASSWORDS["alice"] not in plan
    bootstrap = secured.client_bootstrap
    wordcount(spark, bootstrap, TOPIC, "spark-word-counts", str(tmp_path / "checkpoint"),
              available_now=True, timeout_s=240, settings=settings)
    counts = {r.word: r["count"] for r in word_table(spark, bootstrap, "spark-word-counts", settings).collect()}
    assert counts == {"the": 30, "cat": 10, "and": 10, "dog": 10, "end": 10}
