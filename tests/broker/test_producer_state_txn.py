"""Transactions in the pure producer state: open transactions, markers and
the transactions they complete, the leader's refusals, the last stable
offset, coordinator-origin batches, and snapshots (a state restored from a
snapshot and the rest of the log replayed is the state of the whole log)."""
from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.errors import BrokerError, Error
from broker.producer_state import AppendOrigin, CompletedTxn, ProducerStateManager
from kafka_protocol.batch import CONTROL_MASK, TRANSACTIONAL_MASK, BatchHeader
from kafka_protocol.control_records import TxnMarker

from .test_producer_state import DAY, NOW, header

TXN = TRANSACTIONAL_MASK
MARKER = TRANSACTIONAL_MASK | CONTROL_MASK


class Replica:
    """A log of (header, marker) and the producer state over it, appended as a leader does."""

    def __init__(self, **kwargs) -> None:
        self.state = ProducerStateManager(**kwargs)
        self.log: list[tuple[BatchHeader, TxnMarker | None]] = []
        self.completed: list[CompletedTxn] = []

    @property
    def end(self) -> int:
        return self.log[-1][0].next_offset if self.log else 0

    def append(self, *headers: BatchHeader, origin: AppendOrigin = AppendOrigin.CLIENT) -> int:
        assert self.state.check_leader_append(headers, NOW, origin) is None
        first = offset = self.end
        for h in headers:
            self.log.append((replace(h, base_offset=offset), None))
            offset += h.last_offset_delta + 1
        self.state.update_appended(headers, first, NOW)
        return first

    def refused(self, *headers: BatchHeader, origin: AppendOrigin = AppendOrigin.CLIENT) -> int:
        with pytest.raises(BrokerError) as caught:
            self.state.check_leader_append(headers, NOW, origin)
        return caught.value.error

    def marker(self, pid: int, epoch: int, committed: bool, coordinator_epoch: int = 0) -> CompletedTxn:
        self.state.check_marker(pid, epoch, coordinator_epoch, NOW)
        h = header(pid, epoch, -1, offset=self.end, attributes=MARKER)
        marker = TxnMarker(committed, coordinator_epoch)
        self.log.append((h, marker))
        completed = self.state.update(h, NOW, marker)
        self.completed.append(completed)
        return completed

    def marker_refused(self, pid: int, epoch: int, coordinator_epoch: int) -> int:
        with pytest.raises(BrokerError) as caught:
            self.state.check_marker(pid, epoch, coordinator_epoch, NOW)
        return caught.value.error

    def replayed(self, start: int = 0, base: ProducerStateManager | None = None) -> ProducerStateManager:
        state = base or ProducerStateManager()
        for h, marker in self.log:
            if h.base_offset >= start:
                state.update(h, NOW, marker)
        return state


def test_a_transactional_batch_opens_a_transaction_that_holds_the_lso_back() -> None:
    r = Replica()
    r.append(header(8, 0, 0, 3))                 # 0-2: plain idempotent
    assert r.append(header(7, 0, 0, 2, attributes=TXN)) == 3
    assert r.append(header(7, 0, 2, attributes=TXN)) == 5
    assert r.state.in_txn(7) and r.state.producers[7].current_txn_first_offset == 3
    assert r.state.last_stable_offset(6) == 3
    assert r.state.first_unstable_offset(6) == 3
    assert r.state.last_stable_offset(2) == 2  # never above the high watermark


def test_a_commit_marker_completes_the_transaction_once_the_high_watermark_passes_it() -> None:
    r = Replica()
    r.append(header(7, 0, 0, 2, attributes=TXN))
    done = r.marker(7, 1, committed=True, coordinator_epoch=4)
    assert done == CompletedTxn(7, 0, 2, aborted=False)
    entry = r.state.producers[7]
    assert (entry.epoch, entry.coordinator_epoch, entry.current_txn_first_offset, len(entry.batches)) == (1, 4, -1, 0)
    assert not r.state.in_txn(7)
    assert r.state.last_stable_offset(2) == 0  # the marker is not replicated yet
    assert r.state.last_stable_offset(3) == 3
    assert r.state.first_unstable_offset(3) is None


def test_an_abort_marker_names_the_first_offset_and_the_lso_of_its_index_entry() -> None:
    r = Replica()
    r.append(header(7, 0, 0, attributes=TXN))   # 0
    r.append(header(9, 0, 0, attributes=TXN))   # 1: another producer's open transaction
    r.append(header(7, 0, 1, attributes=TXN))   # 2
    aborted = r.marker(7, 1, committed=False)   # 3
    assert aborted == CompletedTxn(7, 0, 3, aborted=True)
    assert r.state.aborted_lso(aborted) == 1
    r.marker(9, 1, committed=False)             # 4
    assert r.state.aborted_lso(aborted) == 4    # no other open transaction: after the marker
    # A marker where the producer wrote nothing: a transaction of the marker alone.
    assert r.marker(11, 1, committed=False) == CompletedTxn(11, 5, 5, aborted=True)


def test_a_plain_batch_during_an_open_transaction_is_refused() -> None:
    r = Replica()
    r.append(header(7, 0, 0, attributes=TXN))
    assert r.refused(header(7, 0, 1)) == Error.INVALID_TXN_STATE
    # Within one request too: the first batch opens the transaction.
    assert r.refused(header(8, 0, 0, attributes=TXN), header(8, 0, 1)) == Error.INVALID_TXN_STATE
    r.marker(7, 1, committed=True)
    r.append(header(7, 1, 0))  # after the marker, plain batches are fine again


def test_markers_from_an_older_producer_epoch_or_a_deposed_coordinator_are_refused() -> None:
    r = Replica()
    r.append(header(7, 3, 0, attributes=TXN))
    assert r.marker_refused(7, 2, 5) == Error.INVALID_PRODUCER_EPOCH
    r.marker(7, 4, committed=True, coordinator_epoch=5)
    assert r.marker_refused(7, 5, 4) == Error.TRANSACTION_COORDINATOR_FENCED
    assert r.marker_refused(7, 3, 5) == Error.INVALID_PRODUCER_EPOCH
    r.marker(7, 4, committed=True, coordinator_epoch=5)  # a retried marker: same epochs, accepted
    r.marker(12, 0, committed=False, coordinator_epoch=0)  # an unknown producer: accepted


def test_a_late_marker_of_the_previous_transaction_cannot_end_the_next_one() -> None:
    # Transaction 1 (data epoch 3) ends with a COMMIT at epoch 4; transaction 2
    # writes with epoch 4. A re-sent or delayed marker of transaction 1 (epoch
    # 4, an ABORT here) arriving now would abort transaction 2 if an epoch
    # equal to the data's were enough (KIP-890; Jepsen's Bufstream finding).
    r = Replica()
    r.append(header(7, 3, 0, attributes=TXN))
    r.marker(7, 4, committed=True, coordinator_epoch=5)
    second = r.append(header(7, 4, 0, 2, attributes=TXN))
    assert r.marker_refused(7, 4, 5) == Error.INVALID_PRODUCER_EPOCH
    assert r.state.entry(7, NOW).current_txn_first_offset == second  # still open
    done = r.marker(7, 5, committed=True, coordinator_epoch=5)  # its own marker, epoch bumped
    assert (done.first_offset, done.aborted) == (second, False)


def test_a_transaction_version_1_marker_carries_its_datas_epoch_and_sequences_go_on() -> None:
    # A Kafka client before KIP-890's second part ends its transaction
    # without an epoch bump: the marker has the data's epoch, and the next
    # transaction's batches continue the sequence at that epoch.
    r = Replica()
    r.append(header(7, 3, 0, 2, attributes=TXN))
    assert r.marker_refused(7, 3, 5) == Error.INVALID_PRODUCER_EPOCH  # without keep_epoch: a late marker
    r.state.check_marker(7, 3, 5, NOW, keep_epoch=True)
    h = header(7, 3, -1, offset=r.end, attributes=MARKER)
    r.log.append((h, TxnMarker(True, 5)))
    done = r.state.update(h, NOW, TxnMarker(True, 5))
    assert (done.first_offset, done.aborted) == (0, False)
    assert r.refused(header(7, 3, 5, attributes=TXN)) == Error.OUT_OF_ORDER_SEQUENCE_NUMBER  # a gap
    assert r.append(header(7, 3, 2, attributes=TXN)) == 3  # the sequence goes on after the marker
    with pytest.raises(BrokerError) as caught:
        r.state.check_marker(7, 2, 5, NOW, keep_epoch=True)  # an older epoch stays fenced
    assert caught.value.error == Error.INVALID_PRODUCER_EPOCH


def test_a_marker_moves_the_producer_to_its_epoch_where_sequences_start_at_zero() -> None:
    r = Replica()
    r.append(header(7, 0, 0, 3, attributes=TXN))
    r.marker(7, 1, committed=True)
    assert r.refused(header(7, 0, 3, attributes=TXN)) == Error.INVALID_PRODUCER_EPOCH  # a zombie of the last txn
    assert r.refused(header(7, 1, 3, attributes=TXN)) == Error.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert r.append(header(7, 1, 0, attributes=TXN)) == 4


def test_coordinator_batches_carry_no_sequence_and_only_their_epoch_is_checked() -> None:
    r = Replica()
    offsets = header(7, 2, -1, attributes=TXN)
    assert r.refused(offsets) == Error.INVALID_RECORD  # from a client, a sequence is required
    assert r.append(offsets, origin=AppendOrigin.COORDINATOR) == 0
    assert r.append(offsets, origin=AppendOrigin.COORDINATOR) == 1  # never a duplicate
    assert r.state.producers[7].current_txn_first_offset == 0 and not r.state.producers[7].batches
    assert r.refused(header(7, 1, -1, attributes=TXN), origin=AppendOrigin.COORDINATOR) == Error.INVALID_PRODUCER_EPOCH
    assert r.refused(header(7, 2, -1), origin=AppendOrigin.COORDINATOR) == Error.INVALID_TXN_STATE
    assert r.marker(7, 3, committed=True) == CompletedTxn(7, 0, 2, aborted=False)


def test_a_producer_with_an_open_transaction_does_not_expire() -> None:
    state = ProducerStateManager(expiration_ms=DAY)
    state.update(header(7, 0, 0, attributes=TXN), NOW)
    state.update(header(8, 0, 0), NOW)
    assert state.expire(NOW + 2 * DAY) == 1
    assert state.entry(7, NOW + 2 * DAY) is not None and state.entry(8, NOW + 2 * DAY) is None


def test_a_snapshot_keeps_each_producers_last_batch_and_its_transaction() -> None:
    r = Replica()
    r.append(header(7, 0, 0, 2, attributes=TXN))
    r.append(header(7, 0, 2, 3, attributes=TXN))      # offsets 2-4, sequences 2-4
    r.append(header(8, 1, 0))
    r.marker(8, 2, committed=False, coordinator_epoch=6)
    entries = {e.producer_id: e for e in r.state.snapshot_entries()}
    e7, e8 = entries[7], entries[8]
    assert (e7.epoch, e7.last_sequence, e7.last_offset, e7.offset_delta, e7.current_txn_first_offset) == (0, 4, 4, 2, 0)
    assert (e8.epoch, e8.last_sequence, e8.last_offset, e8.coordinator_epoch, e8.current_txn_first_offset) == (
        2, -1, -1, 6, -1)
    restored = ProducerStateManager()
    restored.load_snapshot(entries.values(), NOW)
    assert restored.in_txn(7) and restored.last_stable_offset(100) == 0
    dup = restored.check_leader_append([header(7, 0, 2, 3, attributes=TXN)], NOW)
    assert dup is not None and (dup.first_offset, dup.last_offset) == (2, 4)
    with pytest.raises(BrokerError) as caught:
        restored.check_marker(8, 2, 5, NOW)
    assert caught.value.error == Error.TRANSACTION_COORDINATOR_FENCED
    assert restored.snapshot_entries() == r.state.snapshot_entries()


def test_loading_a_snapshot_leaves_expired_producers_out() -> None:
    state = ProducerStateManager(expiration_ms=DAY)
    state.update(header(7, 0, 0), NOW)
    state.update(header(8, 0, 0, attributes=TXN), NOW)
    later = ProducerStateManager(expiration_ms=DAY)
    later.load_snapshot(state.snapshot_entries(), NOW + 2 * DAY)
    assert set(later.producers) == {8}


# One step of a random log: (producer, kind) with kind data, transactional, commit or abort.
steps = st.lists(st.tuples(st.integers(1, 3), st.sampled_from(["data", "txn", "commit", "abort"])), max_size=30)


@settings(max_examples=60, deadline=None)
@given(steps, st.integers(0, 30))
def test_a_snapshot_then_the_rest_of_the_log_replayed_is_the_whole_log_replayed(run, cut) -> None:
    r = Replica()
    epochs = {pid: 0 for pid in (1, 2, 3)}
    seqs = {pid: 0 for pid in (1, 2, 3)}
    snapshot = None
    for i, (pid, kind) in enumerate(run):
        if i == cut:
            snapshot = (r.end, r.state.snapshot_entries())
        if kind in ("commit", "abort"):
            epochs[pid] += 1
            seqs[pid] = 0
            r.marker(pid, epochs[pid], committed=kind == "commit")
        elif kind == "txn" or not r.state.in_txn(pid):
            r.append(header(pid, epochs[pid], seqs[pid], 2, attributes=TXN if kind == "txn" else 0))
            seqs[pid] += 2
    offset, entries = snapshot if snapshot is not None else (r.end, r.state.snapshot_entries())
    base = ProducerStateManager()
    base.load_snapshot(entries, NOW)
    restored = r.replayed(offset, base)
    whole = r.replayed()
    assert restored.snapshot_entries() == whole.snapshot_entries() == r.state.snapshot_entries()
    assert restored.ongoing == whole.ongoing == r.state.ongoing
    assert (restored.last_stable_offset(r.end) == whole.last_stable_offset(r.end)
            == r.state.last_stable_offset(r.end))
