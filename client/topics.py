"""Topic administration through any broker (it forwards to the active controller)."""
from __future__ import annotations

from typing import Any, Mapping, Optional

import grpc

from kraftlog_api import controller_pb2 as cpb

from .cluster import CALL_TIMEOUT_S, Cluster
from .errors import NetworkError, error_for_code, error_name


def create_topic(cluster: Cluster, name: str, partitions: int = -1, replication_factor: int = -1,
                 configs: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    """Create one topic (-1: the cluster's num.partitions / default.replication.factor)."""
    request = cpb.CreateTopicsRequest(topics=[cpb.CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=replication_factor,
        configs=[cpb.ConfigEntry(name=k, value=v) for k, v in (configs or {}).items()])])
    response = _ask(cluster, "CreateTopics", request)
    result = response.topics[0]
    if result.error_code:
        raise error_for_code(result.error_code, f"{name}: {result.error_message or error_name(result.error_code)}")
    return {"name": result.name, "topic_id": result.topic_id.hex(), "partitions": result.num_partitions,
            "replication_factor": result.replication_factor}


def delete_topic(cluster: Cluster, name: str) -> None:
    response = _ask(cluster, "DeleteTopics", cpb.DeleteTopicsRequest(names=[name]))
    result = response.topics[0]
    if result.error_code:
        raise error_for_code(result.error_code, f"{name}: {result.error_message or error_name(result.error_code)}")


def describe_topics(cluster: Cluster, names: Optional[list[str]] = None) -> list[dict[str, Any]]:
    """Partitions with leader, leader epoch, replicas and ISR, as the brokers' image has them."""
    response = cluster.refresh(names or None)
    described = []
    for topic in sorted(response.topics, key=lambda t: t.name):
        if topic.error_code:
            raise error_for_code(topic.error_code, f"{topic.name}: {error_name(topic.error_code)}")
        described.append({
            "name": topic.name,
            "topic_id": topic.topic_id.hex(),
            "partitions": [
                {"partition": p.partition_index, "leader": p.leader_id, "leader_epoch": p.leader_epoch,
                 "replicas": list(p.replica_nodes), "isr": list(p.isr_nodes),
                 "offline_replicas": list(p.offline_replicas)}
                for p in sorted(topic.partitions, key=lambda p: p.partition_index)
            ],
        })
    return described


def _ask(cluster: Cluster, method: str, request: Any) -> Any:
    problems = []
    for stub in cluster.any_broker_calls():
        try:
            response = getattr(stub, method)(request, timeout=CALL_TIMEOUT_S * 3)
        except grpc.RpcError as exc:
            problems.append(exc.code().name)  # type: ignore[attr-defined]
            continue
        if response.error_code:
            raise error_for_code(response.error_code, error_name(response.error_code))
        return response
    raise NetworkError(f"no broker answered {method} ({', '.join(problems) or 'none known'})")
