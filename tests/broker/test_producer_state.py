"""The pure producer state: each decision a leader makes on an idempotent
batch, expiration, and - as properties - that any run of appends, retries,
epoch bumps and truncations leaves no sequence written twice, answers every
duplicate with the offsets the log holds it at, and keeps the state a
function of the log (what a replay of the log gives)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.errors import BrokerError, Error
from broker.producer_state import (NUM_BATCHES_TO_RETAIN, Duplicate, ProducerStateManager, at_or_before,
                                   next_sequence)
from kafka_protocol.batch import CONTROL_MASK, BatchHeader

NOW = 1_700_000_000_000
DAY = 86_400_000


def header(pid: int, epoch: int, seq: int, count: int = 1, *, offset: int = 0, ts: int = NOW,
           attributes: int = 0) -> BatchHeader:
    return BatchHeader(base_offset=offset, batch_length=0, partition_leader_epoch=0, magic=2, crc=0,
                       attributes=attributes, last_offset_delta=count - 1, base_timestamp=ts, max_timestamp=ts,
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq, records_count=count)


class Leader:
    """A log of headers and the producer state a leader keeps over it."""

    def __init__(self, **kwargs) -> None:
        self.state = ProducerStateManager(**kwargs)
        self.log: list[BatchHeader] = []

    @property
    def end(self) -> int:
        return self.log[-1].next_offset if self.log else 0

    def append(self, *headers: BatchHeader, now: int = NOW) -> tuple[int, int]:
        """(first, last) offset of the answer: new offsets, or a duplicate's original ones."""
        duplicate = self.state.check_leader_append(headers, now)
        if duplicate is not None:
            return duplicate.first_offset, duplicate.last_offset
        first = offset = self.end
        for h in headers:
            self.log.append(replace(h, base_offset=offset))
            offset += h.last_offset_delta + 1
        self.state.update_appended(headers, first, now)
        return first, offset - 1

    def refused(self, *headers: BatchHeader) -> int:
        before = list(self.log)
        with pytest.raises(BrokerError) as caught:
            self.append(*headers)
        assert self.log == before
        return caught.value.error

    def truncate(self, batches: int) -> None:
        """Keep the first `batches` batches; the state is replayed from them."""
        del self.log[batches:]
        self.state.clear()
        self.state.update_all(self.log, NOW)


# -- the decisions ---------------------------------------------------------------

def test_batches_in_sequence_are_appended_and_a_retry_gets_the_original_offsets() -> None:
    leader = Leader()
    assert leader.append(header(7, 0, 0, 3)) == (0, 2)
    assert leader.append(header(7, 0, 3, 2)) == (3, 4)
    assert leader.append(header(-1, -1, -1, 4)) == (5, 8)  # not idempotent: no checks
    assert leader.append(header(7, 0, 0, 3)) == (0, 2)  # the retry: nothing appended
    assert leader.append(header(7, 0, 3, 2)) == (3, 4)
    assert leader.end == 9


def test_only_the_last_five_batches_are_answered_with_offsets() -> None:
    leader = Leader()
    for seq in range(NUM_BATCHES_TO_RETAIN + 1):
        leader.append(header(7, 0, seq))
    assert leader.refused(header(7, 0, 0)) == Error.DUPLICATE_SEQUENCE_NUMBER  # written, offset forgotten
    assert leader.append(header(7, 0, 1)) == (1, 1)


def test_a_gap_is_out_of_order_and_appends_nothing() -> None:
    leader = Leader()
    leader.append(header(7, 0, 0, 2))
    assert leader.refused(header(7, 0, 5)) == Error.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert leader.refused(header(7, 0, 1, 3)) == Error.OUT_OF_ORDER_SEQUENCE_NUMBER  # overlaps the last batch


def test_an_unknown_producer_must_start_at_sequence_zero() -> None:
    leader = Leader()
    assert leader.refused(header(7, 0, 4)) == Error.UNKNOWN_PRODUCER_ID
    assert leader.append(header(7, 0, 0)) == (0, 0)


def test_an_older_epoch_is_fenced_and_a_newer_one_starts_at_zero() -> None:
    leader = Leader()
    leader.append(header(7, 3, 0, 2))
    assert leader.refused(header(7, 2, 2)) == Error.INVALID_PRODUCER_EPOCH
    assert leader.refused(header(7, 4, 2)) == Error.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert leader.append(header(7, 4, 0)) == (2, 2)
    assert leader.refused(header(7, 3, 2)) == Error.INVALID_PRODUCER_EPOCH  # the old epoch, fenced now
    assert leader.refused(header(7, 3, 0, 2)) == Error.INVALID_PRODUCER_EPOCH  # not even its retries


def test_sequences_wrap_from_int32_max_to_zero() -> None:
    leader = Leader()
    leader.state.update(header(7, 0, 2**31 - 3, 3, offset=0), NOW)  # sequences 2^31-3 .. 2^31-1
    leader.log.append(header(7, 0, 2**31 - 3, 3, offset=0))
    assert leader.append(header(7, 0, 0, 2)) == (3, 4)
    assert leader.append(header(7, 0, 2)) == (5, 5)
    assert next_sequence(2**31 - 1) == 0 and at_or_before(2**31 - 1, 1) and not at_or_before(2, 1)


def test_an_idempotent_batch_needs_an_epoch_and_a_sequence() -> None:
    leader = Leader()
    assert leader.refused(header(7, 0, -1)) == Error.INVALID_RECORD
    assert leader.refused(header(7, -1, 0)) == Error.INVALID_RECORD


def test_control_batches_carry_no_sequence_and_are_not_checked() -> None:
    leader = Leader()
    assert leader.append(header(7, 0, -1, attributes=CONTROL_MASK)) == (0, 0)
    assert len(leader.state) == 0


def test_several_batches_of_a_request_are_checked_in_order() -> None:
    leader = Leader()
    assert leader.append(header(7, 0, 0, 2), header(7, 0, 2), header(8, 0, 0)) == (0, 3)
    assert leader.append(header(7, 0, 0, 2), header(7, 0, 2), header(8, 0, 0)) == (0, 3)  # the whole retry
    # The second batch leaves a gap after the first: nothing of the request is written.
    assert leader.refused(header(7, 0, 3), header(7, 0, 5)) == Error.OUT_OF_ORDER_SEQUENCE_NUMBER
    # The same batch twice in one request: the second would be a duplicate of the first.
    assert leader.refused(header(7, 0, 3), header(7, 0, 3)) == Error.INVALID_REQUEST
    # A retried batch with a new one: refused whole, so the new one is not lost as "already written".
    assert leader.refused(header(7, 0, 2), header(7, 0, 3)) == Error.INVALID_REQUEST
    assert leader.append(header(7, 0, 3)) == (4, 4)


def test_a_silent_producer_expires_and_is_then_unknown() -> None:
    leader = Leader(expiration_ms=DAY, check_interval_ms=1000)
    leader.append(header(7, 0, 0, ts=NOW))
    leader.append(header(8, 0, 0, ts=NOW + DAY // 2))
    later = NOW + DAY
    assert leader.state.maybe_expire(later) == 1 and leader.state.entry(8, later) is not None
    assert leader.state.maybe_expire(later + 10) == 0  # not before the next check interval
    with pytest.raises(BrokerError) as caught:
        leader.state.check_leader_append([header(8, 0, 1)], NOW + 2 * DAY)  # expired at its lookup
    assert caught.value.error == Error.UNKNOWN_PRODUCER_ID


def test_a_batch_without_timestamp_counts_from_the_clock() -> None:
    state = ProducerStateManager(expiration_ms=DAY)
    state.update(header(7, 0, 0, ts=-1), NOW)
    assert state.entry(7, NOW + DAY - 1) is not None and state.entry(7, NOW + DAY) is None


def test_the_state_after_a_truncation_is_the_replayed_log() -> None:
    leader = Leader()
    for seq in range(4):
        leader.append(header(7, 0, seq))
    leader.truncate(2)  # batches with sequences 2 and 3 are gone
    assert leader.append(header(7, 0, 1)) == (1, 1)  # still known: a duplicate
    assert leader.append(header(7, 0, 2)) == (2, 2)  # written again, once
    assert leader.refused(header(7, 0, 4)) == Error.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_a_duplicate_answer_names_the_first_and_last_offsets() -> None:
    leader = Leader()
    leader.append(header(7, 0, 0, 2), header(7, 0, 2, 3))
    assert leader.state.check_leader_append([header(7, 0, 0, 2), header(7, 0, 2, 3)], NOW) == Duplicate(0, 4, NOW)


# -- properties ----------------------------------------------------------------------

@dataclass
class Client:
    """An idempotent producer as the broker sees it: what it sent, and may send again."""

    pid: int
    epoch: int = 0
    next_seq: int = 0
    sent: list[BatchHeader] = field(default_factory=list)


ops = st.lists(st.one_of(
    st.tuples(st.just("send"), st.integers(0, 1), st.integers(1, 3)),
    st.tuples(st.just("retry"), st.integers(0, 1), st.integers(1, 8)),
    st.tuples(st.just("retry-two"), st.integers(0, 1), st.integers(1, 4)),
    st.tuples(st.just("truncate"), st.integers(0, 1), st.floats(0, 1)),
    st.tuples(st.just("bump"), st.integers(0, 1), st.just(0)),
), max_size=60)


def written_sequences(log: list[BatchHeader]) -> list[tuple[int, int, int]]:
    return [(h.producer_id, h.producer_epoch, h.base_sequence + i) for h in log if h.producer_id >= 0
            for i in range(h.last_offset_delta + 1)]


def cached(log: list[BatchHeader], h: BatchHeader) -> bool:
    """`h` is among the last 5 batches of its producer's latest run of one epoch in the log."""
    mine = [x for x in log if x.producer_id == h.producer_id]
    run: list[BatchHeader] = []
    for x in reversed(mine):
        if x.producer_epoch != mine[-1].producer_epoch:
            break
        run.append(x)
    return any((x.producer_epoch, x.base_sequence, x.last_sequence)
               == (h.producer_epoch, h.base_sequence, h.last_sequence) for x in run[:NUM_BATCHES_TO_RETAIN])


def replayed(log: list[BatchHeader]) -> dict:
    state = ProducerStateManager()
    state.update_all(log, NOW)
    return snapshot(state)


def snapshot(state: ProducerStateManager) -> dict:
    return {pid: (e.epoch, list(e.batches)) for pid, e in state.producers.items()}


@settings(max_examples=300, deadline=None)
@given(ops)
def test_no_sequence_is_written_twice_and_duplicates_get_their_offsets(operations) -> None:
    leader = Leader()
    clients = [Client(100), Client(200)]
    for op, who, arg in operations:
        client = clients[who]
        must_answer = False
        try:
            if op == "send":
                h = header(client.pid, client.epoch, client.next_seq, arg)
                leader.append(h)
                client.sent.append(h)
                client.next_seq = next_sequence(h.last_sequence)
            elif op in ("retry", "retry-two") and client.sent:
                start = max(0, len(client.sent) - arg)
                again = client.sent[start:start + (2 if op == "retry-two" else 1)]
                must_answer = all(cached(leader.log, h) for h in again)
                first, last = leader.append(*again)
                in_log = [h for h in leader.log if h.producer_id == client.pid
                          and h.producer_epoch == again[0].producer_epoch
                          and h.base_sequence == again[0].base_sequence]
                # Either a duplicate answered where the log holds it, or written now (it had been truncated).
                assert len(in_log) == 1 and in_log[0].base_offset == first
            elif op == "truncate":
                leader.truncate(int(arg * len(leader.log)))
            elif op == "bump":
                client.epoch, client.next_seq = client.epoch + 1, 0
        except BrokerError as err:
            assert not must_answer, f"a retry of cached batches refused: {err}"
            assert err.error in (Error.OUT_OF_ORDER_SEQUENCE_NUMBER, Error.UNKNOWN_PRODUCER_ID,
                                 Error.INVALID_PRODUCER_EPOCH, Error.DUPLICATE_SEQUENCE_NUMBER,
                                 Error.INVALID_REQUEST), err
            if op == "send" and err.error != Error.INVALID_PRODUCER_EPOCH:
                # A producer that lost its place (truncation) starts a new epoch, as KIP-360's clients do.
                client.epoch, client.next_seq = client.epoch + 1, 0
        sequences = written_sequences(leader.log)
        assert len(sequences) == len(set(sequences))
        offsets = [h.base_offset for h in leader.log]
        assert offsets == sorted(set(offsets))
        assert snapshot(leader.state) == replayed(leader.log)  # the state is a function of the log
