"""The partition log: append, read, roll, indexes, lookups, epochs, truncation."""
from __future__ import annotations

import os

import pytest

from kafka_protocol import batch as b
from kafka_protocol.compression import Codec
from partition_log.config import LogConfig
from kafka_protocol.errors import (CorruptRecordError, InvalidRecordError, MessageTooLargeError,
                                   OffsetOutOfRangeError)
from partition_log.log import Log
from kafka_protocol.records import Record, encode_batch


def fill(log, make_batch, batches=60, per_batch=5, epoch=0, codec=Codec.NONE):
    for i in range(batches):
        values = [b"value-%05d-%d" % (i, j) for j in range(per_batch)]
        log.append_as_leader(make_batch(values, ts=1_700_000_000_000 + i * 10, codec=codec), epoch)


def test_offsets_are_assigned_and_segments_roll(log_dir, small_config, clock, make_batch, read_log):
    log = Log(log_dir, small_config, clock=clock)
    fill(log, make_batch)
    assert log.log_end_offset == 300
    assert len(log.segments) >= 3
    names = sorted(os.listdir(log_dir))
    assert "00000000000000000000.log" in names and "00000000000000000000.index" in names
    assert all(len(n.split(".")[0]) == 20 for n in names if n.endswith(".log"))
    records = read_log(log)
    assert [r.offset for r in records] == list(range(300))
    assert records[7].value == b"value-00001-2"


def test_segment_files_are_contiguous_and_bounded(log_dir, small_config, clock, make_batch):
    log = Log(log_dir, small_config, clock=clock)
    fill(log, make_batch)
    for seg, nxt in zip(log.segments, log.segments[1:]):
        assert seg.size <= small_config.segment_bytes
        assert seg.load_tail() == nxt.base_offset


def test_read_from_the_middle_of_a_batch_returns_the_whole_batch(log_dir, small_config, clock, make_batch):
    log = Log(log_dir, small_config, clock=clock)
    fill(log, make_batch)
    data = log.read(123, 10_000)
    first = b.parse_header(data)
    assert first.base_offset == 120 and first.last_offset == 124
    assert len(data) <= 10_000 or first.size > 10_000


def test_read_respects_max_bytes_but_returns_one_batch_at_least(log_dir, small_config, clock, make_batch):
    log = Log(log_dir, small_config, clock=clock)
    fill(log, make_batch)
    data = log.read(0, 10)
    headers = list(b.iter_headers(data))
    assert len(headers) == 1  # KIP-74: one whole batch even above the limit
    assert log.read(0, 10, min_one_batch=False) == b""


def test_read_stops_below_the_high_watermark(log_dir, small_config, clock, make_batch, read_log):
    log = Log(log_dir, small_config, clock=clock)
    fill(log, make_batch)
    log.update_high_watermark(150)
    records = read_log(log, 0, max_offset=log.high_watermark)
    assert records[-1].offset == 149
    assert log.read(150, 1 << 20, max_offset=150) == b""


def test_offsets_out_of_range(log_dir, small_config, clock, make_batch):
    log = Log(log_dir, small_config, clock=clock)
    fill(log, make_batch, batches=2)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(11, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)
    assert log.read(10, 100) == b""  # the log end offset itself is a valid, empty position


def test_leader_append_stamps_offsets_and_epoch_outside_the_crc(log_dir, small_config, clock, make_batch):
    log = Log(log_dir, small_config, clock=clock)
    log.append_as_leader(make_batch([b"a", b"b"]), 3)
    log.append_as_leader(make_batch([b"c"]), 4)
    data = log.read(0, 1 << 20)
    headers = [h for _, h in b.iter_headers(data)]  # validates the CRCs
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 3), (2, 4)]
    assert [(e.epoch, e.start_offset) for e in log.leader_epochs.entries] == [(3, 0), (4, 2)]


def test_bad_batches_are_refused_and_nothing_is_written(log_dir, small_config, clock, make_batch):
    log = Log(log_dir, small_config, clock=clock)
    good = make_batch([b"x"] * 3)
    flipped = bytearray(good)
    flipped[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC"):
        log.append_as_leader(bytes(flipped), 0)
    with pytest.raises(CorruptRecordError, match="truncated"):
        log.append_as_leader(good[:-5], 0)
    wrong_magic = bytearray(good)
    wrong_magic[16] = 1
    with pytest.raises(InvalidRecordError, match="magic 1"):  # Kafka's Produce v3+: magic 2 only
        log.append_as_leader(bytes(wrong_magic), 0)
    wrong_magic[16] = 3
    with pytest.raises(CorruptRecordError, match="magic 3"):  # no Kafka format has it
        log.append_as_leader(bytes(wrong_magic), 0)
    negative = bytearray(good)
    negative[8:12] = (-5).to_bytes(4, "big", signed=True)
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(bytes(negative), 0)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(b"", 0)
    # a valid CRC, but the count does not match the offset span a producer must use
    sparse = encode_batch([Record(None, b"v", 1, offset=0), Record(None, b"w", 2, offset=5)])
    with pytest.raises(InvalidRecordError, match="recordsCount"):
        log.append_as_leader(sparse, 0)
    # one bad batch among good ones refuses the whole request
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(good + bytes(flipped), 0)
    assert log.log_end_offset == 0 and log.active_segment.size == 0


def test_oversized_batch_is_refused(log_dir, clock, make_batch):
    log = Log(log_dir, LogConfig(max_message_bytes=200), clock=clock)
    with pytest.raises(MessageTooLargeError):
        log.append_as_leader(make_batch([b"x" * 500]), 0)
    log.append_as_leader(make_batch([b"x" * 10]), 0)
    assert log.log_end_offset == 1


def test_follower_append_keeps_offsets_and_refuses_overlap(tmp_path, small_config, clock, make_batch, read_log):
    leader = Log(tmp_path / "t-0", small_config, clock=clock)
    fill(leader, make_batch, batches=10, epoch=2)
    follower = Log(tmp_path / "f" / "t-0", small_config, clock=clock)
    data = leader.read(0, 1 << 20)
    follower.append_as_follower(data)
    assert follower.log_end_offset == b.parse_header(data).base_offset + len(read_log(follower))
    assert follower.leader_epochs.latest_epoch == 2
    with pytest.raises(InvalidRecordError, match="overlaps"):
        follower.append_as_follower(data)


def test_timestamp_lookup(log_dir, small_config, clock, make_batch):
    log = Log(log_dir, small_config, clock=clock)
    fill(log, make_batch)  # batch i has timestamps base + i*10 + j
    base = 1_700_000_000_000
    assert log.find_offset_by_timestamp(base) == (0, base)
    assert log.find_offset_by_timestamp(base + 252) == (127, base + 252)
    assert log.find_offset_by_timestamp(base + 255) == (130, base + 260)  # first record at or after
    assert log.find_offset_by_timestamp(base + 10_000) is None


def test_leader_epoch_end_offsets(log_dir, small_config, clock, make_batch):
    log = Log(log_dir, small_config, clock=clock)
    fill(log, make_batch, batches=4, epoch=1)
    fill(log, make_batch, batches=4, epoch=3)
    assert log.end_offset_for_epoch(1) == (1, 20)
    assert log.end_offset_for_epoch(2) == (1, 20)
    assert log.end_offset_for_epoch(3) == (3, 40)
    assert log.end_offset_for_epoch(0) == (-1, -1)
    assert log.end_offset_for_epoch(9) == (-1, -1)


def test_truncate_to_divergence_point(log_dir, small_config, clock, make_batch, read_log):
    log = Log(log_dir, small_config, clock=clock)
    fill(log, make_batch, batches=30, epoch=1)
    fill(log, make_batch, batches=30, epoch=2)
    log.update_high_watermark(280)
    assert log.truncate_to(150) == 150
    assert log.high_watermark == 150
    assert [(e.epoch, e.start_offset) for e in log.leader_epochs.entries] == [(1, 0)]
    assert [r.offset for r in read_log(log)] == list(range(150))
    log.append_as_leader(make_batch([b"after"]), 5)
    assert read_log(log)[-1].offset == 150 and read_log(log)[-1].value == b"after"
    assert log.truncate_to(10_000) == 151  # beyond the end: nothing to do


def test_truncating_at_the_end_forgets_an_epoch_started_there_without_data(log_dir, small_config, clock,
                                                                          make_batch):
    # A broker that led epoch 3 briefly recorded its start at its log end and
    # appended nothing; as a follower it is told to truncate to that end.
    log = Log(log_dir, small_config, clock=clock)
    fill(log, make_batch, batches=3, epoch=1)
    end = log.log_end_offset
    log.start_leader_epoch(3)
    assert log.leader_epochs.latest_epoch == 3
    assert log.truncate_to(end) == end
    assert [(e.epoch, e.start_offset) for e in log.leader_epochs.entries] == [(1, 0)]


def test_truncate_fully_and_start_at(log_dir, small_config, clock, make_batch, read_log):
    log = Log(log_dir, small_config, clock=clock)
    fill(log, make_batch, batches=10)
    log.truncate_fully_and_start_at(1000)
    assert (log.log_start_offset, log.log_end_offset) == (1000, 1000)
    assert sorted(p for p in os.listdir(log_dir) if p.endswith(".log")) == ["00000000000000001000.log"]
    log.append_as_leader(make_batch([b"x"]), 0)
    assert [r.offset for r in read_log(log)] == [1000]


def test_index_is_sparse_and_trimmed_on_roll(log_dir, small_config, clock, make_batch):
    log = Log(log_dir, small_config, clock=clock)
    fill(log, make_batch)
    sealed = log.segments[0]
    entries = os.path.getsize(sealed.offset_index.path) // 8
    assert 0 < entries < sealed.size // small_config.index_interval_bytes + 2
    assert os.path.getsize(sealed.time_index.path) % 12 == 0
    # the active segment's index is preallocated until the log is closed
    assert os.path.getsize(log.active_segment.offset_index.path) == small_config.segment_index_bytes
    log.close()
    assert os.path.getsize(log.active_segment.offset_index.path) % 8 == 0
    assert os.path.getsize(log.active_segment.offset_index.path) < small_config.segment_index_bytes


def test_roll_by_time_uses_batch_timestamps(log_dir, clock, make_batch):
    log = Log(log_dir, LogConfig(segment_ms=1000), clock=clock)
    log.append_as_leader(make_batch([b"a"], ts=5_000), 0)
    log.append_as_leader(make_batch([b"b"], ts=5_500), 0)
    assert len(log.segments) == 1
    log.append_as_leader(make_batch([b"c"], ts=6_001), 0)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_flush_messages_one_fsyncs_every_append(log_dir, clock, make_batch):
    log = Log(log_dir, LogConfig(flush_messages=1), clock=clock)
    for i in range(3):
        log.append_as_leader(make_batch([b"x"]), 0)
        assert log.recovery_point == log.log_end_offset == i + 1


def test_flush_ms(log_dir, clock, make_batch):
    log = Log(log_dir, LogConfig(flush_ms=1000), clock=clock)
    log.append_as_leader(make_batch([b"x"]), 0)
    assert log.recovery_point == 0
    clock.advance(1500)
    log.flush_if_due(clock())
    assert log.recovery_point == 1


@pytest.mark.parametrize("codec", list(Codec))
def test_every_codec_round_trips_through_the_log(log_dir, small_config, clock, make_batch, read_log, codec):
    log = Log(log_dir, small_config, clock=clock)
    fill(log, make_batch, batches=20, codec=codec)
    values = [r.value for r in read_log(log)]
    assert values[0] == b"value-00000-0" and values[-1] == b"value-00019-4" and len(values) == 100
