"""A partition handed from one group member to another on a rebalance,
against a real cluster (3 combined nodes): with enable.auto.commit the old
owner commits the positions of the partitions it gives up - the offsets
after the records poll() returned, not the ones it prefetched - before it
says it let them go, so the new owner starts exactly there: across both,
every record once, none missing. Auto-commit's timer is set far beyond the
test, so only the revocation's commit can save the new owner from reading
again what the old one read. The same through two `kraftlog consume --group`
processes started one after the other."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Optional

import pytest

from client.consumer import Consumer, TopicPartition
from client.group_admin import describe_group
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until

from .produce_consume import produce_values

WAIT_S = 120  # bounds every wait; never part of an assert
TOPIC, PARTITIONS, RECORDS = "handover", 6, 3000
ALL = frozenset(TopicPartition(TOPIC, p) for p in range(PARTITIONS))
# Members learn of a new target assignment at their next heartbeat: 0.5 s here
# rather than Kafka's 5 s, so a hand-over takes a second or two.
PROPERTIES = {"group.consumer.heartbeat.interval.ms": 500}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("handover"), combined=3, properties=PROPERTIES).running() as c:
        c.create_topic(TOPIC, PARTITIONS, 3)
        c.wait_for_leaders(TOPIC)
        produce(c, 0, RECORDS // PARTITIONS)
        yield c


def produce(cluster: LocalCluster, start: int, per_partition: int, topic: str = TOPIC) -> None:
    for p in range(PARTITIONS):
        values = [b"%d-%d" % (p, i) for i in range(start, start + per_partition)]
        summary = produce_values(cluster.bootstrap, topic, values, partition=p)
        assert summary.acknowledged == per_partition, summary.errors


class Member(threading.Thread):
    """Polls until told to stop, keeping (partition, offset) of every record
    poll() returned; small polls, so most of what it fetched is still
    unreturned when a revocation comes."""

    def __init__(self, bootstrap: str, group: str, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                                  "auto.offset.reset": "earliest", "max.poll.records": 7,
                                  "auto.commit.interval.ms": 3_600_000})
        self.read: list[tuple[int, int]] = []
        self.owned: frozenset[TopicPartition] = frozenset()
        self.revoked: list[TopicPartition] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.error: Optional[BaseException] = None
        self.pause_s = 0.02
        self.read_at_revoke = -1

    def run(self) -> None:
        try:
            self.consumer.subscribe([TOPIC], on_assign=self._assigned, on_revoke=self._revoked)
            while not self.stop.is_set():
                records = self.consumer.poll(0.1)
                with self.lock:
                    self.read += [(r.partition, r.offset) for r in records]
                self.stop.wait(self.pause_s)  # an application working on what it got
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
        finally:
            self.consumer.close()

    def _assigned(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self.lock:
            self.owned |= set(partitions)

    def _revoked(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self.lock:
            self.owned -= set(partitions)
            self.revoked += partitions
            if self.read_at_revoke < 0:
                self.read_at_revoke = len(self.read)

    def snapshot(self) -> tuple[int, frozenset[TopicPartition]]:
        with self.lock:
            return len(self.read), self.owned

    def records(self) -> list[tuple[int, int]]:
        with self.lock:
            return list(self.read)


def test_the_old_owner_commits_what_it_returned_before_the_new_owner_starts(cluster) -> None:
    a, b = Member(cluster.bootstrap, "handover-group", "a"), Member(cluster.bootstrap, "handover-group", "b")
    extra = 50  # per partition, written once the partitions are shared
    everything = {(p, o) for p in range(PARTITIONS) for o in range(RECORDS // PARTITIONS + extra)}
    try:
        a.start()
        # a is alone: it owns every partition and reads part of them.
        wait_until(lambda: a.snapshot()[0] >= RECORDS // 3 and a.snapshot()[1] == ALL or None, WAIT_S,
                   "a reading every partition")
        b.start()  # a keeps polling: its poll() carries out the revocation
        wait_until(lambda: len(a.snapshot()[1]) == len(b.snapshot()[1]) == PARTITIONS // 2 or None,
                   WAIT_S, "the partitions shared")
        with a.lock, b.lock:  # before close() revokes everything
            handed_over, taken = set(a.revoked), set(b.owned)
        # Records after the hand-over: b reaches them only after whatever it
        # read again (a partition is read in order), so duplicates show.
        produce(cluster, RECORDS // PARTITIONS, extra)
        wait_until(lambda: everything <= set(a.records() + b.records()) or None, WAIT_S, "every record read")
    finally:
        for m in (a, b):
            m.stop.set()
        for m in (a, b):
            if m.ident is not None:
                m.join(WAIT_S)
    assert a.error is None and b.error is None, (a.error, b.error)
    assert handed_over and handed_over == taken  # the hand-over happened
    seen = Counter(a.read + b.read)
    assert sorted(k for k, n in seen.items() if n > 1) == []  # nothing read twice
    assert set(seen) == everything  # nothing missed, nothing unexpected
    print(f"a read {a.read_at_revoke} before the revocation, {len(a.read)} in all; b read {len(b.read)}; "
          f"moved {sorted(tp.partition for tp in handed_over)}")


class ConsoleConsumer:
    """`kraftlog consume TOPIC --group G --from-beginning --json` as a
    subprocess, its output in a file read while it runs."""

    def __init__(self, cluster: LocalCluster, topic: str, group: str, out: Path) -> None:
        self.out = out
        env = {**os.environ, "KRAFTLOG_BOOTSTRAP": cluster.bootstrap, "PYTHONUNBUFFERED": "1"}
        with out.open("wb") as stdout, out.with_suffix(".err").open("wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "kraftlog", "consume", topic, "--group", group, "--from-beginning", "--json"],
                stdout=stdout, stderr=stderr, env=env, start_new_session=True)

    def read(self) -> list[tuple[int, int]]:
        text = self.out.read_text()
        complete = text[:text.rfind("\n") + 1]  # a line still being written is read next time
        return [(r["partition"], r["offset"]) for r in map(json.loads, complete.splitlines())]

    def stop(self) -> None:
        """Ctrl-C, as a user stops it; killed if it does not end."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(WAIT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(WAIT_S)


def test_two_console_consumers_of_a_group_read_each_record_once(cluster, tmp_path) -> None:
    topic, group, per_partition, extra = "handover-cli", "console-group", 400, 20
    cluster.create_topic(topic, PARTITIONS, 3)
    cluster.wait_for_leaders(topic)
    produce(cluster, 0, per_partition, topic)
    everything = {(p, o) for p in range(PARTITIONS) for o in range(per_partition + extra)}

    def split() -> Optional[dict]:
        members = describe_group(cluster.bootstrap, group)["members"]
        counts = sorted(sum(len(ps) for ps in m["assignment"].values()) for m in members)
        return {"members": members} if counts == [PARTITIONS // 2] * 2 else None

    consoles: list[ConsoleConsumer] = []
    try:
        consoles.append(ConsoleConsumer(cluster, topic, group, tmp_path / "first.jsonl"))
        wait_until(lambda: consoles[0].read() or None, WAIT_S, "the first console consumer reading")
        consoles.append(ConsoleConsumer(cluster, topic, group, tmp_path / "second.jsonl"))
        wait_until(split, WAIT_S, "the partitions shared between the two")
        produce(cluster, per_partition, extra, topic)  # read only after whatever was read again
        wait_until(lambda: everything <= set(consoles[0].read() + consoles[1].read()) or None, WAIT_S,
                   "every record printed")
        # The second leaves: its partitions go back to the first, which
        # prints nothing more of them; its own commits on the way out must
        # not take them back to what it printed before it gave them up.
        consoles[1].stop()
        wait_until(lambda: [sum(map(len, m["assignment"].values())) for m in
                            describe_group(cluster.bootstrap, group)["members"]] == [PARTITIONS] or None,
                   WAIT_S, "the first consumer owning every partition again")
    finally:
        for console in consoles:
            console.stop()
    first, second = consoles[0].read(), consoles[1].read()
    seen = Counter(first + second)
    duplicates = sorted(k for k, n in seen.items() if n > 1)
    assert duplicates == [], f"{len(duplicates)} records printed twice"
    assert set(seen) == everything
    committed = {o["partition"]: o["committed"] for o in describe_group(cluster.bootstrap, group)["offsets"]}
    assert committed == {p: per_partition + extra for p in range(PARTITIONS)}  # what was printed, all of it
    print(f"first printed {len(first)}, second {len(second)}")


def test_a_commit_is_not_undone_by_an_earlier_one_still_retrying(cluster) -> None:
    """An auto-commit caught by an unreachable coordinator retries after
    retry.backoff.ms; a revocation's commit made meanwhile must not be
    overwritten by it, or the next owner starts behind and reads again."""
    group, tp = "in-turn", TopicPartition(TOPIC, 0)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "request.timeout.ms": 1000, "retry.backoff.ms": 3000})
    try:
        consumer.commit({tp: 1})
        node = describe_group(cluster.bootstrap, group)["coordinator"]
        cluster.pause(node)
        try:
            earlier = consumer.commit_async({tp: 5})
            # Its first attempt timed out: the coordinator is forgotten, the retry is 3 s away.
            wait_until(lambda: consumer._coordinator.address is None or None, WAIT_S, "the first attempt failing")
        finally:
            cluster.resume(node)
        consumer.commit({tp: 10})  # commitSync: after every earlier commit is done
        assert earlier is not None
        earlier_done_first = earlier.done()
        earlier.result(WAIT_S)
        assert consumer.committed([tp])[tp].offset == 10  # not taken back to 5
        assert earlier_done_first
    finally:
        consumer.close()
