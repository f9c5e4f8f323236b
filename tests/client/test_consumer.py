"""The consumer in assign() mode against a real cluster (3 combined nodes):
every record once and in order, prefetching without duplicates, seek /
position / pause / resume, offsets_for_times, auto.offset.reset, bad config;
the columnar calls: rows from produce_arrow (zstd, keyed; in an aborted and a
committed transaction) read by poll_arrow exactly as poll reads them,
read_uncommitted and read_committed, and a switch between the two polls."""
from __future__ import annotations

import time
from collections import defaultdict
from typing import Iterable

import pyarrow as pa
import pytest

from client.consumer import Consumer, ConsumerRecord, TimestampType, TopicPartition
from client.producer import Producer
from client.errors import (IllegalStateError, InvalidConfigError, NoOffsetForPartitionError,
                           OffsetOutOfRangeError)
from devcluster.local_cluster import LocalCluster
from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.records import Record, encode_batch

from .produce_consume import produce_values

POLL_DEADLINE_S = 90  # bounds every poll loop; never part of an assert
# A killed leader's partitions move once its broker is fenced: after 2 s here, not Kafka's 9 s.
PROPERTIES = {"broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("consumer"), combined=3, properties=PROPERTIES).running() as c:
        yield c


@pytest.fixture(scope="module")
def bootstrap(cluster) -> str:
    return cluster.bootstrap


def make_topic(cluster: LocalCluster, name: str, partitions: int, values: Iterable[bytes] = (),
               batch_records: int = 100) -> list[bytes]:
    cluster.create_topic(name, partitions, 3)
    cluster.wait_for_leaders(name)
    values = list(values)
    if values:
        produce(cluster, name, values, batch_records=batch_records)
    return values


def produce(cluster: LocalCluster, topic: str, values: list[bytes], batch_records: int = 100,
            partition: int | None = None) -> None:
    summary = produce_values(cluster.bootstrap, topic, values, batch_records=batch_records, partition=partition)
    assert summary.acknowledged == len(values), summary.errors


def consumer(bootstrap: str, **config) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, **{k.replace("_", "."): v for k, v in config.items()}})


def poll_until(c: Consumer, count: int, timeout_s: float = POLL_DEADLINE_S) -> list[ConsumerRecord]:
    got: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        got += c.poll(0.5)
    return got


def by_partition(records: list[ConsumerRecord]) -> dict[int, list[ConsumerRecord]]:
    out: dict[int, list[ConsumerRecord]] = defaultdict(list)
    for r in records:
        out[r.partition].append(r)
    return out


def test_assign_polls_every_record_once_in_order(cluster, bootstrap) -> None:
    values = make_topic(cluster, "orders", 3, [f"order-{i}".encode() for i in range(3000)])
    with consumer(bootstrap, auto_offset_reset="earliest", max_poll_records=250) as c:
        c.assign([TopicPartition("orders", p) for p in range(3)])
        got = poll_until(c, len(values))
        assert sorted(r.value for r in got) == sorted(values)  # every record, exactly once
        parts = by_partition(got)
        assert set(parts) == {0, 1, 2}
        for p, records in parts.items():
            assert [r.offset for r in records] == list(range(len(records)))  # in order, no gap
            # produced in order, so within a partition the values are increasing
            numbers = [int(r.value.split(b"-")[1]) for r in records]
            assert numbers == sorted(numbers)
            assert c.position(TopicPartition("orders", p)) == len(records)
        first = got[0]
        assert first.topic == "orders" and first.key is None and first.headers == ()
        assert first.timestamp_type == TimestampType.CREATE_TIME and first.timestamp > 0
        assert first.leader_epoch is not None and first.leader_epoch >= 0
        assert c.poll(0.2) == []  # nothing more: only records below the high watermark came back
        # The fetches went on the leaders' FetchStreams (kept streams, one per leader), not unary calls.
        streamed = set(c._fetcher._fetch_streams._calls)
        assert streamed and streamed <= set(c._metadata.brokers.values())


def test_max_poll_records_bounds_each_poll(cluster, bootstrap) -> None:
    values = make_topic(cluster, "bounded", 1, [b"x%d" % i for i in range(500)], batch_records=500)
    with consumer(bootstrap, auto_offset_reset="earliest", max_poll_records=37) as c:
        c.assign([TopicPartition("bounded", 0)])
        sizes, got = [], []
        deadline = time.monotonic() + POLL_DEADLINE_S
        while len(got) < len(values) and time.monotonic() < deadline:
            batch = c.poll(0.5)
            sizes.append(len(batch))
            got += batch
        assert max(sizes) == 37
        assert [r.offset for r in got] == list(range(500))


def test_prefetch_while_the_application_works_never_duplicates_or_skips(cluster, bootstrap) -> None:
    """Small fetches and slow processing: the background thread fetches ahead
    while records wait in the buffer; seeks in between drop what was prefetched."""
    values = make_topic(cluster, "prefetch", 2, [b"p%05d" % i for i in range(2000)], batch_records=50)
    seen: dict[int, list[int]] = defaultdict(list)
    with consumer(bootstrap, auto_offset_reset="earliest", max_poll_records=30,
                  max_partition_fetch_bytes=1024, fetch_max_bytes=4096) as c:
        tps = [TopicPartition("prefetch", p) for p in range(2)]
        c.assign(tps)
        sought = False
        deadline = time.monotonic() + POLL_DEADLINE_S * 2
        while sum(len(v) for v in seen.values()) < len(values) and time.monotonic() < deadline:
            batch = c.poll(0.5)
            for r in batch:
                seen[r.partition].append(r.offset)
            time.sleep(0.002)  # the application's "work": fetches complete meanwhile
            if not sought and len(seen[0]) >= 300:
                # rewind partition 0 to 100: what was prefetched past it must not come back twice
                c.seek(tps[0], 100)
                seen[0] = seen[0][:100]
                sought = True
        assert sought
        for p, offsets in seen.items():
            assert offsets == list(range(len(offsets))), f"partition {p} has a duplicate or a gap"
        assert sum(len(v) for v in seen.values()) == len(values)


def wait_prefetched(c: Consumer, tp: TopicPartition) -> None:
    """White box: until records of `tp` wait in the consumer's buffer, unreturned."""
    deadline = time.monotonic() + POLL_DEADLINE_S
    with c._state.cond:
        while tp not in c._state.buffer and time.monotonic() < deadline:
            c._state.cond.wait(0.2)
        assert tp in c._state.buffer


def test_prefetched_records_dropped_at_their_own_position_are_fetched_again(cluster, bootstrap) -> None:
    """The leader's fetch session answers a partition only when it changes. A
    chunk prefetched and then dropped unreturned, with the position where it
    started (a seek to the position, or a switch between poll() and
    poll_arrow()), must be fetched again, not wait for the next write."""
    tp = TopicPartition("refetch", 0)
    make_topic(cluster, tp.topic, 1, [b"first-%d" % i for i in range(100)])
    with consumer(bootstrap, auto_offset_reset="earliest") as c:
        c.assign([tp])
        assert [r.offset for r in poll_until(c, 100)] == list(range(100))
        produce(cluster, tp.topic, [b"second-%d" % i for i in range(50)])  # answers the fetch parked at 100
        wait_prefetched(c, tp)
        c.seek(tp, 100)  # the position it already has: the prefetched chunk is dropped all the same
        got = poll_until(c, 50, timeout_s=30)
        assert [r.value for r in got] == [b"second-%d" % i for i in range(50)]
        produce(cluster, tp.topic, [b"third-%d" % i for i in range(20)])
        wait_prefetched(c, tp)
        rows = c.poll_arrow(30)  # decoded as records, dropped, fetched again as Arrow rows
        assert rows.column("value").to_pylist() == [b"third-%d" % i for i in range(20)]


def test_seek_position_pause_resume(cluster, bootstrap) -> None:
    make_topic(cluster, "seeking", 2)
    produce(cluster, "seeking", [b"a%d" % i for i in range(200)], partition=0)
    produce(cluster, "seeking", [b"b%d" % i for i in range(200)], partition=1)
    p0, p1 = TopicPartition("seeking", 0), TopicPartition("seeking", 1)
    with consumer(bootstrap, auto_offset_reset="earliest") as c:
        c.assign([p0, p1])
        assert c.assignment() == {p0, p1}
        assert c.position(p0) == 0 and c.position(p1) == 0
        c.seek(p0, 150)
        assert c.position(p0) == 150
        c.pause([p1])
        assert c.paused() == {p1}
        got = poll_until(c, 50)
        assert [r.offset for r in got] == list(range(150, 200)) and {r.partition for r in got} == {0}
        assert c.poll(0.5) == []  # p1 paused, p0 at its end
        assert c.position(p1) == 0
        c.resume([p1])
        assert c.paused() == set()
        got = poll_until(c, 200)
        assert [(r.partition, r.offset) for r in got] == [(1, o) for o in range(200)]
        c.seek_to_beginning([p0])
        assert c.position(p0) == 0
        c.seek_to_end()
        assert c.position(p0) == 200 and c.position(p1) == 200
        assert c.end_offsets([p0, p1]) == {p0: 200, p1: 200}
        assert c.beginning_offsets([p0]) == {p0: 0}
        with pytest.raises(IllegalStateError):
            c.seek(TopicPartition("seeking", 7), 0)  # not assigned


def test_offsets_for_times(cluster, bootstrap) -> None:
    make_topic(cluster, "timed", 1)
    base = 1_700_000_000_000
    # three batches whose records are 1 s apart: offsets 0..29 at base + offset * 1000
    leader = cluster.wait_for_leaders("timed").partitions[0].leader_id
    for b in range(3):
        data = encode_batch([Record(None, b"t%d" % (b * 10 + i), base + (b * 10 + i) * 1000) for i in range(10)])
        response = cluster.broker_stub(leader).Produce(bpb.ProduceRequest(acks=-1, timeout_ms=10000, topics=[
            bpb.ProduceRequest.TopicData(name="timed", partitions=[
                bpb.ProduceRequest.PartitionData(index=0, records=data)])]), timeout=15)
        assert response.responses[0].partitions[0].error_code == 0
    tp = TopicPartition("timed", 0)
    with consumer(bootstrap) as c:
        found = c.offsets_for_times({tp: base + 12_500})
        assert found[tp] is not None and found[tp].offset == 13 and found[tp].timestamp == base + 13_000
        assert c.offsets_for_times({tp: base})[tp].offset == 0
        assert c.offsets_for_times({tp: base + 10**9})[tp] is None  # nothing that late
        c.assign([tp])
        c.seek(tp, c.offsets_for_times({tp: base + 25_000})[tp].offset)
        got = poll_until(c, 5)
        assert [r.offset for r in got] == [25, 26, 27, 28, 29]
        assert [r.timestamp for r in got] == [base + o * 1000 for o in range(25, 30)]


def test_auto_offset_reset(cluster, bootstrap) -> None:
    make_topic(cluster, "resets", 1, [b"old-%d" % i for i in range(100)])
    tp = TopicPartition("resets", 0)
    with consumer(bootstrap, auto_offset_reset="latest") as latest, \
            consumer(bootstrap, auto_offset_reset="earliest") as earliest:
        latest.assign([tp])
        assert latest.position(tp) == 100  # positioned before the new records are produced
        earliest.assign([tp])
        produce(cluster, "resets", [b"new-%d" % i for i in range(20)])
        got = poll_until(latest, 20)
        assert [r.value for r in got] == [b"new-%d" % i for i in range(20)]
        got = poll_until(earliest, 120)
        assert [r.offset for r in got] == list(range(120))

        # Out of range: a position past the log end resets by the policy.
        earliest.seek(tp, 10_000)
        got = poll_until(earliest, 120)
        assert [r.offset for r in got] == list(range(120))

    with consumer(bootstrap, auto_offset_reset="none") as none:
        none.assign([tp])
        with pytest.raises(NoOffsetForPartitionError) as no_offset:
            poll_until(none, 1)
        assert no_offset.value.name == "OFFSET_OUT_OF_RANGE"
        none.seek(tp, 10_000)
        with pytest.raises(OffsetOutOfRangeError) as out_of_range:
            poll_until(none, 1)
        assert out_of_range.value.name == "OFFSET_OUT_OF_RANGE"
        none.seek(tp, 118)  # a seek makes the partition usable again
        assert [r.offset for r in poll_until(none, 2)] == [118, 119]


def test_unknown_partition_is_retried_until_it_exists(cluster, bootstrap) -> None:
    """A topic that does not exist yet: the consumer keeps refreshing metadata
    and reads it once created (UNKNOWN_TOPIC_OR_PARTITION is retriable)."""
    tp = TopicPartition("later", 0)
    with consumer(bootstrap, auto_offset_reset="earliest") as c:
        c.assign([tp])
        assert c.poll(0.5) == []
        make_topic(cluster, "later", 1, [b"finally"])
        got = poll_until(c, 1)
        assert [(r.offset, r.value) for r in got] == [(0, b"finally")]


@pytest.mark.parametrize("key, value", [
    ("auto.offset.reset", "smallest"),
    ("max.poll.records", "0"),
    ("fetch.max.wait.ms", "soon"),
    ("enable.auto.commit", "maybe"),
    ("isolation.level", "serializable"),
    ("group.remote.assignor", "roundrobin"),
    ("bootstrap.servers", "no-port"),
    ("max.poll.recordz", "5"),
])
def test_bad_config_names_the_key(key, value) -> None:
    config = {"bootstrap.servers": "127.0.0.1:1", key: value}
    with pytest.raises(InvalidConfigError) as error:
        Consumer(config)
    assert error.value.name == "INVALID_CONFIG" and key in str(error.value)


def test_calls_the_state_does_not_allow() -> None:
    with pytest.raises(InvalidConfigError, match="group.id"):
        Consumer({"bootstrap.servers": "127.0.0.1:1", "enable.auto.commit": "true"})
    with Consumer({"bootstrap.servers": "127.0.0.1:1"}) as c:
        with pytest.raises(IllegalStateError):
            c.poll(0)
        with pytest.raises(Exception) as no_group:
            c.subscribe(["x"])
        assert getattr(no_group.value, "name", "") == "INVALID_GROUP_ID"
        with pytest.raises(Exception) as no_group:
            c.commit({TopicPartition("x", 0): 1})
        assert getattr(no_group.value, "name", "") == "INVALID_GROUP_ID"
    with pytest.raises(IllegalStateError):
        c.poll(0)  # closed


def test_poll_arrow_before_assign_or_with_no_room_is_refused() -> None:
    with Consumer({"bootstrap.servers": "127.0.0.1:1"}) as c:
        with pytest.raises(IllegalStateError):
            c.poll_arrow(0)
        c.assign([TopicPartition("x", 0)])
        with pytest.raises(ValueError, match="max_records"):
            c.poll_arrow(0, max_records=0)


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_leader_moves_while_consuming(cluster, bootstrap, how) -> None:
    """The partition leader shut down (SIGTERM: leadership moves first, the
    consumer sees NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH) or killed (-9:
    the broker stops answering): the consumer refreshes its metadata and reads
    on from the new leader, every record once and in order."""
    topic = f"moving-{how}"
    make_topic(cluster, topic, 1, [b"%s-%d" % (how.encode(), i) for i in range(600)])
    tp = TopicPartition(topic, 0)
    leader = cluster.wait_for_leaders(topic).partitions[0].leader_id
    with consumer(bootstrap, auto_offset_reset="earliest", max_poll_records=100) as c:
        c.assign([tp])
        got = poll_until(c, 300)
        try:
            if how == "stop":
                cluster.stop(leader)
            else:
                cluster.kill(leader)
            cluster.wait_for_leaders(topic, among=[b for b in cluster.brokers if b != leader])
            produce(cluster, topic, [b"after-%d" % i for i in range(300)])
            got += poll_until(c, 900 - len(got))
        finally:
            cluster.start(leader)
            cluster.wait_for_brokers(timeout=60)
        assert [r.offset for r in got] == list(range(900))
        assert got[-1].value == b"after-299" and got[-1].leader_epoch > got[0].leader_epoch


def arrow_consumer(cluster: LocalCluster, **extra) -> Consumer:
    return Consumer({"bootstrap.servers": cluster.bootstrap, "auto.offset.reset": "earliest", **extra})


def read_all(c: Consumer, count: int, arrow: bool) -> list[tuple]:
    rows: list[tuple] = []
    deadline = time.monotonic() + POLL_DEADLINE_S
    while len(rows) < count and time.monotonic() < deadline:
        if arrow:
            batch = c.poll_arrow(0.5)
            rows += zip(batch.column("partition").to_pylist(), batch.column("offset").to_pylist(),
                        batch.column("key").to_pylist(), batch.column("value").to_pylist())
        else:
            rows += [(r.partition, r.offset, r.key, r.value) for r in c.poll(0.5)]
    return sorted(rows)


def test_produce_arrow_then_poll_arrow_equals_poll(cluster) -> None:
    cluster.create_topic("cols", 2, 3)
    cluster.wait_for_leaders("cols")
    n = 5000
    table = pa.table({"key": pa.array([b"k%d" % (i % 7) for i in range(n)]),
                      "value": pa.array([b"v%05d" % i for i in range(n)])})
    with Producer({"bootstrap.servers": cluster.bootstrap, "compression.type": "zstd", "acks": "all"}) as p:
        futures = p.produce_arrow("cols", table)
        assert p.flush(30) == 0
        assert all(f.result(0).offset >= 0 for f in futures)
    tps = [TopicPartition("cols", i) for i in range(2)]
    with arrow_consumer(cluster) as per_record, arrow_consumer(cluster, **{"max.poll.records": 700}) as columnar:
        per_record.assign(tps)
        columnar.assign(tps)
        expected = read_all(per_record, n, arrow=False)
        assert len(expected) == n and sorted(v for *_, v in expected) == sorted(table.column("value").to_pylist())
        got = read_all(columnar, n, arrow=True)
        assert got == expected
        assert columnar.position(tps[0]) + columnar.position(tps[1]) == n
        batch = columnar.poll_arrow(0.2, include_headers=True)
        assert batch.num_rows == 0 and batch.schema.names[-1] == "headers"
        # a switch between the two kinds of poll: from the start again, half and half
        for tp in tps:
            columnar.seek(tp, 0)
        mixed = read_all(columnar, n // 2, arrow=False)
        mixed += read_all(columnar, n - len(mixed), arrow=True)
        assert sorted(mixed) == expected


def test_read_committed_poll_arrow_drops_the_aborted_rows(cluster) -> None:
    cluster.create_topic("txn-cols", 1, 3)
    cluster.wait_for_leaders("txn-cols")
    with Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "cols-tx",
                   "compression.type": "lz4"}) as p:
        p.init_transactions(30)
        p.begin_transaction()
        p.produce_arrow("txn-cols", pa.table({"value": [b"aborted-%d" % i for i in range(300)]}))
        p.flush(30)
        p.abort_transaction(30)
        p.begin_transaction()
        p.produce_arrow("txn-cols", pa.table({"value": [b"committed-%d" % i for i in range(200)]}))
        p.commit_transaction(30)
    tp = TopicPartition("txn-cols", 0)
    for isolation, count in (("read_committed", 200), ("read_uncommitted", 500)):
        with arrow_consumer(cluster, **{"isolation.level": isolation}) as records, \
                arrow_consumer(cluster, **{"isolation.level": isolation}) as columns:
            records.assign([tp])
            columns.assign([tp])
            expected = read_all(records, count, arrow=False)
            assert len(expected) == count
            assert read_all(columns, count, arrow=True) == expected
            assert columns.position(tp) == records.position(tp)
