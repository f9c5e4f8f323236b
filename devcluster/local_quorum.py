"""A throwaway local quorum of controller processes, for tests and benchmarks.

The processes are LocalProcesses' (free ports, kill -9, SIGSTOP/SIGCONT,
restart, all stopped by PID on close); this adds the quorum over gRPC: the
leader, DescribeQuorum, and appends and committed reads through QuorumLog.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional

import grpc

from client.channels import open_channel
from client.errors import KafkaError
from .quorum_log_client import QuorumLogClient
from kraftlog_api import quorum_pb2, quorum_pb2_grpc

from .local_processes import LocalProcesses, free_ports, wait_until

__all__ = ["LocalQuorum"]

CLUSTER_ID = "TG9jYWxRdW9ydW1UZXN0MQ"


class LocalQuorum(LocalProcesses):
    stop_timeout_s = 10.0

    def __init__(self, directory: Path, voters: int = 3, properties: Optional[Mapping[str, Any]] = None) -> None:
        ports = free_ports(voters)
        spec = {
            "cluster.id": CLUSTER_ID,
            # The records-only test mode (metadata_quorum/records_only/): tests and benchmarks of
            # the quorum itself append opaque records. Tests of the controller set `metadata`.
            "defaults": {"kraftlog.quorum.state.machine": "records", **(properties or {})},
            "nodes": [
                {"node.id": i + 1, "process.roles": "controller", "listeners": f"CONTROLLER://127.0.0.1:{port}"}
                for i, port in enumerate(ports)
            ],
        }
        super().__init__(directory, spec)
        self.addresses = {i: f"127.0.0.1:{port}" for i, port in zip(self.plans, ports)}
        self.client = QuorumLogClient(self.addresses)
        self._channels = {i: open_channel(a) for i, a in self.addresses.items()}

    def close(self) -> None:
        self.client.close()
        for channel in self._channels.values():
            channel.close()
        super().close()

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

        try:
            return wait_until(found, timeout, "a leader")
        except TimeoutError as exc:  # say which nodes had exited, and their last words (a port taken, a crash)
            gone = [n for n in (among or tuple(self.plans)) if not self.alive(n)]
            tails = "; ".join(f"node {n} exited: {self.log_text(n).strip()[-600:]!r}" for n in gone)
            raise TimeoutError(f"{exc}" + (f" ({tails})" if tails else " (every node still running)")) from None

    def applied(self, node_id: int) -> Optional[list[tuple[int, bytes]]]:
        """The committed records node `node_id` applied; None while it cannot answer (starting up)."""
        try:
            return self.client.read_committed(node_id)
        except KafkaError:
            return None

    def channel(self, node_id: int) -> grpc.Channel:
        return self._channels[node_id]
