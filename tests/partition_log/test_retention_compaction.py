"""Retention deletes whole segments; compaction keeps the newest record per key."""
from __future__ import annotations

import os

import pytest

from partition_log import cleaner
from partition_log.config import LogConfig
from kafka_protocol.errors import InvalidConfigError, OffsetOutOfRangeError
from partition_log.log import Log
from kafka_protocol.records import Record, encode_batch

DAY = 24 * 3600 * 1000


def appended(log_dir, config, clock, make_batch, batches, ts_of=lambda i: 1_700_000_000_000):
    log = Log(log_dir, config, clock=clock)
    for i in range(batches):
        log.append_as_leader(make_batch([b"v%04d" % i] * 10, ts=ts_of(i)), 0)
    log.update_high_watermark(log.log_end_offset)
    return log


def test_retention_by_time_deletes_old_segments_not_the_active_one(log_dir, clock, make_batch):
    config = LogConfig(segment_bytes=2048, retention_ms=DAY)
    old = clock.now - 3 * DAY
    log = appended(log_dir, config, clock, make_batch, 40, ts_of=lambda i: old if i < 30 else clock.now)
    before = len(log.segments)
    deleted = log.delete_old_segments()
    assert deleted > 0 and len(log.segments) == before - deleted
    assert log.log_start_offset == log.segments[0].base_offset > 0
    assert log.segments[0].largest_timestamp >= clock.now - DAY or log.segments[0] is log.active_segment
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    # everything old, yet the active segment stays
    clock.advance(10 * DAY)
    log.delete_old_segments()
    assert len(log.segments) == 1 and log.active_segment.size > 0
    assert log.log_start_offset == log.active_segment.base_offset


def test_retention_by_size(log_dir, clock, make_batch):
    config = LogConfig(segment_bytes=2048, retention_bytes=5000)
    log = appended(log_dir, config, clock, make_batch, 60)
    log.delete_old_segments()
    # as Kafka: delete the oldest segments while what remains stays >= retention.bytes
    assert log.size_in_bytes >= 5000
    assert log.size_in_bytes - log.segments[0].size < 5000
    files = [n for n in os.listdir(log_dir) if n.endswith(".log")]
    assert len(files) == len(log.segments)


def test_retention_never_deletes_above_the_high_watermark(log_dir, clock, make_batch):
    config = LogConfig(segment_bytes=2048, retention_bytes=0)
    log = appended(log_dir, config, clock, make_batch, 40)
    log.update_high_watermark(0)
    assert log.delete_old_segments() == 0
    log.update_high_watermark(log.segments[2].base_offset)
    assert log.delete_old_segments() == 2


def test_retention_epoch_cache_follows_log_start(log_dir, clock, make_batch):
    config = LogConfig(segment_bytes=2048, retention_bytes=0)
    log = Log(log_dir, config, clock=clock)
    for i in range(40):
        log.append_as_leader(make_batch([b"v"] * 10), i // 10)
    log.update_high_watermark(log.log_end_offset)
    log.delete_old_segments()
    assert log.leader_epochs.entries[0].start_offset == log.log_start_offset


def keyed(log, clock, pairs, epoch=0):
    for key, value in pairs:
        log.append_as_leader(encode_batch([Record(key, value, clock.now)]), epoch)


def compacted_view(log, read_log):
    return {r.key: r.value for r in read_log(log)}


def test_compaction_keeps_the_latest_value_per_key_with_offsets_preserved(log_dir, clock, read_log):
    config = LogConfig(segment_bytes=1024, cleanup_policy="compact")
    log = Log(log_dir, config, clock=clock)
    keyed(log, clock, [(b"k%d" % (i % 5), b"v%d" % i) for i in range(100)])
    log.update_high_watermark(log.log_end_offset)
    before = compacted_view(log, read_log)
    stats = cleaner.clean(log)
    assert stats.segments_cleaned > 1 and stats.records_kept < stats.records_read
    after = read_log(log)
    assert compacted_view(log, read_log) == before
    offsets = [r.offset for r in after]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    # only the active segment may still hold superseded values
    cleaned_keys = [r.key for r in after if r.offset < log.active_segment.base_offset]
    assert len(cleaned_keys) == len(set(cleaned_keys))
    # a reader that asks for a removed offset gets the next surviving record
    removed = next(o for o in range(log.log_end_offset) if o not in offsets)
    assert read_log(log, removed)[0].offset > removed


def test_tombstones_survive_delete_retention_then_go(log_dir, clock, read_log):
    config = LogConfig(segment_bytes=600, cleanup_policy="compact", delete_retention_ms=1000)
    log = Log(log_dir, config, clock=clock)
    keyed(log, clock, [(b"a", b"1"), (b"b", b"2"), (b"a", None)] + [(b"c%d" % i, b"x") for i in range(40)])
    log.update_high_watermark(log.log_end_offset)
    cleaner.clean(log)
    view = compacted_view(log, read_log)
    assert b"a" in view and view[b"a"] is None  # the tombstone is still visible
    clock.advance(1001)
    stats = cleaner.clean(log)
    assert stats.tombstones_removed == 1
    assert b"a" not in compacted_view(log, read_log)
    assert compacted_view(log, read_log)[b"b"] == b"2"


def test_compaction_respects_min_compaction_lag(log_dir, clock, read_log):
    config = LogConfig(segment_bytes=600, cleanup_policy="compact", min_compaction_lag_ms=60_000)
    log = Log(log_dir, config, clock=clock)
    keyed(log, clock, [(b"k", b"v%d" % i) for i in range(40)])
    log.update_high_watermark(log.log_end_offset)
    assert cleaner.clean(log).segments_cleaned == 0
    clock.advance(60_001)
    assert cleaner.clean(log).segments_cleaned > 0


def test_reads_keep_working_across_a_clean(log_dir, clock, read_log):
    config = LogConfig(segment_bytes=600, cleanup_policy="compact")
    log = Log(log_dir, config, clock=clock)
    keyed(log, clock, [(b"k%d" % (i % 3), b"v%d" % i) for i in range(60)])
    log.update_high_watermark(log.log_end_offset)
    before = compacted_view(log, read_log)
    cleaner.clean(log)
    keyed(log, clock, [(b"k0", b"new")])
    assert compacted_view(log, read_log) == {**before, b"k0": b"new"}


@pytest.mark.parametrize("stage", ["cleaned", "swap", "deleted"])
def test_a_crash_during_the_swap_leaves_old_or_new_never_a_mix(log_dir, clock, read_log, monkeypatch, stage):
    config = LogConfig(segment_bytes=600, cleanup_policy="compact")
    log = Log(log_dir, config, clock=clock)
    keyed(log, clock, [(b"k%d" % (i % 4), b"v%d" % i) for i in range(60)])
    log.update_high_watermark(log.log_end_offset)
    expected = compacted_view(log, read_log)
    leo = log.log_end_offset

    class Crash(Exception):
        pass

    real_change_suffix = cleaner.LogSegment.change_suffix

    def crashing(self, suffix):
        # stop the swap right after the named step is on disk
        real_change_suffix(self, suffix)
        if (stage == "swap" and suffix == ".swap") or (stage == "deleted" and suffix == ".deleted"):
            raise Crash()

    if stage == "cleaned":
        monkeypatch.setattr(Log, "replace_segments", lambda *a: (_ for _ in ()).throw(Crash()))
    else:
        monkeypatch.setattr(cleaner.LogSegment, "change_suffix", crashing)
    with pytest.raises(Crash):
        cleaner.clean(log)
    monkeypatch.undo()
    suffixes = {n.rsplit(".", 1)[-1] for n in os.listdir(log_dir)}
    assert {"cleaned", "swap", "deleted"} & suffixes or stage == "cleaned"
    reopened = Log(log_dir, config, clock=clock)
    assert reopened.log_end_offset == leo
    assert compacted_view(reopened, read_log) == expected
    names = os.listdir(log_dir)
    assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))]
    offsets = [r.offset for r in read_log(reopened)]
    assert offsets == sorted(set(offsets))


@pytest.mark.parametrize("values,error", [
    ({"segment.bytes": "abc"}, "expected an integer"),
    ({"log.segment.bytes": 3}, "at least 14"),
    ({"segment.bytes": 2**32}, "int32"),
    ({"cleanup.policy": "shred"}, "compact"),
    ({"min.cleanable.dirty.ratio": 2}, "ratio"),
    ({"retention.ms": -5}, "at least -1"),
    ({"flush.messages": True}, "integer"),
])
def test_bad_configs_name_the_key_and_the_reason(values, error):
    with pytest.raises(InvalidConfigError, match=error) as info:
        LogConfig.from_mapping(values)
    assert next(iter(values)) in str(info.value)
    assert info.value.name == "INVALID_CONFIG"


def test_topic_and_broker_config_names():
    config = LogConfig.from_mapping({"log.segment.bytes": "1000", "retention.ms": "-1",
                                     "cleanup.policy": "compact,delete", "unrelated.key": "x"})
    assert (config.segment_bytes, config.retention_ms) == (1000, -1)
    assert config.compact and config.delete
    assert LogConfig().to_mapping()["segment.bytes"] == 1024**3


def _deletion_lines(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == "partition_log.log" and r.levelname == "INFO" and "deleting" in r.getMessage()]


def test_retention_by_time_logs_one_info_line_naming_partition_segments_and_reason(log_dir, clock, make_batch,
                                                                                  caplog):
    config = LogConfig(segment_bytes=2048, retention_ms=DAY)
    old = clock.now - 3 * DAY
    log = appended(log_dir, config, clock, make_batch, 40, ts_of=lambda i: old if i < 30 else clock.now)
    doomed = [s.base_offset for s in log.segments]
    caplog.set_level("INFO", logger="partition_log.log")
    deleted = log.delete_old_segments()
    assert deleted >= 2
    [line] = _deletion_lines(caplog)
    assert line.startswith(f"{log.topic}-{log.partition}: deleting {deleted} segments "
                           f"(offsets 0 to {log.log_start_offset - 1}) due to log retention time {DAY}ms breach")
    assert all(f"LogSegment(baseOffset={base}," in line for base in doomed[:deleted])
    assert f"baseOffset={doomed[deleted]}," not in line
    assert line.endswith(f"Log start offset will be {log.log_start_offset}")
    caplog.clear()
    assert log.delete_old_segments() == 0
    assert _deletion_lines(caplog) == []  # a round that deletes nothing says nothing


def test_retention_by_size_and_below_log_start_name_their_reasons(log_dir, clock, make_batch, caplog):
    caplog.set_level("INFO", logger="partition_log.log")
    log = appended(log_dir, LogConfig(segment_bytes=2048, retention_bytes=5000), clock, make_batch, 60)
    log.delete_old_segments()
    [line] = _deletion_lines(caplog)
    assert "due to log retention size 5000 bytes breach" in line
    caplog.clear()
    # DeleteRecords on a compacted topic: only the segments below the new log start go
    compacted = appended(log_dir.parent / "c-0", LogConfig(segment_bytes=2048, cleanup_policy="compact"), clock,
                         make_batch, 40)
    compacted.advance_log_start_offset(compacted.segments[1].base_offset)
    assert compacted.delete_old_segments() == 1
    [line] = _deletion_lines(caplog)
    assert line.startswith("c-0: deleting 1 segment (offsets 0 to ")
    assert f"due to log start offset {compacted.segments[0].base_offset} breach" in line
