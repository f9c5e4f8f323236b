"""Partition reassignment and broker decommission with real processes: three
controllers and three brokers (A, B, C), each broker with a gRPC listener and
a Kafka one. `kraftlog reassign-partitions` moves a partition holding records
from {A, B} to {B, C}: every record is read back from the new replicas and
A's copy of the log is deleted. kafka-python's admin client (a client nobody
here wrote) starts a move that cannot finish (its new replica is stopped),
lists it and cancels it; `reassign-partitions --execute` starts it again and
`--cancel` cancels it. Then C is decommissioned as an operator does it: its
partition moved away, the broker stopped, `kraftlog cluster unregister`.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Optional

import pytest
from kafka import KafkaAdminClient, TopicPartition

from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until
from devcluster.read_back import read_back
from kraftlog_api import controller_pb2 as cpb
from kraftlog_server.server_config import KAFKA_PROTOCOL_LISTENERS
from tests.cli_process import run_cli

from ..client.produce_consume import produce_values

PROPERTIES = {
    KAFKA_PROTOCOL_LISTENERS: "CLIENTS",
    "broker.session.timeout.ms": 2000,
    "broker.heartbeat.interval.ms": 500,
    "replica.fetch.wait.max.ms": 200,
    "replica.fetch.backoff.ms": 200,
}
A, B, C = 4, 5, 6  # the brokers (controllers are 1-3)
WAIT_S = 60.0  # bounds every wait; never part of an assert
RECORDS = 300


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("reassignment"), client_listener="PLAINTEXT",
                      properties=PROPERTIES).running(timeout=WAIT_S) as c:
        yield c


def cli(cluster: LocalCluster, *args: str, brokers: Optional[list[int]] = None) -> subprocess.CompletedProcess:
    """The CLI with KRAFTLOG_BOOTSTRAP naming `brokers` (default: every broker)."""
    addresses = [cluster.broker_addresses[b] for b in brokers or cluster.brokers]
    env = {**os.environ, "KRAFTLOG_BOOTSTRAP": ",".join(addresses)}
    done = run_cli(args, env, "", timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def ok(cluster: LocalCluster, *args: str, brokers: Optional[list[int]] = None) -> str:
    done = cli(cluster, *args, brokers=brokers)
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done.stdout


def create_on(cluster: LocalCluster, topic: str, replicas: list[int]) -> None:
    request = cpb.CreateTopicsRequest(topics=[cpb.CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=-1, replication_factor=-1,
        assignments=[cpb.CreateTopicsRequest.Assignment(partition_index=0, broker_ids=replicas)])])
    answer = cluster.broker_stub(A).CreateTopics(request, timeout=WAIT_S)
    assert (answer.error_code, answer.topics[0].error_code) == (0, 0), answer
    cluster.wait_for_leaders(topic)


def moves_file(tmp_path: Path, name: str, moves: dict[tuple[str, int], list[int]]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r} for (t, p), r in moves.items()]}))
    return str(path)


def verified(cluster: LocalCluster, path: str) -> dict[str, Any]:
    """`--verify --json` once every partition of the file is "completed" (a broker's image
    follows the controller's a moment later: right after a move it may still read "elsewhere")."""
    def done() -> Any:
        report = json.loads(ok(cluster, "reassign-partitions", "--verify", "--reassignment-json-file", path, "--json"))
        return report if all(p["state"] == "completed" for p in report["partitions"]) else None
    return wait_until(done, WAIT_S, f"the moves of {path} to complete", interval=0.5)


def replicas_everywhere(cluster: LocalCluster, topic: str, expected: list[int]) -> bool:
    """Every live broker's metadata shows `expected` as the partition's replicas, led by one of them."""
    for broker in cluster.live_brokers():
        answer = cluster.metadata(broker, topics=[topic])
        if answer is None or not answer.topics or not answer.topics[0].partitions:
            return False
        partition = answer.topics[0].partitions[0]
        if list(partition.replica_nodes) != expected or partition.leader_id not in expected:
            return False
    return True


def unfenced(cluster: LocalCluster) -> set[int]:
    """The brokers A's metadata lists (Metadata leaves fenced brokers out)."""
    answer = cluster.metadata(A)
    return {b.node_id for b in answer.brokers} if answer is not None else {C}


def log_dir(cluster: LocalCluster, broker: int, topic: str) -> Path:
    return Path(cluster.plans[broker].config.log_dirs[0]) / f"{topic}-0"


def test_a_partition_with_records_moves_to_other_brokers(cluster, tmp_path):
    topic = "moved"
    create_on(cluster, topic, [A, B])
    summary = produce_values(cluster.bootstrap, topic, [b"r%d" % i for i in range(RECORDS)], partition=0)
    assert (summary.acknowledged, summary.failed) == (RECORDS, 0), summary.errors

    to_move = tmp_path / "topics.json"
    to_move.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    generated = ok(cluster, "reassign-partitions", "--generate", "--topics-to-move-json-file", str(to_move),
                   "--broker-list", f"{B},{C}")
    current, proposed = [json.loads(line) for line in generated.splitlines() if line.startswith("{")]
    assert current["partitions"] == [{"topic": topic, "partition": 0, "replicas": [A, B], "log_dirs": ["any", "any"]}]
    assert sorted(proposed["partitions"][0]["replicas"]) == [B, C]

    path = moves_file(tmp_path, "move.json", {(topic, 0): [B, C]})
    started = ok(cluster, "reassign-partitions", "--execute", "--reassignment-json-file", path)
    assert f"Successfully started partition reassignments for {topic}-0" in started
    assert f'"replicas":[{A},{B}]' in started  # the rollback file
    report = verified(cluster, path)
    assert [p["state"] for p in report["partitions"]] == ["completed"]
    wait_until(lambda: replicas_everywhere(cluster, topic, [B, C]), WAIT_S, "the new replicas in every broker's view")
    assert f"Reassignment of partition {topic}-0 is completed." in ok(
        cluster, "reassign-partitions", "--verify", "--reassignment-json-file", path)

    got = read_back(cluster.bootstrap, topic, [0], max_messages=RECORDS, idle_timeout_s=10)
    assert [r.value for r in got] == [b"r%d" % i for i in range(RECORDS)]
    wait_until(lambda: not log_dir(cluster, A, topic).exists(), WAIT_S, "broker A's copy of the log deleted")
    assert log_dir(cluster, C, topic).is_dir()
    assert ok(cluster, "reassign-partitions", "--list").strip() == "No partition reassignments found."


def test_kafka_pythons_admin_client_lists_and_cancels_a_move(cluster, tmp_path):
    topic = "cancelled"
    create_on(cluster, topic, [A, B])
    up = [A, B]  # C is stopped below: every call goes to A or B (a stopped broker answers nothing)
    cluster.pause(C)  # the new replica cannot catch up: the move stays under way
    admin = None
    try:
        wait_until(lambda: C not in unfenced(cluster), WAIT_S, "broker C fenced")
        # Made now, the client's view has no C: the broker it takes for the controller is a live one.
        admin = KafkaAdminClient(bootstrap_servers=cluster.client_addresses[A], request_timeout_ms=30000)
        tp = TopicPartition(topic, 0)
        assert admin.alter_partition_reassignments({tp: [A, C]}) == {tp: None}
        under_way = admin.list_partition_reassignments({topic: [0]})
        assert under_way == {tp: {"replicas": [A, C, B], "adding_replicas": [C], "removing_replicas": [B]}}
        listed = ok(cluster, "reassign-partitions", "--list", brokers=up)
        assert f"{topic}-0: replicas: {A},{C},{B}. adding: {C}. removing: {B}." in listed
        path = moves_file(tmp_path, "stuck.json", {(topic, 0): [A, C]})
        report = json.loads(ok(cluster, "reassign-partitions", "--verify", "--reassignment-json-file", path,
                               "--json", brokers=up))
        assert [p["state"] for p in report["partitions"]] == ["in progress"]
        assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
        assert admin.list_partition_reassignments() == {}
        again = ok(cluster, "reassign-partitions", "--cancel", "--reassignment-json-file", path, brokers=up)
        assert "None of the specified partition moves are active." in again
        # The tool cancels a move under way too: started again, with the tool this time.
        started = ok(cluster, "reassign-partitions", "--execute", "--reassignment-json-file", path, brokers=up)
        assert f"Successfully started partition reassignments for {topic}-0" in started
        assert admin.list_partition_reassignments() == \
            {tp: {"replicas": [A, C, B], "adding_replicas": [C], "removing_replicas": [B]}}
        cancelled = ok(cluster, "reassign-partitions", "--cancel", "--reassignment-json-file", path, brokers=up)
        assert f"Successfully cancelled partition reassignments for: {topic}-0" in cancelled
        assert admin.list_partition_reassignments() == {}
        refused = admin.alter_partition_reassignments({tp: [A, 99]})
        assert refused[tp].__name__ == "InvalidReplicationAssignmentError"  # kafka-python's name for 39
    finally:
        cluster.resume(C)
        if admin is not None:
            admin.close()
    cluster.wait_for_brokers()
    wait_until(lambda: replicas_everywhere(cluster, topic, [A, B]), WAIT_S, "the original replicas back")


def test_a_broker_is_decommissioned(cluster, tmp_path):
    topic = "moved"  # on [B, C] since the first test
    path = moves_file(tmp_path, "off-c.json", {(topic, 0): [A, B]})
    # Throttled as kafka-reassign-partitions --throttle does it (a rate far above what the move needs):
    # the replica lists and rates are set, and --verify removes them once the move is done.
    started = ok(cluster, "reassign-partitions", "--execute", "--reassignment-json-file", path,
                 "--throttle", "50000000")
    assert "The inter-broker throttle limit was set to 50000000 B/s" in started
    throttled = ok(cluster, "configs", "describe", "--topic", topic)
    assert "leader.replication.throttled.replicas" in throttled, throttled
    assert "follower.replication.throttled.replicas" in throttled, throttled
    assert [p["state"] for p in verified(cluster, path)["partitions"]] == ["completed"]
    ok(cluster, "reassign-partitions", "--verify", "--reassignment-json-file", path)
    cleared = ok(cluster, "configs", "describe", "--topic", topic)
    assert "replication.throttled" not in cleared, cleared
    assert "replication.throttled.rate" not in ok(cluster, "configs", "describe", "--broker", str(A))
    wait_until(lambda: not log_dir(cluster, C, topic).exists(), WAIT_S, "broker C's copy of the log deleted")

    assert cluster.stop(C) == 0
    ok(cluster, "cluster", "unregister", "--id", str(C))
    # Brokers apply the record a moment after it commits: their answers are awaited, not assumed.
    def registered() -> Optional[list[int]]:
        ids = sorted(b["id"] for b in json.loads(ok(cluster, "cluster", "describe", "--json"))["brokers"])
        return ids if C not in ids else None
    assert wait_until(registered, WAIT_S, "broker C gone from the brokers' view", interval=0.3) == [A, B]
    again = cli(cluster, "cluster", "unregister", "--id", str(C))
    assert again.returncode == 1 and "BROKER_ID_NOT_REGISTERED" in again.stderr
    # An unregistered broker is no target any more.
    bad = moves_file(tmp_path, "to-c.json", {(topic, 0): [A, C]})
    refused = cli(cluster, "reassign-partitions", "--execute", "--reassignment-json-file", bad)
    assert refused.returncode == 1 and "INVALID_REPLICA_ASSIGNMENT" in refused.stderr
    read = read_back(cluster.bootstrap, topic, [0], max_messages=RECORDS, idle_timeout_s=10)
    assert len(read) == RECORDS
