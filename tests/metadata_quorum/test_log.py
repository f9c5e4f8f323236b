"""RaftLog: the epoch cache must answer 'where does epoch e end?' exactly as a scan would."""

from __future__ import annotations

from hypothesis import given, strategies as st

from metadata_quorum.raft import Entry, EpochEndOffset, RaftLog


def make(epochs: list[int], start: int = 0, start_epoch: int = 0) -> RaftLog:
    return RaftLog(start, start_epoch, [Entry(e, b"x") for e in epochs])


def scan_end_offset_for_epoch(start: int, start_epoch: int, epochs: list[int], epoch: int):
    """Reference answer by brute force."""
    best = None
    for i, e in enumerate(epochs):
        if e <= epoch:
            best = e
    if best is None:
        return EpochEndOffset(start_epoch, start) if epoch >= start_epoch else None
    # end of `best`: first offset whose epoch is greater
    for i, e in enumerate(epochs):
        if e > best:
            return EpochEndOffset(best, start + i)
    return EpochEndOffset(best, start + len(epochs))


def test_empty_log_knows_epoch_zero_ends_at_zero() -> None:
    log = RaftLog()
    assert log.end_offset == 0 and log.last_epoch == 0
    assert log.end_offset_for_epoch(0) == EpochEndOffset(0, 0)
    assert log.end_offset_for_epoch(5) == EpochEndOffset(0, 0)


def test_end_offset_for_epoch_finds_boundaries() -> None:
    log = make([1, 1, 3, 3, 3, 4])
    assert log.end_offset_for_epoch(1) == EpochEndOffset(1, 2)
    assert log.end_offset_for_epoch(2) == EpochEndOffset(1, 2)  # largest epoch <= 2 is 1
    assert log.end_offset_for_epoch(3) == EpochEndOffset(3, 5)
    assert log.end_offset_for_epoch(9) == EpochEndOffset(4, 6)
    assert log.end_offset_for_epoch(0) == EpochEndOffset(0, 0)


def test_truncate_drops_epochs_that_start_after_the_cut() -> None:
    log = make([1, 1, 3, 3, 4])
    log.truncate_to(3)
    log.check()
    assert log.end_offset == 3 and log.last_epoch == 3
    log.truncate_to(2)
    log.check()
    assert log.last_epoch == 1


def test_delete_before_moves_start_and_keeps_epoch_in_force() -> None:
    log = make([1, 1, 3, 3, 4])
    log.delete_before(3)
    log.check()
    assert (log.start_offset, log.start_epoch) == (3, 3)
    assert log.end_offset_for_epoch(3) == EpochEndOffset(3, 4)
    assert log.end_offset_for_epoch(1) is None  # inside the snapshot now
    log.delete_before(5)
    assert (log.start_offset, log.start_epoch, log.end_offset, log.last_epoch) == (5, 4, 5, 4)
    assert log.end_offset_for_epoch(4) == EpochEndOffset(4, 5)


def test_matches_checks_the_entry_before_an_offset() -> None:
    log = make([1, 2, 2], start=4, start_epoch=1)
    assert log.matches(4, 1)  # the snapshot's epoch
    assert log.matches(7, 2)
    assert not log.matches(7, 1)
    assert not log.matches(3, 1)  # before the log start: unknown
    assert not log.matches(8, 2)  # beyond the end


def test_epochs_never_go_back() -> None:
    log = make([2])
    try:
        log.append(Entry(1, b""))
    except AssertionError:
        return
    raise AssertionError("appending an older epoch must fail")


epoch_runs = st.lists(st.tuples(st.integers(1, 3), st.integers(1, 4)), max_size=8)


@given(epoch_runs, st.integers(0, 3), st.integers(0, 12), st.integers(0, 30))
def test_end_offset_for_epoch_matches_a_scan(runs, snapshot_len, query, cut) -> None:
    epochs: list[int] = []
    epoch = 0
    for step, length in runs:
        epoch += step
        epochs += [epoch] * length
    log = make(epochs)
    if epochs and snapshot_len:
        at = min(snapshot_len, len(epochs))
        log.delete_before(at)
        start, start_epoch, rest = at, epochs[at - 1], epochs[at:]
    else:
        start, start_epoch, rest = 0, 0, epochs
    if cut < log.end_offset and cut >= log.start_offset:
        log.truncate_to(cut)
        rest = rest[: cut - start]
    log.check()
    assert log.end_offset_for_epoch(query) == scan_end_offset_for_epoch(start, start_epoch, rest, query)
