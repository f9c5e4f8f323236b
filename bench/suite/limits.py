"""Limits of this machine, measured in the same run as the systems:
sequential disk write with fdatasync (dd), loopback TCP (iperf3), and the
gRPC-Python streaming ceiling (grpc_ceiling.py), 1 MiB and 64 KiB messages,
both directions."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Optional

from devcluster.local_processes import free_ports

from . import REPO_ROOT
from .grpc_ceiling import StreamJob
from .measure import Recorder
from .parallel import run_jobs
from .processes import PeerProcesses, Started, missing

MESSAGE_SIZES = {"1MiB": 1 << 20, "64KiB": 64 << 10}


def dd_write(processes: PeerProcesses, recorder: Recorder, mb: int) -> None:
    target = processes.directory("dd") / "dd.bin"
    done = subprocess.run(["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={mb}", "conv=fdatasync"],
                          capture_output=True, text=True, timeout=600, check=True)
    target.unlink()
    # "1048576 bytes (1.0 MB, 1.0 MiB) copied, 0.0123 s, 85.2 MB/s"
    found = re.search(r"^(\d+) bytes .* copied, ([\d.]+) s", done.stderr, re.M)
    if found is None:
        raise RuntimeError(f"dd: unexpected output {done.stderr!r}")
    recorder.add("limits.dd_fdatasync", "disk: dd 1 MiB blocks + fdatasync", "MB/s", "limits",
                 int(found.group(1)) / float(found.group(2)) / 1e6)


def iperf3_loopback(processes: PeerProcesses, recorder: Recorder, seconds: int) -> None:
    port = free_ports(1)[0]
    # One-off server (-1): a probing connect would be taken for the test, so wait for its log line instead.
    server = processes.start("iperf3-server", ["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port),
                                               "--forceflush"])
    processes.wait_logged(server, "Server listening")
    done = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(seconds), "-J"],
                          capture_output=True, text=True, timeout=seconds + 60)
    processes.stop(server)
    answer = json.loads(done.stdout or "{}")
    if done.returncode or "error" in answer:
        raise RuntimeError(f"iperf3: {answer.get('error') or done.stderr.strip()}")
    bits = answer["end"]["sum_received"]["bits_per_second"]
    recorder.add("limits.tcp_loopback", "TCP loopback: iperf3, 1 stream", "MB/s", "limits", bits / 8 / 1e6)


def start_grpc_ceiling(processes: PeerProcesses) -> tuple[Started, str]:
    port = free_ports(1)[0]
    server = processes.start("grpc-ceiling", [sys.executable, "-m", "bench.suite.grpc_ceiling", str(port)],
                             cwd=REPO_ROOT)
    processes.wait_listening(server, port)
    return server, f"127.0.0.1:{port}"


def grpc_streams(address: str, recorder: Recorder, total_bytes: int) -> None:
    for name, size in MESSAGE_SIZES.items():
        for direction, words in (("up", "client to server"), ("down", "server to client")):
            moved = run_jobs([StreamJob(address, direction, size, total_bytes)], timeout=600)
            recorder.add(f"limits.grpc_{direction}_{name}", f"gRPC-Python stream {words}, {name} messages",
                         "MB/s", "limits", sum(w["bytes"] for w in moved["workers"]) / moved["seconds"] / 1e6)


def iperf3_missing() -> Optional[str]:
    return missing("iperf3")
