"""The testbed's disk fault layer (partition_log/disk_faults.py) under a real
Log: EIO and ENOSPC on write and fsync, a short write, a torn write at a
crash, a flipped byte, and a power loss that cuts files to what was fsynced."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from kafka_protocol.errors import KafkaStorageError
from partition_log import disk_faults as df
from partition_log.checkpoint import write_atomically
from partition_log.config import LogConfig
from partition_log.log import Log

from .conftest import batch_of, read_all

CONFIG = LogConfig(segment_bytes=4096, index_interval_bytes=256, segment_index_bytes=4096)


@pytest.fixture
def layer(tmp_path):
    root, control = tmp_path / "data", tmp_path / "control"
    root.mkdir()
    installed = df.install(control, [root])
    try:
        yield installed, root, control
    finally:
        df.uninstall()


def append(log, n, start=0):
    for i in range(start, start + n):
        log.append_as_leader(batch_of([b"v-%04d" % i]), 0)


def test_power_loss_cuts_the_log_back_to_its_last_flush(layer):
    _, root, control = layer
    log = Log(root / "t-0", CONFIG)
    append(log, 40)  # several segments
    log.flush()
    append(log, 30, 40)  # a new segment among them, never fsynced
    assert log.log_end_offset == 70
    for seg in log.segments:  # as a kill leaves it: nothing more written
        seg.close()
    cuts = df.power_loss(control)
    assert cuts, "the unflushed tail must be cut"
    df.uninstall()
    reopened = Log(root / "t-0", CONFIG, recovery_point=40)
    assert reopened.log_end_offset == 40
    assert [r.value for r in read_all(reopened)] == [b"v-%04d" % i for i in range(40)]
    reopened.close()


def test_a_checkpoint_survives_and_an_unsynced_file_goes(layer):
    _, root, control = layer
    write_atomically(root / "cp", b"kept")
    fd = os.open(root / "scratch", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"never synced")
    os.close(fd)
    cuts = df.power_loss(control)
    assert (root / "cp").read_bytes() == b"kept"
    assert not (root / "scratch").exists()
    assert [c[0] for c in cuts] == [str(root / "scratch")]


def test_eio_on_fsync_fails_and_a_retry_makes_nothing_durable(layer):
    _, root, control = layer
    log = Log(root / "t-0", CONFIG)
    append(log, 3)
    log.flush()
    append(log, 3, 3)
    df.write_rules(control, [df.Rule("fsync", "EIO", path="t-0", times=1)])
    with pytest.raises(KafkaStorageError) as failed:
        log.flush()
    assert "Input/output error" in str(failed.value) and log.dir_failure.offline
    with pytest.raises(KafkaStorageError):  # the log never retries the fsync (nor appends, nor serves)
        log.flush()
    with pytest.raises(KafkaStorageError):
        log.read(0, 1 << 20)
    os.fsync(log.active_segment.fd)  # a retry underneath "succeeds" (fsyncgate) ...
    log.close()
    df.power_loss(control)
    df.uninstall()
    reopened = Log(root / "t-0", CONFIG, recovery_point=3)
    assert reopened.log_end_offset == 3  # ... and the tail is still lost
    reopened.close()


@pytest.mark.parametrize("mode,code", [("error", "EIO"), ("error", "ENOSPC"), ("short", "ENOSPC")])
def test_a_failed_append_leaves_no_partial_batch(layer, mode, code):
    _, root, control = layer
    log = Log(root / "t-0", CONFIG)
    append(log, 5)
    size = log.size_in_bytes
    df.write_rules(control, [df.Rule("write", code, path="t-0", times=1, mode=mode)])
    with pytest.raises(KafkaStorageError):
        append(log, 1, 5)
    assert log.log_end_offset == 5 and log.size_in_bytes == size
    assert os.path.getsize(log.active_segment.log_path) == log.active_segment.size
    assert log.dir_failure.offline  # KIP-112: the directory is offline ...
    assert df.injected(control) == 1  # the journal says the fault was injected, once
    log.close()
    reopened = Log(root / "t-0", CONFIG)  # ... and a restart finds whole batches only
    assert [r.value for r in read_all(reopened)] == [b"v-%04d" % i for i in range(5)]
    reopened.close()


def test_a_torn_write_at_a_crash_is_cut_by_recovery(tmp_path):
    root, control = tmp_path / "data", tmp_path / "control"
    child = textwrap.dedent(f"""
        from pathlib import Path
        from partition_log import disk_faults as df
        from partition_log.log import Log
        from tests.partition_log.test_disk_faults import CONFIG, append
        df.install(Path({str(control)!r}), [Path({str(root)!r})])
        log = Log(Path({str(root)!r}) / "t-0", CONFIG)
        append(log, 5)
        df.write_rules(Path({str(control)!r}), [df.Rule("write", "EIO", path="t-0", mode="torn")])
        append(log, 1, 5)
        print("not killed")
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == -signal.SIGKILL, done.stderr
    log = Log(root / "t-0", CONFIG)  # no clean-shutdown: recovery from offset 0
    assert log.log_end_offset == 5
    assert log.load_report.truncated_bytes > 0
    log.close()


def test_a_flipped_byte_is_caught_by_recovery(tmp_path):
    log = Log(tmp_path / "t-0", CONFIG)
    append(log, 6)
    third = list(log.active_segment.iter_batch_positions())[3]
    log.close()
    df.flip_byte(log.active_segment.log_path, third.position + third.header.size - 1)  # inside the CRC'd body
    recovered = Log(tmp_path / "t-0", CONFIG)
    assert recovered.log_end_offset == 3
    assert "CRC" in " ".join(recovered.load_report.reasons).upper() or recovered.load_report.truncated_bytes
    recovered.close()


def test_bad_rules_are_refused_and_bad_files_inject_nothing(layer):
    installed, root, control = layer
    for raw in ({"op": "read"}, {"op": "write", "errno": "EPERM"}, {"op": "fsync", "mode": "torn"},
                {"op": "write", "mode": "hang"}):
        with pytest.raises((ValueError, KeyError)):
            df.Rule.parse(raw)
    (control / df.FAULTS_FILE).write_text("{not json")
    fd = os.open(root / "f", os.O_WRONLY | os.O_CREAT, 0o644)
    assert os.write(fd, b"x") == 1
    os.fsync(fd)
    os.close(fd)


def test_nothing_is_wrapped_without_the_variable(monkeypatch):
    monkeypatch.delenv(df.ENV, raising=False)
    assert df.install_from_env(["/nonexistent"]) is None
    assert os.fsync is df._real["fsync"]


def test_paths_outside_the_roots_are_not_touched(layer, tmp_path):
    _, _root, control = layer
    df.write_rules(control, [df.Rule("write", "EIO")])
    other = tmp_path / "elsewhere"
    fd = os.open(other, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        assert os.write(fd, b"fine") == 4
    finally:
        os.close(fd)
    assert str(other) not in df.durable_sizes(control)  # nor journaled it
