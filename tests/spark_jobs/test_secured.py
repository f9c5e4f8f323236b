"""The Spark source reads and the sink writes a SASL_SSL cluster, the client
settings given as Spark's Kafka source takes them (`kraftlog.security.protocol`,
`kraftlog.ssl.*`, `kraftlog.sasl.*`) and shipped to every task; the password
shows in no plan. Without them the cluster cannot be reached."""
from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException

from security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

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
    options = {"kraftlog." + key: value for key, value in user_settings(cluster, "alice", PASSWORDS["alice"]).items()}
    return {"kraftlog.bootstrap.servers": cluster.client_bootstrap, **options}


def test_write_then_read_as_alice(spark, secured, capsys) -> None:
    rows = [(f"k{i}", f"v{i}") for i in range(40)]
    df = spark.createDataFrame(rows, "key string, value string")
    df.write.format("kraftlog").options(**alice_options(secured)).option("topic", TOPIC).mode("append").save()

    read = spark.read.format("kraftlog").options(**alice_options(secured)).option("subscribe", TOPIC).load()
    back = read.collect()
    assert sorted((r.key.decode(), r.value.decode()) for r in back) == sorted(rows)
    assert {r.partition for r in back} == {0, 1}  # both partitions' tasks logged in

    read.explain(True)
    plan = capsys.readouterr().out
    assert "kraftlog" in plan.lower() and PASSWORDS["alice"] not in plan


def test_without_security_options_the_cluster_cannot_be_reached(spark, secured) -> None:
    plain = {"kraftlog.bootstrap.servers": secured.client_bootstrap}
    with pytest.raises(AnalysisException, match="no broker of .* could be reached"):
        spark.read.format("kraftlog").options(**plain).option("subscribe", TOPIC).load().collect()
    with pytest.raises(AnalysisException, match="sasl.mechanism SCRAM-SHA-1 is not supported"):
        spark.read.format("kraftlog").options(**alice_options(secured)) \
            .option("kraftlog.sasl.mechanism", "SCRAM-SHA-1").option("subscribe", TOPIC).load().collect()
