"""The `.txnindex` of aborted transactions: Kafka's bytes, its TransactionIndex
rules, the search across segments, and what load and recovery do with it."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_protocol.control_records import encode_txn_marker
from kafka_protocol.records import Record, encode_batch
from partition_log.config import LogConfig
from partition_log.index import IndexCorruptError
from partition_log.log import Log
from partition_log.txn_index import ENTRY_SIZE, AbortedTxn, CorruptIndexError, TxnIndex, collect, decode_entries

TXN_FILE = "00000000000000000000.txnindex"


def kafka_entry(pid: int, first: int, last: int, lso: int, version: int = 0) -> bytes:
    """An AbortedTxn as Kafka lays it out, field by field."""
    return (version.to_bytes(2, "big", signed=True) + pid.to_bytes(8, "big", signed=True)
            + first.to_bytes(8, "big", signed=True) + last.to_bytes(8, "big", signed=True)
            + lso.to_bytes(8, "big", signed=True))


def txn_data(pid: int, n: int = 1, epoch: int = 0) -> bytes:
    return encode_batch([Record(b"k%d" % i, b"v" * 40, 1_700_000_000_000 + i) for i in range(n)],
                        producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)


def marker(pid: int, committed: bool, epoch: int = 0) -> bytes:
    return encode_txn_marker(pid, epoch, committed, 5, 1_700_000_000_000)


def test_entries_are_kafkas_34_bytes(tmp_path):
    index = TxnIndex(tmp_path / TXN_FILE)
    index.append(AbortedTxn(7, 100, 150, 120))
    index.append(AbortedTxn(-1 & 0x7FFF_FFFF_FFFF_FFFF, 0, 2**40, 2**40 + 1))
    assert ENTRY_SIZE == 34
    assert (tmp_path / TXN_FILE).read_bytes() == (kafka_entry(7, 100, 150, 120)
                                                  + kafka_entry(2**63 - 1, 0, 2**40, 2**40 + 1))
    assert TxnIndex(tmp_path / TXN_FILE).entries() == index.entries()


def test_the_file_is_made_by_the_first_entry_only(tmp_path):
    index = TxnIndex(tmp_path / TXN_FILE)
    assert index.entries() == [] and index.collect(0, 100) == []
    index.flush()
    index.truncate_to(0)
    assert not (tmp_path / TXN_FILE).exists()
    index.append(AbortedTxn(1, 0, 3, 4))
    assert (tmp_path / TXN_FILE).stat().st_size == ENTRY_SIZE


def test_appends_must_follow_in_marker_order(tmp_path):
    index = TxnIndex(tmp_path / TXN_FILE)
    index.append(AbortedTxn(1, 0, 10, 11))
    for late in (AbortedTxn(2, 5, 10, 11), AbortedTxn(2, 5, 9, 11)):
        with pytest.raises(ValueError, match="must increase"):
            index.append(late)
    assert index.entries() == [AbortedTxn(1, 0, 10, 11)]
    assert (tmp_path / TXN_FILE).stat().st_size == ENTRY_SIZE


def test_collect_takes_overlapping_transactions_and_stops_at_a_stable_entry(tmp_path):
    index = TxnIndex(tmp_path / TXN_FILE)
    for entry in (AbortedTxn(1, 0, 5, 3), AbortedTxn(2, 3, 10, 11), AbortedTxn(3, 12, 20, 21),
                  AbortedTxn(4, 1, 30, 31)):
        index.append(entry)
    # [6, 12): pid 1 ended before it, pid 3 starts at its end; pid 2 overlaps and its
    # LSO (11) is below 12, so the search goes on; pid 3's LSO 21 ends it before pid 4.
    assert index.search(6, 12) == ([AbortedTxn(2, 3, 10, 11)], True)
    assert index.collect(0, 4) == [AbortedTxn(1, 0, 5, 3), AbortedTxn(2, 3, 10, 11)]
    assert index.search(25, 100) == ([AbortedTxn(4, 1, 30, 31)], False)


def test_truncate_drops_entries_whose_marker_is_at_or_past_the_offset(tmp_path):
    index = TxnIndex(tmp_path / TXN_FILE)
    for last in (5, 10, 15):
        index.append(AbortedTxn(last, 0, last, last + 1))
    index.truncate_to(10)
    assert [e.last_offset for e in index.entries()] == [5]
    assert (tmp_path / TXN_FILE).read_bytes() == kafka_entry(5, 0, 5, 6)
    index.append(AbortedTxn(9, 6, 9, 10))  # appends resume after the cut
    assert [e.last_offset for e in TxnIndex(tmp_path / TXN_FILE).entries()] == [5, 9]


@pytest.mark.parametrize("content, problem", [
    (kafka_entry(1, 0, 5, 6)[:-1], "whole number"),
    (kafka_entry(1, 0, 5, 6) + b"\0" * 7, "whole number"),
    (kafka_entry(1, 0, 5, 6, version=1), "unknown version"),
    (kafka_entry(1, 100, 109, 110) + kafka_entry(2, 100, 109, 110), "offset order"),
    (kafka_entry(1, 100, 109, 110) + kafka_entry(2, 100, 104, 110), "offset order"),
    (kafka_entry(1, 50, 99, 100), "less than the start offset"),
    (kafka_entry(1, 120, 110, 121), "starts after it ends"),
], ids=["torn", "trailing", "version", "repeated", "backwards", "below-base", "inverted"])
def test_a_damaged_file_fails_its_sanity_check(tmp_path, content, problem):
    path = tmp_path / "00000000000000000100.txnindex"
    path.write_bytes(content)
    with pytest.raises(CorruptIndexError, match=problem):
        TxnIndex(path, 100).sanity_check()
    assert CorruptIndexError is IndexCorruptError


def test_rename_and_delete_follow_the_segment(tmp_path):
    index = TxnIndex(tmp_path / TXN_FILE)
    index.rename(tmp_path / (TXN_FILE + ".swap"))  # no file yet: stays none
    assert not list(tmp_path.iterdir())
    index.append(AbortedTxn(1, 0, 1, 2))
    index.rename(tmp_path / TXN_FILE)
    assert [p.name for p in tmp_path.iterdir()] == [TXN_FILE]
    index.delete()
    assert not list(tmp_path.iterdir()) and index.entries() == []


entries_strategy = st.lists(st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 1000), st.integers(1, 1000),
                                      st.integers(0, 1000)), max_size=12)


def _as_entries(raw) -> list[AbortedTxn]:
    out, last = [], 0
    for pid, length, gap, lso_gap in raw:
        last += gap
        out.append(AbortedTxn(pid, max(0, last - length), last, last + 1 + lso_gap))
    return out


@settings(max_examples=60, deadline=None)
@given(entries_strategy, st.integers(0, 20_000), st.integers(0, 20_000))
def test_decode_and_collect_agree_with_a_plain_filter(raw, fetch_offset, length):
    entries = _as_entries(raw)
    data = b"".join(kafka_entry(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
                    for e in entries)
    assert decode_entries(data) == entries
    upper = fetch_offset + length
    wanted = [e for e in entries if e.last_offset >= fetch_offset and e.first_offset < upper]
    found, complete = collect(entries, fetch_offset, upper)
    # An early stop only leaves out entries that a later LSO shows cannot matter
    # to a reader of [fetch_offset, upper): what is found is a prefix of the filter.
    assert found == wanted[:len(found)]
    assert complete or found == wanted


# -- the log's side ---------------------------------------------------------------

@pytest.fixture
def config() -> LogConfig:
    return LogConfig(segment_bytes=600, index_interval_bytes=128, segment_index_bytes=4096)


def aborted_log(log_dir, config, clock) -> tuple[Log, list[AbortedTxn]]:
    """Producer 1 aborts across a segment boundary, producer 2 commits, producer 3
    aborts while 2 is open: entries as the broker would append them."""
    lg = Log(log_dir, config, clock=clock)
    expected = []
    lg.append_as_leader(txn_data(1), 0)  # offset 0
    lg.append_as_leader(txn_data(2), 0)  # offset 1
    for _ in range(4):
        lg.append_as_leader(encode_batch([Record(None, b"x" * 100, 1)]), 0)  # 2..5, rolls
    lg.append_as_leader(marker(1, committed=False), 0)  # 6
    expected.append(AbortedTxn(1, 0, 6, 1))  # producer 2 is still open at 1
    lg.append_aborted_txn(expected[-1])
    lg.append_as_leader(marker(2, committed=True), 0)  # 7
    lg.append_as_leader(txn_data(3, 2), 0)  # 8, 9
    lg.append_as_leader(marker(3, committed=False), 0)  # 10
    expected.append(AbortedTxn(3, 8, 10, 11))
    lg.append_aborted_txn(expected[-1])
    return lg, expected


def test_the_log_searches_from_the_fetch_segment_to_a_later_marker(log_dir, config, clock):
    lg, expected = aborted_log(log_dir, config, clock)
    assert len(lg.segments) > 1 and lg.segments[0].txn_index.entries() == []
    assert lg.collect_aborted_txns(0, 2) == [expected[0]]  # its marker is segments later
    assert lg.collect_aborted_txns(7, 11) == [expected[1]]
    assert lg.collect_aborted_txns(0, 11) == expected
    assert lg.collect_aborted_txns(11, 20) == []


def test_rebuilding_from_the_markers_gives_what_the_broker_appended(log_dir, config, clock):
    lg, expected = aborted_log(log_dir, config, clock)
    before = {s.base_offset: s.txn_index.entries() for s in lg.segments}
    assert lg.rebuild_txn_indexes() == 2
    assert {s.base_offset: s.txn_index.entries() for s in lg.segments} == before
    assert lg.collect_aborted_txns(0, 11) == expected


def test_a_damaged_index_is_rebuilt_at_load_never_served(log_dir, config, clock):
    lg, expected = aborted_log(log_dir, config, clock)
    lg.close()
    path = next(log_dir.glob("*.txnindex"))
    path.write_bytes(path.read_bytes()[:-3])
    reopened = Log(log_dir, config, clock=clock, clean_shutdown=True, recovery_point=lg.log_end_offset)
    assert reopened.txn_index_damaged and reopened.load_report.truncated_bytes == 0
    assert reopened.collect_aborted_txns(0, 11) == expected
    reopened.close()
    again = Log(log_dir, config, clock=clock, clean_shutdown=True, recovery_point=lg.log_end_offset)
    assert not again.txn_index_damaged and again.collect_aborted_txns(0, 11) == expected


def test_recovery_of_a_torn_tail_drops_the_aborts_it_cut(log_dir, config, clock):
    lg, expected = aborted_log(log_dir, config, clock)
    lg.flush()
    lg.close()
    last_log = sorted(log_dir.glob("*.log"))[-1]
    size = last_log.stat().st_size
    with open(last_log, "r+b") as f:
        f.truncate(size - 5)  # the last ABORT marker (offset 10) is torn
    reopened = Log(log_dir, config, clock=clock, clean_shutdown=False, recovery_point=0)
    assert reopened.log_end_offset == 10
    assert reopened.collect_aborted_txns(0, 100) == [expected[0]]
    assert all(e.last_offset < 10 for s in reopened.segments for e in s.txn_index.entries())


def test_an_unflushed_marker_gets_its_entry_back_after_a_crash(log_dir, config, clock):
    lg, expected = aborted_log(log_dir, config, clock)
    lg.segments[-1].txn_index.delete()  # the entry never reached disk; the marker did
    lg.flush()
    for seg in lg.segments:
        seg.close()
    reopened = Log(log_dir, config, clock=clock, clean_shutdown=False, recovery_point=0)
    assert reopened.txn_index_damaged
    assert reopened.collect_aborted_txns(0, 11) == expected


def test_truncation_and_segment_deletion_take_the_index_along(log_dir, config, clock):
    lg, expected = aborted_log(log_dir, config, clock)
    lg.truncate_to(8)
    assert lg.collect_aborted_txns(0, 100) == [expected[0]]
    lg.update_high_watermark(lg.log_end_offset)
    lg.advance_log_start_offset(lg.log_end_offset)
    lg.delete_old_segments()
    assert {p.name for p in log_dir.glob("*.txnindex")} <= {f"{s.base_offset:020d}.txnindex" for s in lg.segments}
    lg.truncate_fully_and_start_at(100)
    assert not list(log_dir.glob("*.txnindex")) and lg.collect_aborted_txns(100, 200) == []


def test_an_orphan_index_goes_at_load(log_dir, config, clock):
    lg, _ = aborted_log(log_dir, config, clock)
    lg.close()
    orphan = log_dir / "00000000000000099999.txnindex"
    orphan.write_bytes(kafka_entry(1, 99999, 100000, 100001))
    Log(log_dir, config, clock=clock, clean_shutdown=True, recovery_point=lg.log_end_offset)
    assert not orphan.exists()

