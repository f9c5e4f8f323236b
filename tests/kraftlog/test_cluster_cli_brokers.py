"""`kraftlog cluster up|down` with brokers: up waits until every broker is
unfenced; down stops brokers before controllers, so each broker's controlled
shutdown completes (nobody is killed). Every process is killed by its pid at
the end, whatever happened."""
from __future__ import annotations

import os
import signal

import pytest

from devcluster import launcher
from devcluster.local_processes import free_ports

from .test_cluster_cli import kraftlog


@pytest.fixture
def cluster_file(tmp_path):
    controller, *brokers = free_ports(3)
    path = tmp_path / "small.yaml"
    path.write_text(
        "cluster.id: c21hbGwtY2x1c3Rlci0wMDAx\n"
        "defaults:\n"
        "  controller.quorum.election.timeout.ms: 500\n"
        "  broker.session.timeout.ms: 3000\n"
        "  broker.heartbeat.interval.ms: 500\n"
        "nodes:\n"
        f"  - {{node.id: 1, process.roles: controller, listeners: 'CONTROLLER://127.0.0.1:{controller}'}}\n"
        + "".join(f"  - {{node.id: {i}, process.roles: broker, listeners: 'PLAINTEXT://127.0.0.1:{port}'}}\n"
                  for i, port in enumerate(brokers, start=2)))
    data = tmp_path / "data"
    try:
        yield path, data, brokers
    finally:
        for home in data.glob("node-*"):
            pid_text = (home / "server.pid").read_text().strip() if (home / "server.pid").exists() else ""
            if pid_text.isdigit() and launcher.is_alive(int(pid_text), home / "server.yaml"):
                os.kill(int(pid_text), signal.SIGKILL)


def test_up_waits_for_unfenced_brokers_and_down_stops_brokers_first(cluster_file):
    path, data, broker_ports = cluster_file
    where = ["--config", str(path), "--data-dir", str(data)]
    up = kraftlog("cluster", "up", *where, "--timeout", "60", timeout=120)
    assert up.returncode == 0, up.stdout + up.stderr
    assert "brokers unfenced: 2, 3" in up.stdout
    assert ",".join(f"127.0.0.1:{p}" for p in broker_ports) in up.stdout

    down = kraftlog("cluster", "down", *where, timeout=120)
    assert down.returncode == 0, down.stdout + down.stderr
    assert down.stdout.count("stopped (pid") == 3, down.stdout  # no node needed SIGKILL
