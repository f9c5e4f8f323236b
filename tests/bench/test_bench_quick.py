"""`kraftlog bench --quick` end to end, once: every figure and chart is
produced (a peer that cannot be installed here is skipped with its reason)
and every process the suite started is gone afterwards. Never a speed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIGURES = {
    "limits": ["limits.dd_fdatasync", "limits.tcp_loopback", "limits.grpc_up_1MiB", "limits.grpc_down_1MiB",
               "limits.grpc_up_64KiB", "limits.grpc_down_64KiB"],
    "redis": ["redis.xadd.1p", "redis.xadd.4p", "redis.xadd.1p_1KiB", "redis.xread", "redis.xadd.1p.cpu"],
    "nats": ["nats.r1.1p", "nats.r3.1p", "nats.r3.1p.cpu"],
    "kraftlog": ["kraftlog.produce.rf1_acks1.1p", "kraftlog.produce.rf1_acks1.4p",
                 "kraftlog.produce.rf1_acks1.1p_1KiB", "kraftlog.produce.rf1_acks1.1p_one_broker",
                 "kraftlog.produce.rf3_all_idem.1p", "kraftlog.produce.rf3_all_idem.4p",
                 "kraftlog.latency.rf3_all.p50", "kraftlog.latency.rf3_all.p99", "kraftlog.latency.rf3_all.p99.9",
                 "kraftlog.latency.rf3_all.server_loop_lag.p50", "kraftlog.latency.rf3_all.server_loop_lag.p99",
                 "kraftlog.latency.rf3_all.client_loop_lag.p99",
                 "kraftlog.produce.rf1_acks1.1p.cpu", "kraftlog.produce.rf3_all_idem.4p.cpu",
                 "kraftlog.consume.decoded", "kraftlog.consume.decoded.cpu", "kraftlog.fetch.raw", "kraftlog.failover.partition",
                 "kraftlog.fetch.raw.cpu_client", "kraftlog.fetch.raw.cpu_servers",
                 "kraftlog.failover.controller",
                 # librdkafka (confluent-kafka) through the Kafka listener, client and servers' CPU apart
                 "kraftlog.produce.librdkafka.rf1_acks1", "kraftlog.produce.librdkafka.rf3_all_idem",
                 "kraftlog.consume.librdkafka.rf1", "kraftlog.consume.librdkafka.rf3",
                 "kraftlog.produce.librdkafka.rf1_acks1.cpu_client", "kraftlog.produce.librdkafka.rf1_acks1.cpu_servers",
                 "kraftlog.consume.librdkafka.rf1.cpu_client", "kraftlog.consume.librdkafka.rf1.cpu_servers"],
}
SKIPPABLE = {"limits.tcp_loopback": "iperf3", **{k: "redis" for k in FIGURES["redis"]},
             **{k: "nats" for k in FIGURES["nats"]}}
CHARTS = ["limits.png", "produce.png", "consume.png", "latency.png", "failover.png"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _running(pid: int, marker: str) -> bool:
    """pid is a live process whose command line or stdout (a node forked by devcluster/fork_server.py
    has the server's command line; its stdout is its server.log) contains `marker` (not a reused pid,
    not a zombie)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return False
    try:
        stdout = os.readlink(f"/proc/{pid}/fd/1")
    except OSError:  # closed, or the process is gone
        stdout = ""
    return (marker in cmdline or marker in stdout) and "\nState:\tZ" not in status


@pytest.mark.timeout(900)
def test_quick_suite_produces_every_figure_and_stops_every_process(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    done = subprocess.run([sys.executable, "-m", "kraftlog", "bench", "--quick", "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=840)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    results = json.loads((out / "results.json").read_text())
    assert results["errors"] == []

    skipped = {name: peer["skipped"] for name, peer in results["peers"].items() if "skipped" in peer}
    for name, reason in skipped.items():
        assert isinstance(reason, str) and reason, name
        print(f"skipped {name}: {reason}")
    for key in [k for keys in FIGURES.values() for k in keys]:
        if SKIPPABLE.get(key) in skipped:
            assert key not in results["figures"]
            continue
        figure = results["figures"].get(key)
        assert figure is not None, f"{key} missing"
        assert len(figure["runs"]) >= 1 and figure["min"] <= figure["median"] <= figure["max"], key

    assert sorted(Path(p).name for p in results["charts"]) == sorted(CHARTS)
    for name in CHARTS:
        assert (out / name).read_bytes()[:8] == PNG_MAGIC, name
    table = (out / "results.md").read_text()
    assert "| figure | median | min – max | unit | vs peer | vs limit |" in table
    for figure in results["figures"].values():
        assert figure["label"] in table
    if not skipped:  # ratios to the peer were worked out, of throughput and of CPU per record
        assert "× Redis XADD pipelined, 1 producer |" in table
        assert "× Redis XADD pipelined, 1 producer: CPU per record, client + servers |" in table

    # Every peer stopped by PID, every kraftlog node gone, the temp dirs removed.
    assert results["processes"], "no peer process was recorded"
    for process in results["processes"]:
        # Reaped by the suite (an exit code came back), and no live process of that program has the pid.
        assert process["stopped_by"] in ("exited", "SIGTERM", "SIGKILL") and process["exit_code"] is not None, process
        command = process["command"]
        program = command[command.index("-m") + 1] if "-m" in command else Path(command[0]).name
        assert not _running(process["pid"], program), process
    workdir = results["workdir"]
    assert len(results["kraftlog_node_pids"]) >= 8  # 3 + 3 nodes, 1 + 1 nodes, restarts after the failovers
    for pid in results["kraftlog_node_pids"]:
        assert not _running(pid, workdir), pid
    assert not any(_running(int(p), workdir) for p in os.listdir("/proc") if p.isdigit())
    assert not Path(workdir).exists()
