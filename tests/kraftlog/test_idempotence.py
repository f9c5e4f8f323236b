"""Idempotent producers against real processes (3 controllers + 3 brokers),
by raw gRPC: InitProducerId hands out ids from the controller's blocks and
bumps epochs; a retried batch is answered with its original offset and
written once - also by a new leader after kill -9 of the old one, and by a
broker that replayed its log after a restart; a gap is refused, an old
epoch fenced.
"""
from __future__ import annotations

import time
from typing import Optional

import pytest

from broker.errors import Error
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until
from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.records import Record, encode_batch, iter_batches

PROPERTIES = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "broker.session.timeout.ms": 2000,
    "broker.heartbeat.interval.ms": 500,
    "replica.lag.time.max.ms": 5000,
    "replica.fetch.wait.max.ms": 200,
    "replica.fetch.backoff.ms": 200,
    "producer.id.expiration.ms": 3_600_000,  # accepted under Kafka's name (no test waits an hour)
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("idempotence"), properties=PROPERTIES).running() as c:
        yield c


def init_producer_id(c: LocalCluster, broker: int, producer_id: int = -1, epoch: int = -1,
                     transactional_id: str = "") -> bpb.InitProducerIdResponse:
    return c.broker_stub(broker).InitProducerId(bpb.InitProducerIdRequest(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=epoch), timeout=20)


def new_producer(c: LocalCluster, broker: int) -> tuple[int, int]:
    answer = init_producer_id(c, broker)
    assert answer.error_code == Error.NONE, answer
    return answer.producer_id, answer.producer_epoch


def idempotent_batch(producer_id: int, epoch: int, sequence: int, values: list[bytes]) -> bytes:
    now = int(time.time() * 1000)  # producers expire by their batches' timestamps
    return encode_batch([Record(None, v, now) for v in values], producer_id=producer_id, producer_epoch=epoch,
                        base_sequence=sequence)


def leader_of(c: LocalCluster, topic: str, among: Optional[tuple[int, ...]] = None) -> int:
    """The leader of partition 0, once the leader's own metadata says so (it serves it then)."""
    def serving() -> Optional[int]:
        leader = c.wait_for_leaders(topic, timeout=60, among=among).partitions[0].leader_id
        own = c.metadata(leader, [topic])
        if own is None or not own.topics or own.topics[0].error_code:
            return None
        return leader if own.topics[0].partitions[0].leader_id == leader else None
    return wait_until(serving, 60, f"the leader of {topic} serving it", interval=0.1)


def produce(c: LocalCluster, broker: int, topic: str, batch: bytes,
            acks: int = -1) -> bpb.ProduceResponse.PartitionResponse:
    response = c.broker_stub(broker).Produce(bpb.ProduceRequest(acks=acks, timeout_ms=15000, topics=[
        bpb.ProduceRequest.TopicData(name=topic, partitions=[
            bpb.ProduceRequest.PartitionData(index=0, records=batch)])]), timeout=30)
    return response.responses[0].partitions[0]


def produce_to_leader(c: LocalCluster, topic: str, batch: bytes) -> bpb.ProduceResponse.PartitionResponse:
    """Produce to whoever leads now, again while leadership moves (NOT_LEADER_OR_FOLLOWER)."""
    def answered() -> Optional[bpb.ProduceResponse.PartitionResponse]:
        answer = produce(c, leader_of(c, topic), topic, batch)
        return None if answer.error_code == Error.NOT_LEADER_OR_FOLLOWER else answer
    return wait_until(answered, 60, f"an answer from the leader of {topic}", interval=0.2)


def values_in(c: LocalCluster, broker: int, topic: str) -> list[bytes]:
    """Every committed record of partition 0, as a consumer reads it from `broker`."""
    values: list[bytes] = []
    offset = 0
    while True:
        response = c.broker_stub(broker).Fetch(bpb.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, topics=[
            bpb.FetchRequest.FetchTopic(topic=topic, partitions=[bpb.FetchRequest.FetchPartition(
                partition=0, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
                partition_max_bytes=1 << 20)])]), timeout=10)
        answer = response.responses[0].partitions[0]
        assert answer.error_code == Error.NONE, answer
        if not answer.records:
            return values
        for batch in iter_batches(answer.records):
            values += [r.value for r in batch.records if r.offset >= offset]
            offset = batch.header.last_offset + 1


def test_init_producer_id_hands_out_distinct_ids_even_to_a_named_one(cluster) -> None:
    ids = [new_producer(cluster, b) for b in cluster.brokers for _ in range(3)]
    assert all(epoch == 0 for _, epoch in ids)
    assert len({pid for pid, _ in ids}) == len(ids)  # every broker draws from its own block
    pid, _ = ids[0]
    # Without a transactional id a named id and epoch get a new id at epoch 0, as from Kafka (an
    # idempotent producer bumps its epoch itself; no one may fence another's id by naming it).
    given = {p for p, _ in ids}
    for broker, epoch in ((cluster.brokers[1], 0), (cluster.brokers[0], 32766)):
        renewed = init_producer_id(cluster, broker, pid, epoch)
        assert (renewed.error_code, renewed.producer_epoch) == (Error.NONE, 0), renewed
        assert renewed.producer_id not in given
        given.add(renewed.producer_id)
    # With a transactional id it is the transaction coordinator's (none here: no __transaction_state yet).
    routed = init_producer_id(cluster, cluster.brokers[0], transactional_id="tx-1")
    assert routed.error_code == Error.NOT_COORDINATOR, routed
    bad = init_producer_id(cluster, cluster.brokers[0], -1, 3)
    assert bad.error_code == Error.INVALID_REQUEST


def test_a_retried_batch_is_written_once_a_gap_refused_an_old_epoch_fenced(cluster) -> None:
    cluster.create_topic("idem", 1, 3, {"min.insync.replicas": "2"})
    leader = leader_of(cluster, "idem")
    pid, epoch = new_producer(cluster, leader)
    first = idempotent_batch(pid, epoch, 0, [b"a", b"b"])
    answer = produce(cluster, leader, "idem", first)
    assert (answer.error_code, answer.base_offset) == (Error.NONE, 0)
    again = produce(cluster, leader, "idem", first)
    assert (again.error_code, again.base_offset) == (Error.NONE, 0), again

    gap = produce(cluster, leader, "idem", idempotent_batch(pid, epoch, 5, [b"gap"]))
    assert gap.error_code == Error.OUT_OF_ORDER_SEQUENCE_NUMBER, gap
    unknown = produce(cluster, leader, "idem", idempotent_batch(pid + 1, 0, 3, [b"who?"]))
    assert unknown.error_code == Error.UNKNOWN_PRODUCER_ID, unknown
    second = produce(cluster, leader, "idem", idempotent_batch(pid, epoch, 2, [b"c"]))
    assert (second.error_code, second.base_offset) == (Error.NONE, 2)

    # The producer bumps its epoch itself (KIP-360, as Kafka's Java producer): the leader takes the
    # newer epoch from sequence 0 and fences the older one.
    new_epoch = produce(cluster, leader, "idem", idempotent_batch(pid, epoch + 1, 0, [b"d"]))
    assert (new_epoch.error_code, new_epoch.base_offset) == (Error.NONE, 3)
    fenced = produce(cluster, leader, "idem", idempotent_batch(pid, epoch, 3, [b"zombie"]))
    assert fenced.error_code == Error.INVALID_PRODUCER_EPOCH, fenced
    assert values_in(cluster, leader, "idem") == [b"a", b"b", b"c", b"d"]


def test_a_new_leader_after_kill_9_answers_a_retry_with_the_original_offset(cluster) -> None:
    cluster.create_topic("failover", 1, 3, {"min.insync.replicas": "2"})
    leader = leader_of(cluster, "failover")
    pid, epoch = new_producer(cluster, leader)
    batches = [idempotent_batch(pid, epoch, 2 * i, [f"v{2 * i}".encode(), f"v{2 * i + 1}".encode()])
               for i in range(4)]
    for i, batch in enumerate(batches[:3]):
        answer = produce(cluster, leader, "failover", batch)  # acks=all: every ISR member holds it
        assert (answer.error_code, answer.base_offset) == (Error.NONE, 2 * i), answer

    cluster.kill(leader)
    try:
        others = tuple(b for b in cluster.brokers if b != leader)
        new_leader = leader_of(cluster, "failover", among=others)
        # The producer never heard back about its last two batches: it sends them again.
        for i in (1, 2):
            retried = produce_to_leader(cluster, "failover", batches[i])
            assert (retried.error_code, retried.base_offset) == (Error.NONE, 2 * i), retried
        fourth = produce_to_leader(cluster, "failover", batches[3])
        assert (fourth.error_code, fourth.base_offset) == (Error.NONE, 6), fourth
        assert values_in(cluster, new_leader, "failover") == [f"v{i}".encode() for i in range(8)]
    finally:
        cluster.start(leader)
        cluster.wait_for_brokers(timeout=60)


@pytest.mark.parametrize("how", ["sigterm", "kill -9"])
def test_a_restarted_broker_rebuilds_the_producer_state_from_its_log(cluster, how) -> None:
    topic = f"restart-{how.replace(' ', '')}"
    cluster.create_topic(topic, 1, 1)  # one replica: only its own log can tell what was written
    leader = leader_of(cluster, topic)
    pid, epoch = new_producer(cluster, leader)
    batches = [idempotent_batch(pid, epoch, i, [f"r{i}".encode()]) for i in range(3)]
    for i, batch in enumerate(batches[:2]):
        assert produce(cluster, leader, topic, batch).base_offset == i

    if how == "sigterm":
        exit_status = cluster.stop(leader)
    else:
        cluster.kill(leader)
        exit_status = 0
    cluster.start(leader)  # before any assert: the module's later tests share the cluster
    cluster.wait_for_brokers(timeout=60)
    assert exit_status == 0, f"SIGTERM: broker {leader} exited {exit_status}"
    retried = produce_to_leader(cluster, topic, batches[1])
    assert (retried.error_code, retried.base_offset) == (Error.NONE, 1), retried
    third = produce_to_leader(cluster, topic, batches[2])
    assert (third.error_code, third.base_offset) == (Error.NONE, 2), third
    gap = produce_to_leader(cluster, topic, idempotent_batch(pid, epoch, 9, [b"gap"]))
    assert gap.error_code == Error.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert values_in(cluster, leader, topic) == [b"r0", b"r1", b"r2"]
