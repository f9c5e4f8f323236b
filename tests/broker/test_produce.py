"""Produce with each acks setting and each error a producer can see."""
from __future__ import annotations

import asyncio
import time

import pytest

from broker.errors import Error
from broker.produce import append, handle_produce
from kafka_protocol.records import Record, encode_batch
from kraftlog_api import broker_pb2 as bpb

from .helpers import Cluster, batch_of, replicate, run


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    c.create_topic("orders", {0: [1, 2, 3]})
    return c


@pytest.mark.parametrize("acks", [0, 1])
def test_acks_0_and_1_answer_after_the_local_append(cluster, acks):
    async def go():
        first = await append(cluster[1], "orders", 0, batch_of([b"a", b"b", b"c"]), acks, 1000)
        second = await append(cluster[1], "orders", 0, batch_of([b"d"]), acks, 1000)
        return first, second
    first, second = run(go())
    assert (first.error, first.base_offset) == (Error.NONE, 0)
    assert (second.error, second.base_offset) == (Error.NONE, 3)
    partition = cluster[1].get("orders", 0)
    assert partition.log.log_end_offset == 4 and partition.high_watermark == 0


def test_acks_all_answers_once_every_isr_member_has_fetched_past_the_batch(cluster):
    async def go():
        produced = asyncio.ensure_future(append(cluster[1], "orders", 0, batch_of([b"a", b"b"]), -1, 5000))
        await asyncio.sleep(0)
        await replicate(cluster, 2)  # fetches the batch
        await replicate(cluster, 3)
        assert not produced.done()  # the followers hold it, but the leader learns so at their next fetch
        await replicate(cluster, 2)
        await asyncio.sleep(0)
        assert not produced.done()
        await replicate(cluster, 3)
        return await asyncio.wait_for(produced, 1)
    result = run(go())
    assert (result.error, result.base_offset) == (Error.NONE, 0)
    assert cluster[1].get("orders", 0).high_watermark == 2


def test_acks_all_is_completed_in_the_step_of_the_fetch_that_proves_it(cluster):
    """No polling (issue 21 target 3): the waiting produce is completed by
    the high-watermark advance the last ISR member's fetch makes, before that
    fetch's handler yields, and not by the first member's."""
    async def go():
        partition = cluster[1].get("orders", 0)
        produced = asyncio.ensure_future(append(cluster[1], "orders", 0, batch_of([b"a", b"b"]), -1, 5000))
        await asyncio.sleep(0)
        waiter = partition.wait_for_high_watermark(2)
        assert not waiter.done() and partition.log.log_end_offset == 2
        partition.record_follower_fetch(2, 2)  # one follower holds it: not enough for the ISR [1, 2, 3]
        assert not waiter.done()
        partition.record_follower_fetch(3, 2)
        assert waiter.done() and waiter.result() == Error.NONE and partition.high_watermark == 2
        return await asyncio.wait_for(produced, 1)
    result = run(go())
    assert (result.error, result.base_offset) == (Error.NONE, 0)


def test_acks_all_with_an_isr_of_one_answers_at_once(cluster):
    cluster.change("orders", 0, isr=[1])
    result = run(append(cluster[1], "orders", 0, batch_of([b"a"]), -1, 0))
    assert result.error == Error.NONE and cluster[1].get("orders", 0).high_watermark == 1


def test_acks_all_times_out_when_followers_do_not_fetch(cluster):
    result = run(append(cluster[1], "orders", 0, batch_of([b"a"]), -1, 20))
    assert result.error == Error.REQUEST_TIMED_OUT
    partition = cluster[1].get("orders", 0)
    assert partition.log.log_end_offset == 1  # written, outcome unknown to the producer
    assert len(partition.leadership.hw_waiters) == 0


def test_not_enough_replicas_is_checked_before_appending(cluster):
    cluster.set_config("orders", "min.insync.replicas", "3")
    cluster.change("orders", 0, isr=[1, 2])
    result = run(append(cluster[1], "orders", 0, batch_of([b"a"]), -1, 1000))
    assert result.error == Error.NOT_ENOUGH_REPLICAS
    assert cluster[1].get("orders", 0).log.log_end_offset == 0
    assert run(append(cluster[1], "orders", 0, batch_of([b"a"]), 1, 1000)).error == Error.NONE


def test_not_enough_replicas_after_append_when_the_isr_shrinks_while_waiting(cluster):
    cluster.set_config("orders", "min.insync.replicas", "3")

    async def go():
        produced = asyncio.ensure_future(append(cluster[1], "orders", 0, batch_of([b"a"]), -1, 5000))
        await asyncio.sleep(0)
        await replicate(cluster, 2, rounds=2)
        cluster.change("orders", 0, isr=[1, 2])  # 3 dropped: the high watermark passes the batch
        return await asyncio.wait_for(produced, 1)
    result = run(go())
    assert result.error == Error.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert cluster[1].get("orders", 0).high_watermark == 1


def test_losing_leadership_while_waiting_answers_not_leader(cluster):
    async def go():
        produced = asyncio.ensure_future(append(cluster[1], "orders", 0, batch_of([b"a"]), -1, 5000))
        await asyncio.sleep(0)
        cluster.change("orders", 0, leader=2)
        return await asyncio.wait_for(produced, 1)
    result = run(go())
    assert (result.error, result.current_leader_id, result.current_leader_epoch) == \
        (Error.NOT_LEADER_OR_FOLLOWER, 2, 1)


def test_a_follower_refuses_produce_and_names_the_leader(cluster):
    result = run(append(cluster[2], "orders", 0, batch_of([b"a"]), 1, 1000))
    assert (result.error, result.current_leader_id, result.current_leader_epoch) == \
        (Error.NOT_LEADER_OR_FOLLOWER, 1, 0)


def test_unknown_partitions_and_bad_acks(cluster):
    assert run(append(cluster[1], "nope", 0, batch_of([b"a"]), 1, 1000)).error == Error.UNKNOWN_TOPIC_OR_PARTITION
    assert run(append(cluster[1], "orders", 9, batch_of([b"a"]), 1, 1000)).error == Error.UNKNOWN_TOPIC_OR_PARTITION
    assert run(append(cluster[1], "orders", 0, batch_of([b"a"]), 2, 1000)).error == Error.INVALID_REQUIRED_ACKS


def test_corrupt_and_oversized_batches_are_refused_and_nothing_is_written(cluster):
    good = batch_of([b"x" * 100])
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    assert run(append(cluster[1], "orders", 0, bytes(corrupt), 1, 1000)).error == Error.CORRUPT_MESSAGE
    assert run(append(cluster[1], "orders", 0, good[:40], 1, 1000)).error == Error.CORRUPT_MESSAGE
    cluster.set_config("orders", "max.message.bytes", "100")
    result = run(append(cluster[1], "orders", 0, good, 1, 1000))
    assert result.error == Error.MESSAGE_TOO_LARGE and "max.message.bytes" in result.message
    assert cluster[1].get("orders", 0).log.log_end_offset == 0


def test_handle_produce_answers_every_partition_in_request_order(cluster):
    cluster.create_topic("audit", {0: [2], 1: [1]})
    request = bpb.ProduceRequest(acks=1, timeout_ms=1000, topics=[
        bpb.ProduceRequest.TopicData(name="orders", partitions=[
            bpb.ProduceRequest.PartitionData(index=0, records=batch_of([b"a", b"b"]))]),
        bpb.ProduceRequest.TopicData(name="audit", partitions=[
            bpb.ProduceRequest.PartitionData(index=0, records=batch_of([b"c"])),
            bpb.ProduceRequest.PartitionData(index=1, records=batch_of([b"d"]))]),
    ])
    response = run(handle_produce(cluster[1], request))
    got = [(t.name, p.index, p.error_code, p.base_offset, p.current_leader_id)
           for t in response.responses for p in t.partitions]
    assert got == [("orders", 0, 0, 0, -1), ("audit", 0, Error.NOT_LEADER_OR_FOLLOWER, -1, 2), ("audit", 1, 0, 0, -1)]


def test_a_retry_of_a_written_batch_waits_for_the_isr_instead_of_not_enough_replicas(cluster):
    """A producer's retry of a batch the leader already holds, while the ISR
    is below min.insync.replicas, is not answered NOT_ENOUGH_REPLICAS ("not
    written": librdkafka renumbers such a batch on its next epoch bump, and
    it is written twice - docs/chaos.md, the kill-leaders duplicate): it is
    held until the ISR is back, then answered with its offset; a new batch
    is still refused at once, and a retry whose ISR never comes back times out."""
    cluster.set_config("orders", "min.insync.replicas", "2")

    now = int(time.time() * 1000)  # a batch of 1970 would make its producer expired at once

    def idempotent(value: bytes, sequence: int) -> bytes:
        return encode_batch([Record(None, value, now)], producer_id=7, producer_epoch=0, base_sequence=sequence)

    async def go():
        written = await append(cluster[1], "orders", 0, idempotent(b"a", 0), 1, 1000)
        cluster.change("orders", 0, isr=[1])
        fresh = await append(cluster[1], "orders", 0, idempotent(b"b", 1), -1, 1000)
        timed_out = await append(cluster[1], "orders", 0, idempotent(b"a", 0), -1, 100)
        retry = asyncio.ensure_future(append(cluster[1], "orders", 0, idempotent(b"a", 0), -1, 5000))
        await asyncio.sleep(0.05)
        held = not retry.done()
        cluster.change("orders", 0, isr=[1, 2])
        await replicate(cluster, 2, rounds=2)
        return written, fresh, timed_out, held, await asyncio.wait_for(retry, 2)
    written, fresh, timed_out, held, retried = run(go())
    assert (written.error, written.base_offset) == (Error.NONE, 0)
    assert fresh.error == Error.NOT_ENOUGH_REPLICAS
    assert timed_out.error == Error.REQUEST_TIMED_OUT
    assert held
    assert (retried.error, retried.base_offset) == (Error.NONE, 0)
    assert cluster[1].get("orders", 0).log.log_end_offset == 1  # written once
