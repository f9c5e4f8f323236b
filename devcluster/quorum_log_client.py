"""A client of the QuorumLog service: append through the leader, read what a node applied.

For the records-only test and benchmark mode of a controller quorum
(metadata_quorum/records_only/): LocalQuorum, its tests, the quorum demo
and bench/quorum.py. A cluster's controllers do not serve QuorumLog.

`append` finds the leader itself: a node that does not lead answers
NOT_LEADER_OR_FOLLOWER with the leader's id (or -1 during an election), and
the client goes there, or tries the next voter after a short backoff. It
retries until its timeout; an append that timed out may still commit (as
with any Kafka producer retry without idempotence), which is why chaos
histories record such an operation as unknown, not failed.
"""
from __future__ import annotations

import itertools
import time
from typing import Iterator, Optional, Sequence

import grpc

from kafka_protocol.errors import Errors
from kraftlog_api import quorum_pb2, quorum_pb2_grpc

from client.channels import open_channel
from client.errors import KafkaError, NetworkError, RequestTimedOutError, error_for_code

RETRY_BACKOFF_S = 0.05


class QuorumLogClient:
    def __init__(self, voters: dict[int, str], request_timeout: float = 2.0) -> None:
        """`voters`: node id -> HOST:PORT of every controller. `request_timeout`:
        how long one attempt may take before the next voter is tried (a paused
        or partitioned leader must not hold the whole append)."""
        if not voters:
            raise ValueError("no controllers given")
        self.voters = dict(voters)
        self.request_timeout = request_timeout
        self._channels = {i: open_channel(a) for i, a in self.voters.items()}
        self._stubs = {i: quorum_pb2_grpc.QuorumLogStub(c) for i, c in self._channels.items()}
        self.leader_hint: Optional[int] = None

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()

    def __enter__(self) -> "QuorumLogClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _candidates(self) -> Iterator[int]:
        order = sorted(self.voters)
        start = order.index(self.leader_hint) if self.leader_hint in self.voters else 0
        return itertools.cycle(order[start:] + order[:start])

    def append(self, records: Sequence[bytes], timeout: float = 10.0) -> tuple[int, int]:
        """Append through the leader; (base, last) offsets once committed."""
        deadline = time.monotonic() + timeout
        candidates = self._candidates()
        target = next(candidates)
        last_problem = "no attempt"
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RequestTimedOutError(f"append not committed within {timeout:g}s ({last_problem})")
            try:
                response = self._stubs[target].Append(
                    quorum_pb2.AppendRequest(records=list(records)), timeout=min(remaining, self.request_timeout)
                )
            except grpc.RpcError as exc:
                last_problem = f"node {target}: {exc.code().name}"  # type: ignore[attr-defined]
                target = next(candidates)
                time.sleep(RETRY_BACKOFF_S)
                continue
            if response.error_code == Errors.NONE:
                self.leader_hint = target
                return response.base_offset, response.last_offset
            if response.error_code != Errors.NOT_LEADER_OR_FOLLOWER:
                raise error_for_code(response.error_code, response.error_message)
            last_problem = f"node {target}: {response.error_message or 'not the leader'}"
            if response.leader_id in self.voters and response.leader_id != target:
                target = response.leader_id
            else:
                target = next(candidates)
                time.sleep(RETRY_BACKOFF_S)

    def append_future(self, node_id: int, records: Sequence[bytes], timeout: float) -> grpc.Future:
        """One Append call to one node, not retried (for benchmarks keeping many in flight)."""
        return self._stubs[node_id].Append.future(quorum_pb2.AppendRequest(records=list(records)), timeout=timeout)

    def read_committed(self, node_id: int, start_offset: int = 0, timeout: float = 5.0) -> list[tuple[int, bytes]]:
        """Every committed data record node `node_id` has applied from `start_offset` on."""
        out: list[tuple[int, bytes]] = []
        offset = start_offset
        while True:
            try:
                response = self._stubs[node_id].ReadCommitted(
                    quorum_pb2.ReadCommittedRequest(start_offset=offset, max_records=10_000), timeout=timeout
                )
            except grpc.RpcError as exc:
                raise NetworkError(f"node {node_id}: {exc.code().name}") from None  # type: ignore[attr-defined]
            if response.error_code:
                raise error_for_code(response.error_code, response.error_message)
            out.extend((r.offset, r.data) for r in response.records)
            if response.next_offset <= offset or response.next_offset >= response.high_watermark:
                return out
            offset = response.next_offset


__all__ = ["KafkaError", "QuorumLogClient"]
