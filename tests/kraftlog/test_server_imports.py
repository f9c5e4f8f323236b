"""A controller-only node loads no broker code: importing the node's stack
(what `kraftlog server` imports before it knows its roles) leaves the
broker, its Kafka listener and numba unloaded. Each of the three
controllers of a test cluster saves about a second of start-up CPU by it."""
from __future__ import annotations

import subprocess
import sys


def test_the_node_stack_imports_no_broker_code() -> None:
    probe = ("import sys\n"
             "import kraftlog.commands.server, kraftlog_server.server\n"
             "print(sorted(m for m in ('broker.server', 'broker.service', 'broker.kafka_api.listener', 'numba')"
             " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
