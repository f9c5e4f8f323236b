"""Idempotent producers on real partition logs and replicas (three brokers
in one process, replication through the fetcher's own code): the leader's
answers, followers keeping the state so a new leader dedups, truncation
rolling it back, a reopened log replaying it, expiration."""
from __future__ import annotations

import asyncio

import pytest

from broker.config import BrokerConfig
from broker.errors import Error
from broker.produce import append, handle_produce
from broker.replica_manager import ReplicaManager
from broker.server import full_delta
from kraftlog_api import broker_pb2 as bpb
from partition_log.log_manager import LogManager
from kafka_protocol.records import Record, encode_batch, iter_records

from .helpers import Cluster, batch_of, replicate, run

TS = 1_700_000_000_000  # the helpers' FakeClock starts here: batches are fresh


def batch(pid: int, epoch: int, seq: int, *values: bytes) -> bytes:
    return encode_batch([Record(None, v, TS) for v in values], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq)


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    c.create_topic("orders", {0: [1, 2, 3]})
    return c


def produce(cluster, broker, records, acks=1):
    return run(append(cluster[broker], "orders", 0, records, acks, 1000))


def values(cluster, broker):
    lg = cluster[broker].get("orders", 0).log
    return [r.value for data in lg.iter_reads(lg.log_start_offset, 1 << 20) for r in iter_records(data)]


def test_the_leader_answers_a_retry_with_the_original_offset_and_appends_nothing(cluster):
    assert produce(cluster, 1, batch_of([b"plain"])).base_offset == 0
    first = batch(7, 0, 0, b"a", b"b")
    assert produce(cluster, 1, first).base_offset == 1
    assert produce(cluster, 1, first).base_offset == 1
    gap = produce(cluster, 1, batch(7, 0, 3, b"x"))
    assert gap.error == Error.OUT_OF_ORDER_SEQUENCE_NUMBER and "expected sequence 2, got 3" in gap.message
    assert values(cluster, 1) == [b"plain", b"a", b"b"]


def test_a_retry_with_acks_all_waits_for_the_original_to_be_replicated(cluster):
    async def go():
        original = asyncio.ensure_future(append(cluster[1], "orders", 0, batch(7, 0, 0, b"a"), -1, 5000))
        retry = asyncio.ensure_future(append(cluster[1], "orders", 0, batch(7, 0, 0, b"a"), -1, 5000))
        await asyncio.sleep(0)
        assert not retry.done()  # the duplicate's offset is not committed yet
        for _ in range(2):
            await replicate(cluster, 2)
            await replicate(cluster, 3)
        return await asyncio.gather(original, retry)
    original, retry = run(go())
    assert (original.error, original.base_offset) == (retry.error, retry.base_offset) == (Error.NONE, 0)
    assert values(cluster, 1) == [b"a"]


def test_a_produce_request_answers_the_producer_errors_per_partition(cluster):
    cluster.create_topic("other", {0: [1]})
    produce(cluster, 1, batch(7, 2, 0, b"a"))
    request = bpb.ProduceRequest(acks=1, timeout_ms=1000, topics=[
        bpb.ProduceRequest.TopicData(name="orders", partitions=[
            bpb.ProduceRequest.PartitionData(index=0, records=batch(7, 1, 1, b"zombie"))]),
        bpb.ProduceRequest.TopicData(name="other", partitions=[
            bpb.ProduceRequest.PartitionData(index=0, records=batch(7, 1, 0, b"fine"))])])
    response = run(handle_produce(cluster[1], request))
    fenced, fine = (t.partitions[0] for t in response.responses)
    assert fenced.error_code == Error.INVALID_PRODUCER_EPOCH and "fenced by epoch 2" in fenced.error_message
    assert (fine.error_code, fine.base_offset) == (Error.NONE, 0)  # its own state: epoch 1 is new there
    assert values(cluster, 1) == [b"a"]


def test_followers_keep_the_state_so_a_new_leader_dedups_and_fences(cluster):
    for seq, value in enumerate((b"a", b"b", b"c")):
        produce(cluster, 1, batch(7, 0, seq, value))
    run(replicate(cluster, 2, rounds=2))
    run(replicate(cluster, 3, rounds=2))
    cluster.change("orders", 0, leader=2, isr=[2, 3])
    assert produce(cluster, 2, batch(7, 0, 1, b"b")).base_offset == 1
    assert produce(cluster, 2, batch(7, 0, 3, b"d")).base_offset == 3
    assert produce(cluster, 2, batch(7, 1, 0, b"e")).base_offset == 4
    assert produce(cluster, 2, batch(7, 0, 4, b"late")).error == Error.INVALID_PRODUCER_EPOCH
    run(replicate(cluster, 3))
    assert cluster[3].get("orders", 0).producers.entry(7, TS).epoch == 1


def test_a_truncated_follower_forgets_the_batches_it_lost(cluster):
    produce(cluster, 1, batch(7, 0, 0, b"a"))
    run(replicate(cluster, 2, rounds=2))
    run(replicate(cluster, 3, rounds=2))
    assert produce(cluster, 1, batch(7, 0, 1, b"b")).base_offset == 1  # acks=1: only broker 1 has it
    cluster.change("orders", 0, leader=2, isr=[2, 3])
    produce(cluster, 2, batch_of([b"plain"]))
    # The producer had no answer for "b" and sends it again, to the new leader.
    assert produce(cluster, 2, batch(7, 0, 1, b"b")).base_offset == 2
    run(replicate(cluster, 1, rounds=3))  # diverged: broker 1 truncates offset 1, then copies 1..2
    assert values(cluster, 1) == [b"a", b"plain", b"b"]
    run(replicate(cluster, 3, rounds=2))
    cluster.change("orders", 0, leader=1, isr=[1, 2, 3])
    # Broker 1 once held "b" at offset 1; its state must now say offset 2.
    assert produce(cluster, 1, batch(7, 0, 1, b"b")).base_offset == 2
    assert produce(cluster, 1, batch(7, 0, 2, b"c")).base_offset == 3


def test_a_reopened_log_replays_the_producer_state(cluster, tmp_path):
    produce(cluster, 1, batch(7, 0, 0, b"a", b"b"))
    produce(cluster, 1, batch(8, 3, 0, b"c"))
    produce(cluster, 1, batch(7, 0, 2, b"d"))
    cluster[1].log_manager.close()
    reopened = ReplicaManager(1, LogManager(tmp_path / "broker-1", clock=cluster.clock), cluster.clock)
    reopened.apply_metadata(cluster.image, full_delta(cluster.image))
    cluster.brokers[1] = reopened
    # The clean close left a snapshot, which (as Kafka's) keeps each producer's
    # last batch only: an older retry is known to be written, its offsets are not.
    assert produce(cluster, 1, batch(7, 0, 2, b"d")).base_offset == 3
    assert produce(cluster, 1, batch(7, 0, 0, b"a", b"b")).error == Error.DUPLICATE_SEQUENCE_NUMBER
    assert produce(cluster, 1, batch(8, 2, 1, b"old")).error == Error.INVALID_PRODUCER_EPOCH
    assert produce(cluster, 1, batch(8, 3, 1, b"e")).base_offset == 4


def test_a_producer_silent_past_producer_id_expiration_ms_is_forgotten(tmp_path):
    cluster = Cluster(tmp_path, config=BrokerConfig(producer_id_expiration_ms=60_000,
                                                    producer_id_expiration_check_interval_ms=1000))
    cluster.create_topic("orders", {0: [1]})
    produce(cluster, 1, batch(7, 0, 0, b"a"))
    cluster.clock.advance(59_999)
    assert produce(cluster, 1, batch(7, 0, 1, b"b")).base_offset == 1
    cluster.clock.advance(60_000)  # the batches carry TS: "b" was 119,999 ms ago
    late = produce(cluster, 1, batch(7, 0, 2, b"c"))
    assert late.error == Error.UNKNOWN_PRODUCER_ID
    assert len(cluster[1].get("orders", 0).producers) == 0
