"""`python -m kraftlog ARGS` as a real process of its own, without paying the
CLI's imports (typer, gRPC, the client: about 0.6 s of CPU a call) each time.

The CLI tests call the command line hundreds of times. A server process
(`python -m tests.cli_process SOCKET`) imports the CLI's modules once and
then, per call, forks: a small manager process, which forks the call's
process and reports its pid and exit status. The call's process is a fresh
process from there on: its own stdin, stdout and stderr (files), argv,
environment and working directory; it runs `kraftlog`'s `__main__` as
`python -m kraftlog` does (runpy), and exits through the interpreter's
normal shutdown (atexit, non-daemon threads joined, buffers flushed), so
its exit status, output and any traceback are what a subprocess gives.
Nothing the CLI registers or configures at run time is shared: commands are
registered by `kraftlog.cli.main` in the call's process, `random` is
reseeded at fork (CPython's own at-fork hook). What is the server's: the
interpreter's start-up settings (PYTHON* variables, -X options) and the
modules below, imported once with the environment of the first call.

The server stops when the process that started it closes its stdin (at
exit, or killed), and `close()` stops it at once; its calls are stopped by
pid when their timeout passes. `python -m kraftlog` itself still runs from
scratch in the tests that start the CLI with Popen (console and signal
tests) and in tests/kraftlog/test_cli_registry.py.
"""
from __future__ import annotations

import atexit
import importlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

# The modules the server imports ahead (registering nothing): what the admin,
# console, group and transaction commands load.
PRELOAD = ("kraftlog.cli", "kraftlog.commands.topics", "kraftlog.commands.configs", "kraftlog.commands.acls",
           "kraftlog.commands.elections", "kraftlog.commands.groups", "kraftlog.commands.transactions",
           "kraftlog.commands.console", "kraftlog.commands.cluster", "kraftlog.commands.quorum",
           "kraftlog.commands.perf",
           # what typer and gRPC import at their first parse and first channel
           "typer._adapters", "grpc._channel", "grpc.experimental")
START_TIMEOUT_S = 120.0
REPO = Path(__file__).resolve().parents[1]


# --- the server (its own process) --------------------------------------------------------


def _serve(path: str) -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # managers are reaped by the kernel
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        ready, _, _ = select.select([listener, sys.stdin.fileno()], [], [])
        if sys.stdin.fileno() in ready:  # the starting process closed our stdin (or died): stop
            listener.close()
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)
            return
        connection, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the manager waits for its call
            _manage(connection)  # returns only in the call's process
            return
        connection.close()


def _manage(connection: socket.socket) -> None:
    """In the manager: fork the call's process, report its pid and then its exit status."""
    request = json.loads(_read_all(connection))
    pid = os.fork()
    if pid == 0:
        connection.close()
        _become(request)
        return
    try:
        connection.sendall(b"%d\n" % pid)
        _, status = os.waitpid(pid, 0)
        connection.sendall(b"%d\n" % os.waitstatus_to_exitcode(status))
    finally:
        os._exit(0)


def _become(request: Mapping[str, Any]) -> None:
    """In the call's process: its files, argv, environment and directory; then `python -m kraftlog`.
    Its SystemExit unwinds to the interpreter, which exits as any process does."""
    os.chdir(request["cwd"])
    for fd, name, flags in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY), (2, "stderr", os.O_WRONLY)):
        opened = os.open(request[name], flags)
        os.dup2(opened, fd)
        os.close(opened)
    os.environ.clear()
    os.environ.update(request["env"])
    import runpy

    sys.argv = ["-m", *request["args"]]  # runpy puts kraftlog/__main__.py first, as `-m` does
    runpy.run_module("kraftlog", run_name="__main__", alter_sys=True)


def _read_all(connection: socket.socket) -> bytes:
    chunks = []
    while chunk := connection.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


# --- the client (the test process) --------------------------------------------------------


class CliServer:
    def __init__(self) -> None:
        self._directory = tempfile.mkdtemp(prefix="kraftlog-cli-")
        self.path = os.path.join(self._directory, "server.sock")
        self._process = subprocess.Popen([sys.executable, "-m", "tests.cli_process", self.path], cwd=REPO,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        ready, _, _ = select.select([self._process.stdout], [], [], START_TIMEOUT_S)
        line = self._process.stdout.readline() if ready else b""  # type: ignore[union-attr]
        if line != b"ready\n":
            self.close()
            raise RuntimeError(f"the CLI server did not start (exit {self._process.poll()})")

    def run(self, args: Sequence[str], env: Mapping[str, str], stdin: str, timeout: float
            ) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory(dir=self._directory) as files:
            paths = {name: os.path.join(files, name) for name in ("stdin", "stdout", "stderr")}
            Path(paths["stdin"]).write_text(stdin)
            Path(paths["stdout"]).touch()
            Path(paths["stderr"]).touch()
            request = {"args": list(args), "env": dict(env), "cwd": os.getcwd(), **paths}
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                connection.connect(self.path)
                connection.sendall(json.dumps(request).encode())
                connection.shutdown(socket.SHUT_WR)
                deadline = time.monotonic() + timeout
                answer = b""
                try:
                    while answer.count(b"\n") < 2:
                        connection.settimeout(max(deadline - time.monotonic(), 0.001))
                        if not (chunk := connection.recv(64)):
                            break
                        answer += chunk
                except socket.timeout:
                    if answer.count(b"\n") >= 1:
                        _kill(int(answer.split(b"\n")[0]))
                    raise subprocess.TimeoutExpired(["kraftlog", *args], timeout) from None
            lines = answer.split(b"\n")
            if len(lines) < 3:
                raise RuntimeError(f"the CLI server answered {answer!r} for {list(args)}")
            return subprocess.CompletedProcess(["kraftlog", *args], int(lines[1]),
                                               Path(paths["stdout"]).read_text(), Path(paths["stderr"]).read_text())

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.stdin.close()  # type: ignore[union-attr]
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process.stdout.close()  # type: ignore[union-attr]
        shutil.rmtree(self._directory, ignore_errors=True)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


_server: Optional[CliServer] = None
_lock = threading.Lock()


def run_cli(args: Sequence[str], env: Mapping[str, str], stdin: str = "", timeout: float = 180.0
            ) -> subprocess.CompletedProcess:
    """`python -m kraftlog ARGS` with this environment and input: exit status, stdout and stderr.
    The server starts at the first call and stops when this process exits. With
    KRAFTLOG_TEST_CLI=subprocess in the environment every call is `python -m kraftlog` from scratch
    (to compare the two)."""
    global _server
    if os.environ.get("KRAFTLOG_TEST_CLI") == "subprocess":
        return subprocess.run([sys.executable, "-m", "kraftlog", *args], input=stdin, capture_output=True,
                              text=True, env=env, timeout=timeout)
    with _lock:
        if _server is None:
            _server = CliServer()
            atexit.register(_server.close)
        server = _server
    return server.run(args, env, stdin, timeout)


if __name__ == "__main__":
    _serve(sys.argv[1])
