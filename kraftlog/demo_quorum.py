"""The metadata quorum part of `make demo`: three controller processes.

Starts a three-controller quorum (the launcher behind `kraftlog cluster up`),
shows it with `kraftlog quorum describe`, appends records through the
leader, kills the leader with SIGKILL, and shows that a new leader took over
with every acknowledged record, then that the old leader rejoins and
catches up.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

from devcluster.local_processes import wait_until
from devcluster.local_quorum import LocalQuorum

RECORDS = 200


def describe(q: LocalQuorum) -> None:
    cli = Path(sys.executable).with_name("kraftlog")
    bootstrap = ",".join(q.addresses.values())
    subprocess.run([str(cli), "quorum", "describe", "--bootstrap-controller", bootstrap], check=True)


def main(console: Console) -> int:
    with tempfile.TemporaryDirectory(prefix="kraftlog-quorum-demo-") as workdir, LocalQuorum(Path(workdir)) as q:
        console.rule("[bold]kraftlog metadata quorum demo: three controller processes")
        started = time.monotonic()
        q.start()
        leader, epoch = q.wait_for_leader(timeout=30)
        console.print(f"node {leader} leads epoch {epoch}, elected {time.monotonic() - started:.2f}s after start")
        acked = [(q.client.append([b"before-%03d" % i])[1], b"before-%03d" % i) for i in range(RECORDS)]
        console.print(f"appended {RECORDS} records, each acknowledged once a majority had it on disk")
        describe(q)

        console.rule(f"kill -9 of the leader, node {leader}")
        killed_at = time.monotonic()
        q.kill(leader)
        acked.append((q.client.append([b"after-kill"], timeout=30)[1], b"after-kill"))
        new_leader, new_epoch = q.wait_for_leader(other_than=leader)
        console.print(f"node {new_leader} leads epoch {new_epoch}; an append committed again "
                      f"{time.monotonic() - killed_at:.2f}s after the kill")
        for node in (n for n in q.plans if n != leader):
            # A follower learns the new high watermark with its next fetch.
            wait_until(lambda: q.applied(node) == acked, 10, f"node {node} applied every record")
            console.print(f"node {node} holds all {len(acked)} acknowledged records")

        console.rule(f"node {leader} restarts from its files and catches up")
        q.start(leader)
        wait_until(lambda: q.applied(leader) == acked, 30, "the restarted node caught up")
        console.print(f"node {leader} holds all {len(acked)} records again")
        describe(q)
    return 0
