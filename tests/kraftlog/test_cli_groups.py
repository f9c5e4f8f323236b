"""`kraftlog groups` as subprocesses against a real cluster (3 controllers + 3 brokers):
a group with a live member (a Consumer in this process) described with its assignment
and lag, refused a reset and a delete while it has members; once empty, offsets reset
by every strategy (dry run first), read back by a consumer, and the group deleted."""
from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timezone

import pytest

from client.consumer import Consumer
from devcluster.local_cluster import LocalCluster

from .test_cli_admin import eventually, fails, ok, ok_json, run, running_cluster

PROPERTIES = {"broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500}
RECORDS_PER_PARTITION = 40


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    for c in running_cluster(tmp_path_factory.mktemp("cli-groups"), PROPERTIES):
        ok(c, "topics", "create", "orders", "--partitions", "3", "--replication-factor", "3")
        c.wait_for_leaders("orders")
        for p in range(3):
            ok(c, "produce", "orders", "--partition", str(p),
               stdin="".join(f"p{p}-{i}\n" for i in range(RECORDS_PER_PARTITION)))
        yield c


class Member:
    """A group member polling on a thread until stopped; what it read."""

    def __init__(self, cluster: LocalCluster, group: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": cluster.bootstrap,
                                  "group.id": group, "auto.offset.reset": "earliest", "client.id": "cli-test",
                                  "max.poll.records": 10})
        self.consumer.subscribe(["orders"])
        self.read = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.is_set() and self.read < 25:  # commits stay behind the log end
            self.read += len(self.consumer.poll(0.2))
        while not self.stopping.is_set():
            time.sleep(0.1)  # stays a member: heartbeats run on the consumer's own thread

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=30)
        self.consumer.commit()
        self.consumer.close()


def test_a_group_with_a_member_then_reset_and_delete(cluster) -> None:
    member = Member(cluster, "billing")
    try:
        def described() -> dict | None:
            # Until the member's JoinGroup reaches the coordinator the group does not exist,
            # and describe says so as kafka-consumer-groups does; that is not yet a failure.
            done = run(cluster, "groups", "describe", "billing", "--json")
            if done.returncode != 0:
                assert "GROUP_ID_NOT_FOUND" in done.stderr and "Traceback" not in done.stderr, done.stderr
                return None
            info = json.loads(done.stdout)
            return info if info["members"] and info["members"][0]["assignment"] else None

        info = eventually(described, "the member with its assignment")
        [m] = info["members"]
        assert m["assignment"] == {"orders": [0, 1, 2]} and m["subscribed_topics"] == ["orders"]
        assert {"group": "billing", "state": info["state"], "coordinator": info["coordinator"]} in ok_json(
            cluster, "groups", "list")
        assert info["coordinator"] in cluster.brokers
        for o in info["offsets"]:
            assert o["member_id"] == m["member_id"] and o["log_end"] == RECORDS_PER_PARTITION
        text = ok(cluster, "groups", "describe", "billing", "--members")
        assert "LOG-END-OFFSET" in text and m["member_id"] in text and "orders:0,1,2" in text

        fails(cluster, "groups", "reset-offsets", "billing", "--all-topics", "--to-earliest", "--execute",
              error="NON_EMPTY_GROUP")
        fails(cluster, "groups", "delete", "billing", error="NON_EMPTY_GROUP")
    finally:
        member.close()

    info = eventually(lambda: (i := ok_json(cluster, "groups", "describe", "billing"))["members"] == [] and i,
                      "the member gone")
    committed = {o["partition"]: o["committed"] for o in info["offsets"]}
    assert sum(committed.values()) == member.read  # it committed what it read, no more
    for o in info["offsets"]:
        assert o["lag"] == RECORDS_PER_PARTITION - o["committed"]

    # A dry run shows and commits nothing.
    dry = ok_json(cluster, "groups", "reset-offsets", "billing", "--all-topics", "--to-earliest")
    assert not dry["executed"] and {p["new"] for p in dry["offsets"]} == {0}
    assert {o["partition"]: o["committed"] for o in ok_json(cluster, "groups", "describe", "billing")["offsets"]} \
        == committed

    def reset(*args: str) -> dict[int, int]:
        plan = ok_json(cluster, "groups", "reset-offsets", "billing", *args, "--execute")
        assert plan["executed"]
        now = {o["partition"]: o["committed"] for o in ok_json(cluster, "groups", "describe", "billing")["offsets"]}
        assert {p["partition"]: p["new"] for p in plan["offsets"]}.items() <= now.items()
        return now

    assert reset("--topic", "orders", "--to-offset", "7") == {0: 7, 1: 7, 2: 7}
    assert reset("--topic", "orders:1", "--shift-by", "5") == {0: 7, 1: 12, 2: 7}
    assert reset("--topic", "orders:2", "--shift-by", "-100") == {0: 7, 1: 12, 2: 0}  # kept within the log
    assert reset("--topic", "orders:0", "--to-offset", "1000") == {0: 40, 1: 12, 2: 0}
    assert reset("--topic", "orders", "--to-latest") == {0: 40, 1: 40, 2: 40}
    past = datetime(2001, 1, 1, tzinfo=timezone.utc).isoformat()
    assert reset("--all-topics", "--to-datetime", past) == {0: 0, 1: 0, 2: 0}
    future = datetime(2100, 1, 1, tzinfo=timezone.utc).isoformat()
    assert reset("--topic", "orders:1", "--to-datetime", future)[1] == RECORDS_PER_PARTITION  # after the end
    reset("--topic", "orders:1", "--to-offset", "30")

    # A consumer of the group starts where the reset put it.
    out = ok(cluster, "consume", "orders", "--group", "billing", "--json", "--timeout-ms", "3000")
    values = sorted(json.loads(line)["value"] for line in out.splitlines())
    assert values == sorted([f"p0-{i}" for i in range(40)] + [f"p1-{i}" for i in range(30, 40)]
                            + [f"p2-{i}" for i in range(40)])

    fails(cluster, "groups", "reset-offsets", "billing", "--topic", "orders:9", "--to-earliest",
          error="UNKNOWN_TOPIC_OR_PARTITION")
    fails(cluster, "groups", "reset-offsets", "billing", "--topic", "orders", error="exactly one of")
    fails(cluster, "groups", "reset-offsets", "billing", "--to-earliest", error="--all-topics")
    fails(cluster, "groups", "reset-offsets", "billing", "--topic", "orders", "--to-datetime", "yesterday",
          error="ISO-8601")
    fails(cluster, "groups", "reset-offsets", "billing", "--topic", "orders:x", "--to-earliest", error="numbers")

    assert "Deleted consumer group billing." in ok(cluster, "groups", "delete", "billing")
    eventually(lambda: "billing" not in [g["group"] for g in ok_json(cluster, "groups", "list")], "group gone")
    fails(cluster, "groups", "describe", "billing", error="GROUP_ID_NOT_FOUND")
    fails(cluster, "groups", "delete", "billing", error="GROUP_ID_NOT_FOUND")


def test_shift_needs_a_committed_offset(cluster) -> None:
    ok(cluster, "groups", "reset-offsets", "fresh", "--topic", "orders:0", "--to-offset", "3", "--execute")
    info = ok_json(cluster, "groups", "describe", "fresh")  # an admin commit makes an empty group
    assert [(o["partition"], o["committed"]) for o in info["offsets"]] == [(0, 3)]
    fails(cluster, "groups", "reset-offsets", "fresh", "--topic", "orders", "--shift-by", "1", "--execute",
          error="INVALID_REQUEST")
    assert [(o["partition"], o["committed"]) for o in ok_json(cluster, "groups", "describe", "fresh")["offsets"]] \
        == [(0, 3)]
