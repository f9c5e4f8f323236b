"""The side-by-side benchmark suite (`kraftlog bench`, `make bench`).

kraftlog, the physical limits of this machine (disk with fdatasync, TCP
loopback, a gRPC-Python streaming ceiling) and two peers (Redis Streams,
NATS JetStream), all started by the suite itself on 127.0.0.1 and measured
in the same run, so that the ratios between them hold on a noisy machine.
runner.py is the entry point; each system has its own module.
"""
from __future__ import annotations

import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = BENCH_DIR.parent

# bench/*.py are scripts that import their siblings as top-level modules
# (`from bench_results import ...`); importing them from here needs both.
for _path in (str(REPO_ROOT), str(BENCH_DIR)):
    if _path not in sys.path:
        sys.path.append(_path)
