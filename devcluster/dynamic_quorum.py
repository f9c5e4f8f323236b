"""A dynamic controller quorum (KIP-853) of local processes, for tests and the
controller-replacement benchmark.

`controllers` controllers formatted with one `--initial-controllers` list and
found through `controller.quorum.bootstrap.servers` (no static voters), plus
`spares` more formatted to join. Nodes are started as `python -m kraftlog
server` processes with this tree on PYTHONPATH; `close()` stops each by PID
(SIGTERM, then SIGKILL) and removes the directory unless it was given.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

import grpc
import yaml

from client.admin import describe_quorum
from kraftlog_server.server_config import ServerConfig
from kraftlog_server.storage_format import format_storage, new_directory_id

from .local_processes import free_ports

ROOT = Path(__file__).resolve().parents[1]


class LocalDynamicQuorum:
    def __init__(self, cluster_id: str, controllers: int = 3, spares: int = 1,
                 directory: Optional[Path] = None, properties: Optional[dict[str, Any]] = None) -> None:
        self._owned = directory is None
        self.base = Path(tempfile.mkdtemp(prefix="dynamic-quorum-")) if directory is None else Path(directory)
        self.node_ids = list(range(1, controllers + spares + 1))
        self.ports = dict(zip(self.node_ids, free_ports(len(self.node_ids))))
        self.bootstrap = ",".join(self.address(n) for n in self.node_ids[:controllers])
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.directory: dict[int, str] = {}
        for node_id in self.node_ids:
            props = {
                "node.id": node_id, "process.roles": "controller", "cluster.id": cluster_id,
                "listeners": f"CONTROLLER://{self.address(node_id)}", "controller.listener.names": "CONTROLLER",
                "controller.quorum.bootstrap.servers": self.bootstrap, "log.dirs": str(self.base / f"node-{node_id}"),
                **(properties or {}),
            }
            self.config_file(node_id).write_text(yaml.safe_dump(props))
        first = self.node_ids[:controllers]
        ids = {n: new_directory_id() for n in first}
        voters = ",".join(f"{n}@{self.address(n)}:{ids[n]}" for n in first)
        for node_id in self.node_ids:
            outcome = format_storage(ServerConfig.load(self.config_file(node_id)),
                                     initial_controllers=voters if node_id in first else None)
            assert outcome.directory_id is not None
            self.directory[node_id] = outcome.directory_id

    def stop(self, node_id: int) -> None:
        """SIGTERM, then SIGKILL after 15 s; waits for the exit."""
        proc = self.procs.pop(node_id, None)
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    def kill(self, node_id: int) -> None:
        """kill -9 (a crash); start() brings it back."""
        proc = self.procs.pop(node_id, None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)

    def pause(self, node_id: int) -> None:
        if node_id in self.procs:
            self.procs[node_id].send_signal(signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        if node_id in self.procs:
            self.procs[node_id].send_signal(signal.SIGCONT)

    def reformat(self, node_id: int) -> str:
        """A stopped node's disk wiped and formatted to join: a new replica of the same id; its directory id."""
        assert node_id not in self.procs, "stop it first"
        shutil.rmtree(self.base / f"node-{node_id}", ignore_errors=True)
        outcome = format_storage(ServerConfig.load(self.config_file(node_id)))
        assert outcome.directory_id is not None
        self.directory[node_id] = outcome.directory_id
        return outcome.directory_id

    def config_file(self, node_id: int) -> Path:
        return self.base / f"node-{node_id}.yaml"

    def address(self, node_id: int) -> str:
        return f"127.0.0.1:{self.ports[node_id]}"

    def all_addresses(self) -> str:
        return ",".join(self.address(n) for n in self.node_ids)

    def start(self, *node_ids: int) -> None:
        for node_id in node_ids or self.node_ids:
            with open(self.base / f"node-{node_id}.log", "ab") as log:
                self.procs[node_id] = subprocess.Popen(
                    [sys.executable, "-m", "kraftlog", "server", "--config", str(self.config_file(node_id))],
                    stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)

    def describe(self, timeout: float = 20.0) -> dict[str, Any]:
        """DescribeQuorum as the leader answers it (client.admin.describe_quorum)."""
        return describe_quorum(self.all_addresses(), timeout=timeout)

    def channel(self, node_id: int) -> grpc.Channel:
        return grpc.insecure_channel(self.address(node_id))

    def log_tails(self, lines: int = 25) -> str:
        out = []
        for log in sorted(self.base.glob("node-*.log")):
            text = log.read_text(errors="replace").splitlines()
            out += [f"--- {log.name}", *[line for line in text if "Traceback" not in line][-lines:]]
        return "\n".join(out)

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)  # a paused node must be able to stop
                proc.send_signal(signal.SIGTERM)
        for node_id in list(self.procs):
            self.stop(node_id)
        if self._owned:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> "LocalDynamicQuorum":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
