"""Processes forked from one pre-imported parent, for the local clusters of tests (and the CLI tests).

A broker's start is mostly imports (gRPC, protobuf, our own modules, numba):
about 1.9 s of CPU, a controller's about 0.6 s, and the test suite starts
hundreds of nodes. A fork server (`python -m devcluster.fork_server SOCKET
MODULE...`, one per module list and test process) imports the modules once;
per process it forks a small manager, which forks the process and reports
its pid and then its exit status. The process is one of its own from there
on: (for a node) a new session, its own stdin, stdout and stderr (files),
argv, environment and working directory; it runs `kraftlog`'s `__main__` as
`python -m kraftlog ARGS` does (runpy) and exits through the interpreter's
normal shutdown (atexit, non-daemon threads joined, buffers flushed), so
its exit status, output and any traceback are what a subprocess gives.
`random` is reseeded at fork (CPython's own at-fork hook). What is the
server's: the interpreter's start-up settings (PYTHON* variables, -X
options), the preloaded modules (imported with the environment of the
first start), and OpenBLAS's thread count (one; see ForkServer).

gRPC and fork: gRPC's core forbids a fork once its threads run. The server
only imports; it never makes a channel or a server, and before every fork
it checks that its process has exactly one thread (/proc/self/task), so a
module that started a thread at import fails the start instead of
corrupting a process.

A process stays a zombie of its manager until the starter has read its
status and released it (`ForkedProcess.release`), as a child stays a
zombie of its parent until waited for: its pid cannot be reused while the
starter may still signal it. The server stops when the starting process
closes its stdin (at exit, or killed), a manager when its process exited
and the starter's connection closed. The server reaps its managers, so a
started process's CPU time counts in the starter's children's rusage.
"""
from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

# What `kraftlog server` loads for a controller and for a broker (the broker's stack is imported
# only where a broker is made), and what gRPC imports when its first server starts.
NODE_PRELOAD = ("kraftlog.cli", "kraftlog.commands.server", "kraftlog_server.server", "broker.server",
                "broker.kafka_api.listener", "grpc.aio", "grpc.experimental")
# As `kraftlog server` does before its imports: a node never draws a hypothesis strategy.
NODE_BLOCKED = ("hypothesis",)
BLOCK = "!"  # a module name so marked on the server's command line is made unimportable
START_TIMEOUT_S = 120.0
REAP_INTERVAL_S = 0.5
REPO = Path(__file__).resolve().parents[1]


# --- the server (its own process) --------------------------------------------------------


def _serve(path: str, modules: Sequence[str]) -> None:
    for name in modules:
        if name.startswith(BLOCK):
            sys.modules.setdefault(name[len(BLOCK):], None)  # type: ignore[arg-type]
        else:
            importlib.import_module(name)
    # The preloaded modules' objects live as long as any process: out of the collector's sight, a
    # started process's collections neither scan them nor copy their pages (copy-on-write) by
    # touching their reference counts.
    gc.freeze()
    _check_single_threaded()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        # Managers are reaped here (not left to the kernel with SIGCHLD ignored): so the CPU time of
        # every process started reaches the starting process's children's rusage, as a child's would.
        while _reap_one():
            pass
        ready, _, _ = select.select([listener, sys.stdin.fileno()], [], [], REAP_INTERVAL_S)
        if sys.stdin.fileno() in ready:  # the starting process closed our stdin (or died): stop
            listener.close()
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)
            return
        if listener not in ready:
            continue
        connection, _ = listener.accept()
        _check_single_threaded()
        if os.fork() == 0:
            listener.close()
            _manage(connection)  # returns only in the started process
            return
        connection.close()


def _reap_one() -> bool:
    try:
        return os.waitpid(-1, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return False


def _check_single_threaded() -> None:
    threads = os.listdir("/proc/self/task")
    if len(threads) != 1 or threading.active_count() != 1:
        raise RuntimeError(f"the fork server runs {len(threads)} threads after its imports: forking now "
                           "would copy a gRPC (or other) thread's state into every node")


def _manage(connection: socket.socket) -> None:
    """In the manager: fork the node, report its pid, then its exit status; reap it once the
    starter closed the connection (until then it stays a zombie and keeps its pid)."""
    request = json.loads(_read_line(connection))
    set_up_read, set_up_write = os.pipe()  # closed by the process once it is set up
    pid = os.fork()
    if pid == 0:
        connection.close()
        os.close(set_up_read)
        _become(request, set_up_write)
        return
    os.close(set_up_write)
    try:
        # The pid once the process has its session and files (or died trying): a starter that
        # checks the process at once (launcher.is_alive reads its stdout) finds it set up.
        os.read(set_up_read, 1)
        os.close(set_up_read)
        connection.sendall(b"%d\n" % pid)
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        connection.sendall(b"%d\n" % code)
        while connection.recv(64):  # until the starter releases the node
            pass
    except OSError:
        pass
    finally:
        try:
            os.waitpid(pid, 0)
        finally:
            os._exit(0)


def _become(request: Mapping[str, Any], set_up: int) -> None:
    """In the started process: (a node's) new session, its files, argv, environment and directory; then
    `python -m kraftlog ARGS`. Its SystemExit unwinds to the interpreter, which exits as any process does."""
    if request["session"]:
        os.setsid()
    os.chdir(request["cwd"])
    for fd, (name, flags) in enumerate(request["files"]):
        opened = os.open(name, flags)
        os.dup2(opened, fd)
        os.close(opened)
    os.environ.clear()
    os.environ.update(request["env"])
    os.close(set_up)  # the manager may tell the pid now
    import runpy

    sys.argv = ["-m", *request["args"]]  # runpy puts kraftlog/__main__.py first, as `-m` does
    runpy.run_module("kraftlog", run_name="__main__", alter_sys=True)


def _read_line(connection: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


# --- the client (the starting process) --------------------------------------------------------


class ForkedProcess:
    """A node the fork server started: its pid, and its exit status as Popen's poll and wait give it."""

    def __init__(self, pid: int, connection: socket.socket) -> None:
        self.pid = pid
        self.returncode: Optional[int] = None
        self._connection = connection
        self._answer = b""

    def poll(self) -> Optional[int]:
        try:
            return self.wait(0.0)
        except subprocess.TimeoutExpired:
            return None

    def wait(self, timeout: Optional[float] = None) -> int:
        """The exit status; subprocess.TimeoutExpired if it still runs after `timeout` seconds (None: wait on)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            ready, _, _ = select.select([self._connection], [], [], left)
            if not ready:
                raise subprocess.TimeoutExpired(f"node pid {self.pid}", timeout or 0.0)
            chunk = self._connection.recv(64)
            self._answer += chunk
            if self._answer.endswith(b"\n"):
                self.returncode = int(self._answer)
            elif not chunk:
                raise RuntimeError(f"the fork server's manager of pid {self.pid} went away")
        return self.returncode

    def release(self) -> None:
        """The status is read (or no longer wanted): the manager may reap the node."""
        self._connection.close()


class ForkServer:
    def __init__(self, preload: Sequence[str], blocked: Sequence[str] = ()) -> None:
        """A server that imports `preload` (with `blocked` made unimportable first)."""
        self._directory = tempfile.mkdtemp(prefix="kraftlog-fork-")
        self.path = os.path.join(self._directory, "server.sock")
        # numpy's OpenBLAS starts a pool of threads when it loads (numba imports numpy): one thread
        # here keeps the server single-threaded. Nodes and the CLI do no linear algebra.
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
        self.environment = dict(os.environ)  # what the preloaded modules saw at their import
        command = [sys.executable, "-m", "devcluster.fork_server", self.path, *(BLOCK + b for b in blocked), *preload]
        self._process = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._ready = False  # waited for at the first start: the imports overlap with the starter's work

    def _wait_ready(self) -> None:
        if self._ready:
            return
        ready, _, _ = select.select([self._process.stdout], [], [], START_TIMEOUT_S)
        line = self._process.stdout.readline() if ready else b""  # type: ignore[union-attr]
        if line != b"ready\n":
            self.close()
            raise RuntimeError(f"the fork server did not start (exit {self._process.poll()})")
        self._ready = True

    def start(self, args: Sequence[str], files: Sequence[tuple[str, int]], env: Mapping[str, str],
              session: bool = False) -> ForkedProcess:
        """`python -m kraftlog ARGS` with fds 0, 1, 2 opened as `files` (path, os.open flags), in a
        new session if `session`, in this process's working directory."""
        self._wait_ready()
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(self.path)
            request = {"args": list(args), "files": [list(f) for f in files], "env": dict(env), "cwd": os.getcwd(),
                       "session": session}
            connection.sendall(json.dumps(request).encode() + b"\n")
            connection.settimeout(START_TIMEOUT_S)
            line = _read_line(connection)
            connection.settimeout(None)
            if not line.endswith(b"\n"):
                raise RuntimeError(f"the fork server answered {line!r} for {list(args)}")
        except BaseException:
            connection.close()
            raise
        return ForkedProcess(int(line), connection)

    def close(self) -> None:
        if self._process.poll() is None and not self._ready:
            self._process.kill()  # still importing (or stuck): nothing of its own to clean up yet
        if self._process.poll() is None:
            self._process.stdin.close()  # type: ignore[union-attr]
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process.stdout.close()  # type: ignore[union-attr]
        shutil.rmtree(self._directory, ignore_errors=True)


_servers: dict[tuple[tuple[str, ...], tuple[str, ...]], ForkServer] = {}
_lock = threading.Lock()


def shared_server(preload: Sequence[str] = NODE_PRELOAD, blocked: Sequence[str] = NODE_BLOCKED) -> ForkServer:
    """This process's fork server for these modules, started at the first call (which does not wait
    for its imports: the first start does) and stopped when the process exits."""
    key = (tuple(preload), tuple(blocked))
    with _lock:
        server = _servers.get(key)
        if server is None:
            server = _servers[key] = ForkServer(preload, blocked)
            atexit.register(server.close)
        return server


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2:])
