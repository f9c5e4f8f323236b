"""The consumer's pure parts: decoding a fetch answer into records, and the
subscription state that hands prefetched records out exactly once."""
from __future__ import annotations

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.records import Record, encode_batch

from client.consumer_types import TimestampType, TopicPartition
from client.fetcher import decode_fetched
from client.subscription_state import LATEST, SubscriptionState

TP = TopicPartition("t", 0)


def answer(*batches: bytes, hw: int) -> bpb.FetchResponse.PartitionData:
    return bpb.FetchResponse.PartitionData(partition_index=0, high_watermark=hw, records=b"".join(batches))


def batch(base: int, count: int, **kwargs) -> bytes:
    return encode_batch([Record(b"k%d" % (base + i), b"v%d" % (base + i), 1000 + base + i, (("h", b"1"),))
                         for i in range(count)], base_offset=base, partition_leader_epoch=3, **kwargs)


def test_decode_keeps_records_from_the_position_below_the_high_watermark() -> None:
    fetched = decode_fetched(TP, 5, answer(batch(0, 10), hw=8))
    assert [r.offset for r in fetched.records] == [5, 6, 7]
    assert fetched.next_offset == 8 and fetched.position == 5
    r = fetched.records[0]
    assert (r.key, r.value, r.timestamp, r.headers, r.leader_epoch) == (b"k5", b"v5", 1005, (("h", b"1"),), 3)
    assert r.timestamp_type == TimestampType.CREATE_TIME


def test_decode_steps_over_control_batches_and_uses_log_append_time() -> None:
    control = encode_batch([Record(None, b"marker", 0)], base_offset=10, control=True, transactional=True)
    appended = encode_batch([Record(None, b"a", 1), Record(None, b"b", 2)], base_offset=11, log_append_time=True,
                            max_timestamp=5000)
    fetched = decode_fetched(TP, 10, answer(control, appended, hw=13))
    assert [(r.offset, r.value) for r in fetched.records] == [(11, b"a"), (12, b"b")]
    assert {(r.timestamp, r.timestamp_type) for r in fetched.records} == {(5000, TimestampType.LOG_APPEND_TIME)}
    only_control = decode_fetched(TP, 10, answer(control, hw=13))
    assert only_control.records == [] and only_control.next_offset == 11


def new_state() -> SubscriptionState:
    state = SubscriptionState()
    state.cond.acquire()  # callers hold the lock, as the consumer's threads do
    return state


def state_with(records_from: int, count: int) -> SubscriptionState:
    state = new_state()
    state.assign([TP], awaiting_committed=False, reset_to=LATEST)
    state.seek(TP, records_from)
    state.add_fetched(decode_fetched(TP, records_from, answer(batch(0, records_from + count), hw=10**6)))
    return state


def test_drain_hands_records_out_once_in_order() -> None:
    state = state_with(2, 8)
    out = [state.drain(3), state.drain(3), state.drain(3), state.drain(3)]
    assert [[r.offset for r in chunk] for chunk in out] == [[2, 3, 4], [5, 6, 7], [8, 9], []]
    assert state.assignment[TP].position == 10 and state.assignment[TP].leader_epoch == 3


def test_a_seek_or_revocation_drops_what_was_prefetched() -> None:
    state = state_with(0, 10)
    assert [r.offset for r in state.drain(4)] == [0, 1, 2, 3]
    state.seek(TP, 1)
    assert state.drain(10) == []  # the rest was fetched for position 4, not 1
    stale = decode_fetched(TP, 4, answer(batch(0, 10), hw=10))
    state.add_fetched(stale)  # a fetch sent before the seek answers after it
    assert state.drain(10) == [] and TP not in state.buffer
    state.add_fetched(decode_fetched(TP, 1, answer(batch(0, 10), hw=10)))
    assert [r.offset for r in state.drain(10)] == list(range(1, 10))
    state.unassign([TP])
    state.assign([TP], awaiting_committed=True, reset_to=None)
    state.add_fetched(decode_fetched(TP, 10, answer(batch(10, 5), hw=15)))
    assert state.drain(10) == []  # no position yet: nothing applies


def test_paused_partitions_keep_their_records_for_later() -> None:
    state = state_with(0, 5)
    state.set_paused([TP], True)
    assert state.drain(10) == [] and TP in state.buffer
    assert state.fetchable(now=0.0) == []
    state.set_paused([TP], False)
    assert [r.offset for r in state.drain(10)] == [0, 1, 2, 3, 4]
    assert state.fetchable(now=0.0) == [(TP, 5)]


def test_an_answer_with_no_records_past_the_position_moves_it_only_over_gaps() -> None:
    state = new_state()
    state.assign([TP], awaiting_committed=False, reset_to=None)
    state.seek(TP, 10)
    control = encode_batch([Record(None, b"marker", 0)], base_offset=10, control=True, transactional=True)
    state.add_fetched(decode_fetched(TP, 10, answer(control, hw=11)))
    assert state.assignment[TP].position == 11 and state.buffer == {}
    state.add_fetched(decode_fetched(TP, 11, answer(hw=11)))
    assert state.assignment[TP].position == 11
