"""A full disk: the append is refused with KAFKA_STORAGE_ERROR, the file still
ends at a batch boundary, the directory goes offline (KIP-112) and everything
written before is there when the log opens again."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from partition_log.config import LogConfig
from kafka_protocol.errors import KafkaStorageError
from partition_log.log import Log


@pytest.fixture
def tiny_disk():
    if os.geteuid() != 0:
        pytest.skip("mounting a tiny tmpfs to fill needs root")
    mount_point = Path(tempfile.mkdtemp(prefix="kraftlog-fulldisk-"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        mount_point.rmdir()
        pytest.skip(f"cannot mount tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        # a failed test may leave files open: detach lazily so the mount always goes
        if subprocess.run(["umount", str(mount_point)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mount_point)], check=True)
        mount_point.rmdir()


def test_full_disk_refuses_the_append_and_loses_nothing(tiny_disk, clock, make_batch, read_log):
    config = LogConfig(segment_bytes=10 * 1024 * 1024, segment_index_bytes=4096)
    log = Log(tiny_disk / "full-0", config, clock=clock)
    accepted = 0
    with pytest.raises(KafkaStorageError) as info:
        for i in range(1000):
            log.append_as_leader(make_batch([os.urandom(1000)] * 10), 0)
            accepted += 10
    assert info.value.name == "KAFKA_STORAGE_ERROR"
    assert accepted > 0
    assert log.log_end_offset == accepted
    assert os.path.getsize(log.active_segment.log_path) == log.active_segment.size
    # KIP-112: the directory is offline now (log_dir_failure.py); nothing more is read or written
    assert log.dir_failure.offline
    with pytest.raises(KafkaStorageError):
        read_log(log)
    log.close()
    reopened = Log(tiny_disk / "full-0", config, clock=clock)
    assert reopened.log_end_offset == accepted
    assert reopened.load_report.truncated_bytes == 0
    assert [r.offset for r in read_log(reopened)] == list(range(accepted))
    reopened.close()
