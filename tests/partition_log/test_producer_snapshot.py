"""Producer state snapshot files: Kafka's version-1 bytes, damage detection,
and how the log keeps them in step with truncation, retention and deletion."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import crc32c
from kafka_protocol.records import Record, encode_batch
from partition_log.config import LogConfig
from partition_log.log import Log
from partition_log.log_manager import LogManager
from partition_log.producer_snapshot import (
    CorruptSnapshotError, SnapshotEntry, decode_snapshot, encode_snapshot, read_snapshot, snapshot_offsets,
    snapshot_path, write_snapshot,
)

ENTRY = SnapshotEntry(producer_id=1000, epoch=3, last_sequence=41, last_offset=77, offset_delta=9,
                      timestamp=1_700_000_000_123, coordinator_epoch=6, current_txn_first_offset=70)


def be(value: int, size: int) -> bytes:
    return value.to_bytes(size, "big", signed=True)


def kafka_layout(entries: list[SnapshotEntry]) -> bytes:
    """A snapshot as Kafka's ProducerStateManager writes it, field by field."""
    body = be(len(entries), 4) + b"".join(
        be(e.producer_id, 8) + be(e.epoch, 2) + be(e.last_sequence, 4) + be(e.last_offset, 8)
        + be(e.offset_delta, 4) + be(e.timestamp, 8) + be(e.coordinator_epoch, 4)
        + be(e.current_txn_first_offset, 8) for e in entries)
    return be(1, 2) + crc32c.crc32c(body).to_bytes(4, "big") + body


def test_the_crc_is_castagnolis():
    assert crc32c.crc32c(b"123456789") == 0xE3069283  # CRC-32C's check value, not zlib's CRC-32


def test_the_file_is_kafkas_version_1(tmp_path):
    other = SnapshotEntry(2**62, 0, -1, 5, 0, -1)  # defaults: no coordinator epoch, no open transaction
    path = write_snapshot(tmp_path, 120, [ENTRY, other])
    assert path.name == "00000000000000000120.snapshot" and path == snapshot_path(tmp_path, 120)
    assert path.read_bytes() == kafka_layout([ENTRY, other])
    assert len(path.read_bytes()) == 2 + 4 + 4 + 2 * 46
    assert read_snapshot(path) == [ENTRY, other]
    assert decode_snapshot(kafka_layout([])) == [] and not list(tmp_path.glob("*.tmp"))


def test_offsets_are_listed_sorted_and_other_files_ignored(tmp_path):
    for offset in (300, 5, 40):
        write_snapshot(tmp_path, offset, [])
    for name in ("00000000000000000007.snapshot.tmp", "00000000000000000009.log", "x.snapshot", "1.snapshot"):
        (tmp_path / name).write_bytes(b"")
    assert snapshot_offsets(tmp_path) == [5, 40, 300]
    assert snapshot_offsets(tmp_path / "missing") == []


def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]


GOOD = kafka_layout([ENTRY])


@pytest.mark.parametrize("data, problem", [
    (b"", "shorter than a snapshot header"),
    (GOOD[:9], "shorter than a snapshot header"),
    (GOOD[:-1], "does not hold 1 producer"),
    (GOOD + b"\0", "does not hold 1 producer"),
    (GOOD[:6] + be(-1, 4) + GOOD[10:], "does not hold -1 producer"),
    (be(2, 2) + GOOD[2:], "unknown snapshot version 2"),
    (be(0, 2) + GOOD[2:], "unknown snapshot version 0"),
    (flip(GOOD, 20), "CRC-32C"),
    (flip(GOOD, 3), "CRC-32C"),
], ids=["empty", "short", "torn", "trailing", "negative-count", "version-2", "version-0", "body-bit", "crc-bit"])
def test_a_damaged_snapshot_raises(tmp_path, data, problem):
    path = tmp_path / "00000000000000000001.snapshot"
    path.write_bytes(data)
    with pytest.raises(CorruptSnapshotError, match=problem):
        read_snapshot(path)


entries = st.lists(st.builds(
    SnapshotEntry, st.integers(0, 2**63 - 1), st.integers(0, 2**15 - 1), st.integers(-1, 2**31 - 1),
    st.integers(-1, 2**63 - 1), st.integers(0, 2**31 - 1), st.integers(-1, 2**63 - 1),
    st.integers(-1, 2**31 - 1), st.integers(-1, 2**63 - 1)), max_size=8)


@settings(max_examples=80, deadline=None)
@given(entries, st.data())
def test_round_trip_and_any_flipped_bit_is_caught(es, data):
    raw = encode_snapshot(es)
    assert raw == kafka_layout(es) and decode_snapshot(raw) == es
    at = data.draw(st.integers(0, len(raw) - 1))
    bit = data.draw(st.integers(0, 7))
    damaged = raw[:at] + bytes([raw[at] ^ (1 << bit)]) + raw[at + 1:]
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(damaged)


# -- the log's side ---------------------------------------------------------------

@pytest.fixture
def config() -> LogConfig:
    return LogConfig(segment_bytes=600, index_interval_bytes=128, segment_index_bytes=4096, retention_bytes=0)


def filled_log(log_dir, config, clock, batches: int = 12) -> tuple[Log, list[int]]:
    """A log whose listener writes a snapshot at each roll, as the broker does."""
    lg = Log(log_dir, config, clock=clock)
    rolls: list[int] = []

    def on_roll(offset: int) -> None:
        rolls.append(offset)
        write_snapshot(log_dir, offset, [SnapshotEntry(1, 0, offset, offset - 1, 0, 0)])

    lg.snapshot_listener = on_roll
    for i in range(batches):
        lg.append_as_leader(encode_batch([Record(None, b"x" * 150, 1_700_000_000_000 + i)]), 0)
    return lg, rolls


def test_each_roll_calls_the_listener_with_the_new_base_offset(log_dir, config, clock):
    lg, rolls = filled_log(log_dir, config, clock)
    assert rolls == [s.base_offset for s in lg.segments[1:]] and len(rolls) >= 3
    assert lg.latest_snapshot_offset() == rolls[-1]
    lg.close()  # a clean close snapshots the log end too
    assert rolls[-1] == lg.log_end_offset and snapshot_offsets(log_dir)[-1] == lg.log_end_offset


def test_truncation_drops_the_snapshots_above_the_new_end(log_dir, config, clock):
    lg, rolls = filled_log(log_dir, config, clock)
    cut = rolls[1]
    lg.truncate_to(cut - 1)
    assert snapshot_offsets(log_dir) == [o for o in rolls if o <= lg.log_end_offset]
    lg.delete_snapshots_above(rolls[0] - 1)
    assert snapshot_offsets(log_dir) == [] and lg.latest_snapshot_offset() is None


def test_segment_deletion_keeps_the_newest_snapshot_at_or_below_the_log_start(log_dir, config, clock):
    lg, rolls = filled_log(log_dir, config, clock)
    write_snapshot(log_dir, 0, [])
    lg.update_high_watermark(lg.log_end_offset)
    assert lg.delete_old_segments() > 0
    kept = snapshot_offsets(log_dir)
    assert lg.log_start_offset in kept  # the snapshot at the first kept segment's base
    assert min(kept) == lg.log_start_offset and kept == [o for o in [0, *rolls] if o >= lg.log_start_offset]


def test_with_no_snapshot_at_the_log_start_the_newest_below_stays(log_dir, config, clock):
    lg, rolls = filled_log(log_dir, config, clock)
    for offset in rolls[:3]:
        snapshot_path(log_dir, offset).unlink()
    write_snapshot(log_dir, 1, [])
    write_snapshot(log_dir, 2, [])
    lg.update_high_watermark(rolls[2] + 1)
    lg.delete_old_segments()
    assert lg.log_start_offset == rolls[2]
    assert snapshot_offsets(log_dir) == [2, *rolls[3:]]


def test_truncate_fully_drops_every_snapshot(log_dir, config, clock):
    lg, _ = filled_log(log_dir, config, clock)
    lg.truncate_fully_and_start_at(5000)
    assert snapshot_offsets(log_dir) == [] and lg.log_end_offset == 5000


def test_a_torn_tail_loses_the_snapshots_past_its_end(log_dir, config, clock):
    lg, rolls = filled_log(log_dir, config, clock)
    lg.flush()
    for seg in lg.segments:
        seg.close()
    last = lg.segments[-1].log_path
    last.write_bytes(b"")  # the active segment's batches never reached the disk
    write_snapshot(log_dir, lg.log_end_offset, [])  # but a snapshot of them did
    reopened = Log(log_dir, config, clock=clock, recovery_point=0)
    assert reopened.log_end_offset == rolls[-1]
    assert snapshot_offsets(log_dir)[-1] == rolls[-1]


def test_topic_deletion_removes_the_directory_with_its_snapshots(tmp_path, config, clock):
    manager = LogManager(tmp_path, config, clock=clock)
    lg = manager.get_or_create("orders", 0)
    lg.append_as_leader(encode_batch([Record(None, b"x", 1)]), 0)
    write_snapshot(lg.directory, 1, [ENTRY])
    assert manager.delete_log("orders", 0)
    assert not lg.directory.exists() and ("orders", 0) not in manager.logs
    assert not manager.delete_log("orders", 0)
    manager.close()
