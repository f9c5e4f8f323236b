"""The producer's pure parts: settings, the accumulator's batching and
ordering rules, and the idempotent producer's sequence numbers."""
from __future__ import annotations

import pytest

from client.accumulator import RecordAccumulator
from client.errors import InvalidConfigError
from client.idempotence import SEQUENCE_MODULUS, IdempotenceState
from client.producer_batch import NS_PER_MS, ProducerBatch, RecordMetadata, record_size_upper_bound
from client.producer_config import ProducerConfig
from client.record_future import Settlement, SyncRecordFuture
from kafka_protocol.batch import HEADER_SIZE
from kafka_protocol.compression import Codec
from kafka_protocol.records import Record, decode_batch

BOOT = {"bootstrap.servers": "127.0.0.1:9092"}
LEADERS = {("t", 0): 1, ("t", 1): 2, ("t", 2): 1}


def leader_of(topic: str, partition: int):
    return LEADERS.get((topic, partition))


def record(n: int, size: int = 10) -> tuple:
    """A record as the producer holds it (client/producer_batch.ProducerRecord: its timestamp in ns)."""
    return (None, str(n).encode().rjust(size, b"0"), (1000 + n) * NS_PER_MS, (), -1)


def untold() -> SyncRecordFuture:
    """A record's future that nobody listens to (what the accumulator mostly sees)."""
    return SyncRecordFuture.new(Settlement())


# --- settings -----------------------------------------------------------------


def test_defaults_are_kafkas() -> None:
    c = ProducerConfig.parse(BOOT)
    assert (c.acks, c.batch_size, c.linger_ms, c.compression, c.max_in_flight) == (-1, 16384, 5, Codec.NONE, 5)
    assert (c.retries, c.retry_backoff_ms, c.delivery_timeout_ms, c.request_timeout_ms) == (2**31 - 1, 100, 120000,
                                                                                          30000)
    assert (c.max_request_size, c.enable_idempotence, c.client_id) == (1048576, True, "")


def test_idempotence_gives_way_to_conflicting_settings_unless_asked_for() -> None:
    assert ProducerConfig.parse({**BOOT, "acks": "1"}).enable_idempotence is False
    assert ProducerConfig.parse({**BOOT, "acks": 0}).enable_idempotence is False
    assert ProducerConfig.parse({**BOOT, "retries": 0}).enable_idempotence is False
    assert ProducerConfig.parse({**BOOT, "max.in.flight.requests.per.connection": 10}).enable_idempotence is False
    assert ProducerConfig.parse({**BOOT, "enable.idempotence": "false", "acks": "all"}).enable_idempotence is False
    with pytest.raises(InvalidConfigError, match=r"acks='1': must be all"):
        ProducerConfig.parse({**BOOT, "acks": "1", "enable.idempotence": "true"})
    with pytest.raises(InvalidConfigError, match="retries"):
        ProducerConfig.parse({**BOOT, "retries": 0, "enable.idempotence": True})


def test_values_in_kafkas_spellings() -> None:
    assert ProducerConfig.parse({**BOOT, "acks": "-1"}).acks == -1
    assert ProducerConfig.parse({**BOOT, "acks": 1}).acks == 1
    assert ProducerConfig.parse({**BOOT, "compression.type": "ZSTD"}).compression == Codec.ZSTD
    assert ProducerConfig.parse({**BOOT, "linger.ms": "20"}).linger_ms == 20
    # delivery.timeout.ms left alone grows to linger.ms + request.timeout.ms, as in Kafka.
    assert ProducerConfig.parse({**BOOT, "request.timeout.ms": 200000}).delivery_timeout_ms == 200005


@pytest.mark.parametrize("key,value", [
    ("acks", "2"), ("acks", "none"), ("linger.ms", -1), ("linger.ms", "soon"), ("batch.size", True),
    ("compression.type", "brotli"), ("enable.idempotence", "yes"), ("retries", -1),
    ("max.in.flight.requests.per.connection", 0), ("request.timeout.ms", 0), ("max.request.size", "1MB"),
    ("bootstrap.servers", "host-without-port"), ("transaction.timeout.ms", 0),
])
def test_bad_values_name_their_key(key: str, value: object) -> None:
    with pytest.raises(InvalidConfigError) as raised:
        ProducerConfig.parse({**BOOT, key: value})
    assert str(raised.value).startswith(f"INVALID_CONFIG: {key}")


# --- batches ------------------------------------------------------------------


def test_record_size_bound_covers_the_encoded_record() -> None:
    for r in [record(1), Record(b"key", b"v" * 300, 5, (("h", b"x"), ("n", None))), Record(None, None, 0)]:
        batch = ProducerBatch("t", 0, 0, 0.0)
        batch.append(r, record_size_upper_bound(r), untold())
        assert len(batch.encode(Codec.NONE)) <= HEADER_SIZE + record_size_upper_bound(r)


def test_a_batch_completes_each_record_with_its_offset_and_reencodes_only_for_a_new_identity() -> None:
    got: list = []
    batch = ProducerBatch("t", 3, 0, 0.0)
    for n in range(3):
        batch.append(record(n), 31, SyncRecordFuture.new(batch.settlement, lambda e, m: got.append((m, e))))
    first = batch.encode(Codec.GZIP)
    assert batch.encode(Codec.GZIP) is first
    batch.producer_id, batch.producer_epoch, batch.base_sequence = 7, 1, 40
    stamped = decode_batch(batch.encode(Codec.GZIP))
    assert (stamped.header.producer_id, stamped.header.producer_epoch, stamped.header.base_sequence) == (7, 1, 40)
    assert stamped.header.codec == Codec.GZIP and [r.value for r in stamped.records] == [record(n)[1]
                                                                                          for n in range(3)]
    batch.complete(100, -1)
    assert got == [(RecordMetadata("t", 3, 100 + n, 1000 + n), None) for n in range(3)]


def test_a_failing_callback_does_not_stop_the_others() -> None:
    got: list = []

    def bad(e, m) -> None:
        raise ValueError("user code")

    batch = ProducerBatch("t", 0, 0, 0.0)
    batch.append(record(0), 31, SyncRecordFuture.new(batch.settlement, bad))
    batch.append(record(1), 31, SyncRecordFuture.new(batch.settlement, lambda e, m: got.append(e)))
    error = RuntimeError("x")
    batch.fail(error)
    assert got == [error] and batch.finished


# --- the accumulator ------------------------------------------------------------


def accumulator(batch_size: int = 100, linger_ms: int = 10) -> RecordAccumulator:
    return RecordAccumulator(batch_size=batch_size, linger_ms=linger_ms)


def test_batches_fill_to_batch_size_and_an_oversized_record_gets_its_own() -> None:
    acc = accumulator(batch_size=100)
    new = [acc.append(("t", 0), record(n), 30, untold(), 0.0) for n in range(5)]
    # 61 header + 30 fits once; every further record opens a batch.
    assert new == [True, True, True, True, True]
    acc = accumulator(batch_size=200)
    new = [acc.append(("t", 0), record(n), 30, untold(), 0.0) for n in range(6)]
    assert new == [True, False, False, False, True, False]  # 61 + 4 x 30 = 181 <= 200
    assert acc.buffered_bytes == 2 * 200  # each batch holds batch.size of buffer.memory
    assert acc.has_room(("t", 0), 30) and not acc.has_room(("t", 0), 200)
    assert not acc.has_room(("t", 1), 1)


def test_buffer_memory_is_held_per_batch_from_its_first_record_to_its_end() -> None:
    """As Kafka's BufferPool: batch.size taken when a batch opens (a larger record's own
    size), nothing per record within it, all of it given back when the batch finishes."""
    acc = accumulator(batch_size=1000)
    acc.append(("t", 0), record(0), 30, untold(), 0.0)
    assert acc.buffered_bytes == 1000
    for n in range(1, 10):
        acc.append(("t", 0), record(n), 30, untold(), 0.0)
    assert acc.buffered_bytes == 1000  # 61 + 10 x 30 bytes, all within the batch's 1000
    acc.append(("t", 1), record(0), 2000, untold(), 0.0)  # larger than batch.size: its own size
    assert acc.buffered_bytes == 1000 + HEADER_SIZE + 2000
    first, big = acc.take_all_queued()
    acc.finished(first)
    assert acc.buffered_bytes == HEADER_SIZE + 2000
    acc.finished(big)
    assert acc.buffered_bytes == 0


def test_ready_after_linger_or_when_full_and_drain_takes_one_batch_per_partition() -> None:
    acc = accumulator(batch_size=1000, linger_ms=10)
    acc.append(("t", 0), record(0), 30, untold(), 0.0)
    acc.append(("t", 1), record(1), 30, untold(), 0.0)
    early = acc.ready(0.004, leader_of)
    assert early.nodes == frozenset() and early.next_delay_s == pytest.approx(0.006)
    late = acc.ready(0.010, leader_of)
    assert late.nodes == frozenset({1, 2})
    drained = acc.drain(frozenset({1}), leader_of, 10_000, 0.010)
    assert list(drained) == [1] and [b.tp for b in drained[1]] == [("t", 0)]
    assert acc.in_flight_count == 1
    # A full batch is ready at once, whatever linger.ms says.
    acc2 = accumulator(batch_size=100, linger_ms=10_000)
    acc2.append(("t", 2), record(0), 30, untold(), 0.0)
    acc2.append(("t", 2), record(1), 30, untold(), 0.0)
    assert acc2.ready(0.0, leader_of).nodes == frozenset({1})
    # A flush makes everything ready.
    acc3 = accumulator(linger_ms=10_000)
    acc3.append(("t", 0), record(0), 30, untold(), 0.0)
    acc3.flushing += 1
    assert acc3.ready(0.0, leader_of).nodes == frozenset({1})


def test_drain_gathers_every_partition_of_a_broker_up_to_max_request_size() -> None:
    acc = accumulator(batch_size=1000, linger_ms=0)
    acc.append(("t", 0), record(0), 300, untold(), 0.0)
    acc.append(("t", 2), record(1), 300, untold(), 0.0)
    small = acc.drain(frozenset({1}), leader_of, 400, 0.0)
    assert len(small[1]) == 1  # the second would pass max.request.size: next request
    rest = acc.drain(frozenset({1}), leader_of, 400, 0.0)
    assert len(rest[1]) == 1 and {b.partition for b in small[1] + rest[1]} == {0, 2}


def test_unknown_leader_is_reported_and_nothing_is_sent_for_it() -> None:
    acc = accumulator(linger_ms=0)
    acc.append(("u", 0), record(0), 30, untold(), 0.0)
    check = acc.ready(1.0, leader_of)
    assert check.unknown_leaders and check.nodes == frozenset()


def test_retries_go_back_in_creation_order_and_wait_for_the_partition_to_be_quiet() -> None:
    acc = accumulator(batch_size=100, linger_ms=0)
    for n in range(4):
        acc.append(("t", 0), record(n), 30, untold(), 0.0)  # one record per batch
    sent = [acc.drain(frozenset({1}), leader_of, 10_000, 0.0)[1][0] for _ in range(3)]
    for b in sent:
        b.attempts = 1
    assert [b.serial for b in sent] == [0, 1, 2]
    # The second and first come back (answers may arrive in any order).
    for b in (sent[1], sent[0]):
        acc.returned(b)
        acc.reenqueue(b, retry_at=0.5)
    assert [b.serial for b in acc.queued()] == [0, 1, 3]
    # Batch 2 is still in flight: the retry waits, even after its backoff.
    assert acc.ready(1.0, leader_of).nodes == frozenset()
    assert acc.drain(frozenset({1}), leader_of, 10_000, 1.0) == {}
    acc.returned(sent[2])
    acc.reenqueue(sent[2], retry_at=0.5)
    assert [b.serial for b in acc.queued()] == [0, 1, 2, 3]
    # Quiet, but the backoff has not passed.
    check = acc.ready(0.2, leader_of)
    assert check.nodes == frozenset() and check.next_delay_s == pytest.approx(0.3)
    assert [b.serial for b in acc.drain(frozenset({1}), leader_of, 10_000, 1.0)[1]] == [0]


def test_expiry_takes_old_queued_batches_only() -> None:
    acc = accumulator(batch_size=100, linger_ms=0)
    acc.append(("t", 0), record(0), 30, untold(), 0.0)
    acc.append(("t", 0), record(1), 30, untold(), 5.0)
    in_flight = acc.drain(frozenset({1}), leader_of, 10_000, 0.0)[1][0]
    acc.append(("t", 1), record(2), 30, untold(), 1.0)
    expired = acc.expired(11.5, delivery_timeout_s=10.0)
    assert [b.serial for b in expired] == [2]  # created at 1.0; batch 0 is in flight, batch 1 is young
    assert in_flight not in expired


# --- sequence numbers -----------------------------------------------------------


def batch_of(partition: int, records: int, serial: int = 0) -> ProducerBatch:
    batch = ProducerBatch("t", partition, serial, 0.0)
    for n in range(records):
        batch.append(record(n), 30, untold())
    return batch


def test_sequences_count_records_per_partition_and_retries_keep_theirs() -> None:
    idem = IdempotenceState()
    idem.set_producer(42, 0)
    a, b, c = batch_of(0, 3), batch_of(0, 2), batch_of(1, 4)
    for batch in (a, b, c):
        idem.stamp(batch)
    assert [(x.producer_id, x.producer_epoch, x.base_sequence) for x in (a, b, c)] == [(42, 0, 0), (42, 0, 3),
                                                                                      (42, 0, 0)]
    assert a.next_when_sent and not b.next_when_sent and c.next_when_sent
    assert idem.is_next_expected(a) and not idem.is_next_expected(b)
    idem.acknowledged(a)
    assert idem.is_next_expected(b)
    # A sequence error for b now is not the broker's lost state: b was sent
    # before a was acknowledged and may have overtaken it.
    assert idem.earlier_batch_may_explain(b) and not idem.earlier_batch_may_explain(a)
    idem.stamp(b)  # a retry keeps its sequence; now everything before it is acknowledged
    assert b.base_sequence == 3 and not idem.earlier_batch_may_explain(b)


def test_sequences_wrap_at_int32() -> None:
    idem = IdempotenceState()
    idem.set_producer(1, 0)
    idem._next_sequence[("t", 0)] = SEQUENCE_MODULUS - 2
    first, second = batch_of(0, 5), batch_of(0, 1)
    idem.stamp(first)
    idem.stamp(second)
    assert (first.base_sequence, second.base_sequence) == (SEQUENCE_MODULUS - 2, 3)
    idem.acknowledged(first)
    assert idem.is_next_expected(second)


def test_an_epoch_bump_numbers_held_batches_from_zero_again_in_order() -> None:
    idem = IdempotenceState()
    idem.set_producer(5, 0)
    held = [batch_of(0, 2, serial=n) for n in range(3)]
    for batch in held:
        idem.stamp(batch)
    idem.request_epoch_bump()
    assert idem.bump_needed
    for batch in held[1:]:  # the first failed for good; the broker refused the others' sequences
        idem.refused(batch)
    assert not idem.unsettled_partitions(held[1:])  # known not written: the bump need not wait
    idem.set_producer(5, 1)
    assert not idem.bump_needed
    for batch in held[1:]:
        idem.stamp(batch)
    assert [(b.producer_epoch, b.base_sequence) for b in held[1:]] == [(1, 0), (1, 2)]


def test_a_sent_batch_of_unknown_outcome_keeps_its_stamp_across_an_epoch_bump() -> None:
    """slow-follower seed 2 (docs/chaos.md): a batch appended whose answer was lost
    is retried while another batch expires and the epoch is bumped. Renumbered
    under the new epoch, the retry would be appended a second time."""
    idem = IdempotenceState()
    idem.set_producer(7, 0)
    expired, appended, other, unsent = batch_of(0, 2, 0), batch_of(0, 3, 1), batch_of(1, 1, 2), batch_of(0, 1, 3)
    for batch in (expired, appended, other):
        idem.stamp(batch)
    idem.acknowledged(other)
    idem.forget(other)
    idem.request_epoch_bump()  # `expired` failed after it was sent: its sequence may be a gap
    # `appended` waits for a retry (NOT_ENOUGH_REPLICAS_AFTER_APPEND or a timeout): the bump must wait for it.
    assert idem.unsettled_partitions([appended, unsent]) == {("t", 0)}
    idem.stamp(appended)  # the retry goes out under its first stamp
    assert (appended.producer_epoch, appended.base_sequence) == (0, 2)
    idem.set_producer(7, 1)  # were the bump to happen anyway, the retry still keeps its stamp
    idem.stamp(appended)
    assert (appended.producer_id, appended.producer_epoch, appended.base_sequence) == (7, 0, 2)
    idem.stamp(unsent)  # a batch never sent starts the new epoch's sequences
    assert (unsent.producer_epoch, unsent.base_sequence) == (1, 0)


def test_a_refusal_is_forgotten_when_the_batch_is_sent_again_or_finished() -> None:
    idem = IdempotenceState()
    idem.set_producer(3, 0)
    batch = batch_of(0, 1)
    idem.stamp(batch)
    idem.refused(batch)
    assert not idem.unsettled_partitions([batch])
    idem.stamp(batch)  # resent under the same epoch: same sequence, outcome unknown again
    assert batch.base_sequence == 0 and idem.unsettled_partitions([batch]) == {("t", 0)}
    idem.refused(batch)
    idem.forget(batch)
    idem.set_producer(3, 1)
    idem.stamp(batch)  # a finished batch is no longer known refused: never renumbered
    assert (batch.producer_epoch, batch.base_sequence) == (0, 0)


# --- the metadata's topic changes (what drops produce()'s cached open batch) -----


def test_the_metadata_tells_when_a_topic_goes_or_its_partition_count_changes() -> None:
    from client.metadata_cache import MetadataCache
    from kraftlog_api import broker_pb2 as bpb

    def answer(**topics: int) -> bpb.MetadataResponse:  # name -> partitions (-1: an error for the topic)
        return bpb.MetadataResponse(brokers=[bpb.MetadataResponse.Broker(node_id=1, host="h", port=1)], topics=[
            bpb.MetadataResponse.Topic(name=name, error_code=3 if n < 0 else 0, partitions=[
                bpb.MetadataResponse.Partition(partition_index=i, leader_id=1) for i in range(max(n, 0))])
            for name, n in topics.items()])

    cache = MetadataCache("h:1")
    told: list[str] = []
    cache.topic_listeners.append(told.append)
    cache.learn(answer(a=3, b=2))
    cache.learn(answer(a=3, b=2))
    assert told == []  # first learnt, then unchanged
    cache.learn(answer(a=4, b=-1))
    assert sorted(told) == ["a", "b"] and "b" not in cache.topics
    cache.learn(answer(b=-1))
    assert sorted(told) == ["a", "b"]  # already forgotten: nothing to tell
