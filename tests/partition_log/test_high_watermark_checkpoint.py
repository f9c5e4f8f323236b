"""replication-offset-checkpoint: every log's high watermark in Kafka's
checkpoint format, read back when the directory is opened again (capped at
the log end: recovery may have cut the tail)."""
from __future__ import annotations

import os

from partition_log.log_manager import HIGH_WATERMARK_FILE, LogManager

from .conftest import batch_of


def test_high_watermarks_are_checkpointed_in_kafkas_format_and_restored(tmp_path, small_config, clock):
    logs = LogManager(tmp_path, small_config, clock=clock)
    for partition, (records, hw) in enumerate([(10, 7), (5, 5), (3, 0)]):
        lg = logs.get_or_create("orders", partition)
        lg.append_as_leader(batch_of([b"x"] * records), 0)
        lg.update_high_watermark(hw)
    logs.checkpoint_high_watermarks()
    assert (tmp_path / HIGH_WATERMARK_FILE).read_text() == "0\n3\norders 0 7\norders 1 5\norders 2 0\n"
    logs.get_or_create("orders", 0).update_high_watermark(9)
    logs.close()  # a clean shutdown writes the latest
    reopened = LogManager(tmp_path, small_config, clock=clock)
    assert {p: lg.high_watermark for (_, p), lg in reopened.logs.items()} == {0: 9, 1: 5, 2: 0}


def test_a_checkpointed_high_watermark_past_the_recovered_log_end_is_capped(tmp_path, small_config, clock):
    logs = LogManager(tmp_path, small_config, clock=clock)
    lg = logs.get_or_create("orders", 0)
    lg.append_as_leader(batch_of([b"x"] * 4), 0)
    lg.append_as_leader(batch_of([b"y"] * 4), 0)
    lg.update_high_watermark(8)
    logs.checkpoint_high_watermarks()
    path = lg.active_segment.log_path
    for seg in lg.segments:  # kill -9, then the last batch is found torn
        seg.close()
    os.truncate(path, os.path.getsize(path) - 5)
    reopened = LogManager(tmp_path, small_config, clock=clock)
    assert reopened.logs[("orders", 0)].log_end_offset == 4
    assert reopened.logs[("orders", 0)].high_watermark == 4


def test_an_unchanged_checkpoint_is_not_written_again(tmp_path, small_config, clock):
    logs = LogManager(tmp_path, small_config, clock=clock)
    logs.get_or_create("orders", 0)
    logs.checkpoint_high_watermarks()
    first = os.stat(tmp_path / HIGH_WATERMARK_FILE).st_ino
    logs.checkpoint_high_watermarks()
    assert os.stat(tmp_path / HIGH_WATERMARK_FILE).st_ino == first  # no new file renamed over it
    logs.get_or_create("orders", 1)
    logs.checkpoint_high_watermarks()
    assert os.stat(tmp_path / HIGH_WATERMARK_FILE).st_ino != first
    assert (tmp_path / HIGH_WATERMARK_FILE).read_text().endswith("orders 1 0\n")
