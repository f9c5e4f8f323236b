"""The disk nemesis without a cluster: its scenarios' schedules, its rules
in a node's control folder, and a power loss cutting a node's files (a
process of ours writes them through the real fault layer)."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap

from chaos.disk_nemesis import DISK_FAULTS, DiskNemesis, control_folder, env_prefix
from chaos.nemesis import SCENARIOS, schedule
from partition_log import disk_faults as df


class Processes:
    """The few process calls the disk nemesis makes, on no real cluster: what it did."""

    def __init__(self, nodes):
        self.pids = {n: 1000 + n for n in nodes}
        self.calls = []

    def kill(self, node_id):
        self.calls.append(("kill", node_id))
        del self.pids[node_id]

    def start(self, *node_ids):
        self.calls.append(("start", *node_ids))
        self.pids.update({n: 2000 + n for n in node_ids})

    def alive(self, node_id):
        return False

    def wait_exit(self, node_id, timeout):
        self.calls.append(("exited", node_id))
        del self.pids[node_id]
        return 1


def test_disk_scenarios_draw_only_disk_faults_and_are_seeded():
    for name in ("disk-eio-fsync", "disk-enospc", "disk-torn-write", "power-loss", "power-loss-durable"):
        faults = schedule(name, 7, 60)
        assert faults and {f.kind for f in faults} <= set(DISK_FAULTS) & set(SCENARIOS[name])
        assert faults == schedule(name, 7, 60)


def test_a_rule_targets_one_broker_and_its_undo_restarts_it(tmp_path):
    cluster, notes = Processes([1, 2, 3, 4]), []
    nemesis = DiskNemesis(cluster, tmp_path, [1, 2, 3, 4], [3, 4], "chaos",
                          note=lambda kind, phase, **d: notes.append((kind, phase, d)))
    details, undo = nemesis.inflict("enospc", random.Random(1), leader=None)
    [target] = details["nodes"]
    assert target in (3, 4) and details["rule"]["path"] == "/chaos-"
    assert df.Rule.parse(details["rule"]).mode == "short"
    assert (control_folder(tmp_path, target) / df.FAULTS_FILE).exists()
    # the node's layer injected the fault (its journal says so), and the node stopped
    (control_folder(tmp_path, target) / "journal-1-1.jsonl").write_text('{"e": "fault", "p": "/x/chaos-0/0.log"}\n')
    undo()
    assert cluster.calls == [("exited", target), ("start", target)]
    assert notes == [("enospc", "effect", {"nodes": [target], "hit": True, "stopped": True, "exit_status": 1})]
    assert (control_folder(tmp_path, target) / df.FAULTS_FILE).read_text() == "[]"
    # a rule never hit (the node wrote nothing there meanwhile): nothing to wait for, nothing restarted
    details, undo = nemesis.inflict("eio-fsync", random.Random(2), leader=None)
    undo()
    assert notes[-1] == ("eio-fsync", "effect", {"nodes": details["nodes"], "hit": False})
    assert len(cluster.calls) == 2


def test_power_loss_kills_every_node_and_cuts_what_was_not_fsynced(tmp_path):
    data = tmp_path / "data-1"
    data.mkdir()
    writer = textwrap.dedent(f"""
        import os
        from pathlib import Path
        from partition_log import disk_faults as df
        df.install_from_env([{str(data)!r}])
        fd = os.open({str(data / "seg")!r}, os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"synced")
        os.fsync(fd)
        os.write(fd, b"-lost")
        os.close(fd)
    """)
    prefix = env_prefix(tmp_path / "disk")(1)
    subprocess.run([*prefix, sys.executable, "-c", writer], check=True, timeout=60,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    cluster = Processes([1, 2])
    details, undo = DiskNemesis(cluster, tmp_path / "disk", [1, 2], [2], "chaos").inflict(
        "power-loss", random.Random(0), leader=2)
    assert details == {"nodes": [1, 2], "files_cut": 1, "bytes_cut": 5, "files_removed": 0}
    assert (data / "seg").read_bytes() == b"synced"
    undo()
    assert cluster.calls == [("kill", 1), ("kill", 2), ("start", 1, 2)]
