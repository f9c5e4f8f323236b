"""The bound on open segment files: at most max_open_segments .log descriptors
over all logs of a LogManager, the least recently used closed first and
reopened on demand; idle ones closed by close_idle_segments. Reads, appends,
recovery, truncation, retention and deletion work across closes."""
from __future__ import annotations

import os

from partition_log.log_manager import LogManager

from .conftest import batch_of, read_all


def value(log: int, round_: int) -> bytes:
    return (b"%d-%d" % (log, round_)).ljust(40, b".")


def log_fds(directory) -> int:
    """Descriptors this process holds on .log files under `directory`."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(directory)) and target.endswith(".log"):
            count += 1
    return count


def test_at_most_the_limit_of_segment_files_is_open_and_every_log_stays_readable(tmp_path, small_config, clock):
    logs = LogManager(tmp_path, small_config, clock=clock, max_open_segments=3)
    parts = [logs.get_or_create("t", i) for i in range(10)]
    assert log_fds(tmp_path) == 0  # created, never used
    for round_ in range(3):
        for i, lg in enumerate(parts):
            lg.append_as_leader(batch_of([value(i, round_)] * 30), 0)
            assert log_fds(tmp_path) <= 3
    for i, lg in enumerate(parts):
        assert [r.value for r in read_all(lg)] == [value(i, n) for n in range(3) for _ in range(30)]
        assert log_fds(tmp_path) <= 3 and len(logs.handles) <= 3
    # Truncation, retention and deletion on logs whose files were closed under them.
    parts[0].truncate_to(45)
    assert parts[0].log_end_offset == 30 and read_all(parts[0])[-1].value == value(0, 0)
    assert len(parts[1].segments) > 1
    parts[1].update_high_watermark(parts[1].log_end_offset)
    parts[1].advance_log_start_offset(parts[1].segments[1].base_offset)
    assert parts[1].delete_old_segments() >= 1 and read_all(parts[1])[-1].value == value(1, 2)
    logs.close()
    assert log_fds(tmp_path) == 0 and len(logs.handles) == 0
    reopened = LogManager(tmp_path, small_config, clock=clock, max_open_segments=2)
    assert [r.value for r in read_all(reopened.logs[("t", 9)])][-1] == value(9, 2)
    assert reopened.logs[("t", 0)].log_end_offset == 30
    assert log_fds(tmp_path) <= 2


def test_segment_files_unused_for_a_while_are_closed(tmp_path, small_config, clock):
    logs = LogManager(tmp_path, small_config, clock=clock, timer=clock)
    busy, idle = logs.get_or_create("busy", 0), logs.get_or_create("idle", 0)
    idle.append_as_leader(batch_of([b"x"]), 0)
    clock.advance(logs.handles.idle_ms - 1000)
    busy.append_as_leader(batch_of([b"y"]), 0)
    assert log_fds(tmp_path) == 2
    clock.advance(1000)
    assert logs.close_idle_segments() == 1
    assert log_fds(tmp_path) == 1
    assert [r.value for r in read_all(idle)] == [b"x"]  # opened again on use
    assert log_fds(tmp_path) == 2
    logs.close()
