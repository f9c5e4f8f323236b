"""KIP-853's voter changes, as Kafka's `kafka-metadata-quorum.sh add-controller |
remove-controller`: AddRaftVoter / RemoveRaftVoter to the quorum's leader.

Any controller given is asked first; a follower answers NOT_LEADER_OR_FOLLOWER
naming the leader, whose address comes from DescribeQuorum's `nodes` (every
voter's listeners), and the leader is asked next. The leader answers once the
new voter set is committed. REQUEST_TIMED_OUT (another change not committed
yet, a new leader that has not committed in its epoch, a replica that has not
caught up) is retried until `timeout`; any other error is raised as Kafka
names it, except the one that says a retried change is in place already
(DUPLICATE_VOTER for an add, VOTER_NOT_FOUND for a removal, after an
attempt that may have been applied: its answer was lost, or the leader
stepped down before the change committed and the next leader committed it).
"""
from __future__ import annotations

import time
from typing import Callable, Optional

import grpc

from kafka_protocol.addresses import format_address
from kafka_protocol.errors import Errors
from kraftlog_api import quorum_pb2, quorum_pb2_grpc
from security.client_security import ClientSecurity

from .admin import parse_bootstrap
from .channels import open_channel
from .errors import NetworkError, error_for_code

RETRY_BACKOFF_S = 0.2
CALL_SLACK_S = 2.0  # beyond the leader's own timeout, for the answer's way back


def add_voter(bootstrap: str, voter_id: int, directory_id: str, endpoints: list[tuple[str, str, int]],
              cluster_id: str = "", timeout: float = 30.0,
              security: Optional[ClientSecurity] = None) -> quorum_pb2.RaftVoterChangeResponse:
    """Make replica (voter_id, directory_id), listening on `endpoints` ((name, host, port)), a voter."""
    listeners = [quorum_pb2.VoterEndpoint(name=n, host=h, port=p) for n, h, p in endpoints]
    per_call_ms = int(min(timeout, 10.0) * 1000)
    request = quorum_pb2.AddRaftVoterRequest(cluster_id=cluster_id, timeout_ms=per_call_ms, voter_id=voter_id,
                                             voter_directory_id=directory_id, listeners=listeners)
    return _change(bootstrap, lambda stub, t: stub.AddRaftVoter(request, timeout=t), per_call_ms / 1000,
                   timeout, security, Errors.DUPLICATE_VOTER)


def remove_voter(bootstrap: str, voter_id: int, directory_id: str, cluster_id: str = "", timeout: float = 30.0,
                 security: Optional[ClientSecurity] = None) -> quorum_pb2.RaftVoterChangeResponse:
    """Remove replica (voter_id, directory_id) from the voters."""
    request = quorum_pb2.RemoveRaftVoterRequest(cluster_id=cluster_id, voter_id=voter_id,
                                                voter_directory_id=directory_id)
    return _change(bootstrap, lambda stub, t: stub.RemoveRaftVoter(request, timeout=t), 10.0, timeout, security,
                   Errors.VOTER_NOT_FOUND)


Call = Callable[[quorum_pb2_grpc.KRaftQuorumStub, float], quorum_pb2.RaftVoterChangeResponse]


def _change(bootstrap: str, call: Call, leader_timeout_s: float, timeout: float,
            security: Optional[ClientSecurity], in_place: Errors) -> quorum_pb2.RaftVoterChangeResponse:
    addresses = parse_bootstrap(bootstrap)
    deadline = time.monotonic() + timeout
    channels: dict[str, grpc.Channel] = {}
    last = "no attempt"
    maybe_applied = False  # an earlier attempt may have appended the change
    try:
        order = list(addresses)
        i = 0
        while time.monotonic() < deadline:
            address = order[i % len(order)]
            i += 1
            channel = channels.get(address) or channels.setdefault(address, open_channel(address, security))
            stub = quorum_pb2_grpc.KRaftQuorumStub(channel)
            remaining = deadline - time.monotonic()
            try:
                response = call(stub, max(0.1, min(remaining, leader_timeout_s + CALL_SLACK_S)))
            except grpc.RpcError as exc:
                last = f"{address}: {exc.code()}"  # type: ignore[attr-defined]
                # Refused (nothing listens) never reached a node; a timeout may have.
                maybe_applied = maybe_applied or exc.code() is not grpc.StatusCode.UNAVAILABLE  # type: ignore[attr-defined]
                time.sleep(RETRY_BACKOFF_S)
                continue
            if response.error_code == Errors.NONE or (maybe_applied and response.error_code == in_place):
                return response
            last = f"{address}: {Errors(response.error_code).name} {response.error_message}".rstrip()
            if response.error_code == Errors.NOT_LEADER_OR_FOLLOWER:
                maybe_applied = maybe_applied or response.leader_id < 0  # a leader that stepped down mid-change
                leader = _leader_address(stub, response.leader_id, remaining)
                if leader is not None and leader != address:
                    order.insert(i, leader)  # asked next
                    continue
            elif response.error_code != Errors.REQUEST_TIMED_OUT:
                raise error_for_code(response.error_code, last)
            else:
                maybe_applied = True  # timed out waiting for the commit: the record may still commit
            time.sleep(RETRY_BACKOFF_S)
        raise NetworkError(f"the voter change did not complete in {timeout:g}s ({last})")
    finally:
        for channel in channels.values():
            channel.close()


def _leader_address(stub: quorum_pb2_grpc.KRaftQuorumStub, leader_id: int, remaining: float) -> Optional[str]:
    if leader_id < 0:
        return None
    try:
        answer = stub.DescribeQuorum(quorum_pb2.DescribeQuorumRequest(), timeout=max(0.1, min(remaining, 2.0)))
    except grpc.RpcError:
        return None
    for node in answer.nodes:
        if node.node_id == leader_id and node.listeners:
            return format_address(node.listeners[0].host, node.listeners[0].port)
    return None
