"""Opening a log after a crash: torn tails, corruption, lost or damaged indexes,
and the clean-shutdown path. A batch that was completely written is never lost."""
from __future__ import annotations

import os
import stat

import pytest
from kafka.record.default_records import DefaultRecordBatch

from kafka_protocol import batch as b
from kafka_protocol.compression import Codec
from kafka_protocol.errors import KafkaStorageError
from kafka_protocol.records import iter_records
from partition_log.log import Log
from partition_log.log_manager import CLEAN_SHUTDOWN_FILE, LogManager


def written_log(log_dir, config, clock, make_batch, batches=40, codec=Codec.NONE):
    log = Log(log_dir, config, clock=clock)
    for i in range(batches):
        log.append_as_leader(make_batch([b"r%03d-%d" % (i, j) for j in range(4)], ts=1_700_000_000_000 + i,
                                        codec=codec), 1)
    return log


def crash(log):
    """What kill -9 leaves behind: files closed with no flush, no index trim,
    no checkpoint (LogSegment.close does none of those)."""
    for seg in log.segments:
        seg.close()


def test_torn_tail_is_truncated_at_the_last_whole_batch(log_dir, small_config, clock, make_batch, read_log):
    log = written_log(log_dir, small_config, clock, make_batch)
    path = log.active_segment.log_path
    crash(log)
    size = os.path.getsize(path)
    os.truncate(path, size - 7)  # the last batch was half written
    reopened = Log(log_dir, small_config, clock=clock)
    assert reopened.log_end_offset == 156
    assert reopened.load_report.truncated_bytes > 0
    assert "truncated" in reopened.load_report.reasons[0]
    assert [r.offset for r in read_log(reopened)] == list(range(156))
    reopened.append_as_leader(make_batch([b"next"]), 2)
    assert read_log(reopened)[-1].offset == 156


def test_zero_filled_tail_is_cut(log_dir, small_config, clock, make_batch, read_log):
    log = written_log(log_dir, small_config, clock, make_batch)
    path = log.active_segment.log_path
    crash(log)
    with open(path, "ab") as f:
        f.write(bytes(3000))  # preallocated or never-written blocks after a power loss
    reopened = Log(log_dir, small_config, clock=clock)
    assert reopened.log_end_offset == 160
    assert len(read_log(reopened)) == 160
    assert os.path.getsize(path) == reopened.active_segment.size


def test_corrupt_batch_in_an_unflushed_segment_cuts_from_there(log_dir, small_config, clock, make_batch, read_log):
    log = written_log(log_dir, small_config, clock, make_batch)
    target = log.segments[1]
    position = next(iter(target.iter_batch_positions())).header.size  # the second batch
    crash(log)
    with open(target.log_path, "r+b") as f:
        f.seek(position + 40)
        f.write(b"\xff\xff")
    reopened = Log(log_dir, small_config, clock=clock)  # no clean shutdown, recovery point 0
    report = reopened.load_report
    assert "CRC" in report.reasons[0]
    assert report.deleted_segments_after_corruption == len(log.segments) - 2
    first_lost = target.base_offset + 4
    assert reopened.log_end_offset == first_lost
    assert [r.offset for r in read_log(reopened)] == list(range(first_lost))


def test_flushed_data_survives_a_crash(log_dir, small_config, clock, make_batch, read_log):
    log = written_log(log_dir, small_config, clock, make_batch)
    log.flush()
    crash(log)
    reopened = Log(log_dir, small_config, recovery_point=log.recovery_point, clock=clock)
    assert reopened.log_end_offset == 160
    assert reopened.load_report.truncated_bytes == 0
    assert reopened.load_report.recovered_segments == 1  # only the active segment is rescanned


def test_missing_index_is_rebuilt(log_dir, small_config, clock, make_batch, read_log):
    log = written_log(log_dir, small_config, clock, make_batch)
    log.close()
    os.unlink(log.segments[0].offset_index.path)
    os.unlink(log.segments[1].time_index.path)
    reopened = Log(log_dir, small_config, recovery_point=160, clean_shutdown=True, clock=clock)
    assert reopened.load_report.rebuilt_indexes == 2
    assert reopened.segments[0].offset_index.path.exists()
    assert [r.offset for r in read_log(reopened, 5)][0] == 5
    assert reopened.find_offset_by_timestamp(1_700_000_000_010) == (31, 1_700_000_000_010)  # batch 7, record 3


def test_corrupt_index_is_detected_and_rebuilt(log_dir, small_config, clock, make_batch, read_log):
    log = written_log(log_dir, small_config, clock, make_batch)
    log.close()
    index = log.segments[0].offset_index.path
    assert os.path.getsize(index) >= 16
    with open(index, "r+b") as f:
        f.write(b"\x7f\x00\x00\x00\x00\x00\x00\x01")  # an offset far beyond the segment
    reopened = Log(log_dir, small_config, recovery_point=160, clean_shutdown=True, clock=clock)
    assert reopened.load_report.rebuilt_indexes == 1
    assert "outside the segment" in reopened.load_report.reasons[0]
    assert [r.offset for r in read_log(reopened)] == list(range(160))


def test_clean_shutdown_needs_no_scan(tmp_path, small_config, clock, make_batch, read_log):
    manager = LogManager(tmp_path, small_config, clock=clock)
    log = manager.get_or_create("orders", 0)
    for i in range(30):
        log.append_as_leader(make_batch([b"x%d" % i]), 0)
    manager.close()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    again = LogManager(tmp_path, small_config, clock=clock)
    assert again.clean_shutdown and not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    reopened = again.logs[("orders", 0)]
    assert reopened.load_report.recovered_segments == 0
    assert reopened.log_end_offset == 30 and reopened.recovery_point == 30
    assert len(read_log(reopened)) == 30


def test_unclean_shutdown_recovers_after_the_recovery_point(tmp_path, small_config, clock, make_batch):
    manager = LogManager(tmp_path, small_config, clock=clock)
    log = manager.get_or_create("orders", 0)
    for i in range(30):
        log.append_as_leader(make_batch([b"x%d" % i] * 8), 0)
    log.flush()
    manager.checkpoint()
    for i in range(5):
        log.append_as_leader(make_batch([b"late"]), 0)
    crash(log)  # no marker written
    again = LogManager(tmp_path, small_config, clock=clock)
    reopened = again.logs[("orders", 0)]
    assert not again.clean_shutdown
    assert reopened.log_end_offset == 245
    assert 1 <= reopened.load_report.recovered_segments < len(reopened.segments) + 1


def test_damaged_checkpoint_falls_back_to_full_recovery(tmp_path, small_config, clock, make_batch):
    manager = LogManager(tmp_path, small_config, clock=clock)
    manager.get_or_create("orders", 0).append_as_leader(make_batch([b"x"]), 0)
    manager.close()
    (tmp_path / "recovery-point-offset-checkpoint").write_text("garbage\n")
    again = LogManager(tmp_path, small_config, clock=clock)
    assert again.logs[("orders", 0)].log_end_offset == 1


def test_unreadable_directory_is_a_storage_error(tmp_path, small_config, clock):
    if os.geteuid() == 0:
        # root reads any directory, so a missing execute bit does not stop it;
        # a path that is a file stands in for an unusable directory here
        (tmp_path / "blocked-0").write_text("not a directory")
        with pytest.raises(KafkaStorageError, match="unusable"):
            Log(tmp_path / "blocked-0", small_config, clock=clock)
        return
    d = tmp_path / "blocked-0"
    d.mkdir()
    d.chmod(0)
    try:
        with pytest.raises(KafkaStorageError):
            Log(d, small_config, clock=clock)
    finally:
        d.chmod(stat.S_IRWXU)


def test_bad_partition_directory_name(tmp_path, small_config, clock):
    with pytest.raises(ValueError, match="<topic>-<partition>"):
        Log(tmp_path / "no_partition_number", small_config, clock=clock)


@pytest.mark.parametrize("codec", list(Codec))
def test_segment_files_decode_with_kafka_python(log_dir, small_config, clock, make_batch, codec):
    log = written_log(log_dir, small_config, clock, make_batch, batches=12, codec=codec)
    log.close()
    offsets = []
    for seg in log.segments:
        data = seg.log_path.read_bytes()
        pos = 0
        while pos < len(data):
            kb = DefaultRecordBatch(data[pos:pos + b.parse_header(data, pos).size])
            assert kb.validate_crc()
            offsets += [r.offset for r in kb]
            pos += kb.size_in_bytes
    assert offsets == list(range(48))


# --- a copy damaged while its node was down after a clean shutdown (issue 22's minority damage) ---

def test_a_tail_cut_after_a_clean_shutdown_recovers_to_the_last_whole_batch(tmp_path, small_config, clock,
                                                                             make_batch, read_log):
    """A clean shutdown recovers nothing, but the active segment's tail is
    checked: a file cut inside its last batch while the node was down loses
    that batch (the follower fetches it again) instead of counting offsets it
    does not hold and appending after the torn bytes."""
    manager = LogManager(tmp_path, small_config, clock=clock)
    log = manager.get_or_create("orders", 0)
    for i in range(30):
        log.append_as_leader(make_batch([b"x%d" % i, b"y%d" % i]), 0)
    path = log.active_segment.log_path
    manager.close()
    os.truncate(path, os.path.getsize(path) - 7)
    again = LogManager(tmp_path, small_config, clock=clock)
    assert again.clean_shutdown
    reopened = again.logs[("orders", 0)]
    assert reopened.log_end_offset == 58
    assert "truncated" in reopened.load_report.reasons[0] and reopened.load_report.truncated_bytes > 0
    assert os.path.getsize(path) == reopened.active_segment.size
    reopened.append_as_follower(log_batch_at(make_batch([b"x29", b"y29"]), 58))
    assert [r.offset for r in read_log(reopened)] == list(range(60))


def log_batch_at(batch: bytes, offset: int) -> bytes:
    """A producer's batch as a leader stored it at `offset` (epoch 0): what a follower fetches."""
    stamped = bytearray(batch)
    b.stamp(stamped, 0, offset, 0)
    return bytes(stamped)


def test_a_corrupt_batch_below_the_recovery_point_is_never_served(tmp_path, small_config, clock, make_batch,
                                                                 read_log):
    """A byte flipped in a stored batch while the node was down, after a clean
    shutdown: loading re-reads nothing below the recovery point (as Kafka),
    so the read checks each batch's CRC. The batches before it are served;
    a read from it is a storage error that takes the log directory offline
    (KIP-112: the broker hands its leaderships to replicas with a whole copy)."""
    manager = LogManager(tmp_path, small_config, clock=clock)
    log = manager.get_or_create("orders", 0)
    for i in range(40):
        log.append_as_leader(make_batch([b"r%03d-%d" % (i, j) for j in range(4)]), 0)
    first = log.segments[0]
    [(_, one), (second, two)] = [(bp.position, bp.header) for bp in first.iter_batch_positions()][:2]
    manager.close()
    with open(first.log_path, "r+b") as f:  # a record's byte of the second batch: inside its CRC
        f.seek(second + b.HEADER_SIZE + 3)
        value = f.read(1)[0]
        f.seek(second + b.HEADER_SIZE + 3)
        f.write(bytes([value ^ 0xFF]))
    reopened = LogManager(tmp_path, small_config, clock=clock).logs[("orders", 0)]
    assert reopened.load_report.recovered_segments == 0 and reopened.recovery_point == 160
    served = reopened.read(0, 1 << 20)
    assert [r.offset for r in iter_records(served)] == list(range(one.next_offset))  # stops before it
    with pytest.raises(KafkaStorageError, match="fails its CRC"):
        reopened.read(two.base_offset, 1 << 20)
    assert reopened.dir_failure.offline
    with pytest.raises(KafkaStorageError):
        reopened.read(0, 1 << 20)  # nothing more is served from an offline directory
