"""A throwaway local quorum of real server processes, for tests and benchmarks.

It writes a cluster file with ports free at the time, starts the nodes
through the launcher (the same code as `kraftlog cluster up`), and offers
what fault tests need: the leader, kill -9, SIGSTOP/SIGCONT, restart. Every
process it starts is stopped by PID in `close()` (use it as a context
manager), also when the test failed.
"""
from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, TypeVar

import grpc
import yaml

from client.channels import open_channel
from client.errors import KafkaError
from client.quorum_log import QuorumLogClient
from kraftlog_api import quorum_pb2, quorum_pb2_grpc

from . import launcher

T = TypeVar("T")

CLUSTER_ID = "TG9jYWxRdW9ydW1UZXN0MQ"


def free_ports(count: int) -> list[int]:
    """Ports nobody listens on right now (bound to port 0, then released together)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def wait_until(predicate: Callable[[], Optional[T]], timeout: float, what: str, interval: float = 0.05) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what}: not within {timeout:g}s")
        time.sleep(interval)


class LocalQuorum:
    def __init__(self, directory: Path, voters: int = 3, properties: Optional[Mapping[str, Any]] = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        ports = free_ports(voters)
        spec = {
            "cluster.id": CLUSTER_ID,
            # The raw record store: tests and benchmarks of the quorum itself append opaque records.
            "defaults": {"kraftlog.quorum.state.machine": "records", **(properties or {})},
            "nodes": [
                {"node.id": i + 1, "process.roles": "controller", "listeners": f"CONTROLLER://127.0.0.1:{port}"}
                for i, port in enumerate(ports)
            ],
        }
        self.cluster_file = self.directory / "cluster.yaml"
        self.cluster_file.write_text(yaml.safe_dump(spec, sort_keys=False))
        self.plans = {p.node_id: p for p in launcher.plan_cluster(self.cluster_file, self.directory / "data")}
        self.addresses = {i: f"127.0.0.1:{port}" for i, port in zip(self.plans, ports)}
        self.pids: dict[int, int] = {}
        self.client = QuorumLogClient(self.addresses)
        self._channels = {i: open_channel(a) for i, a in self.addresses.items()}

    # --- processes --------------------------------------------------------

    def start(self, *node_ids: int) -> None:
        for node_id in node_ids or tuple(self.plans):
            self.pids[node_id] = launcher.start_node(self.plans[node_id])

    def alive(self, node_id: int) -> bool:
        """The node's process has not exited (it is our child: waitpid knows)."""
        pid = self.pids.get(node_id)
        return pid is not None and os.waitpid(pid, os.WNOHANG)[0] == 0

    def signal(self, node_id: int, sig: signal.Signals) -> None:
        os.kill(self.pids[node_id], sig)

    def kill(self, node_id: int) -> None:
        """kill -9, and wait until the process is gone."""
        pid = self.pids.pop(node_id)
        os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass

    def stop(self, node_id: int, timeout: float = 10.0) -> int:
        """SIGTERM, wait; the exit status."""
        pid = self.pids.pop(node_id)
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.02)
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)

    def wait_exit(self, node_id: int, timeout: float) -> int:
        """Wait for a node to exit by itself; its exit status."""
        pid = self.pids[node_id]
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                del self.pids[node_id]
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() >= deadline:
                raise TimeoutError(f"node {node_id} still runs after {timeout:g}s")
            time.sleep(0.05)

    def log_text(self, node_id: int) -> str:
        return self.plans[node_id].log_path.read_text(errors="replace")

    def close(self) -> None:
        self.client.close()
        for channel in self._channels.values():
            channel.close()
        for node_id in list(self.pids):
            pid = self.pids.pop(node_id)
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    break
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass

    def __enter__(self) -> "LocalQuorum":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the quorum, as seen over gRPC ------------------------------------------

    def describe(self, node_id: int, timeout: float = 1.0) -> Optional[quorum_pb2.DescribeQuorumResponse]:
        """Node `node_id`'s answer to DescribeQuorum (None if it did not answer)."""
        stub = quorum_pb2_grpc.KRaftQuorumStub(self._channels[node_id])
        try:
            return stub.DescribeQuorum(quorum_pb2.DescribeQuorumRequest(), timeout=timeout)
        except grpc.RpcError:
            return None

    def leader(self, among: Optional[tuple[int, ...]] = None) -> Optional[tuple[int, int]]:
        """(leader id, epoch) if a node among `among` (default: all running) answers as leader."""
        for node_id in among or tuple(self.pids):
            response = self.describe(node_id, timeout=0.5)
            if response is not None and response.error_code == 0:
                return response.leader_id, response.leader_epoch
        return None

    def wait_for_leader(self, timeout: float = 15.0, among: Optional[tuple[int, ...]] = None,
                        other_than: Optional[int] = None) -> tuple[int, int]:
        def found() -> Optional[tuple[int, int]]:
            leader = self.leader(among)
            return leader if leader is not None and leader[0] != other_than else None

        return wait_until(found, timeout, "a leader")

    def applied(self, node_id: int) -> Optional[list[tuple[int, bytes]]]:
        """The committed records node `node_id` applied; None while it cannot answer (starting up)."""
        try:
            return self.client.read_committed(node_id)
        except KafkaError:
            return None

    def channel(self, node_id: int) -> grpc.Channel:
        return self._channels[node_id]
