"""Topic administration through any broker (it forwards to the active controller)."""
from __future__ import annotations

from typing import Any, Mapping, Optional

from kraftlog_api import controller_pb2 as cpb

from .admin import ask_any_broker
from .cluster import Cluster
from .errors import error_for_code, error_name


def create_topic(cluster: Cluster, name: str, partitions: int = -1, replication_factor: int = -1,
                 configs: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    """Create one topic (-1: the cluster's num.partitions / default.replication.factor)."""
    request = cpb.CreateTopicsRequest(topics=[cpb.CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=replication_factor,
        configs=[cpb.ConfigEntry(name=k, value=v) for k, v in (configs or {}).items()])])
    result = ask_any_broker(cluster, "CreateTopics", request).topics[0]
    _raise_for(result)
    return {"name": result.name, "topic_id": result.topic_id.hex(), "partitions": result.num_partitions,
            "replication_factor": result.replication_factor}


def delete_topic(cluster: Cluster, name: str) -> None:
    _raise_for(ask_any_broker(cluster, "DeleteTopics", cpb.DeleteTopicsRequest(names=[name])).topics[0])


def add_partitions(cluster: Cluster, name: str, total: int) -> None:
    """Grow a topic to `total` partitions (Kafka's CreatePartitions: the count only grows)."""
    request = cpb.CreatePartitionsRequest(topics=[cpb.CreatePartitionsRequest.Topic(name=name, count=total)])
    _raise_for(ask_any_broker(cluster, "CreatePartitions", request).topics[0])


def list_topics(cluster: Cluster) -> list[str]:
    return sorted(t.name for t in cluster.refresh(None).topics if not t.error_code)


def describe_topics(cluster: Cluster, names: Optional[list[str]] = None) -> list[dict[str, Any]]:
    """Partitions with leader, leader epoch, replicas, ISR, offline replicas and KIP-966's eligible
    leader replicas and last known ELR, as the brokers' image has them; `offline` when no live leader, `under_replicated` when the ISR is short of the replicas."""
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
                 "offline_replicas": list(p.offline_replicas),
                 "eligible_leader_replicas": list(p.eligible_leader_replicas),
                 "last_known_elr": list(p.last_known_elr),
                 "offline": p.leader_id < 0, "under_replicated": len(p.isr_nodes) < len(p.replica_nodes)}
                for p in sorted(topic.partitions, key=lambda p: p.partition_index)
            ],
        })
    return described


def _raise_for(result: Any) -> None:
    if result.error_code:
        raise error_for_code(result.error_code,
                             f"{result.name}: {result.error_message or error_name(result.error_code)}")
