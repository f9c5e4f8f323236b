"""Transactions end to end against a real cluster (3 combined nodes, one for
the module): a committed transaction is seen by read_committed consumers, an
aborted one is not (read_uncommitted sees both, markers never); offsets sent
to a transaction become the group's only when it commits; a second producer
with the same transactional.id fences the first (PRODUCER_FENCED, fatal);
a transaction its coordinator aborted for its timeout can only be aborted by
the producer, which then carries on; and batches go out transactional, each
transaction with a new epoch."""
from __future__ import annotations

import time

import pytest

from client.consumer import Consumer
from client.consumer_types import ConsumerGroupMetadata, TopicPartition
from client.errors import KafkaException
from client.producer import PreparedTxnState, Producer
from devcluster.local_cluster import LocalCluster

from .producer_helpers import read_batches

PROPERTIES = {"broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500,
              "transaction.state.log.num.partitions": 5,
              "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200}
WAIT_S = 60


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("transactions"), combined=3, properties=PROPERTIES).running() as c:
        yield c


def topic(cluster: LocalCluster, name: str, partitions: int = 1) -> str:
    cluster.create_topic(name, partitions, 3)
    cluster.wait_for_leaders(name)
    return name


def transactional(cluster: LocalCluster, tid: str, **extra: str) -> Producer:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid, **extra})
    producer.init_transactions(WAIT_S)
    return producer


def read_all(cluster: LocalCluster, name: str, isolation: str, partitions: int = 1) -> list[bytes]:
    """Every record up to the end offsets of `isolation` (the LSO for read_committed)."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "isolation.level": isolation,
                         "auto.offset.reset": "earliest"})
    try:
        tps = [TopicPartition(name, p) for p in range(partitions)]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        values: list[bytes] = []
        deadline = time.monotonic() + WAIT_S
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"{name}: positions stuck below {ends}"
            values.extend(r.value for r in consumer.poll(0.5))
        return values
    finally:
        consumer.close()


def test_commit_is_seen_by_read_committed_abort_is_not(cluster: LocalCluster) -> None:
    name = topic(cluster, "committed-or-not")
    producer = transactional(cluster, "tx-visibility")
    try:
        producer.begin_transaction()
        for i in range(5):
            producer.produce(name, b"kept-%d" % i)
        producer.commit_transaction(WAIT_S)
        producer.begin_transaction()
        for i in range(5):
            producer.produce(name, b"dropped-%d" % i)
        assert producer.flush(WAIT_S) == 0  # written to the partition, then aborted
        producer.abort_transaction(WAIT_S)
        producer.begin_transaction()
        producer.produce(name, b"after")
        producer.commit_transaction(WAIT_S)
    finally:
        producer.close(10)
    committed = read_all(cluster, name, "read_committed")
    assert committed == [b"kept-%d" % i for i in range(5)] + [b"after"]
    everything = read_all(cluster, name, "read_uncommitted")
    assert everything == ([b"kept-%d" % i for i in range(5)] + [b"dropped-%d" % i for i in range(5)] + [b"after"])
    batches = read_batches(cluster, name, 0, 0)
    data = [b for b in batches if not b.header.is_control]
    markers = [b for b in batches if b.header.is_control]
    assert all(b.header.is_transactional for b in data) and len(markers) == 3
    epochs = [b.header.producer_epoch for b in data]
    assert epochs == sorted(epochs) and len(set(epochs)) == 3  # KIP-890: a new epoch per transaction
    first_of_epoch = {}
    for b in data:
        first_of_epoch.setdefault(b.header.producer_epoch, b.header.base_sequence)
    assert set(first_of_epoch.values()) == {0}  # sequences restart with each epoch


def test_an_open_transaction_holds_read_committed_back(cluster: LocalCluster) -> None:
    name = topic(cluster, "held-back")
    producer = transactional(cluster, "tx-open")
    try:
        producer.begin_transaction()
        producer.produce(name, b"undecided")
        assert producer.flush(WAIT_S) == 0
        with Producer({"bootstrap.servers": cluster.bootstrap}) as plain:
            plain.produce(name, b"plain").result(WAIT_S)
        assert read_all(cluster, name, "read_committed") == []  # the LSO is the open transaction's start
        assert read_all(cluster, name, "read_uncommitted") == [b"undecided", b"plain"]
        producer.commit_transaction(WAIT_S)
        assert read_all(cluster, name, "read_committed") == [b"undecided", b"plain"]
    finally:
        producer.close(10)


def test_offsets_sent_to_a_transaction_commit_with_it_only(cluster: LocalCluster) -> None:
    source = topic(cluster, "offsets-source")
    tp = TopicPartition(source, 0)
    group = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "txn-group",
                      "enable.auto.commit": "false"})
    producer = transactional(cluster, "tx-offsets")
    try:
        metadata = group.group_metadata()
        assert metadata == ConsumerGroupMetadata("txn-group", "", -1, None)  # not subscribed: not checked
        producer.begin_transaction()
        producer.send_offsets_to_transaction({tp: 7}, metadata, WAIT_S)
        producer.abort_transaction(WAIT_S)
        assert group.committed([tp])[tp] is None
        producer.begin_transaction()
        producer.send_offsets_to_transaction({tp: 11}, metadata, WAIT_S)
        producer.commit_transaction(WAIT_S)
        deadline = time.monotonic() + WAIT_S
        while (group.committed([tp])[tp] is None) and time.monotonic() < deadline:
            time.sleep(0.2)  # the marker reaches __consumer_offsets after EndTxn answers
        committed = group.committed([tp])[tp]
        assert committed is not None and committed.offset == 11
    finally:
        producer.close(10)
        group.close()


def test_a_second_producer_with_the_id_fences_the_first(cluster: LocalCluster) -> None:
    name = topic(cluster, "fenced")
    first = transactional(cluster, "tx-zombie")
    second = None
    try:
        first.begin_transaction()
        first.produce(name, b"zombie")
        assert first.flush(WAIT_S) == 0
        second = transactional(cluster, "tx-zombie")  # aborts the first one's open transaction
        with pytest.raises(KafkaException) as raised:
            first.commit_transaction(WAIT_S)
        error = raised.value.args[0]
        assert error.name() == "PRODUCER_FENCED" and error.fatal()
        with pytest.raises(KafkaException) as again:
            first.begin_transaction()
        assert again.value.args[0].fatal()
        second.begin_transaction()
        second.produce(name, b"live")
        second.commit_transaction(WAIT_S)
        assert read_all(cluster, name, "read_committed") == [b"live"]
    finally:
        first.close(10)
        if second is not None:
            second.close(10)


def test_produce_outside_a_transaction_is_a_state_error(cluster: LocalCluster) -> None:
    producer = transactional(cluster, "tx-state")
    try:
        with pytest.raises(KafkaException) as raised:
            producer.produce(topic(cluster, "no-txn"), b"x")
        assert raised.value.args[0].name() == "_STATE"
    finally:
        producer.close(10)


def test_a_transaction_past_its_timeout_is_aborted_and_the_producer_carries_on(cluster: LocalCluster) -> None:
    name = topic(cluster, "timed-out")
    producer = transactional(cluster, "tx-timeout", **{"transaction.timeout.ms": "1000"})
    try:
        producer.begin_transaction()
        producer.produce(name, b"too-late")
        assert producer.flush(WAIT_S) == 0
        deadline = time.monotonic() + WAIT_S
        while not _lso_passed(cluster, name):  # the coordinator's own ABORT marker moves the LSO
            assert time.monotonic() < deadline, "the coordinator did not abort the timed-out transaction"
            time.sleep(0.3)
        with pytest.raises(KafkaException) as raised:
            producer.commit_transaction(WAIT_S)
        assert raised.value.args[0].txn_requires_abort() and not raised.value.args[0].fatal()
        producer.abort_transaction(WAIT_S)
        producer.begin_transaction()
        producer.produce(name, b"in-time")
        producer.commit_transaction(WAIT_S)
    finally:
        producer.close(10)
    assert read_all(cluster, name, "read_committed") == [b"in-time"]


def _lso_passed(cluster: LocalCluster, name: str) -> bool:
    """read_committed's end offset is past the open transaction's record: its marker is written."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "isolation.level": "read_committed"})
    try:
        tp = TopicPartition(name, 0)
        return consumer.end_offsets([tp])[tp] > 0
    finally:
        consumer.close()


def test_a_prepared_transaction_outlives_its_timeout_and_another_producer_completes_it(cluster: LocalCluster) -> None:
    """KIP-939: a 2PC transaction is never aborted by timeout; a second producer
    of the id keeps it (keep_prepared_txn) and commits it when the shipped state
    names it; a state naming another transaction aborts the one open."""
    name = topic(cluster, "two-phase")
    two_pc = {"transaction.two.phase.commit.enable": "true", "transaction.timeout.ms": "500"}
    first = transactional(cluster, "tx-2pc", **two_pc)
    try:
        first.begin_transaction()
        first.produce(name, b"prepared")
        shipped = str(first.prepare_transaction(WAIT_S))
    finally:
        first.close(10)
    time.sleep(1.5)  # three timeouts, and the coordinator's check runs every 200 ms
    assert read_all(cluster, name, "read_uncommitted") == [b"prepared"]
    assert read_all(cluster, name, "read_committed") == []  # still open: not aborted by the timer
    second = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "tx-2pc", **two_pc})
    try:
        second.init_transactions(WAIT_S, keep_prepared_txn=True)
        assert second.complete_transaction(PreparedTxnState.parse(shipped), WAIT_S) is True
        assert read_all(cluster, name, "read_committed") == [b"prepared"]
        assert second.complete_transaction(PreparedTxnState.parse(shipped), WAIT_S) is False  # nothing open
        second.begin_transaction()
        second.produce(name, b"wrong-state")
        second.prepare_transaction(WAIT_S)
    finally:
        second.close(10)
    third = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "tx-2pc", **two_pc})
    try:
        third.init_transactions(WAIT_S, keep_prepared_txn=True)
        assert third.complete_transaction(PreparedTxnState.parse(shipped), WAIT_S) is False  # not that one: aborted
    finally:
        third.close(10)
    assert read_all(cluster, name, "read_committed") == [b"prepared"]
    with Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "tx-plain"}) as plain:
        with pytest.raises(KafkaException, match="needs transaction.two.phase.commit.enable=true"):
            plain.init_transactions(WAIT_S, keep_prepared_txn=True)
