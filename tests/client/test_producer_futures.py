"""The per-record futures produce() returns (client/record_future.py): each
reads its outcome from its batch's one outcome; callbacks and on_delivery
run once the batch has finished, in record order; a failed batch fails every
record with its Kafka error. No network: batches are completed by hand, as
the sender does."""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import pytest

from client.errors import error_for_code
from client.producer_batch import NS_PER_MS, ProducerBatch, RecordMetadata
from client.record_future import AsyncRecordFuture, Settlement, SyncRecordFuture
from kafka_protocol.errors import Errors, KafkaError



def record(n: int) -> tuple:
    return (None, b"v%d" % n, (1000 + n) * NS_PER_MS, (), -1)  # ProducerRecord: ns


def batch_of(futures: list, partition: int = 2) -> ProducerBatch:
    """A batch holding one record per future (futures made on the batch's settlement)."""
    batch = ProducerBatch("t", partition, 0, 0.0, futures[0]._settlement if futures else None)
    for n, future in enumerate(futures):
        batch.append(record(n), 30, future)
    return batch


# --- the sync flavour ------------------------------------------------------------


def test_each_record_reads_base_offset_plus_its_index_and_its_own_timestamp() -> None:
    settlement = Settlement()
    futures = [SyncRecordFuture.new(settlement) for _ in range(4)]
    batch = batch_of(futures)
    assert not any(f.done() for f in futures)
    with pytest.raises(TimeoutError):
        futures[0].result(timeout=0)
    batch.complete(500, -1)
    assert [f.result(timeout=0) for f in futures] == [RecordMetadata("t", 2, 500 + n, 1000 + n) for n in range(4)]
    assert all(f.done() and f.exception() is None and not f.cancelled() for f in futures)


def test_log_append_time_replaces_the_create_time_and_an_unknown_offset_stays_minus_one() -> None:
    settlement = Settlement()
    futures = [SyncRecordFuture.new(settlement) for _ in range(3)]
    batch_of(futures).complete(-1, 77)  # acks=0 or a forgotten duplicate: no offset
    assert [f.result() for f in futures] == [RecordMetadata("t", 2, -1, 77)] * 3


def test_a_failed_batch_fails_every_record_with_its_kafka_error() -> None:
    settlement = Settlement()
    told: list = []
    futures = [SyncRecordFuture.new(settlement, lambda e, m: told.append((e, m))) for _ in range(3)]
    error = error_for_code(Errors.NOT_LEADER_OR_FOLLOWER, "t-2: not the leader")
    batch_of(futures).fail(error)
    for future in futures:
        assert future.exception() is error
        with pytest.raises(KafkaError) as raised:
            future.result()
        assert raised.value.name == "NOT_LEADER_OR_FOLLOWER"
    assert told == [(error, RecordMetadata("t", 2, -1, 1000 + n)) for n in range(3)]


def test_callbacks_run_after_the_batch_finished_in_record_order() -> None:
    settlement = Settlement()
    futures = [SyncRecordFuture.new(settlement) for _ in range(5)]
    batch = batch_of(futures)
    seen: list = []

    def callback(future) -> None:  # the whole batch is settled by the time any callback runs
        seen.append((futures.index(future), [f.done() for f in futures], future.result().offset))

    for n in (3, 0, 4):  # added out of order
        futures[n].add_done_callback(callback)
    assert seen == []
    batch.complete(10, -1)
    assert seen == [(0, [True] * 5, 10), (3, [True] * 5, 13), (4, [True] * 5, 14)]
    futures[1].add_done_callback(callback)  # already done: called at once
    assert seen[-1] == (1, [True] * 5, 11)


def test_on_delivery_is_called_once_per_record_in_order_and_a_raising_one_stops_nothing() -> None:
    settlement = Settlement()
    told: list = []

    def bad(error, metadata) -> None:
        raise ValueError("user code")

    futures = [SyncRecordFuture.new(settlement, bad if n == 1 else lambda e, m: told.append(m.offset))
               for n in range(4)]
    batch = batch_of(futures)
    futures[2].add_done_callback(lambda f: told.append("callback 2"))
    batch.complete(40, -1)
    assert told == [40, "callback 2", 42, 43]
    assert futures[1].result().offset == 41


def test_a_callback_added_before_the_record_joins_a_batch_still_runs() -> None:
    # (a record waiting for its topic's metadata has a future but no batch yet)
    settlement = Settlement()
    future = SyncRecordFuture.new(settlement)
    fired: list = []
    future.add_done_callback(fired.append)
    batch = batch_of([SyncRecordFuture.new(settlement)])
    batch.append(record(1), 30, future)
    batch.complete(7, -1)
    assert fired == [future] and future.result().offset == 8


def test_result_blocks_until_another_thread_completes_the_batch() -> None:
    settlement = Settlement()
    futures = [SyncRecordFuture.new(settlement) for _ in range(2)]
    batch = batch_of(futures)
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(futures[1].result(timeout=60)))
    waiter.start()
    try:
        batch.complete(3, -1)
    finally:
        waiter.join(60)
    assert got == [RecordMetadata("t", 2, 4, 1001)]


def test_cancel_ends_the_future_but_the_record_is_still_delivered() -> None:
    settlement = Settlement()
    told: list = []
    future = SyncRecordFuture.new(settlement, lambda e, m: told.append(m.offset))
    fired: list = []
    future.add_done_callback(fired.append)
    batch = batch_of([future])
    assert future.cancel() and future.cancelled() and future.done()
    assert fired == [future]
    with pytest.raises(concurrent.futures.CancelledError):
        future.result()
    batch.complete(9, -1)
    assert fired == [future] and told == [9]  # callbacks not again; on_delivery tells of the record
    assert not future.cancel()


def test_a_record_failed_before_joining_a_batch_tells_on_delivery_without_metadata() -> None:
    settlement = Settlement()
    told: list = []
    future = SyncRecordFuture.new(settlement, lambda e, m: told.append((e, m)))
    error = error_for_code(Errors.MESSAGE_TOO_LARGE, "too large")
    future.fail_unsent(error)
    assert future.done() and future.exception() is error and told == [(error, None)]


# --- the asyncio flavour ---------------------------------------------------------


def test_asyncio_futures_are_awaitable_gatherable_and_call_back_on_the_loop() -> None:
    async def scenario() -> tuple:
        settlement = Settlement(asyncio.get_running_loop())
        futures = [AsyncRecordFuture.new(settlement) for _ in range(3)]
        assert all(asyncio.isfuture(f) for f in futures)
        with pytest.raises(asyncio.InvalidStateError):
            futures[0].result()
        batch = batch_of(futures)
        called: list = []
        futures[2].add_done_callback(called.append)
        gathered = asyncio.gather(*futures)
        awaited = asyncio.ensure_future(_await(futures[1]))
        await asyncio.sleep(0)
        batch.complete(20, -1)
        assert called == []  # scheduled on the loop, not called inside the completion
        return await gathered, await awaited, called, futures

    results, one, called, futures = asyncio.run(scenario())
    assert [m.offset for m in results] == [20, 21, 22] and one.offset == 21 and called == [futures[2]]


async def _await(future):  # type: ignore[no-untyped-def]
    return await future


def test_asyncio_failed_records_raise_in_gather_and_cancelled_waits_end() -> None:
    async def scenario() -> tuple:
        settlement = Settlement(asyncio.get_running_loop())
        futures = [AsyncRecordFuture.new(settlement) for _ in range(2)]
        batch = batch_of(futures)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(futures[0], 0.01)  # cancels it: the wait must end, not hang
        assert futures[0].cancelled()
        gathered = asyncio.gather(*futures, return_exceptions=True)
        batch.fail(error_for_code(Errors.NOT_LEADER_OR_FOLLOWER, "t-2"))
        return await gathered

    cancelled, failed = asyncio.run(scenario())
    assert isinstance(cancelled, asyncio.CancelledError)
    assert isinstance(failed, KafkaError) and failed.name == "NOT_LEADER_OR_FOLLOWER"
