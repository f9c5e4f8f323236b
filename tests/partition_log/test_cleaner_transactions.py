"""Compaction of a log with transactions, as Kafka's LogCleaner does it: never
past the first unstable offset, aborted batches removed (and never shadowing
a committed value), markers kept while their transaction has batches, then
removed after their KIP-534 delete horizon."""
from __future__ import annotations

import pytest

from kafka_protocol.control_records import ControlType, control_type, encode_txn_marker
from kafka_protocol.records import Record, encode_batch, iter_batches
from partition_log import cleaner
from partition_log.config import LogConfig
from partition_log.log import Log
from partition_log.txn_index import AbortedTxn

T0 = 1_700_000_000_000
RETENTION = 1000


@pytest.fixture
def lg(log_dir, clock) -> Log:
    return Log(log_dir, LogConfig(segment_bytes=100_000, cleanup_policy="compact", delete_retention_ms=RETENTION),
               clock=clock)


def put(lg: Log, key: bytes, value: bytes | None, pid: int | None = None) -> int:
    txn = {} if pid is None else {"producer_id": pid, "producer_epoch": 0, "base_sequence": 0, "transactional": True}
    return lg.append_as_leader(encode_batch([Record(key, value, T0)], **txn), 0).first_offset


def end_txn(lg: Log, pid: int, first: int, committed: bool) -> int:
    offset = lg.append_as_leader(encode_txn_marker(pid, 0, committed, 3, T0), 0).first_offset
    if not committed:
        lg.append_aborted_txn(AbortedTxn(pid, first, offset, offset + 1))
    return offset


def seal(lg: Log) -> None:
    """Everything so far becomes cleanable: a new active segment, all replicated."""
    lg.roll()
    lg.update_high_watermark(lg.log_end_offset)


def batches(lg: Log) -> list:
    return [p for data in lg.iter_reads(lg.log_start_offset, 1 << 20) for p in iter_batches(data)]


def values(lg: Log) -> dict[bytes, bytes | None]:
    """The compacted view a read_uncommitted consumer gets (markers skipped)."""
    return {r.key: r.value for p in batches(lg) if not p.header.is_control for r in p.records}


def markers(lg: Log) -> dict[int, tuple[bool, int]]:
    """offset -> (committed, delete horizon) of each marker still in the log."""
    return {p.header.base_offset: (control_type(p.records[0].key) == ControlType.COMMIT, p.header.delete_horizon_ms)
            for p in batches(lg) if p.header.is_control}


def test_aborted_records_go_at_once_and_never_hide_a_committed_value(lg, clock):
    put(lg, b"k", b"committed")
    first = put(lg, b"k", b"aborted", pid=5)
    put(lg, b"other", b"aborted too", pid=5)
    abort = end_txn(lg, 5, first, committed=False)
    seal(lg)
    stats = cleaner.clean(lg)
    assert stats.aborted_records_removed == 2
    assert values(lg) == {b"k": b"committed"}
    # its batches were seen in this pass: the marker stays, with its index entry
    assert markers(lg) == {abort: (False, -1)}
    assert lg.collect_aborted_txns(0, lg.log_end_offset) == [AbortedTxn(5, first, abort, abort + 1)]


def test_an_abort_marker_without_batches_gets_a_horizon_then_goes(lg, clock):
    first = put(lg, b"k", b"aborted", pid=5)
    abort = end_txn(lg, 5, first, committed=False)
    put(lg, b"z", b"after")
    seal(lg)
    cleaner.clean(lg)
    assert markers(lg) == {abort: (False, -1)}
    cleaner.clean(lg)  # nothing of the transaction is left: the horizon is set
    assert markers(lg) == {abort: (False, clock.now + RETENTION)}
    assert lg.collect_aborted_txns(0, lg.log_end_offset) == []  # no batch left to filter
    clock.advance(RETENTION - 1)
    cleaner.clean(lg)
    assert abort in markers(lg)
    clock.advance(2)
    stats = cleaner.clean(lg)
    assert stats.markers_removed == 1 and markers(lg) == {} and values(lg) == {b"z": b"after"}


def test_a_commit_marker_stays_while_its_transaction_has_batches(lg, clock):
    first = put(lg, b"kept", b"c1", pid=6)
    put(lg, b"gone", b"c1", pid=6)
    commit = end_txn(lg, 6, first, committed=True)
    put(lg, b"gone", b"newer")
    seal(lg)
    for _ in range(3):
        cleaner.clean(lg)
        clock.advance(RETENTION + 1)
    assert values(lg) == {b"kept": b"c1", b"gone": b"newer"}
    assert markers(lg) == {commit: (True, -1)}


def test_a_commit_marker_of_a_compacted_away_transaction_goes_after_its_horizon(lg, clock):
    first = put(lg, b"k", b"c1", pid=6)
    commit = end_txn(lg, 6, first, committed=True)
    put(lg, b"k", b"newer")
    put(lg, b"pad", b"x")
    seal(lg)
    cleaner.clean(lg)  # the batch is read (and emptied) in this pass: the marker waits
    assert values(lg) == {b"k": b"newer", b"pad": b"x"} and markers(lg) == {commit: (True, -1)}
    cleaner.clean(lg)
    assert markers(lg) == {commit: (True, clock.now + RETENTION)}
    clock.advance(RETENTION + 1)
    cleaner.clean(lg)
    assert markers(lg) == {}


def test_nothing_at_or_past_the_first_unstable_offset_is_cleaned(lg, clock):
    put(lg, b"k", b"v1")
    put(lg, b"k", b"v2")
    seal(lg)
    open_first = put(lg, b"k", b"in flight", pid=7)
    put(lg, b"k", b"v3")
    seal(lg)
    lg.first_unstable_offset = open_first
    cleaner.clean(lg)
    assert [r.value for p in batches(lg) for r in p.records if r.key == b"k"] == [b"v2", b"in flight", b"v3"]
    # the caller's bound wins over the attribute
    assert cleaner.clean(lg, first_unstable_offset=0).segments_cleaned == 0
    end_txn(lg, 7, open_first, committed=True)
    seal(lg)
    lg.first_unstable_offset = None
    cleaner.clean(lg)
    assert [r.value for p in batches(lg) for r in p.records if r.key == b"k"] == [b"v3"]


def test_a_later_committed_transaction_of_the_same_producer_is_not_taken_for_aborted(lg, clock):
    first = put(lg, b"k", b"aborted", pid=5)
    end_txn(lg, 5, first, committed=False)
    put(lg, b"k", b"committed", pid=5)
    end_txn(lg, 5, first + 2, committed=True)
    seal(lg)
    cleaner.clean(lg)
    assert values(lg) == {b"k": b"committed"}


def test_cleaned_indexes_survive_a_reopen_undamaged(lg, log_dir, clock):
    first = put(lg, b"k", b"aborted", pid=5)
    abort = end_txn(lg, 5, first, committed=False)
    seal(lg)
    cleaner.clean(lg)
    lg.close()
    again = Log(log_dir, lg.config, clock=clock, clean_shutdown=True, recovery_point=lg.log_end_offset)
    assert not again.txn_index_damaged
    assert again.collect_aborted_txns(0, again.log_end_offset) == [AbortedTxn(5, first, abort, abort + 1)]
    assert not list(log_dir.glob("*.cleaned")) and not list(log_dir.glob("*.swap"))
