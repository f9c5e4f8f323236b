"""A rolling restart and feature levels on one real cluster (3 combined
nodes: a restart each is both a controller's and a broker's, and the fewest
processes): `kraftlog features describe|upgrade|downgrade` with Kafka's
refusals, `kraftlog cluster roll` under a producer at acks=all losing no
acknowledged record, and a roll that stops at a node that does not come
back. The roll's order and health reading are tests/kraftlog/test_roll_order.py's,
the controller's feature decisions tests/metadata_quorum/test_features.py's."""
from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import typer

from client.producer import Producer
from devcluster import launcher, roll
from devcluster.local_cluster import LocalCluster
from devcluster.read_back import read_back
from kraftlog.commands.features import parse_levels

from .test_cli_admin import eventually, fails, ok, run

PROPERTIES = {
    "broker.session.timeout.ms": 3000,
    "broker.heartbeat.interval.ms": 500,
    "replica.lag.time.max.ms": 3000,
    "controller.quorum.election.timeout.ms": 1000,
    "controller.quorum.fetch.timeout.ms": 2000,
}
TOPIC = "rolled"
ROLL_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = LocalCluster(tmp_path_factory.mktemp("rolling"), combined=3, properties=PROPERTIES)
    try:
        with c.running(timeout=90):
            c.create_topic(TOPIC, partitions=2, replication_factor=3, configs={"min.insync.replicas": "2"})
            c.wait_for_leaders(TOPIC)
            yield c
    finally:
        # A roll through the CLI restarts nodes LocalCluster did not start: stop them by their pid files too.
        launcher.stop_nodes(tuple(c.plans.values()), grace=5.0)
        c.close()


def describe(cluster: LocalCluster) -> dict[str, Any]:
    return json.loads(ok(cluster, "features", "describe", "--json"))


def finalized_as(cluster: LocalCluster, levels: dict[str, int]) -> None:
    eventually(lambda: describe(cluster)["finalized"] == levels or None, f"the finalized levels {levels}")


def test_features_describe_upgrade_and_refusals(cluster) -> None:
    described = describe(cluster)
    assert described["supported"] == {"metadata.version": [1, 1], "eligible.leader.replicas.version": [0, 1]}
    assert described["finalized"] == {"metadata.version": 1} and described["epoch"] > 0
    text = ok(cluster, "features", "describe")
    assert "Feature: metadata.version\tSupportedMinVersion: 1.0-IV0\tSupportedMaxVersion: 1.0-IV0\t" \
           "FinalizedVersionLevel: 1.0-IV0\tEpoch: " in text
    assert ok(cluster, "features", "upgrade", "--metadata", "1.0-IV0", "--dry-run").strip() == \
        "metadata.version can be upgraded to 1.0-IV0"
    fails(cluster, "features", "upgrade", "--metadata", "2",
          error="Invalid update version 2 for feature metadata.version. Local controller only supports versions 1-1")
    fails(cluster, "features", "downgrade", "--metadata", "0", error="Refusing to perform the requested downgrade")
    assert describe(cluster)["finalized"] == {"metadata.version": 1}  # nothing moved


def test_eligible_leader_replicas_go_on_and_off_with_the_features_command(cluster) -> None:
    """KIP-966's feature, Kafka's name: off by default, on and off again through the CLI; the topic
    description carries the (here empty: the ISR is full) ELR and last known ELR."""
    assert "eligible.leader.replicas.version" not in describe(cluster)["finalized"]
    ok(cluster, "features", "upgrade", "--feature", "eligible.leader.replicas.version=1")
    # The controller has committed the level when the command returns; the answering broker learns it
    # from the metadata log a moment later (Kafka's describeFeatures is a broker's view too).
    finalized_as(cluster, {"metadata.version": 1, "eligible.leader.replicas.version": 1})
    topics = json.loads(ok(cluster, "topics", "describe", TOPIC, "--json"))
    assert all(p["eligible_leader_replicas"] == [] and p["last_known_elr"] == [] for p in topics[0]["partitions"])
    ok(cluster, "features", "downgrade", "--feature", "eligible.leader.replicas.version=0")
    finalized_as(cluster, {"metadata.version": 1})


def test_feature_options_parse_as_kafka_features_takes_them() -> None:
    assert parse_levels("1.0-IV0", ["x.version=3"]) == {"metadata.version": 1, "x.version": 3}
    assert parse_levels(None, ["metadata.version=1"]) == {"metadata.version": 1}
    for metadata, items, words in ((None, [], "give --metadata"), (None, ["metadata.version"], "NAME=LEVEL"),
                                   ("one", [], "a level number"), ("1", ["metadata.version=1"], "given twice")):
        with pytest.raises(typer.BadParameter, match=words):
            parse_levels(metadata, items)


def test_a_roll_under_load_loses_no_acknowledged_record(cluster) -> None:
    acked: list[bytes] = []
    failed: list[str] = []
    stop = threading.Event()

    def produce() -> None:
        with Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5,
                       "delivery.timeout.ms": 60000, "request.timeout.ms": 5000}) as producer:
            n = 0
            while not stop.is_set() and n < 20000:  # bounded: about 50 a second for the roll's length
                value = f"v{n}".encode()
                future = producer.produce(TOPIC, value, partition=n % 2)
                future.add_done_callback(lambda f, value=value: failed.append(repr(f.exception())) if f.exception()
                                         else acked.append(value))
                n += 1
                stop.wait(0.02)
            producer.flush(timeout=60)

    producer = threading.Thread(target=produce, name="roll-producer")
    producer.start()
    try:
        done = run(cluster, "cluster", "roll", "--config", str(cluster.cluster_file),
                   "--data-dir", str(cluster.directory / "data"), "--timeout", str(ROLL_TIMEOUT_S))
    finally:
        stop.set()
        producer.join(90)
    assert done.returncode == 0, done.stderr
    assert "rolled 3 node(s)" in done.stdout
    order = [int(line.split()[1]) for line in done.stdout.splitlines() if line.endswith(": stopping")]
    assert sorted(order) == [1, 2, 3], done.stdout
    assert not producer.is_alive()
    assert acked, failed
    stored = {r.value for r in read_back(cluster.bootstrap, TOPIC, [0, 1], max_messages=len(acked) + len(failed),
                                         idle_timeout_s=5.0)}
    assert set(acked) <= stored, f"{len(set(acked) - stored)} acknowledged records lost"


class NeverBack(roll.LauncherControl):
    """Stops a node and never starts it again (its new binary does not start)."""

    def start(self, plan: launcher.NodePlan) -> None:
        return None


def test_a_node_that_does_not_come_back_stops_the_roll(cluster) -> None:
    plans = tuple(cluster.plans.values())
    before = {p.node_id: launcher.running_pid(p) for p in plans}
    # no time to see the cluster healthy: the CLI stops before the first node, saying why
    done = run(cluster, "cluster", "roll", "--config", str(cluster.cluster_file),
               "--data-dir", str(cluster.directory / "data"), "--brokers-only", "--timeout", "0")
    assert done.returncode == 1 and done.stderr.startswith("kraftlog cluster roll: before the roll: the cluster is "
                                                           "not healthy after 0s"), done.stderr
    assert "rolled" not in done.stdout
    events: list[str] = []
    with pytest.raises(roll.RollError, match=r"node (\d) exited after its restart; the roll stops here") as stopped:
        roll.roll(plans, timeout_s=ROLL_TIMEOUT_S, control=NeverBack(grace_s=30), on_event=events.append)
    gone = int(stopped.value.args[0].split()[1])
    assert gone in (1, 2, 3) and "End of its log" in str(stopped.value)
    after = {p.node_id: launcher.running_pid(p) for p in plans}
    # only that node was touched: every other one still runs as the same process
    assert after[gone] is None
    assert {n: pid for n, pid in after.items() if n != gone} == {n: pid for n, pid in before.items() if n != gone}
    assert [e for e in events if e.endswith(": stopping")] == [f"node {gone} (broker,controller): stopping"]

