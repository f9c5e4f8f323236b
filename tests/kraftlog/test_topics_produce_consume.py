"""`kraftlog topics`, `produce` and `consume` against a real cluster (3 controllers + 3 brokers)."""
from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict

import pytest

from devcluster.local_cluster import LocalCluster
from tests.cli_process import run_cli

PROPERTIES = {"broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("console"), properties=PROPERTIES).running() as c:
        yield c


def kraftlog(cluster: LocalCluster, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return run_cli(args, dict(os.environ, KRAFTLOG_BOOTSTRAP=cluster.bootstrap), stdin=stdin, timeout=180)


def test_create_describe_produce_consume_round_trip(cluster) -> None:
    created = kraftlog(cluster, "topics", "create", "events", "--partitions", "6", "--replication-factor", "3",
                       "--config", "min.insync.replicas=2")
    assert created.returncode == 0, created.stderr
    cluster.wait_for_leaders("events")
    described = kraftlog(cluster, "topics", "describe", "events", "--json")
    assert described.returncode == 0, described.stderr
    [topic] = json.loads(described.stdout)
    assert [p["partition"] for p in topic["partitions"]] == list(range(6))
    for p in topic["partitions"]:
        assert sorted(p["replicas"]) == sorted(cluster.brokers) and p["leader"] in p["isr"]
    assert len({p["leader"] for p in topic["partitions"]}) == 3  # leaders spread over the brokers

    lines = [f"line-{i}" for i in range(3000)]
    produced = kraftlog(cluster, "produce", "events", "--acks", "all", "--batch-records", "200",
                        stdin="".join(v + "\n" for v in lines))
    assert produced.returncode == 0, produced.stderr

    consumed = kraftlog(cluster, "consume", "events", "--from-beginning", "--max-messages", str(len(lines)), "--json")
    assert consumed.returncode == 0, consumed.stderr
    records = [json.loads(line) for line in consumed.stdout.splitlines()]
    assert sorted(r["value"] for r in records) == sorted(lines)  # every record, once
    by_partition = defaultdict(list)
    for r in records:
        assert set(r) == {"topic", "partition", "offset", "timestamp", "key", "value", "headers"}
        by_partition[r["partition"]].append(r)
    for part in by_partition.values():
        assert [r["offset"] for r in part] == list(range(len(part)))  # in order, no gaps
        # Lines were produced in order, so within a partition they stay in order.
        assert [int(r["value"].split("-")[1]) for r in part] == sorted(int(r["value"].split("-")[1]) for r in part)
    assert len(by_partition) == 6  # sticky batches went round the partitions


def test_errors_are_one_line_with_kafka_names(cluster) -> None:
    again = kraftlog(cluster, "topics", "create", "events", "--partitions", "1", "--replication-factor", "1")
    assert again.returncode == 1 and "TOPIC_ALREADY_EXISTS" in again.stderr
    bad = kraftlog(cluster, "topics", "create", "bad/name", "--partitions", "1", "--replication-factor", "1")
    assert bad.returncode == 1 and "INVALID_TOPIC_EXCEPTION" in bad.stderr
    too_many = kraftlog(cluster, "topics", "create", "wide", "--partitions", "1", "--replication-factor", "4")
    assert too_many.returncode == 1 and "INVALID_REPLICATION_FACTOR" in too_many.stderr
    unknown = kraftlog(cluster, "topics", "describe", "no-such-topic")
    assert unknown.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in unknown.stderr
