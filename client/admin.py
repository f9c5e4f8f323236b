"""Operator calls on a cluster, like Kafka's Admin client.

`describe_quorum` asks the metadata quorum who leads and how far each
replica has got. Only the leader answers it; a follower names the leader by
id but cannot say where it listens, so the caller gives every controller it
knows (`HOST:PORT,HOST:PORT,...`) and each is asked in turn until one leads.
"""
from __future__ import annotations

import time
from typing import Any

import grpc

from kraftlog_api import quorum_pb2, quorum_pb2_grpc

from .channels import open_channel
from .errors import (
    InvalidConfigError, KafkaError, NetworkError, NotLeaderOrFollowerError, error_for_code,
)

NONE = 0
NOT_LEADER_OR_FOLLOWER = NotLeaderOrFollowerError.code
CALL_TIMEOUT_S = 2.0  # one node's answer; the overall timeout bounds the rounds
RETRY_BACKOFF_S = 0.2  # between rounds, while an election may be under way


def describe_quorum(bootstrap: str, timeout: float = 5.0) -> dict[str, Any]:
    """The quorum as its leader describes it, ready for `json.dumps`:

    {"leader_id", "leader_epoch", "high_watermark",
     "voters": [{"replica_id", "log_end_offset", "last_fetch_timestamp",
                 "last_caught_up_timestamp"}, ...],
     "observers": [...]}

    Offsets and timestamps are -1 where the leader does not know them yet.
    Raises NotLeaderOrFollowerError when the nodes answer but none leads
    (at once if they all name a leader that is not in `bootstrap`), and
    NetworkError when none can be reached, once `timeout` seconds pass.
    """
    addresses = parse_bootstrap(bootstrap)
    deadline = time.monotonic() + timeout
    channels = {address: open_channel(address) for address in addresses}
    try:
        while True:
            answers = _ask_each(channels, deadline)
            if isinstance(answers, dict):
                _raise_if_leader_elsewhere(answers)
                if time.monotonic() + RETRY_BACKOFF_S < deadline:
                    time.sleep(RETRY_BACKOFF_S)
                    continue
                raise _no_leader(answers, timeout)
            return quorum_info(answers)
    finally:
        for channel in channels.values():
            channel.close()


def parse_bootstrap(bootstrap: str) -> list[str]:
    """HOST:PORT,HOST:PORT,... (an IPv6 host in brackets) -> the addresses, in order."""
    addresses = [item.strip() for item in bootstrap.split(",") if item.strip()]
    if not addresses:
        raise InvalidConfigError("bootstrap: no HOST:PORT given")
    for address in addresses:
        host, _, port = address.rpartition(":")
        if not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536:
            raise InvalidConfigError(f"bootstrap: {address!r} is not HOST:PORT")
    return list(dict.fromkeys(addresses))


def quorum_info(response: quorum_pb2.DescribeQuorumResponse) -> dict[str, Any]:
    """A leader's DescribeQuorumResponse as plain data."""
    return {
        "leader_id": response.leader_id,
        "leader_epoch": response.leader_epoch,
        "high_watermark": response.high_watermark,
        "voters": [_replica(r) for r in response.current_voters],
        "observers": [_replica(r) for r in response.observers],
    }


def _replica(state: quorum_pb2.ReplicaState) -> dict[str, int]:
    return {
        "replica_id": state.replica_id,
        "log_end_offset": state.log_end_offset,
        "last_fetch_timestamp": state.last_fetch_timestamp,
        "last_caught_up_timestamp": state.last_caught_up_timestamp,
    }


Answer = quorum_pb2.DescribeQuorumResponse | grpc.RpcError


def _ask_each(channels: dict[str, grpc.Channel],
              deadline: float) -> quorum_pb2.DescribeQuorumResponse | dict[str, Answer]:
    """The leader's response, or else every node's answer of this round."""
    answers: dict[str, Answer] = {}
    for address, channel in channels.items():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        stub = quorum_pb2_grpc.KRaftQuorumStub(channel)
        try:
            response = stub.DescribeQuorum(quorum_pb2.DescribeQuorumRequest(),
                                           timeout=min(remaining, CALL_TIMEOUT_S))
        except grpc.RpcError as exc:
            answers[address] = exc
            continue
        if response.error_code == NONE:
            return response
        answers[address] = response
    return answers


def _raise_if_leader_elsewhere(answers: dict[str, Answer]) -> None:
    """Every node asked names a leader, so the leader is not among them:
    asking again cannot help."""
    named = {a.leader_id for a in answers.values() if _names_leader(a)}
    if answers and len(named) == 1 and all(_names_leader(a) for a in answers.values()):
        raise NotLeaderOrFollowerError(
            f"the leader is node {named.pop()}, which is not among {', '.join(answers)}: "
            "give its controller address too")


def _names_leader(answer: Answer) -> bool:
    return (isinstance(answer, quorum_pb2.DescribeQuorumResponse)
            and answer.error_code == NOT_LEADER_OR_FOLLOWER and answer.leader_id >= 0)


def _no_leader(answers: dict[str, Answer], timeout: float) -> KafkaError:
    detail = f"no leader found in {timeout:g}s; " + "; ".join(
        f"{address}: {_describe(answer)}" for address, answer in answers.items())
    responses = [a for a in answers.values() if isinstance(a, quorum_pb2.DescribeQuorumResponse)]
    if not responses:
        return NetworkError(detail)
    other = next((r for r in responses if r.error_code != NOT_LEADER_OR_FOLLOWER), None)
    return error_for_code(other.error_code, detail) if other else NotLeaderOrFollowerError(detail)


def _describe(answer: Answer) -> str:
    if isinstance(answer, grpc.RpcError):
        code = answer.code()  # type: ignore[attr-defined]
        details = answer.details()  # type: ignore[attr-defined]
        return f"{code.name if code else 'UNKNOWN'} ({details})" if details else str(code)
    if answer.error_code == NOT_LEADER_OR_FOLLOWER:
        leader = f"node {answer.leader_id}" if answer.leader_id >= 0 else "unknown (election under way)"
        return f"not the leader, leader is {leader}"
    return f"error code {answer.error_code}"
