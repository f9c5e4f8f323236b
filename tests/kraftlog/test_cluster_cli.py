"""`kraftlog cluster up|status|down` and `kraftlog quorum describe` as an
operator runs them: the real console script, real server processes on
127.0.0.1. Every process started is killed by its pid at the end, whatever
happened."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from concurrent import futures

import grpc
import pytest

from kafka_protocol.errors import Errors
from devcluster import launcher
from devcluster.local_processes import free_ports
from kraftlog_api import quorum_pb2, quorum_pb2_grpc

KRAFTLOG = Path(sys.executable).with_name("kraftlog")


def kraftlog(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(KRAFTLOG), *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def cluster(tmp_path):
    """A three-controller cluster file on free ports, and its data directory;
    afterwards every node process still alive is killed by its pid."""
    ports = free_ports(3)
    path = tmp_path / "trio.yaml"
    path.write_text(
        "cluster.id: dGVzdC1jbHVzdGVyLWlkAA\n"
        "defaults:\n"
        "  controller.quorum.election.timeout.ms: 500\n"
        "  controller.quorum.fetch.timeout.ms: 1000\n"
        "nodes:\n" + "".join(
            f"  - {{node.id: {i}, process.roles: controller, listeners: 'CONTROLLER://127.0.0.1:{port}'}}\n"
            for i, port in enumerate(ports, start=1)))
    data = tmp_path / "data"
    try:
        yield path, data, ports
    finally:
        for home in data.glob("node-*"):
            pid_text = (home / "server.pid").read_text().strip() if (home / "server.pid").exists() else ""
            if pid_text.isdigit() and launcher.is_alive(int(pid_text), home / "server.yaml"):
                os.kill(int(pid_text), signal.SIGKILL)


def test_up_status_describe_down(cluster):
    path, data, ports = cluster
    where = ["--config", str(path), "--data-dir", str(data)]

    up = kraftlog("cluster", "up", *where, "--timeout", "30")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "leader: node" in up.stdout

    again = kraftlog("cluster", "up", *where, "--timeout", "30")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.count("already running") == 3

    status = kraftlog("cluster", "status", *where, "--json")
    assert status.returncode == 0, status.stderr
    summary = json.loads(status.stdout)
    assert [n["id"] for n in summary["nodes"]] == [1, 2, 3]
    assert all(n["alive"] and n["pid"] and n["roles"] == ["controller"] for n in summary["nodes"])
    assert [n["listeners"] for n in summary["nodes"]] == [[f"CONTROLLER://127.0.0.1:{p}"] for p in ports]
    assert summary["leader"]["leader_id"] in (1, 2, 3)

    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    described = kraftlog("quorum", "describe", "--bootstrap-controller", bootstrap, "--json")
    assert described.returncode == 0, described.stderr
    info = json.loads(described.stdout)
    leader = info["leader_id"]
    assert leader in (1, 2, 3) and info["leader_epoch"] >= 1
    assert sorted(v["replica_id"] for v in info["voters"]) == [1, 2, 3]
    assert info["observers"] == []
    assert set(info["voters"][0]) == {"replica_id", "directory_id", "log_end_offset", "last_fetch_timestamp",
                                      "last_caught_up_timestamp"}
    assert all(v["directory_id"] is None for v in info["voters"])  # static voters: ids only (KIP-853)

    table = kraftlog("quorum", "describe", "--bootstrap-controller", bootstrap)
    assert table.returncode == 0, table.stderr
    for word in ("LeaderId", "LeaderEpoch", "HighWatermark", "LogEndOffset", "Lag", "Leader", "Follower"):
        assert word in table.stdout

    # A follower alone is enough, as with kafka-metadata-quorum.sh: its answer says where the leader listens.
    follower_port = ports[(leader % 3)]  # node leader+1 (mod 3): never the leader
    alone = kraftlog("quorum", "describe", "--status", "--json", "--bootstrap-controller",
                     f"127.0.0.1:{follower_port}")
    assert alone.returncode == 0, alone.stderr
    status = json.loads(alone.stdout)["status"]
    assert status["LeaderId"] == leader and status["CurrentVoters"] == "[1,2,3]"

    down = kraftlog("cluster", "down", *where)
    assert down.returncode == 0, down.stdout + down.stderr
    assert down.stdout.count("stopped (pid") == 3
    assert not list(data.glob("node-*/server.pid"))
    after = json.loads(kraftlog("cluster", "status", *where, "--json").stdout)
    assert not any(n["alive"] for n in after["nodes"]) and after["leader"] is None


class FakeController(quorum_pb2_grpc.KRaftQuorumServicer):
    """Answers DescribeQuorum with a fixed response: a stand-in for a node."""

    def __init__(self, response: quorum_pb2.DescribeQuorumResponse) -> None:
        self.response = response

    def DescribeQuorum(self, request, context):  # noqa: N802 (gRPC's name)
        return self.response


@pytest.fixture
def fake_controllers():
    """Start fake controllers from responses; their addresses, in order."""
    servers = []

    def start(*responses: quorum_pb2.DescribeQuorumResponse) -> list[str]:
        addresses = []
        for response in responses:
            server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
            quorum_pb2_grpc.add_KRaftQuorumServicer_to_server(FakeController(response), server)
            port = server.add_insecure_port("127.0.0.1:0")
            server.start()
            servers.append(server)
            addresses.append(f"127.0.0.1:{port}")
        return addresses

    yield start
    for server in servers:
        server.stop(grace=None)


def replica(replica_id: int, end: int, fetched: int = 1_700_000_000_000) -> quorum_pb2.ReplicaState:
    return quorum_pb2.ReplicaState(replica_id=replica_id, log_end_offset=end, last_fetch_timestamp=fetched,
                                   last_caught_up_timestamp=fetched)


LEADER_2 = quorum_pb2.DescribeQuorumResponse(
    error_code=0, leader_id=2, leader_epoch=7, high_watermark=40,
    current_voters=[replica(1, 38), replica(2, 42), replica(3, -1, -1)], observers=[replica(9, 40)])
FOLLOWER_OF_2 = quorum_pb2.DescribeQuorumResponse(error_code=Errors.NOT_LEADER_OR_FOLLOWER, leader_id=2, leader_epoch=7)
ELECTING = quorum_pb2.DescribeQuorumResponse(error_code=Errors.NOT_LEADER_OR_FOLLOWER, leader_id=-1, leader_epoch=8)


def test_describe_asks_each_controller_until_the_leader_answers(fake_controllers):
    follower, leader = fake_controllers(FOLLOWER_OF_2, LEADER_2)
    result = kraftlog("quorum", "describe", "--bootstrap-controller", f"{follower},{leader}", "--json")
    assert result.returncode == 0, result.stderr
    described = json.loads(result.stdout)
    # Kafka's --status and --replication views ride along; the leader's own answer is unchanged.
    assert described.pop("status")["MaxFollowerLag"] == 4 and len(described.pop("replication")) == 4
    assert described.pop("cluster_id") is None  # no broker to ask
    assert isinstance(described.pop("endpoints"), dict)  # the voters' listeners (KIP-853), by id
    for replica in described["voters"] + described["observers"]:
        assert replica.pop("directory_id") is None  # static voters: ids only
    assert described == {
        "leader_id": 2, "leader_epoch": 7, "high_watermark": 40,
        "voters": [
            {"replica_id": 1, "log_end_offset": 38, "last_fetch_timestamp": 1_700_000_000_000,
             "last_caught_up_timestamp": 1_700_000_000_000},
            {"replica_id": 2, "log_end_offset": 42, "last_fetch_timestamp": 1_700_000_000_000,
             "last_caught_up_timestamp": 1_700_000_000_000},
            {"replica_id": 3, "log_end_offset": -1, "last_fetch_timestamp": -1, "last_caught_up_timestamp": -1},
        ],
        "observers": [{"replica_id": 9, "log_end_offset": 40, "last_fetch_timestamp": 1_700_000_000_000,
                       "last_caught_up_timestamp": 1_700_000_000_000}],
    }
    table = kraftlog("quorum", "describe", "--bootstrap-controller", f"{follower},{leader}")
    assert table.returncode == 0, table.stderr
    words = " ".join(table.stdout.split())
    assert "NodeId LogEndOffset Lag LastFetchTimestamp LastCaughtUpTimestamp Status" in words
    rows = {cells[0]: cells[1:] for line in table.stdout.splitlines()
            if len(cells := line.split()) == 6 and cells[0].isdigit()}
    # LogEndOffset, Lag (behind the leader's 42), LastFetchTimestamp, LastCaughtUpTimestamp, Status
    assert rows == {
        "1": ["38", "4", "1700000000000", "1700000000000", "Follower"],
        "2": ["42", "0", "1700000000000", "1700000000000", "Leader"],
        "3": ["-", "-", "-", "-", "Follower"],
        "9": ["40", "2", "1700000000000", "1700000000000", "Observer"],
    }
    assert "LeaderId: 2 LeaderEpoch: 7 HighWatermark: 40 MaxFollowerLag: 4 MaxFollowerLagTimeMs: 0 " \
           "CurrentVoters: [1,2,3] CurrentObservers: [9]" in words


def test_describe_gives_up_at_once_when_the_leader_was_not_asked(fake_controllers):
    (follower,) = fake_controllers(FOLLOWER_OF_2)
    result = kraftlog("quorum", "describe", "--bootstrap-controller", follower, "--timeout", "30", timeout=10)
    assert result.returncode == 1
    assert result.stderr.startswith("kraftlog: error: NOT_LEADER_OR_FOLLOWER: the leader is node 2")


def test_describe_during_an_election_retries_until_the_timeout(fake_controllers):
    (electing,) = fake_controllers(ELECTING)
    result = kraftlog("quorum", "describe", "--bootstrap-controller", electing, "--timeout", "0.5")
    assert result.returncode == 1
    assert result.stderr.startswith("kraftlog: error: NOT_LEADER_OR_FOLLOWER: no leader found in 0.5s")
    assert "election under way" in result.stderr


def test_describe_with_nobody_listening_is_one_line(cluster):
    (port,) = free_ports(1)
    result = kraftlog("quorum", "describe", "--bootstrap-controller", f"127.0.0.1:{port}", "--timeout", "0.5")
    assert result.returncode == 1
    assert result.stderr.startswith("kraftlog: error: NETWORK_EXCEPTION: no leader found in 0.5s")
    assert result.stderr.count("\n") == 1


def test_a_bad_bootstrap_is_one_line():
    result = kraftlog("quorum", "describe", "--bootstrap-controller", "localhost")
    assert result.returncode == 1
    assert result.stderr == "kraftlog: error: INVALID_CONFIG: bootstrap: 'localhost' is not HOST:PORT\n"


def test_up_with_a_bad_cluster_file_starts_nothing(cluster):
    path, data, _ = cluster
    path.write_text(path.read_text().replace("process.roles: controller", "process.roles: broker", 1))
    result = kraftlog("cluster", "up", "--config", str(path), "--data-dir", str(data))
    assert result.returncode == 1
    assert "node 1: listeners: CONTROLLER is a controller listener (a broker-only node has none)" in result.stderr
    assert not data.exists()
