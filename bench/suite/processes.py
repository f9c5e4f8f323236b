"""Peer server processes (redis-server, nats-server, iperf3, the gRPC ceiling
server) started by the suite, each in its own temp dir, and stopped by PID.

Every process started is recorded (name, pid, command, how it ended) so that
results.json can show that none was left behind.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence

from devcluster.local_processes import wait_until


def missing(program: str, modules: Mapping[str, str] = {}) -> Optional[str]:  # noqa: B006 - read only
    """Why a peer cannot run here (its Debian program, or a Python module by its pip name), or None."""
    if shutil.which(program) is None:
        return f"{program} is not installed (Debian: apt-get install {program})"
    for module, package in modules.items():
        if importlib.util.find_spec(module) is None:
            return f"{package} is not installed (pip install -e '.[bench]')"
    return None


def py_spy() -> str:
    """py-spy for the benches' profiles: the one on PATH, else the venv's (bench-deps installs it)."""
    return shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")


@dataclass
class Started:
    name: str
    pid: int
    command: list[str]
    popen: subprocess.Popen = field(repr=False)
    log_path: Path
    exit_code: Optional[int] = None
    stopped_by: Optional[str] = None  # "exited" | "SIGTERM" | "SIGKILL"

    def record(self) -> dict:
        return {"name": self.name, "pid": self.pid, "command": self.command,
                "exit_code": self.exit_code, "stopped_by": self.stopped_by}


class PeerProcesses:
    """Starts processes and temp dirs; close() stops every one still running
    (SIGTERM, then SIGKILL) and removes the dirs, also after a failure."""

    stop_timeout_s = 10.0

    def __init__(self, prefix: str = "kraftlog-bench-") -> None:
        self.root = Path(tempfile.mkdtemp(prefix=prefix))
        self.started: list[Started] = []
        self.directories: list[Path] = [self.root]

    def directory(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def start(self, name: str, command: Sequence[str], cwd: Optional[Path] = None,
              env: Optional[dict] = None) -> Started:
        log_path = self.root / f"{name}-{len(self.started)}.log"  # one per start: a restart's log starts empty
        with open(log_path, "wb") as log:
            popen = subprocess.Popen(list(command), cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        started = Started(name, popen.pid, list(command), popen, log_path)
        self.started.append(started)
        return started

    def log_tail(self, started: Started, lines: int = 20) -> str:
        return "\n".join(started.log_path.read_text(errors="replace").splitlines()[-lines:])

    def wait_listening(self, started: Started, port: int, timeout: float = 30.0) -> None:
        """Until something accepts on 127.0.0.1:port; fails early (with its log) if the process died."""
        def ready() -> bool:
            if started.popen.poll() is not None:
                raise RuntimeError(f"{started.name} exited with {started.popen.returncode}:\n{self.log_tail(started)}")
            with socket.socket() as s:
                s.settimeout(0.5)
                return s.connect_ex(("127.0.0.1", port)) == 0
        wait_until(ready, timeout, f"{started.name} listening on {port}", interval=0.05)

    def wait_logged(self, started: Started, text: str, timeout: float = 30.0) -> None:
        """Until the process wrote `text` to its log (for a server that a probing connection would disturb)."""
        def logged() -> bool:
            if started.popen.poll() is not None:
                raise RuntimeError(f"{started.name} exited with {started.popen.returncode}:\n{self.log_tail(started)}")
            return text in started.log_path.read_text(errors="replace")
        wait_until(logged, timeout, f"{started.name} saying {text!r}", interval=0.05)

    def stop(self, started: Started) -> None:
        if started.stopped_by is not None:
            return
        code = started.popen.poll()
        if code is not None:
            started.exit_code, started.stopped_by = code, "exited"
            return
        os.kill(started.pid, signal.SIGTERM)
        try:
            started.exit_code, started.stopped_by = started.popen.wait(self.stop_timeout_s), "SIGTERM"
        except subprocess.TimeoutExpired:
            os.kill(started.pid, signal.SIGKILL)
            started.exit_code, started.stopped_by = started.popen.wait(), "SIGKILL"

    def close(self) -> None:
        for started in reversed(self.started):
            try:
                self.stop(started)
            except ProcessLookupError:
                started.exit_code, started.stopped_by = started.popen.wait(), "exited"
        for directory in self.directories:
            shutil.rmtree(directory, ignore_errors=True)

    def records(self) -> list[dict]:
        return [s.record() for s in self.started]

    def __enter__(self) -> "PeerProcesses":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

