"""What a new or idle partition costs on disk: a new log is not recovered or
fsynced, a new leader's epoch entry waits for the next flush to be written,
and a crash that loses that entry gets the epoch back from the batches."""
from __future__ import annotations

import os

from partition_log.leader_epoch import FILE_NAME, EpochEntry
from partition_log.log import Log, LoadReport


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_new_log_is_not_recovered_and_keeps_no_descriptor(tmp_path, small_config, clock):
    before = open_fds()
    logs = [Log(tmp_path / f"t-{i}", small_config, clock=clock) for i in range(20)]
    assert open_fds() == before
    for lg in logs:
        assert lg.load_report == LoadReport(new_log=True)
        assert lg.active_segment.log_path.exists() and lg.active_segment.size == 0
        assert lg.log_end_offset == 0 and lg.read(0, 100) == b""
    assert open_fds() == before  # reading an empty log opens nothing either


def test_a_new_leader_epoch_is_written_by_the_next_flush(log_dir, small_config, clock,
                                                                            make_batch):
    lg = Log(log_dir, small_config, clock=clock)
    lg.start_leader_epoch(4)
    assert not (log_dir / FILE_NAME).exists()  # no write for a new leader of an empty log
    assert lg.leader_epochs.entries == [EpochEntry(4, 0)] and lg.leader_epochs.unsynced
    lg.append_as_leader(make_batch([b"a", b"b"]), 4)
    lg.flush()
    assert not lg.leader_epochs.unsynced
    assert (log_dir / FILE_NAME).read_text().split() == ["0", "1", "4", "0"]
    lg.close()
    assert Log(log_dir, small_config, clock=clock).leader_epochs.entries == [EpochEntry(4, 0)]


def test_recovery_puts_back_epochs_whose_entries_were_lost(log_dir, small_config, clock, make_batch):
    lg = Log(log_dir, small_config, clock=clock)
    lg.start_leader_epoch(2)
    lg.append_as_leader(make_batch([b"a"]), 2)
    lg.start_leader_epoch(5)
    lg.append_as_leader(make_batch([b"b", b"c"]), 5)
    for seg in lg.segments:  # kill -9: no flush, no clean shutdown marker
        seg.close()
    (log_dir / FILE_NAME).write_text("0\n1\n2 0\n")  # the epoch-5 entry never reached the disk
    reopened = Log(log_dir, small_config, clock=clock)
    assert reopened.leader_epochs.entries == [EpochEntry(2, 0), EpochEntry(5, 1)]
    assert not reopened.leader_epochs.unsynced
    assert reopened.end_offset_for_epoch(2) == (2, 1)


def test_an_idle_log_flushes_closes_and_reopens_without_opening_its_segment(log_dir, small_config, clock):
    lg = Log(log_dir, small_config, clock=clock)
    lg.start_leader_epoch(0)
    before = open_fds()
    lg.flush()
    lg.close()
    assert open_fds() == before
    assert sorted(p.name for p in log_dir.iterdir()) == ["00000000000000000000.log"]
    for clean in (True, False):
        reopened = Log(log_dir, small_config, clock=clock, clean_shutdown=clean)
        assert reopened.load_report.recovered_segments == 0 and reopened.log_end_offset == 0
        assert open_fds() == before
        reopened.close()


def test_an_empty_segment_left_by_a_truncation_reopens_empty(log_dir, small_config, clock, make_batch, read_log):
    lg = Log(log_dir, small_config, clock=clock)
    lg.append_as_leader(make_batch([b"a"] * 50), 0)
    lg.roll()
    lg.append_as_leader(make_batch([b"b"] * 50), 0)
    lg.append_as_leader(make_batch([b"b"] * 50), 0)
    assert lg.active_segment.offset_index.path.exists()
    lg.truncate_to(51)  # the active segment keeps no batch; its index files stay preallocated
    assert lg.active_segment.base_offset == 50 and lg.active_segment.size == 0
    for seg in lg.segments:
        seg.close()
    reopened = Log(log_dir, small_config, clock=clock)
    assert reopened.log_end_offset == 50
    assert not reopened.active_segment.offset_index.path.exists()
    reopened.append_as_leader(make_batch([b"c"]), 1)
    assert [r.value for r in read_log(reopened)] == [b"a"] * 50 + [b"c"]
