"""The Raft log on disk: entries in, entries out, across segments, truncations, resets and crashes."""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Optional

import pytest

from metadata_quorum.raft import Entry
from metadata_quorum.storage import MetadataLog, PendingFlush
from metadata_quorum.storage.control import LEADER_CHANGE, control_type
from kafka_protocol.records import iter_batches

SEGMENT_BYTES = 300  # a few batches a segment: every test crosses segment boundaries


def make(epochs: list[int], first: int = 0) -> list[Entry]:
    return [Entry(e, f"entry {first + i}".encode(), control=False) for i, e in enumerate(epochs)]


def open_log(tmp_path: Path) -> MetadataLog:
    return MetadataLog(tmp_path / "__cluster_metadata-0", segment_bytes=SEGMENT_BYTES)


def filled(tmp_path: Path, n: int = 40, per_append: int = 3) -> tuple[MetadataLog, list[Entry]]:
    """A log of `n` entries with epochs 1, 2, 3 (a leader-change entry opening each), in several segments."""
    log = open_log(tmp_path)
    entries: list[Entry] = []
    for i in range(n):
        epoch = 1 + 3 * i // n
        control = not entries or entries[-1].epoch != epoch
        entries.append(Entry(epoch, f"entry {i}".encode(), control))
    for i in range(0, n, per_append):
        log.append(i, entries[i:i + per_append])
    return log, entries


def segment_files(log: MetadataLog) -> list[Path]:
    return sorted(log.directory.glob("*.log"))


def test_entries_round_trip_across_segments_and_a_reopen(tmp_path: Path) -> None:
    log, entries = filled(tmp_path)
    assert (log.start_offset, log.end_offset) == (0, 40)
    assert len(segment_files(log)) > 3
    assert log.read_entries(0) == entries
    assert all(type(e.data) is bytes for e in log.read_entries(0))  # the core checks it
    assert log.read_entries(17) == entries[17:]
    assert log.read_entries(40) == []
    log.close()
    log = open_log(tmp_path)
    assert log.read_entries(0) == entries
    assert log.begin_flush() is None  # what survived a reopen is flushed


def test_batches_follow_epoch_and_control_with_kafkas_control_key(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(0, [Entry(1, b"lc", True), Entry(1, b"a"), Entry(1, b"b"), Entry(2, b"lc2", True), Entry(2, b"c")])
    batches = list(iter_batches(segment_files(log)[0].read_bytes()))
    shape = [(b.header.base_offset, b.header.partition_leader_epoch, b.header.is_control, len(b.records))
             for b in batches]
    assert shape == [(0, 1, True, 1), (1, 1, False, 2), (3, 2, True, 1), (4, 2, False, 1)]
    assert control_type(batches[0].records[0].key) == LEADER_CHANGE
    assert batches[1].records[0].key is None and batches[1].records[1].value == b"b"


def test_append_must_continue_the_log(tmp_path: Path) -> None:
    log, _ = filled(tmp_path, 5)
    with pytest.raises(ValueError, match="log ends at 5"):
        log.append(7, make([3]))


@pytest.mark.parametrize("offset", [0, 1, 2, 13, 20, 21, 39])
def test_truncate_to_any_offset_even_inside_a_batch(tmp_path: Path, offset: int) -> None:
    log, entries = filled(tmp_path, per_append=7)
    log.truncate_to(offset)
    assert log.end_offset == offset
    assert log.read_entries(0) == entries[:offset]
    log.append(offset, make([4, 4], offset))
    expected = entries[:offset] + make([4, 4], offset)
    assert log.read_entries(0) == expected
    log.close()
    assert open_log(tmp_path).read_entries(0) == expected


def test_an_empty_last_segment_left_by_a_crash_after_a_roll(tmp_path: Path) -> None:
    log, entries = filled(tmp_path)
    log.close()
    (log.directory / "00000000000000000040.log").touch()
    log = open_log(tmp_path)
    assert log.read_entries(0) == entries
    log.truncate_to(7)
    assert log.read_entries(0) == entries[:7]
    log.close()
    (log.directory / "00000000000000000007.log").touch()  # the active segment's, if it had rolled
    log = open_log(tmp_path)
    log.reset_to(50)
    assert (log.start_offset, log.end_offset, log.read_entries(50)) == (50, 50, [])


def test_reset_to_starts_an_empty_log_at_the_snapshot(tmp_path: Path) -> None:
    log, _ = filled(tmp_path)
    log.reset_to(100)
    assert (log.start_offset, log.end_offset) == (100, 100)
    log.append(100, make([5, 5], 100))
    log.close()
    log = open_log(tmp_path)
    assert (log.start_offset, log.end_offset) == (100, 102)
    assert log.read_entries(100) == make([5, 5], 100)


def test_delete_below_drops_whole_segments_only(tmp_path: Path) -> None:
    log, entries = filled(tmp_path)
    before = len(segment_files(log))
    log.delete_below(20)
    assert 0 < log.start_offset <= 20
    assert len(segment_files(log)) < before
    assert log.read_entries(20) == entries[20:]
    log.delete_below(5)  # never moves back
    log.close()
    log = open_log(tmp_path)
    assert 0 < log.start_offset <= 20
    assert log.read_entries(20) == entries[20:]


def test_a_torn_last_batch_is_cut_on_reopen(tmp_path: Path) -> None:
    log, entries = filled(tmp_path)
    log.close()
    last = segment_files(log)[-1]
    with open(last, "r+b") as f:
        f.truncate(os.path.getsize(last) - 5)
    log = open_log(tmp_path)
    survivors = log.read_entries(0)
    assert survivors == entries[:len(survivors)] and 34 <= len(survivors) < 40
    assert log.end_offset == len(survivors)
    log.append(log.end_offset, make([3]))  # and the log goes on from there


def test_garbage_after_the_last_batch_is_cut_on_reopen(tmp_path: Path) -> None:
    log, entries = filled(tmp_path)
    log.close()
    with open(segment_files(log)[-1], "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x28garbage")
    assert open_log(tmp_path).read_entries(0) == entries


def test_a_segment_that_lost_its_tail_takes_the_later_segments_with_it(tmp_path: Path) -> None:
    # A crash before an fsync: segment 2 lost its last batch, segment 3 reached the disk.
    log, entries = filled(tmp_path)
    log.close()
    second = segment_files(log)[1]
    raw = second.read_bytes()
    positions = [0]
    for batch in iter_batches(raw):
        positions.append(positions[-1] + batch.header.size)
    second.write_bytes(raw[:positions[-2]])
    log = open_log(tmp_path)
    first_lost = list(iter_batches(raw))[-1].header.base_offset
    assert log.end_offset == first_lost
    assert log.read_entries(0) == entries[:first_lost]


def test_flush_runs_in_a_thread_while_appends_and_rolls_go_on(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    entries = make([1] * 400)
    flushed = 0
    in_flight: Optional[tuple[PendingFlush, Future]] = None
    with ThreadPoolExecutor(max_workers=1) as pool:
        for i in range(0, 400, 2):
            log.append(i, entries[i:i + 2])
            if i == 200:
                log.delete_below(100)  # deletes segments a running flush may hold
            if in_flight is not None and in_flight[1].done():
                in_flight[1].result()
                log.complete_flush(in_flight[0])
                flushed = in_flight[0].end_offset
                in_flight = None
            if in_flight is None and (pending := log.begin_flush()) is not None:
                in_flight = (pending, pool.submit(pending.run))
        while in_flight is not None:
            in_flight[1].result()
            log.complete_flush(in_flight[0])
            flushed = in_flight[0].end_offset
            in_flight = (p, pool.submit(p.run)) if (p := log.begin_flush()) is not None else None
    assert flushed == 400 and log.begin_flush() is None
    start = log.start_offset
    log.close()
    assert open_log(tmp_path).read_entries(start) == entries[start:]


def test_a_flush_begun_before_a_truncation_does_not_count(tmp_path: Path) -> None:
    log, _ = filled(tmp_path)
    log.close()
    log = open_log(tmp_path)
    log.append(40, make([3, 3, 3], 40))
    pending = log.begin_flush()
    assert pending is not None and pending.end_offset == 43
    log.truncate_to(41)  # durable by itself
    log.append(41, make([4] * 5, 41))
    pending.run()
    log.complete_flush(pending)
    again = log.begin_flush()
    assert again is not None and again.end_offset == 46
    again.run()
    log.complete_flush(again)
    assert log.begin_flush() is None


def test_run_survives_segments_rolled_and_deleted_after_begin_flush(tmp_path: Path) -> None:
    log, entries = filled(tmp_path)
    pending = log.begin_flush()
    assert pending is not None
    log.append(40, make([3] * 30, 40))
    log.delete_below(60)
    pending.run()
    log.complete_flush(pending)
    assert log.read_entries(60) == (entries + make([3] * 30, 40))[60:]


def test_a_voter_set_entry_is_a_kraft_voters_control_record_on_disk(tmp_path: Path) -> None:
    from metadata_quorum.raft.voters import ReplicaKey, Voter, VoterSet, voters_entry_data
    from metadata_quorum.storage.control import KRAFT_VOTERS

    voters = VoterSet([Voter(ReplicaKey(1, "AAAAAAAAAAAAAAAAAAAAAQ"))])
    entries = [Entry(1, voters_entry_data(voters), True), Entry(1, b"LeaderChange(leader=1)", True), Entry(1, b"x")]
    log = open_log(tmp_path)
    log.append(0, entries)
    files = segment_files(log)
    log.close()
    raw = b"".join(p.read_bytes() for p in files)
    batches = list(iter_batches(raw))
    # Three batches: the voters record (Kafka's value only), the leader change, the data.
    assert [control_type(b.records[0].key) if b.header.is_control else None for b in batches] == \
        [KRAFT_VOTERS, LEADER_CHANGE, None]
    assert VoterSet.decode(batches[0].records[0].value) == voters
    reopened = open_log(tmp_path)
    assert reopened.read_entries(0) == entries
    reopened.close()
