"""Throwaway local server processes for tests, demos and benchmarks.

`LocalProcesses` writes a cluster file (the caller's spec, on ports free at
the time), plans it and starts its nodes through the launcher (the same
code as `kraftlog cluster up`), and offers what fault tests need: kill -9,
SIGTERM, SIGSTOP/SIGCONT, restart, waiting for an exit. Every process it
starts is stopped by PID in `close()` (use it as a context manager), also
when the test failed. LocalQuorum (controllers only) and LocalCluster
(controllers and brokers) add the view over gRPC.
"""
from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, TypeVar

import yaml

from . import launcher

T = TypeVar("T")


def free_ports(count: int) -> list[int]:
    """Ports nobody listens on right now (bound to port 0, then released together)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def wait_until(predicate: Callable[[], Optional[T]], timeout: float, what: str, interval: float = 0.05) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what}: not within {timeout:g}s")
        time.sleep(interval)


class LocalProcesses:
    # How long stop() waits after SIGTERM before SIGKILL.
    stop_timeout_s = 30.0

    def __init__(self, directory: Path, spec: Mapping[str, Any],
                 command_prefix: Callable[[int], Sequence[str]] = lambda node_id: ()) -> None:
        """`spec`: a cluster file's content (cluster.id, defaults, nodes).
        `command_prefix(node_id)`: what a node's command runs through (the
        chaos testbed puts each node in its own network namespace)."""
        self.command_prefix = command_prefix
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.cluster_file = self.directory / "cluster.yaml"
        self.cluster_file.write_text(yaml.safe_dump(dict(spec), sort_keys=False))
        self.plans = {p.node_id: p for p in launcher.plan_cluster(self.cluster_file, self.directory / "data")}
        self.pids: dict[int, int] = {}

    def start(self, *node_ids: int) -> None:
        for node_id in node_ids or tuple(self.plans):
            self.pids[node_id] = launcher.start_node(self.plans[node_id], self.command_prefix(node_id))

    def alive(self, node_id: int) -> bool:
        """The node's process has not exited (it is our child: waitpid knows)."""
        pid = self.pids.get(node_id)
        return pid is not None and os.waitpid(pid, os.WNOHANG)[0] == 0

    def signal(self, node_id: int, sig: signal.Signals) -> None:
        os.kill(self.pids[node_id], sig)

    def pause(self, node_id: int) -> None:
        self.signal(node_id, signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        self.signal(node_id, signal.SIGCONT)

    def kill(self, node_id: int) -> None:
        """kill -9, and wait until the process is gone."""
        pid = self.pids.pop(node_id)
        os.kill(pid, signal.SIGKILL)
        _reap(pid)

    def stop(self, node_id: int, timeout: Optional[float] = None) -> int:
        """SIGTERM, wait; the exit status. SIGKILL if it outlives `timeout` (default: stop_timeout_s)."""
        pid = self.pids.pop(node_id)
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + (self.stop_timeout_s if timeout is None else timeout)
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.02)
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)

    def wait_exit(self, node_id: int, timeout: float) -> int:
        """Wait for a node to exit by itself; its exit status."""
        pid = self.pids[node_id]
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                del self.pids[node_id]
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() >= deadline:
                raise TimeoutError(f"node {node_id} still runs after {timeout:g}s")
            time.sleep(0.05)

    def log_text(self, node_id: int) -> str:
        return self.plans[node_id].log_path.read_text(errors="replace")

    def close(self) -> None:
        """Kill every process still running (a paused one is resumed first, so it can die)."""
        for node_id in list(self.pids):
            pid = self.pids.pop(node_id)
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    break
            _reap(pid)

    def __enter__(self):  # type: ignore[no-untyped-def]
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
