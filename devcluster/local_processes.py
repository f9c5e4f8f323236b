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
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, TypeVar, Union

import yaml

from . import fork_server, launcher

T = TypeVar("T")
Process = Union[subprocess.Popen, fork_server.ForkedProcess]
# KRAFTLOG_TEST_NODES=fork (tests/conftest.py sets it): nodes are forked from the fork server.
# Otherwise (bench, the demo, `KRAFTLOG_TEST_NODES=subprocess` to compare) each node is
# `python -m kraftlog server` from scratch, as `cluster up` starts it: a forked controller carries
# the broker's preloaded modules (numba among them), which a bench's RSS figure must not count.
NODES_ENV = "KRAFTLOG_TEST_NODES"


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
        self._processes: dict[int, Process] = {}

    def start(self, *node_ids: int) -> None:
        for node_id in node_ids or tuple(self.plans):
            process = self._launch(self.plans[node_id], self.command_prefix(node_id))
            self._processes[node_id] = process
            self.pids[node_id] = process.pid

    def _launch(self, plan: launcher.NodePlan, prefix: Sequence[str]) -> "Process":
        """Forked from the fork server in tests (NODES_ENV); a node behind a command prefix (in the
        testbed's namespace) or outside tests is exec'd as `cluster up` does."""
        server = fork_server.shared_server() if not prefix and os.environ.get(NODES_ENV) == "fork" else None
        # A module may read a KRAFTLOG_* variable at import (partition_log/clock.py's clock file): a
        # node whose settings differ from those the server imported with is exec'd.
        if server is None or _settings(os.environ) != _settings(server.environment):
            return launcher.launch_node(plan, prefix)
        launcher.prepare_node(plan)
        log = (str(plan.log_path), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        process = server.start(launcher.node_arguments(plan), [(os.devnull, os.O_RDONLY), log, log], os.environ,
                               session=True)
        launcher.write_pid(plan, process.pid)
        return process

    def start_missing(self) -> list[int]:
        """Start every node whose process is not running (killed, stopped, or exited by itself): a
        cluster several tests share made whole again after one left a node down. The nodes started."""
        missing = [node_id for node_id in self.plans if not self.alive(node_id)]
        if missing:
            self.start(*missing)
        return missing

    def alive(self, node_id: int) -> bool:
        """The node's process has not exited."""
        process = self._processes.get(node_id)
        return process is not None and process.poll() is None

    def signal(self, node_id: int, sig: signal.Signals) -> None:
        os.kill(self.pids[node_id], sig)

    def pause(self, node_id: int) -> None:
        self.signal(node_id, signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        self.signal(node_id, signal.SIGCONT)

    def kill(self, node_id: int) -> None:
        """kill -9, and wait until the process is gone."""
        self._end(node_id, (signal.SIGKILL,))

    def stop(self, node_id: int, timeout: Optional[float] = None) -> int:
        """SIGTERM, wait; the exit status. SIGKILL if it outlives `timeout` (default: stop_timeout_s)."""
        process = self._processes[node_id]
        self._signal(process, signal.SIGTERM)
        if _wait(process, self.stop_timeout_s if timeout is None else timeout) is None:
            self._signal(process, signal.SIGKILL)
        return self._end(node_id, ())

    def wait_exit(self, node_id: int, timeout: float) -> int:
        """Wait for a node to exit by itself; its exit status."""
        if _wait(self._processes[node_id], timeout) is None:
            raise TimeoutError(f"node {node_id} still runs after {timeout:g}s")
        return self._end(node_id, ())

    def _end(self, node_id: int, signals: Sequence[signal.Signals]) -> int:
        """Send `signals` (unless it exited already), wait for the exit, forget the process; its status."""
        process = self._processes.pop(node_id)
        del self.pids[node_id]
        try:
            for sig in signals:
                self._signal(process, sig)
            code = _wait(process, None)
        finally:
            if isinstance(process, fork_server.ForkedProcess):
                process.release()
        assert code is not None
        return code

    @staticmethod
    def _signal(process: "Process", sig: signal.Signals) -> None:
        # Not once its status is in: the pid is no longer the node's (a direct child's
        # pid is held by its zombie until waited for; a forked one's, by its manager's).
        if process.poll() is None:
            try:
                os.kill(process.pid, sig)
            except ProcessLookupError:
                pass

    def log_text(self, node_id: int) -> str:
        return self.plans[node_id].log_path.read_text(errors="replace")

    def close(self) -> None:
        """Kill every process still running (a paused one is resumed first, so it can die)."""
        for node_id in list(self._processes):
            self._end(node_id, (signal.SIGCONT, signal.SIGKILL))

    def __enter__(self):  # type: ignore[no-untyped-def]
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _settings(environment: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in environment.items() if k.startswith("KRAFTLOG_")}


def _wait(process: "Process", timeout: Optional[float]) -> Optional[int]:
    """The exit status, or None if the process still runs after `timeout` seconds (None: wait on)."""
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        return None
