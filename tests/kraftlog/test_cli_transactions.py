"""`kraftlog transactions` as subprocesses.

Argument checks need no cluster. Against a real cluster (3 controllers + 3
brokers, one for the module): list and describe an open transaction, the
producers of its partitions, find-hanging, abort at a partition, and the copy
example killed with SIGKILL mid-run and started again: the destination holds
every source record exactly once (read_committed)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

from client.consumer import Consumer
from client.consumer_types import TopicPartition
from client.producer import Producer
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until

from .test_cli_admin import fails, ok, ok_json, run, running_cluster

# A killed copier's partitions go to the next one once its session ends: keep that short.
PROPERTIES = {"broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500,
              "transaction.state.log.num.partitions": 5,
              "group.consumer.heartbeat.interval.ms": 500, "group.consumer.session.timeout.ms": 4000}


# --- arguments (no cluster) ------------------------------------------------------------


@pytest.mark.parametrize("args, complaint", [
    (["describe"], "--transactional-id"),
    (["describe-producers", "--topic", "t"], "--partition"),
    (["describe-producers", "--topic", "t", "--partition", "-1"], "--partition"),
    (["abort", "--topic", "t", "--partition", "0"], "--start-offset"),
    (["abort", "--topic", "t", "--partition", "0", "--start-offset", "-5"], "--start-offset"),
    (["find-hanging", "--max-transaction-timeout", "0"], "--max-transaction-timeout"),
    (["find-hanging", "--broker-id", "x"], "--broker-id"),
    (["copy", "--from", "a", "--to", "a", "--group", "g", "--transactional-id", "t"], "--to"),
    (["copy", "--from", "a", "--to", "b", "--group", "g"], "--transactional-id"),
    (["copy", "--from", "a", "--to", "b", "--group", "g", "--transactional-id", "t", "--max-records", "0"],
     "--max-records"),
])
def test_bad_arguments_are_refused_in_one_line_before_connecting(args: list[str], complaint: str) -> None:
    result = run(None, "transactions", *args, bootstrap="127.0.0.1:1")
    assert result.returncode == 2, result.stderr
    assert complaint in result.stderr and "Traceback" not in result.stderr


def test_abort_says_it_needs_cluster_action() -> None:
    text = ok(None, "transactions", "abort", "--help")
    assert "ClusterAction" in text and "WriteTxnMarkers" in text


def test_no_broker_is_a_one_line_network_error() -> None:
    text = fails(None, "transactions", "list", error="NETWORK_EXCEPTION", bootstrap="127.0.0.1:1")
    assert "Traceback" not in text


# --- against a cluster ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    for c in running_cluster(tmp_path_factory.mktemp("cli-txn"), PROPERTIES):
        for name, partitions in (("src", 3), ("dst", 3), ("open", 1)):
            ok(c, "topics", "create", name, "--partitions", str(partitions), "--replication-factor", "3")
            c.wait_for_leaders(name)
        yield c


def test_an_open_transaction_listed_described_found_by_its_partition_and_aborted(cluster: LocalCluster) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "cli-open",
                         "transaction.timeout.ms": 600000})
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce("open", b"pending", partition=0)
        producer.flush(30)
        listed = ok_json(cluster, "transactions", "list")
        mine = [t for t in listed if t["transactional_id"] == "cli-open"]
        assert mine and mine[0]["state"] == "Ongoing"
        described = ok_json(cluster, "transactions", "describe", "--transactional-id", "cli-open")
        assert described["state"] == "Ongoing" and ["open", 0] in described["partitions"]
        producers = ok_json(cluster, "transactions", "describe-producers", "--topic", "open", "--partition", "0")
        [open_txn] = [p for p in producers if p["current_txn_start_offset"] >= 0]
        assert open_txn["producer_id"] == described["producer_id"]
        # Known to its coordinator as ongoing, and young: not hanging.
        hanging = ok_json(cluster, "transactions", "find-hanging")
        assert not [h for h in hanging if h["topic"] == "open"]
        fails(cluster, "transactions", "abort", "--topic", "open", "--partition", "0", "--start-offset",
              str(open_txn["current_txn_start_offset"] + 100), error="INVALID_REQUEST")
        aborted = ok_json(cluster, "transactions", "abort", "--topic", "open", "--partition", "0", "--start-offset",
                          str(open_txn["current_txn_start_offset"]))
        assert aborted["producer_id"] == open_txn["producer_id"]
        after = ok_json(cluster, "transactions", "describe-producers", "--topic", "open", "--partition", "0")
        assert all(p["current_txn_start_offset"] < 0 for p in after)
    finally:
        producer.close(10)


def fill_source(cluster: LocalCluster, count: int) -> set[bytes]:
    values = [f"r{i}".encode() for i in range(count)]
    with Producer({"bootstrap.servers": cluster.bootstrap}) as producer:
        for v in values:
            producer.produce("src", v, key=v)
        assert producer.flush(60) == 0
    return set(values)


def read_committed(cluster: LocalCluster, topic: str, partitions: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "isolation.level": "read_committed",
                         "auto.offset.reset": "earliest", "enable.auto.commit": "false"})
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        out: list[bytes] = []
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < ends[tp] for tp in tps) and time.monotonic() < deadline:
            out.extend(r.value for r in consumer.poll(0.5))
        return out
    finally:
        consumer.close()


def copier(cluster: LocalCluster, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "KRAFTLOG_BOOTSTRAP": cluster.bootstrap}
    return subprocess.Popen([sys.executable, "-m", "kraftlog", "transactions", "copy", "--from", "src", "--to", "dst",
                             "--group", "copier", "--transactional-id", "copier-1", *extra],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_copier_killed_and_restarted_copies_every_record_exactly_once(cluster: LocalCluster) -> None:
    wanted = fill_source(cluster, 3000)
    first = copier(cluster)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(first.stderr), daemon=True)
    reader.start()
    try:
        # Killed once it has committed a few transactions (its stderr says so), mid-stream.
        wait_until(lambda: first.poll() is not None or any(line.startswith("committed transaction 3")
                                                           for line in list(lines)),
                   timeout=120, what="the copier's third transaction")
        assert first.poll() is None, "".join(lines)
        os.kill(first.pid, signal.SIGKILL)
    finally:
        if first.poll() is None:
            first.kill()
        first.wait(30)
        reader.join(10)
    # Idle until the dead copier's session (4 s) ends and its partitions come over; then it exits
    # once nothing came for that long: more than twice the session.
    second = copier(cluster, "--idle-exit", "10")
    try:
        out, err = second.communicate(timeout=300)
    finally:
        if second.poll() is None:
            second.kill()
            second.wait(30)
    assert second.returncode == 0, err
    copied = read_committed(cluster, "dst", 3)
    counts = Counter(copied)
    assert set(counts) == wanted and max(counts.values()) == 1
