"""The admin side of the `kraftlog` CLI against a real cluster (3 controllers + 3 brokers),
each command a subprocess: topics, configs, cluster and quorum describe, leader elections,
and wrong input answered with one line, a non-zero exit and no traceback.

Brokers apply metadata a moment after the controller commits it (as in Kafka), so what
a change shows through another command is awaited, never assumed at once.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pytest

from devcluster.local_cluster import CLUSTER_ID, LocalCluster
from devcluster.local_processes import free_ports, wait_until
from tests.cli_process import run_cli

PROPERTIES = {
    "broker.session.timeout.ms": 2000,
    "broker.heartbeat.interval.ms": 500,
    "log.retention.check.interval.ms": 300,
    "replica.fetch.max.bytes": 2097152,  # a static broker setting DescribeConfigs must report
}
WAIT_S = 60.0


def running_cluster(directory: Path, properties: dict[str, Any]) -> Iterator[LocalCluster]:
    """A started 3 + 3 cluster with every broker unfenced, stopped afterwards (for module fixtures)."""
    with LocalCluster(directory, properties=properties).running(timeout=WAIT_S) as c:
        yield c


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("cli-admin"), PROPERTIES)


def run(cluster: Optional[LocalCluster], *args: str, stdin: str = "",
        bootstrap: Optional[str] = None) -> subprocess.CompletedProcess:
    """`python -m kraftlog ARGS` with KRAFTLOG_BOOTSTRAP naming the cluster's brokers: a process
    of its own, forked from one with the CLI imported (tests/cli_process.py)."""
    env = dict(os.environ)
    env.pop("KRAFTLOG_BOOTSTRAP", None)
    if bootstrap is not None:
        env["KRAFTLOG_BOOTSTRAP"] = bootstrap
    elif cluster is not None:
        env["KRAFTLOG_BOOTSTRAP"] = cluster.bootstrap
    return run_cli(args, env, stdin, timeout=180)


def ok(cluster: Optional[LocalCluster], *args: str, **kwargs: Any) -> str:
    done = run(cluster, *args, **kwargs)
    assert done.returncode == 0, f"{args}: {done.stderr}"
    assert "Traceback" not in done.stderr
    return done.stdout


def ok_json(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(ok(cluster, *args, "--json"))


def fails(cluster: Optional[LocalCluster], *args: str, error: str, **kwargs: Any) -> str:
    """The command exits non-zero with one line on stderr naming `error`, and no traceback."""
    done = run(cluster, *args, **kwargs)
    assert done.returncode != 0, done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kraftlog: error: "), done.stderr
    assert error in lines[0], lines[0]
    return lines[0]


def eventually(check: Callable[[], Any], what: str) -> Any:
    return wait_until(check, WAIT_S, what, interval=0.3)


def topic_configs(cluster: LocalCluster, topic: str, *extra: str) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in ok_json(cluster, "configs", "describe", "--topic", topic, *extra)}


# --- topics --------------------------------------------------------------------------------


def test_topic_lifecycle(cluster) -> None:
    assert "Created topic orders (2 partitions, replication factor 3)." in ok(
        cluster, "topics", "create", "orders", "--partitions", "2", "--replication-factor", "3",
        "--config", "retention.ms=3600000")
    # Brokers learn of the topic from the metadata log a moment after the
    # controller committed it (as in Kafka): wait for it, then list.
    cluster.wait_for_leaders("orders")
    assert "orders" in ok_json(cluster, "topics", "list")
    assert "orders" in ok(cluster, "topics", "list").splitlines()

    [topic] = ok_json(cluster, "topics", "describe", "orders")
    assert topic["configs"] == {"retention.ms": "3600000"}
    assert [p["partition"] for p in topic["partitions"]] == [0, 1]
    for p in topic["partitions"]:
        assert sorted(p["replicas"]) == sorted(cluster.brokers) and p["leader"] == p["replicas"][0]
        assert p["leader_epoch"] >= 0 and not p["offline"] and not p["under_replicated"]
    text = ok(cluster, "topics", "describe", "orders")
    assert "PartitionCount: 2" in text and "ReplicationFactor: 3" in text and "retention.ms=3600000" in text

    assert "now has 5 partitions" in ok(cluster, "topics", "add-partitions", "orders", "--partitions", "5")
    eventually(lambda: len(ok_json(cluster, "topics", "describe", "orders")[0]["partitions"]) == 5,
               "5 partitions described")
    fails(cluster, "topics", "add-partitions", "orders", "--partitions", "3", error="INVALID_PARTITIONS")
    fails(cluster, "topics", "add-partitions", "nope", "--partitions", "3", error="UNKNOWN_TOPIC_OR_PARTITION")

    assert "Deleted topic orders." in ok(cluster, "topics", "delete", "orders")
    eventually(lambda: "orders" not in ok_json(cluster, "topics", "list"), "orders gone from the list")
    fails(cluster, "topics", "delete", "orders", error="UNKNOWN_TOPIC_OR_PARTITION")
    fails(cluster, "topics", "describe", "orders", error="UNKNOWN_TOPIC_OR_PARTITION")


def test_alter_config_set_delete_append_subtract(cluster) -> None:
    ok(cluster, "topics", "create", "settings", "--partitions", "1", "--replication-factor", "2",
       "--config", "min.insync.replicas=2")
    assert "Completed updating config for topic settings." in ok(
        cluster, "topics", "alter-config", "settings", "--add-config", "retention.ms=5000,segment.ms=60000",
        "--delete-config", "min.insync.replicas")

    def changed() -> Optional[dict[str, dict[str, Any]]]:
        configs = topic_configs(cluster, "settings")
        return configs if set(configs) == {"retention.ms", "segment.ms"} else None

    configs = eventually(changed, "the new settings described")
    assert configs["retention.ms"]["value"] == "5000"
    assert configs["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    everything = topic_configs(cluster, "settings", "--all")
    assert everything["min.insync.replicas"] == {**everything["min.insync.replicas"], "value": "1",
                                                 "source": "DEFAULT_CONFIG", "is_default": True}
    assert everything["segment.bytes"]["value"] == str(1024**3)

    # Kafka's list syntax, then APPEND/SUBTRACT on the list-valued cleanup.policy.
    ok(cluster, "configs", "alter", "--topic", "settings", "--add-config", "cleanup.policy=[compact,delete]")
    eventually(lambda: topic_configs(cluster, "settings").get("cleanup.policy", {}).get("value")
               == "compact,delete", "cleanup.policy=compact,delete")
    ok(cluster, "topics", "alter-config", "settings", "--subtract-config", "cleanup.policy=delete")
    eventually(lambda: topic_configs(cluster, "settings")["cleanup.policy"]["value"] == "compact",
               "cleanup.policy=compact")
    ok(cluster, "topics", "alter-config", "settings", "--append-config", "cleanup.policy=delete")
    eventually(lambda: topic_configs(cluster, "settings")["cleanup.policy"]["value"] == "compact,delete",
               "cleanup.policy=compact,delete again")

    # Wrong input changes nothing: a good setting beside a bad one is not applied either.
    fails(cluster, "topics", "alter-config", "settings", "--add-config", "segment.ms=1000,retention.ms=soon",
          error="INVALID_CONFIG")
    fails(cluster, "topics", "alter-config", "settings", "--add-config", "no.such.setting=1", error="INVALID_CONFIG")
    fails(cluster, "topics", "alter-config", "settings", "--append-config", "retention.ms=1", error="INVALID_CONFIG")
    fails(cluster, "topics", "alter-config", "settings", "--add-config", "retention.ms", error="KEY=VALUE")
    fails(cluster, "topics", "alter-config", "nope", "--add-config", "retention.ms=1",
          error="UNKNOWN_TOPIC_OR_PARTITION")
    fails(cluster, "topics", "alter-config", "settings", error="--add-config")  # nothing to do
    assert topic_configs(cluster, "settings")["segment.ms"]["value"] == "60000"


def test_a_retention_change_takes_effect_on_every_replica(cluster) -> None:
    ok(cluster, "topics", "create", "shrinking", "--partitions", "1", "--replication-factor", "3",
       "--config", "segment.bytes=1024")
    cluster.wait_for_leaders("shrinking")
    lines = "".join(f"record-{i:04d}-{'x' * 40}\n" for i in range(300))
    # Small batches, so that the 1 KiB segments roll often.
    ok(cluster, "produce", "shrinking", "--acks", "all", "--producer-property", "batch.size=512", stdin=lines)

    def segments(broker: int) -> int:
        directory = Path(cluster.plans[broker].config.log_dirs[0]) / "shrinking-0"
        return len(list(directory.glob("*.log")))

    eventually(lambda: all(segments(b) > 3 for b in cluster.brokers), "several segments on every replica")
    first = json.loads(ok(cluster, "consume", "shrinking", "--from-beginning", "--max-messages", "1", "--json"))
    assert first["offset"] == 0

    ok(cluster, "topics", "alter-config", "shrinking", "--add-config", "retention.ms=1")
    # Every broker applies the new LogConfig: its retention job deletes all but the active segment.
    eventually(lambda: all(segments(b) == 1 for b in cluster.brokers), "old segments deleted on every replica")
    first = json.loads(ok(cluster, "consume", "shrinking", "--from-beginning", "--max-messages", "1", "--json"))
    assert first["offset"] > 0


# --- configs of brokers ------------------------------------------------------------------


def test_broker_settings_and_cluster_wide_defaults(cluster) -> None:
    broker = cluster.brokers[0]
    settings = {c["name"]: c for c in ok_json(cluster, "configs", "describe", "--broker", str(broker), "--all")}
    assert settings["replica.fetch.max.bytes"]["value"] == "2097152"
    assert settings["replica.fetch.max.bytes"]["source"] == "STATIC_BROKER_CONFIG"
    assert settings["replica.fetch.max.bytes"]["read_only"]
    assert settings["log.retention.ms"]["source"] == "DEFAULT_CONFIG" and not settings["log.retention.ms"]["read_only"]

    ok(cluster, "topics", "create", "inherits", "--partitions", "1", "--replication-factor", "1")
    ok(cluster, "configs", "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000")

    def inherited() -> bool:
        retention = topic_configs(cluster, "inherits", "--all")["retention.ms"]
        return retention["value"] == "7200000" and retention["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"

    eventually(inherited, "the topic inherits the cluster-wide retention")
    assert [c["name"] for c in ok_json(cluster, "configs", "describe", "--broker-defaults")] == ["log.retention.ms"]
    for b in cluster.brokers:  # every broker describes its own view, with the dynamic default
        # once its metadata image has the record: each broker follows the metadata log at its own pace
        def described(b: int = b) -> str:
            mine = {c["name"]: c for c in ok_json(cluster, "configs", "describe", "--broker", str(b), "--all")}
            return mine["log.retention.ms"]["source"]

        eventually(lambda: described() == "DYNAMIC_DEFAULT_BROKER_CONFIG", f"broker {b} describes the default")

    ok(cluster, "configs", "alter", "--broker-defaults", "--delete-config", "log.retention.ms")
    eventually(lambda: ok_json(cluster, "configs", "describe", "--broker-defaults") == [], "default removed")

    fails(cluster, "configs", "alter", "--broker", str(broker), "--add-config", "log.retention.ms=1",
          error="INVALID_REQUEST")
    fails(cluster, "configs", "alter", "--broker-defaults", "--add-config", "num.io.threads=4", error="INVALID_CONFIG")
    fails(cluster, "configs", "describe", "--broker", "99", error="BROKER_NOT_AVAILABLE")
    fails(cluster, "configs", "describe", "--topic", "nope", error="UNKNOWN_TOPIC_OR_PARTITION")
    fails(cluster, "configs", "describe", error="exactly one of")
    fails(cluster, "configs", "describe", "--topic", "inherits", "--broker", "4", error="exactly one of")


# --- cluster and quorum ------------------------------------------------------------------


def test_cluster_describe(cluster) -> None:
    info = ok_json(cluster, "cluster", "describe")
    assert info["cluster_id"] == CLUSTER_ID and info["controller_id"] in cluster.controllers
    assert [b["id"] for b in info["brokers"]] == sorted(cluster.brokers)
    for b in info["brokers"]:
        assert f"{b['host']}:{b['port']}" == cluster.broker_addresses[b["id"]]
        assert not b["fenced"] and not b["in_controlled_shutdown"] and b["broker_epoch"] >= 0
    text = ok(cluster, "cluster", "describe")
    assert f"ClusterId: {CLUSTER_ID}" in text and text.count("unfenced") == 3


def test_quorum_describe(cluster) -> None:
    controllers = ",".join(cluster.controller_addresses.values())
    info = ok_json(cluster, "quorum", "describe", "--bootstrap-controller", controllers)
    status = info["status"]
    assert status["ClusterId"] == CLUSTER_ID and status["LeaderId"] in cluster.controllers
    assert status["CurrentVoters"] == "[" + ",".join(map(str, cluster.controllers)) + "]"
    assert status["HighWatermark"] > 0 and status["MaxFollowerLag"] >= 0
    rows = {row["NodeId"]: row for row in info["replication"]}
    assert set(rows) == set(cluster.controllers) | set(cluster.brokers)
    assert rows[status["LeaderId"]]["Status"] == "Leader"
    assert {rows[b]["Status"] for b in cluster.brokers} == {"Observer"}

    text = ok(cluster, "quorum", "describe", "--bootstrap-controller", controllers, "--status")
    assert "MaxFollowerLagTimeMs:" in text and "CurrentObservers:" in text and "LastFetchTimestamp" not in text
    text = ok(cluster, "quorum", "describe", "--bootstrap-controller", controllers, "--replication")
    assert "LastCaughtUpTimestamp" in text and "HighWatermark" not in text
    # Without a broker to ask, the cluster id is unknown: controllers do not tell it.
    alone = json.loads(ok(None, "quorum", "describe", "--bootstrap-controller", controllers, "--json"))
    assert alone["status"]["ClusterId"] is None


# --- wrong input ---------------------------------------------------------------------------


def test_wrong_input_is_one_line(cluster) -> None:
    [nobody] = free_ports(1)  # nothing listens there
    unreachable = f"127.0.0.1:{nobody}"
    for args in (("topics", "list"), ("topics", "describe"), ("cluster", "describe"),
                 ("configs", "describe", "--topic", "x"), ("leader-election", "--election-type", "preferred",
                                                          "--all-topic-partitions")):
        fails(None, *args, bootstrap=unreachable, error="NETWORK_EXCEPTION")
    fails(None, "quorum", "describe", "--bootstrap-controller", unreachable, "--timeout", "1",
          error="NETWORK_EXCEPTION")
    fails(None, "topics", "list", bootstrap="not-an-address", error="INVALID_CONFIG")
    fails(None, "topics", "list", error="KRAFTLOG_BOOTSTRAP")  # no bootstrap at all
    fails(cluster, "topics", "describe", "--no-such-flag", error="No such option")
    fails(cluster, "topics", "create", "x", "--partitions", "many", error="--partitions")
    fails(cluster, "topics", "create", "bad/name", error="INVALID_TOPIC_EXCEPTION")
    fails(cluster, "topics", "create", "x", "--config", "retention.ms=-5", error="INVALID_CONFIG")
    fails(cluster, "leader-election", "--election-type", "sometimes", "--all-topic-partitions",
          error="--election-type")
    fails(cluster, "leader-election", "--election-type", "preferred", error="--all-topic-partitions")
    fails(cluster, "leader-election", "--election-type", "preferred", "--partition", "0", error="--topic")
    fails(cluster, "leader-election", "--election-type", "preferred", "--topic", "nope",
          error="UNKNOWN_TOPIC_OR_PARTITION")
    assert "x" not in ok_json(cluster, "topics", "list")  # nothing was created on the way


# --- ACLs and SCRAM users -----------------------------------------------------------------

ORDERS = "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"


def acl_list(cluster: LocalCluster, *args: str) -> set[tuple[str, ...]]:
    return {(a["resource_type"], a["resource_name"], a["pattern_type"], a["principal"], a["host"], a["operation"],
             a["permission_type"]) for a in ok_json(cluster, "acls", "--list", *args)}


def test_acls_add_list_remove(cluster) -> None:
    added = ok(cluster, "acls", "--add", "--allow-principal", "User:alice", "--operation", "Read",
               "--operation", "Write", "--topic", "orders")
    assert f"Adding ACLs for resource `{ORDERS}`:" in added
    assert "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)" in added
    added = ok(cluster, "acls", "--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.9", "--topic", "orders")
    assert "(principal=User:bob, host=10.0.0.9, operation=ALL, permissionType=DENY)" in added
    ok(cluster, "acls", "--add", "--allow-principal", "User:*", "--group", "app-", "--resource-pattern-type",
       "prefixed", "--operation", "Read")
    ok(cluster, "acls", "--add", "--allow-principal", "User:alice", "--cluster", "--operation", "IdempotentWrite")
    expected = {("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
                ("TOPIC", "orders", "LITERAL", "User:alice", "*", "WRITE", "ALLOW"),
                ("TOPIC", "orders", "LITERAL", "User:bob", "10.0.0.9", "ALL", "DENY"),
                ("GROUP", "app-", "PREFIXED", "User:*", "*", "READ", "ALLOW"),
                ("CLUSTER", "kafka-cluster", "LITERAL", "User:alice", "*", "IDEMPOTENT_WRITE", "ALLOW")}
    eventually(lambda: acl_list(cluster) == expected, "every ACL listed by the brokers")
    assert acl_list(cluster, "--group", "app-1", "--resource-pattern-type", "match") == {
        ("GROUP", "app-", "PREFIXED", "User:*", "*", "READ", "ALLOW")}
    assert acl_list(cluster, "--principal", "User:bob") == {
        ("TOPIC", "orders", "LITERAL", "User:bob", "10.0.0.9", "ALL", "DENY")}
    listed = ok(cluster, "acls", "--list", "--topic", "orders")
    assert f"Current ACLs for resource `{ORDERS}`:" in listed and listed.count("principal=") == 3

    removed = ok(cluster, "acls", "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Write",
                 "--topic", "orders")
    assert "operation=WRITE" in removed and "operation=READ" not in removed
    fails(cluster, "acls", "--remove", "--topic", "orders", stdin="n\n", error="aborted")  # asked, and refused
    eventually(lambda: len(acl_list(cluster, "--topic", "orders")) == 2, "alice's Write removed only")
    ok(cluster, "acls", "--remove", "--force", "--topic", "orders")  # every ACL of the resource
    ok(cluster, "acls", "--remove", "--force", "--group", "app-", "--resource-pattern-type", "prefixed")
    ok(cluster, "acls", "--remove", "--force", "--cluster")
    eventually(lambda: acl_list(cluster) == set(), "no ACL left")


def test_acls_refuse_hostile_input(cluster) -> None:
    fails(cluster, "acls", "--add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t",
          error="unknown AclOperation 'Fly'")
    fails(cluster, "acls", "--add", "--allow-principal", "alice", "--topic", "t", error="TYPE:NAME")
    fails(cluster, "acls", "--add", "--allow-principal", "User:a", "--group", "g", "--operation", "Write",
          error="only supports operations")
    fails(cluster, "acls", "--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type",
          "match", error="--resource-pattern-type")
    fails(cluster, "acls", "--add", "--topic", "t", error="--allow-principal")
    fails(cluster, "acls", "--list", "--add", error="exactly one")
    line = fails(cluster, "acls", "--add", "--allow-principal", "User:a", "--topic", "x" * 40000,
                 error="INVALID_REQUEST")
    assert "at most 32767" in line and len(line) < 400
    assert acl_list(cluster, "--topic", "t") == set()


def test_scram_users_add_describe_delete_without_leaking_the_password(cluster) -> None:
    secret = "alice-s3cret-pw"
    outputs = []

    def keep(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
        outputs.append(done.stdout + done.stderr)
        return done

    assert "Completed updating config for user alice." in keep(run(
        cluster, "configs", "alter", "--entity-type", "users", "--entity-name", "alice",
        "--add-config", f"SCRAM-SHA-512=[iterations=8192,password={secret}],SCRAM-SHA-256=[password={secret}]")).stdout
    described = eventually(lambda: ok_json(cluster, "configs", "describe", "--entity-type", "users").get("alice", {}).get("credentials"),
                           "alice's credentials described")
    assert sorted((d["mechanism"], d["iterations"]) for d in described) == [
        ("SCRAM-SHA-256", 4096), ("SCRAM-SHA-512", 8192)]
    text = keep(run(cluster, "configs", "describe", "--entity-type", "users", "--entity-name", "alice")).stdout
    assert text.strip() == ("SCRAM credential configs for user-principal 'alice' are "
                            "SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=8192")
    for bad, error in ((f"SCRAM-SHA-512=[iterations=2147483648,password={secret}]", "iterations must be"),
                       (f"SCRAM-SHA-512=[iterations=100,password={secret}]", "iterations must be"),
                       (f"SCRAM-SHA-512=[iterations=8192,password={secret}", "the text is not repeated"),
                       (f"SCRAM-SHA-1=[password={secret}]", "unknown user config 'SCRAM-SHA-1'"),
                       (f"SCRAM-SHA-512=[pasword={secret}]", "'pasword'"),
                       ("SCRAM-SHA-512=[iterations=8192]", "password=... is required")):
        outputs.append(fails(cluster, "configs", "alter", "--entity-type", "users", "--entity-name", "bob",
                             "--add-config", bad, error=error))
    keep(run(cluster, "configs", "alter", "--entity-type", "users", "--entity-name", "alice",
             "--delete-config", "SCRAM-SHA-512"))
    eventually(lambda: [d["mechanism"] for d in ok_json(cluster, "configs", "describe", "--entity-type", "users",
                                                         "--entity-name", "alice")["alice"]["credentials"]]
               == ["SCRAM-SHA-256"],
               "alice's SHA-512 credential gone")
    outputs.append(fails(cluster, "configs", "alter", "--entity-type", "users", "--entity-name", "alice",
                         "--delete-config", "SCRAM-SHA-512", error="RESOURCE_NOT_FOUND"))
    outputs.append(fails(cluster, "configs", "describe", "--entity-type", "users", "--entity-name", "nobody",
                         error="RESOURCE_NOT_FOUND"))
    assert not any(secret in out for out in outputs)
    # Nor anywhere the cluster writes: logs, metadata segments, snapshots.
    for path in Path(cluster.directory).rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


# --- a broker goes away ------------------------------------------------------------------


def test_a_dead_broker_shows_in_describe_and_preferred_election_brings_leaders_back(cluster) -> None:
    ok(cluster, "topics", "create", "spread", "--partitions", "3", "--replication-factor", "3")
    ok(cluster, "topics", "create", "single", "--partitions", "3", "--replication-factor", "1")
    cluster.wait_for_leaders("spread")
    cluster.wait_for_leaders("single")
    victim = cluster.brokers[-1]
    [single_on_victim] = [p["partition"] for p in ok_json(cluster, "topics", "describe", "single")[0]["partitions"]
                          if p["replicas"] == [victim]]
    [preferring_victim] = [p["partition"] for p in ok_json(cluster, "topics", "describe", "spread")[0]["partitions"]
                           if p["replicas"][0] == victim]
    cluster.kill(victim)
    try:
        eventually(lambda: [b["fenced"] for b in ok_json(cluster, "cluster", "describe")["brokers"]
                            if b["id"] == victim] == [True], "the dead broker fenced")
        unavailable = eventually(lambda: ok_json(cluster, "topics", "describe", "--unavailable-partitions"),
                                 "an unavailable partition")
        offline = {t["name"]: [p["partition"] for p in t["partitions"]] for t in unavailable}
        assert offline["single"] == [single_on_victim] and "spread" not in offline
        assert all(p["replicas"] == [victim] and p["leader"] < 0 for t in unavailable for p in t["partitions"])
        under = eventually(
            lambda: {t["name"]: t for t in ok_json(cluster, "topics", "describe", "--under-replicated-partitions")
                     }.get("spread"), "under-replicated partitions of spread")
        assert len(under["partitions"]) == 3
        assert all(victim not in p["isr"] and p["leader"] != victim for p in under["partitions"])
        assert "under-replicated" in ok(cluster, "topics", "describe", "spread")
        assert "offline" in ok(cluster, "topics", "describe", "single")
        # No other replica exists: even an unclean election finds no leader.
        line = fails(cluster, "leader-election", "--election-type", "unclean", "--topic", "single",
                     "--partition", str(single_on_victim), error="could not be elected")
        assert "ELIGIBLE_LEADERS_NOT_AVAILABLE" in line
    finally:
        cluster.start(victim)
    cluster.wait_for_brokers()

    def back_in_sync() -> bool:
        return all(sorted(p["isr"]) == sorted(cluster.brokers)
                   for p in ok_json(cluster, "topics", "describe", "spread")[0]["partitions"])

    eventually(back_in_sync, "the restarted broker back in every ISR")
    done = run(cluster, "leader-election", "--election-type", "preferred", "--all-topic-partitions")
    assert done.returncode == 0, done.stderr
    assert "Successfully completed leader election (PREFERRED)" in done.stdout
    assert f"spread-{preferring_victim}" in done.stdout  # its leadership moved away when the broker died
    eventually(lambda: all(p["leader"] == p["replicas"][0]
                           for p in ok_json(cluster, "topics", "describe", "spread")[0]["partitions"]),
               "preferred leaders everywhere")
    assert "Valid replica already elected" in ok(
        cluster, "leader-election", "--election-type", "preferred", "--topic", "spread")


# --- client quotas ---------------------------------------------------------------------------

def _produce(cluster: LocalCluster, topic: str, client_id: str, count: int) -> int:
    """Produce `count` records of 1000 bytes as `client_id`; the longest throttle time the producer was told."""
    from client.producer import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": client_id, "linger.ms": 5})
    try:
        for i in range(count):
            producer.produce(topic, b"%04d" % i + b"x" * 996)
        assert producer.flush(60) == 0
        return producer.metrics()["produce-throttle-time-max"]
    finally:
        producer.close()


def _produce_and_read(cluster: LocalCluster, topic: str, client_id: str, count: int) -> tuple[int, int]:
    """_produce, then read them all back as the same client id;
    the longest throttle times the producer and the consumer were told."""
    from client.consumer import Consumer
    from client.consumer_types import TopicPartition

    produce_throttle = _produce(cluster, topic, client_id, count)
    seen: list[bytes] = []
    with Consumer({"bootstrap.servers": cluster.bootstrap, "client.id": client_id,
                   "auto.offset.reset": "earliest", "max.partition.fetch.bytes": 16384}) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        eventually(lambda: seen.extend(r.value for r in consumer.poll(0.5)) or len(seen) >= count,
                   f"{count} records read back")
        fetch_throttle = consumer.metrics()["fetch-throttle-time-max"]
    assert sorted(v[:4] for v in seen) == [b"%04d" % i for i in range(count)]  # all arrived, once each
    return produce_throttle, fetch_throttle


def test_client_quotas_throttle_only_the_client_over_them(cluster) -> None:
    ok(cluster, "topics", "create", "quota-t", "--partitions", "1", "--replication-factor", "1")
    # 10 000 bytes a second; 110 records of 1000 bytes, measured over Kafka's minimum 10 s window, are over it
    ok(cluster, "configs", "alter", "--entity-type", "clients", "--entity-name", "slow",
       "--add-config", "producer_byte_rate=10000,consumer_byte_rate=10000")
    ok(cluster, "configs", "alter", "--user-defaults", "--add-config", "request_percentage=50")
    # 0.0001 % of the event loop is 10 us of handler time over the 10 s minimum window: a few requests
    # (a Metadata or a Produce takes 50-200 us) are over it. For the default user and client id busy, as
    # without SASL every client is user ANONYMOUS, and <default> user's 50 % above would come first.
    ok(cluster, "configs", "alter", "--user-defaults", "--client", "busy", "--add-config", "request_percentage=0.0001")
    expected = [{"entity": {"client-id": "slow"},
                 "quotas": {"consumer_byte_rate": 10000.0, "producer_byte_rate": 10000.0}}]
    eventually(lambda: ok_json(cluster, "configs", "describe", "--entity-type", "clients") == expected,
               "the quota described")
    assert ok_json(cluster, "configs", "describe", "--entity-type", "users", "--entity-default") == {
        "<default>": {"credentials": [], "quotas": {"request_percentage": 50.0}}}
    text = ok(cluster, "configs", "describe", "--client", "slow")
    assert text.strip() == ("Quota configs for client-id 'slow' are consumer_byte_rate=10000.0, "
                            "producer_byte_rate=10000.0")
    # every broker has it once a new metadata offset reached them all: the describe above went to one
    eventually(lambda: len({ok_json(cluster, "configs", "describe", "--client", "slow", "--bootstrap", b)[0]
                            ["quotas"]["producer_byte_rate"] for b in cluster.bootstrap.split(",")}) == 1,
               "every broker sees the quota")
    slow_produce, slow_fetch = _produce_and_read(cluster, "quota-t", "slow", 110)
    assert slow_produce > 0 and slow_fetch > 0
    ok(cluster, "topics", "create", "quota-u", "--partitions", "1", "--replication-factor", "1")
    fast_produce, fast_fetch = _produce_and_read(cluster, "quota-u", "fast", 110)
    assert fast_produce == 0 and fast_fetch == 0  # another client id: no quota applies
    # the request quota: a few requests' handler time is over it, the Produce answer says so
    assert 0 < _produce(cluster, "quota-u", "busy", 10) <= 1000  # Kafka's request throttle: at most one window
    ok(cluster, "configs", "alter", "--user-defaults", "--client", "busy", "--delete-config", "request_percentage")
    ok(cluster, "configs", "alter", "--entity-type", "clients", "--entity-name", "slow",
       "--delete-config", "producer_byte_rate,consumer_byte_rate")
    eventually(lambda: ok_json(cluster, "configs", "describe", "--entity-type", "clients") == [], "quota removed")


def test_client_quotas_refuse_hostile_values(cluster) -> None:
    for bad, error in (("producer_byte_rate=-5", "greater than 0"), ("producer_byte_rate=nan", "finite"),
                       ("consumer_byte_rate=1e300", "too large"), ("producer_byte_rate=ten", "not a number"),
                       ("bytes_rate=5", "unknown quota config")):
        fails(cluster, "configs", "alter", "--client", "hostile", "--add-config", bad, error=error)
    fails(cluster, "configs", "alter", "--entity-type", "clients", "--entity-name", "", "--add-config",
          "producer_byte_rate=5", error="name the entity")
    fails(cluster, "configs", "alter", "--entity-type", "ips", "--entity-name", "x", "--add-config",
          "producer_byte_rate=5", error="users or clients")
    assert ok_json(cluster, "configs", "describe", "--client", "hostile") == []
