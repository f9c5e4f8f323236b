"""Operator calls on a cluster, like Kafka's Admin client.

Through any broker (a `Cluster`): DescribeCluster and DescribeConfigs are
answered from the broker's metadata image; IncrementalAlterConfigs and
ElectLeaders are forwarded by it to the active controller. A broker's own
settings are described by that broker, so those requests go to it.

`describe_quorum` asks the metadata quorum who leads and how far each
replica has got. Only the leader answers it; a follower names the leader by
id and, in `nodes` (KIP-853), where every voter listens, so any one
controller is enough, as with kafka-metadata-quorum.sh: the controllers given
(`HOST:PORT,HOST:PORT,...`) are asked in turn, then the leader they name.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Iterable, Optional

import grpc

from kafka_protocol.addresses import format_address
from kafka_protocol.errors import Errors
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import quorum_pb2, quorum_pb2_grpc
from security.client_security import ClientSecurity

from .channels import open_channel
from .errors import (
    InvalidConfigError, KafkaError, NetworkError, NotLeaderOrFollowerError, error_for_code, error_name,
)

if TYPE_CHECKING:  # cluster.py, through metadata_cache.py, imports parse_bootstrap from here
    from .cluster import Cluster

CALL_TIMEOUT_S = 2.0  # one node's answer; the overall timeout bounds the rounds
FORWARDED_TIMEOUT_S = 15.0  # a forwarded request waits for the controller's records to commit
TOPIC, BROKER = 2, 4  # Kafka's ConfigResource.Type ids
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # Kafka's AlterConfigOp.OpType ids
CONFIG_SOURCES = {1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
                  4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG"}
ELECTION_TYPES = {"preferred": cpb.PREFERRED, "unclean": cpb.UNCLEAN}
RETRY_BACKOFF_S = 0.2  # between rounds, while an election may be under way


# --- through the brokers -----------------------------------------------------------------

def ask_any_broker(cluster: "Cluster", method: str, request: Any, timeout: float = FORWARDED_TIMEOUT_S) -> Any:
    """The first broker's answer to `method` (bootstrap brokers first); a request-level error raises."""
    problems = []
    for stub in cluster.any_broker_calls():
        try:
            response = getattr(stub, method)(request, timeout=timeout)
        except grpc.RpcError as exc:
            problems.append(_rpc_problem(exc))
            continue
        if getattr(response, "error_code", 0):
            why = getattr(response, "error_message", "")
            raise error_for_code(response.error_code,
                                 f"{method}: {error_name(response.error_code)}" + (f": {why}" if why else ""))
        return response
    raise NetworkError(f"no broker answered {method} ({'; '.join(problems) or 'none known'})")


def describe_cluster(cluster: "Cluster") -> dict[str, Any]:
    """{"cluster_id", "controller_id", "metadata_offset", "brokers": [{"id", "host", "port", "rack",
    "fenced", "in_controlled_shutdown", "broker_epoch"}, ...]}: every registered broker."""
    response = ask_any_broker(cluster, "DescribeCluster", bpb.DescribeClusterRequest())
    return {
        "cluster_id": response.cluster_id,
        "controller_id": response.controller_id,
        "metadata_offset": response.metadata_offset,
        "brokers": [{"id": b.broker_id, "host": b.host, "port": b.port,
                     "rack": b.rack if b.HasField("rack") else None, "fenced": b.fenced,
                     "in_controlled_shutdown": b.in_controlled_shutdown, "broker_epoch": b.broker_epoch}
                    for b in response.brokers],
    }


def describe_configs(cluster: "Cluster", resource_type: int, names: Iterable[str],
                     keys: Iterable[str] = ()) -> dict[str, list[dict[str, Any]]]:
    """Resource name -> its settings [{"name", "value", "source", "read_only", "is_default"}, ...].

    Topics are described by any broker; broker N (not "", the cluster default) by broker N itself."""
    names = list(names)
    request = bpb.DescribeConfigsRequest(resources=[
        bpb.DescribeConfigsRequest.Resource(resource_type=resource_type, resource_name=name,
                                            configuration_keys=list(keys))
        for name in names])
    if resource_type == BROKER and any(names):
        [name] = names  # one broker per request: each describes only itself
        response = _ask_broker(cluster, int(name), "DescribeConfigs", request)
    else:
        response = ask_any_broker(cluster, "DescribeConfigs", request, timeout=CALL_TIMEOUT_S * 3)
    described = {}
    for result in response.results:
        if result.error_code:
            raise error_for_code(result.error_code, f"{_resource(result)}: {result.error_message}")
        described[result.resource_name] = [
            {"name": c.name, "value": c.value, "source": CONFIG_SOURCES.get(c.config_source, str(c.config_source)),
             "read_only": c.read_only, "is_default": c.is_default}
            for c in result.configs]
    return described


def alter_configs(cluster: "Cluster", resource_type: int, name: str,
                  operations: Iterable[tuple[str, int, Optional[str]]], validate_only: bool = False) -> None:
    """IncrementalAlterConfigs of one resource: (config name, SET/DELETE/APPEND/SUBTRACT, value) each."""
    resource = cpb.IncrementalAlterConfigsRequest.Resource(resource_type=resource_type, resource_name=name)
    for key, op, value in operations:
        config = resource.configs.add(name=key, op=op)
        if value is not None:
            config.value = value
    request = cpb.IncrementalAlterConfigsRequest(resources=[resource], validate_only=validate_only)
    [result] = ask_any_broker(cluster, "IncrementalAlterConfigs", request).results
    if result.error_code:
        raise error_for_code(result.error_code, f"{_resource(result)}: {result.error_message}")


def elect_leaders(cluster: "Cluster", election_type: str,
                  partitions: Optional[dict[str, list[int]]] = None) -> list[dict[str, Any]]:
    """ElectLeaders of `partitions` (None: every partition), preferred or unclean; each partition's outcome
    as {"topic", "partition", "error": Kafka's error name or None, "message"}."""
    request = cpb.ElectLeadersRequest(election_type=ELECTION_TYPES[election_type], topic_partitions=[
        cpb.TopicPartitions(topic=topic, partitions=ids) for topic, ids in (partitions or {}).items()])
    response = ask_any_broker(cluster, "ElectLeaders", request)
    return [{"topic": r.topic, "partition": p.partition_id,
             "error": error_name(p.error_code) if p.error_code else None, "message": p.error_message}
            for r in response.results for p in sorted(r.partitions, key=lambda p: p.partition_id)]


def _ask_broker(cluster: "Cluster", broker_id: int, method: str, request: Any) -> Any:
    if broker_id not in cluster.brokers:
        cluster.refresh([])
    if broker_id not in cluster.brokers:
        raise error_for_code(Errors.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not a live broker of this cluster "
                             f"(live: {', '.join(map(str, sorted(cluster.brokers))) or 'none'})")
    try:
        return getattr(cluster.broker_stub(broker_id), method)(request, timeout=CALL_TIMEOUT_S * 3)
    except grpc.RpcError as exc:
        raise NetworkError(f"broker {broker_id} did not answer {method}: {_rpc_problem(exc)}") from None


def _rpc_problem(exc: grpc.RpcError) -> str:
    code = exc.code()  # type: ignore[attr-defined]
    return code.name if code else "UNKNOWN"


def _resource(result: Any) -> str:
    if result.resource_type == TOPIC:
        return f"topic {result.resource_name}"
    return f"broker {result.resource_name}" if result.resource_name else "the cluster-wide broker defaults"


# --- the metadata quorum ------------------------------------------------------------------

def describe_quorum(bootstrap: str, timeout: float = 5.0,
                    security: Optional[ClientSecurity] = None) -> dict[str, Any]:
    """The quorum as its leader describes it, ready for `json.dumps`:

    {"leader_id", "leader_epoch", "high_watermark",
     "voters": [{"replica_id", "log_end_offset", "last_fetch_timestamp",
                 "last_caught_up_timestamp"}, ...],
     "observers": [...]}

    Offsets and timestamps are -1 where the leader does not know them yet.
    A follower's answer says where the leader it names listens; that leader
    is asked next. Raises NotLeaderOrFollowerError when the nodes answer but
    none leads (at once if they all name a leader that is not in `bootstrap`
    and none says where it is), and NetworkError when none can be reached,
    once `timeout` seconds pass.
    """
    addresses = parse_bootstrap(bootstrap)
    deadline = time.monotonic() + timeout
    channels = {address: open_channel(address, security) for address in addresses}
    try:
        while True:
            answers = _ask_each(channels, deadline)
            if isinstance(answers, dict):
                leader = _named_leader_address(answers)
                if leader is not None and leader not in channels:
                    channels = {leader: open_channel(leader, security), **channels}  # asked first in the next round
                    continue
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
        # KIP-853: where each voter listens ("NAME://HOST:PORT"), by node id.
        "endpoints": {str(n.node_id): [f"{e.name}://{format_address(e.host, e.port)}" for e in n.listeners]
                      for n in response.nodes},
    }


def _replica(state: quorum_pb2.ReplicaState) -> dict[str, Any]:
    return {
        "replica_id": state.replica_id,
        "directory_id": state.replica_directory_id or None,  # KIP-853; None when unknown (static voters)
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
        if response.error_code == Errors.NONE:
            return response
        answers[address] = response
    return answers


def _named_leader_address(answers: dict[str, Answer]) -> Optional[str]:
    """HOST:PORT of the leader a follower names, from the voters' listeners its answer lists."""
    for answer in answers.values():
        if not _names_leader(answer):
            continue
        for node in answer.nodes:  # type: ignore[union-attr]
            if node.node_id == answer.leader_id and node.listeners:  # type: ignore[union-attr]
                listener = node.listeners[0]
                return format_address(listener.host, listener.port)
    return None


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
            and answer.error_code == Errors.NOT_LEADER_OR_FOLLOWER and answer.leader_id >= 0)


def _no_leader(answers: dict[str, Answer], timeout: float) -> KafkaError:
    detail = f"no leader found in {timeout:g}s; " + "; ".join(
        f"{address}: {_describe(answer)}" for address, answer in answers.items())
    responses = [a for a in answers.values() if isinstance(a, quorum_pb2.DescribeQuorumResponse)]
    if not responses:
        return NetworkError(detail)
    other = next((r for r in responses if r.error_code != Errors.NOT_LEADER_OR_FOLLOWER), None)
    return error_for_code(other.error_code, detail) if other else NotLeaderOrFollowerError(detail)


def _describe(answer: Answer) -> str:
    if isinstance(answer, grpc.RpcError):
        code = answer.code()  # type: ignore[attr-defined]
        details = answer.details()  # type: ignore[attr-defined]
        return f"{code.name if code else 'UNKNOWN'} ({details})" if details else str(code)
    if answer.error_code == Errors.NOT_LEADER_OR_FOLLOWER:
        leader = f"node {answer.leader_id}" if answer.leader_id >= 0 else "unknown (election under way)"
        return f"not the leader, leader is {leader}"
    return f"error code {answer.error_code}"

