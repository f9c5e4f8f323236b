"""Raft fsyncs before it acknowledges: every controller of a quorum loses
power at once (killed, each file cut back to what it had fsynced, by the
testbed's disk fault layer), and every append the quorum acknowledged is
still committed, at its offset, once the quorum is back.

The quorum's promise rests on two fsyncs (metadata_quorum/node.py, ready.py):
the quorum-state before a vote or an epoch acknowledgement leaves, and the
log before a follower reports an offset or a leader counts its own. To show
the cut is real, the log's fsyncs then hang on every voter (a dead disk)
while one more append is under way: every voter holds it written, none
fsynced, none acknowledged it, and the power loss takes it from all."""
from __future__ import annotations

import os
import threading
from pathlib import Path

from chaos.disk_nemesis import control_folder, env_prefix
from devcluster.local_processes import wait_until
from devcluster.local_quorum import LocalQuorum
from partition_log import disk_faults as df

FAST = {"controller.quorum.election.timeout.ms": 500, "controller.quorum.fetch.timeout.ms": 1000}
SEGMENTS = "__cluster_metadata-0/0000"  # the metadata log's segment files (not quorum-state, not checkpoints)


def unsynced(control: Path) -> bool:
    """A metadata log segment holds bytes its node never fsynced."""
    for path, size in df.durable_sizes(control).items():
        if SEGMENTS in path and os.path.exists(path) and (size is None or os.path.getsize(path) > size):
            return True
    return False


def test_every_acknowledged_append_survives_a_power_loss_of_every_voter(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    with LocalQuorum(tmp_path / "q", 3, FAST) as q:
        q.command_prefix = env_prefix(disk)
        q.start()
        q.wait_for_leader(timeout=60)
        acked = []
        for i in range(8):
            _base, last = q.client.append([b"r-%02d" % i], timeout=15)
            acked.append((last, b"r-%02d" % i))
        for node in q.plans:
            df.write_rules(control_folder(disk, node), [df.Rule("fsync", "EIO", path=SEGMENTS, mode="hang")])
        pending = threading.Thread(target=lambda: _try_append(q), daemon=True)
        pending.start()
        wait_until(lambda: all(unsynced(control_folder(disk, n)) for n in q.plans), 30,
                   "the unacknowledged append written, not fsynced, on every voter")
        for node in list(q.pids):
            q.kill(node)
        pending.join(30)  # its client gave up (no voter answers): it cannot send it again after the restart
        assert not pending.is_alive()
        for node in q.plans:
            cut = df.power_loss(control_folder(disk, node))
            assert any(SEGMENTS in path for path, _before, _after in cut), (node, cut)
            df.write_rules(control_folder(disk, node), [])
        q.start()
        q.wait_for_leader(timeout=60)
        wait_until(lambda: all(q.applied(n) == acked for n in q.plans), 30,
                   "every acknowledged append, and nothing else, on every voter")


def _try_append(q: LocalQuorum) -> None:
    try:
        q.client.append([b"never-acknowledged"], timeout=3)
    except Exception:  # noqa: BLE001 - its outcome is unknown to the client: the voters die under it
        pass
