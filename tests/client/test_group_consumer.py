"""Consumer groups against a real cluster (3 combined nodes): commit and
committed, a group of consumer threads through a join and a leave (every
record once, no partition with two owners, unmoved members never revoked),
a regex subscription, max.poll.interval.ms, and the coordinator's broker
killed.

Skipped, saying so, while the brokers answer GroupCoordinator calls with
UNIMPLEMENTED (the coordinator is another part's work)."""
from __future__ import annotations

import re
import threading
import time
from collections import Counter
from typing import Optional

import grpc
import pytest

from client.consumer import Consumer, ConsumerRecord, OffsetAndMetadata, TopicPartition
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until
from kraftlog_api import groups_pb2 as gpb
from kraftlog_api import groups_pb2_grpc as gpb_grpc

from .produce_consume import produce_values

WAIT_S = 120  # bounds every wait; never part of an assert
# Members learn of a new target assignment at their next heartbeat, and a killed
# coordinator's partitions move once its broker is fenced: both short here, so
# that a rebalance takes a few heartbeats of 0.5 s rather than of Kafka's 5 s.
PROPERTIES = {"group.consumer.heartbeat.interval.ms": 500,
              "broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("groups"), combined=3, properties=PROPERTIES).running() as c:
        find_coordinator(c, "probe")  # creates __consumer_offsets before any test runs
        yield c


@pytest.fixture(scope="module")
def bootstrap(cluster) -> str:
    return cluster.bootstrap


def find_coordinator(cluster: LocalCluster, group: str) -> gpb.FindCoordinatorResponse.Coordinator:
    for b in cluster.live_brokers():
        stub = gpb_grpc.GroupCoordinatorStub(cluster.channel(cluster.broker_addresses[b]))
        try:
            [found] = stub.FindCoordinator(gpb.FindCoordinatorRequest(key_type=0, keys=[group]), timeout=10).coordinators
        except grpc.RpcError:
            continue  # that broker is down: ask the next
        if found.error_code == 0:
            return found
    raise AssertionError(f"no broker named a coordinator for {group}")


def make_topic(cluster: LocalCluster, name: str, partitions: int) -> None:
    cluster.create_topic(name, partitions, 3)
    cluster.wait_for_leaders(name)


def produce(bootstrap: str, topic: str, values: list[bytes], batch_records: int = 100) -> None:
    summary = produce_values(bootstrap, topic, values, batch_records=batch_records)
    assert summary.acknowledged == len(values), summary.errors


def consumer(bootstrap: str, group: str, **config) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     **{k.replace("_", "."): v for k, v in config.items()}})


def test_commit_and_committed_round_trip(cluster, bootstrap) -> None:
    make_topic(cluster, "ledger", 2)
    produce(bootstrap, "ledger", [b"l%d" % i for i in range(200)], batch_records=100)
    p0, p1 = TopicPartition("ledger", 0), TopicPartition("ledger", 1)
    with consumer(bootstrap, "accounts", enable_auto_commit="false", auto_offset_reset="earliest") as c:
        assert c.committed([p0, p1]) == {p0: None, p1: None}
        c.assign([p0, p1])
        c.commit({p0: OffsetAndMetadata(42, "checkpoint"), p1: 7})
        committed = c.committed([p0, p1])
        assert committed[p0].offset == 42 and committed[p0].metadata == "checkpoint"
        assert committed[p1].offset == 7
        # assign() with a group.id starts from the committed offsets
        assert c.position(p0) == 42 and c.position(p1) == 7
        records: list[ConsumerRecord] = []
        deadline = time.monotonic() + WAIT_S
        while len(records) < 10 and time.monotonic() < deadline:
            records += c.poll(0.5)
        c.commit()  # the positions: after the last record returned
        after = c.committed([p0, p1])
        assert after[p0].offset == c.position(p0) and after[p1].offset == c.position(p1)
        future = c.commit_async({p0: 100})
        future.result(timeout=60)
        assert c.committed([p0])[p0].offset == 100
    # auto-commit on close in assign mode
    with consumer(bootstrap, "accounts", auto_offset_reset="earliest") as c:
        c.assign([p1])
        start = c.position(p1)
        got: list[ConsumerRecord] = []
        deadline = time.monotonic() + WAIT_S
        while len(got) < 100 - start and time.monotonic() < deadline:
            got += c.poll(0.5)
        assert [r.offset for r in got] == list(range(start, 100))
    with consumer(bootstrap, "accounts") as c:
        assert c.committed([p1])[p1].offset == 100


class Member(threading.Thread):
    """A consumer thread that commits synchronously after processing each poll,
    and logs its ownership changes in a shared, ordered log."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str, log: list, consumed: list,
                 lock: threading.Lock, **config) -> None:
        super().__init__(name=name, daemon=True)
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.log, self.consumed, self.lock = log, consumed, lock
        self.config = config
        self.stop = threading.Event()
        self.poll_returns: list[float] = []  # monotonic time each poll() returned
        self.error: Optional[BaseException] = None

    def note(self, kind: str, partitions: list[TopicPartition]) -> None:
        with self.lock:
            self.log.append((len(self.log), self.name, kind, tuple(partitions), time.monotonic()))

    def run(self) -> None:
        try:
            with consumer(self.bootstrap, self.group, enable_auto_commit="false", auto_offset_reset="earliest",
                          client_id=self.name, max_poll_records=50, **self.config) as c:
                c.subscribe([self.topic], on_assign=lambda _, ps: self.note("assign", ps),
                            on_revoke=lambda _, ps: self.note("revoke", ps),
                            on_lost=lambda _, ps: self.note("lost", ps))
                deadline = time.monotonic() + 6 * WAIT_S
                while not self.stop.is_set() and time.monotonic() < deadline:
                    records = c.poll(0.2)
                    self.poll_returns.append(time.monotonic())
                    if not records:
                        continue
                    with self.lock:
                        self.consumed.extend((self.name, r.partition, r.offset) for r in records)
                    last: dict[TopicPartition, int] = {}
                    for r in records:
                        last[r.topic_partition] = r.offset + 1
                    c.commit(last)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def owners(log: list) -> dict[TopicPartition, str]:
    """Who owns what, replaying the log; fails if a partition ever had two owners."""
    owner: dict[TopicPartition, str] = {}
    for seq, member, kind, tps, _ in log:
        for tp in tps:
            if kind == "assign":
                assert tp not in owner, f"#{seq}: {tp} assigned to {member} while {owner[tp]} owns it"
                owner[tp] = member
            else:
                assert owner.get(tp) == member, f"#{seq}: {member} gave up {tp} it did not own ({owner.get(tp)})"
                del owner[tp]
    return owner


def snapshot(lock: threading.Lock, items: list) -> list:
    with lock:
        return list(items)


def test_group_of_threads_through_a_join_and_a_leave(cluster, bootstrap) -> None:
    topic, group, per_phase = "events", "processors", 1200
    make_topic(cluster, topic, 12)
    log: list = []
    consumed: list = []
    lock = threading.Lock()
    members = {name: Member(name, bootstrap, group, topic, log, consumed, lock) for name in ("m1", "m2", "m3", "m4")}
    all_tps = {TopicPartition(topic, p) for p in range(12)}

    def owned_by() -> dict[str, set[TopicPartition]]:
        out: dict[str, set[TopicPartition]] = {}
        for tp, member in owners(snapshot(lock, log)).items():
            out.setdefault(member, set()).add(tp)
        return out

    def settled(names: set[str], total: int) -> Optional[dict]:
        by = owned_by()
        done = (set(by) == names and set().union(*by.values()) == all_tps
                and max(map(len, by.values())) - min(map(len, by.values())) <= 1
                and len(snapshot(lock, consumed)) >= total)
        return by if done else None

    try:
        produce(bootstrap, topic, [b"a%d" % i for i in range(per_phase)])
        for name in ("m1", "m2", "m3"):
            members[name].start()
        wait_until(lambda: settled({"m1", "m2", "m3"}, per_phase), WAIT_S, "3 members own 4 partitions each")

        members["m4"].start()
        produce(bootstrap, topic, [b"b%d" % i for i in range(per_phase)])
        wait_until(lambda: settled({"m1", "m2", "m3", "m4"}, 2 * per_phase), WAIT_S, "4 members own 3 each")

        leave_from = len(snapshot(lock, log))
        leave_at = time.monotonic()
        members["m1"].stop.set()
        members["m1"].join(WAIT_S)
        produce(bootstrap, topic, [b"c%d" % i for i in range(per_phase)])
        by = wait_until(lambda: settled({"m2", "m3", "m4"}, 3 * per_phase), WAIT_S, "m1's partitions taken over")
        assert all(len(tps) == 4 for tps in by.values())
        end_of_leave = len(snapshot(lock, log))
    finally:
        for m in members.values():
            m.stop.set()
        for m in members.values():
            if m.is_alive() or m.ident is not None:
                m.join(WAIT_S)
    for m in members.values():
        assert m.error is None, f"{m.name}: {m.error!r}"

    events = snapshot(lock, log)
    owners(events)  # no partition ever had two owners (m2..m4 revoke all on close)
    assert not [e for e in events if e[2] == "lost"], "no member lost its partitions"
    # While m1 left, the members that stayed only gained partitions: none was asked to revoke one.
    leave_phase = events[leave_from:end_of_leave]
    stayed = [e for e in leave_phase if e[1] != "m1"]
    assert stayed and all(e[2] == "assign" for e in stayed), stayed
    assert [e[2] for e in leave_phase if e[1] == "m1"] == ["revoke"]
    # Every record exactly once across the group.
    seen = Counter((p, o) for _, p, o in consumed)
    assert [k for k, n in seen.items() if n > 1] == []
    assert len(seen) == 3 * per_phase
    with consumer(bootstrap, group) as c:
        committed = c.committed(sorted(all_tps))
        ends = c.end_offsets(sorted(all_tps))
    assert {tp: om.offset for tp, om in committed.items()} == ends
    # Report: the longest pause between polls of the members that stayed, while m1 left.
    gaps = {}
    for name in ("m2", "m3", "m4"):
        times = [t for t in members[name].poll_returns if t >= leave_at]
        gaps[name] = max((b - a for a, b in zip(times, times[1:])), default=0.0)
    print(f"longest poll gap while m1 left (s): {gaps}")
    # And for the partitions that moved (m4 joining, m1 leaving): from the old
    # owner's revoke (or m1's leave) to the new owner's assign - the pause
    # those partitions saw.
    revoked_at: dict[TopicPartition, float] = {}
    handovers = []
    for _, _, kind, tps, at in events:
        for tp in tps:
            if kind == "revoke":
                revoked_at[tp] = at
            elif kind == "assign" and tp in revoked_at:
                handovers.append(at - revoked_at.pop(tp))
    if handovers:
        print(f"moved partitions: {len(handovers)}, revoke-to-assign pause (s): "
              f"median {sorted(handovers)[len(handovers) // 2]:.3f}, max {max(handovers):.3f}")


def test_regex_subscription_and_unsubscribe(cluster, bootstrap) -> None:
    make_topic(cluster, "metric-cpu", 2)
    make_topic(cluster, "metric-disk", 1)
    make_topic(cluster, "other-cpu", 1)
    produce(bootstrap, "metric-cpu", [b"c%d" % i for i in range(100)], batch_records=50)
    produce(bootstrap, "metric-disk", [b"d%d" % i for i in range(30)])
    produce(bootstrap, "other-cpu", [b"o%d" % i for i in range(10)])
    revoked: list[TopicPartition] = []
    with consumer(bootstrap, "dashboards", auto_offset_reset="earliest") as c:
        c.subscribe(re.compile(r"metric-.*"), on_revoke=lambda _, ps: revoked.extend(ps))
        got: list[ConsumerRecord] = []
        deadline = time.monotonic() + WAIT_S
        while len(got) < 130 and time.monotonic() < deadline:
            got += c.poll(0.5)
        assert Counter(r.topic for r in got) == {"metric-cpu": 100, "metric-disk": 30}
        assert c.assignment() == {TopicPartition("metric-cpu", 0), TopicPartition("metric-cpu", 1),
                                  TopicPartition("metric-disk", 0)}
        before = c.assignment()
        c.unsubscribe()  # auto-commit, on_revoke, leave
        assert sorted(revoked) == sorted(before) and c.assignment() == set()
        committed = c.committed(sorted(before))
        assert {tp: om.offset for tp, om in committed.items()} == c.end_offsets(sorted(before))


def poll_until_owning(c: Consumer, count: int, also: Optional[Consumer] = None) -> None:
    def owning() -> Optional[bool]:
        c.poll(0.2)
        if also is not None:
            also.poll(0.2)
        return len(c.assignment()) == count or None

    wait_until(owning, WAIT_S, f"{c.config.client_id or 'consumer'} owns {count} partitions")


def test_max_poll_interval_exceeded_leaves_the_group(cluster, bootstrap) -> None:
    make_topic(cluster, "slow", 2)
    produce(bootstrap, "slow", [b"s%d" % i for i in range(20)], batch_records=10)
    events: list[tuple[str, str]] = []

    def callbacks(name: str) -> dict:
        return {"on_assign": lambda _, ps: events.append((name, "assign")),
                "on_revoke": lambda _, ps: events.append((name, "revoke")),
                "on_lost": lambda _, ps: events.append((name, "lost"))}

    with consumer(bootstrap, "sleepy", max_poll_interval_ms=4000, auto_offset_reset="earliest") as slow, \
            consumer(bootstrap, "sleepy", auto_offset_reset="earliest") as steady:
        slow.subscribe(["slow"], **callbacks("slow"))
        poll_until_owning(slow, 2)
        steady.subscribe(["slow"], **callbacks("steady"))
        # `slow` stops polling: after max.poll.interval.ms it leaves, and `steady` gets everything.
        poll_until_owning(steady, 2)
        assert ("slow", "lost") not in events  # callbacks only run inside poll()
        slow.poll(0.5)  # the next poll releases what it lost and joins again
        assert ("slow", "lost") in events
        poll_until_owning(slow, 1, also=steady)  # rejoined: the partitions are shared again


def test_coordinator_killed_group_continues_from_committed_offsets(cluster, bootstrap) -> None:
    topic, group = "payments", "settlement"
    make_topic(cluster, topic, 6)
    produce(bootstrap, topic, [b"p%d" % i for i in range(600)])
    log: list = []
    consumed: list = []
    lock = threading.Lock()
    members = [Member(name, bootstrap, group, topic, log, consumed, lock) for name in ("k1", "k2")]
    killed: Optional[int] = None
    try:
        for m in members:
            m.start()
        wait_until(lambda: len(snapshot(lock, consumed)) >= 600 or None, WAIT_S, "the first 600 consumed")
        killed = find_coordinator(cluster, group).node_id
        cluster.kill(killed)
        produce(bootstrap, topic, [b"q%d" % i for i in range(600)])
        wait_until(lambda: len(snapshot(lock, consumed)) >= 1200 or None, WAIT_S, "the next 600 consumed")
        assert find_coordinator(cluster, group).node_id != killed
    finally:
        for m in members:
            m.stop.set()
        for m in members:
            if m.ident is not None:
                m.join(WAIT_S)
        if killed is not None:
            cluster.start(killed)
            cluster.wait_for_brokers(timeout=60)
    for m in members:
        assert m.error is None, f"{m.name}: {m.error!r}"
    events = snapshot(lock, log)
    owners(events)
    assert not [e for e in events if e[2] == "lost"]
    seen = Counter((p, o) for _, p, o in snapshot(lock, consumed))
    assert [k for k, n in seen.items() if n > 1] == [] and len(seen) == 1200
    tps = [TopicPartition(topic, p) for p in range(6)]
    with consumer(bootstrap, group) as c:
        assert {tp: om.offset for tp, om in c.committed(tps).items()} == c.end_offsets(tps)
