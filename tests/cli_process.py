"""`python -m kraftlog ARGS` as a real process of its own, without paying the
CLI's imports (typer, gRPC, the client: about 0.6 s of CPU a call) each time.

The CLI tests call the command line hundreds of times. Each call is forked
from a fork server (devcluster/fork_server.py, which says what a forked
process shares with the server and what is its own) that imported the
CLI's modules once: its own stdin, stdout and stderr (files), argv,
environment and working directory; `kraftlog`'s `__main__` run as `python
-m kraftlog` does, so its exit status, output and any traceback are what a
subprocess gives. Nothing the CLI registers or configures at run time is
shared: commands are registered by `kraftlog.cli.main` in the call's
process.

The server starts at the first call and stops when this process exits; a
call is stopped by pid when its timeout passes. `python -m kraftlog` itself
still runs from scratch in the tests that start the CLI with Popen (console
and signal tests) and in tests/kraftlog/test_cli_registry.py.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

from devcluster import fork_server

# The modules the server imports ahead (registering nothing): what the admin,
# console, group and transaction commands load.
PRELOAD = ("kraftlog.cli", "kraftlog.commands.topics", "kraftlog.commands.configs", "kraftlog.commands.acls",
           "kraftlog.commands.elections", "kraftlog.commands.groups", "kraftlog.commands.transactions",
           "kraftlog.commands.console", "kraftlog.commands.cluster", "kraftlog.commands.quorum",
           "kraftlog.commands.perf",
           "kraftlog.commands.reassign_partitions",
           # what typer and gRPC import at their first parse and first channel
           "typer._adapters", "grpc._channel", "grpc.experimental")
CLI_ENV = "KRAFTLOG_TEST_CLI"  # =subprocess: every call `python -m kraftlog` from scratch


def run_cli(args: Sequence[str], env: Mapping[str, str], stdin: str = "", timeout: float = 180.0
            ) -> subprocess.CompletedProcess:
    """`python -m kraftlog ARGS` with this environment and input: exit status, stdout and stderr.
    With KRAFTLOG_TEST_CLI=subprocess in the environment every call is `python -m kraftlog` from
    scratch (to compare the two)."""
    if os.environ.get(CLI_ENV) == "subprocess":
        return subprocess.run([sys.executable, "-m", "kraftlog", *args], input=stdin, capture_output=True,
                              text=True, env=env, timeout=timeout)
    server = fork_server.shared_server(PRELOAD, blocked=())
    with tempfile.TemporaryDirectory(prefix="kraftlog-cli-") as files:
        paths = [os.path.join(files, name) for name in ("stdin", "stdout", "stderr")]
        for path, text in zip(paths, (stdin, "", "")):
            Path(path).write_text(text)
        process = server.start(args, [(paths[0], os.O_RDONLY), *((p, os.O_WRONLY) for p in paths[1:])], env)
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)  # still ours: its manager holds it until released
            process.wait()
            raise subprocess.TimeoutExpired(["kraftlog", *args], timeout) from None
        finally:
            process.release()
        return subprocess.CompletedProcess(["kraftlog", *args], code, Path(paths[1]).read_text(),
                                           Path(paths[2]).read_text())
