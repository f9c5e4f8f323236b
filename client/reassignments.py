"""Partition reassignment and broker decommission through any broker, like
Kafka's Admin alterPartitionReassignments / listPartitionReassignments /
unregisterBroker: the broker forwards each to the active controller.

A reassignment is asynchronous: the call returns once the controller has
recorded the targets; the new replicas then catch up and the move completes
by itself (`list_partition_reassignments` shows what is still under way).
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb

from .admin import ask_any_broker
from .cluster import Cluster
from .errors import error_name

TopicPartition = tuple[str, int]
Reassign = cpb.AlterPartitionReassignmentsRequest


def alter_partition_reassignments(cluster: Cluster, targets: Mapping[TopicPartition, Optional[Sequence[int]]],
                                  allow_replication_factor_change: bool = True) -> list[dict[str, Any]]:
    """Move each (topic, partition) to its target replicas (None: cancel its move); each
    partition's outcome as {"topic", "partition", "error": Kafka's error name or None, "message"}."""
    request = Reassign()
    if not allow_replication_factor_change:
        request.allow_replication_factor_change = False
    topics: dict[str, Reassign.ReassignableTopic] = {}
    for (topic, partition), replicas in targets.items():
        if topic not in topics:
            topics[topic] = request.topics.add(name=topic)
        item = topics[topic].partitions.add(partition_index=partition)
        if replicas is not None:
            item.replicas.CopyFrom(mpb.BrokerIdList(ids=replicas))
    response = ask_any_broker(cluster, "AlterPartitionReassignments", request)
    return [{"topic": t.name, "partition": p.partition_index,
             "error": error_name(p.error_code) if p.error_code else None, "message": p.error_message}
            for t in response.responses for p in t.partitions]


def list_partition_reassignments(cluster: Cluster, partitions: Optional[Mapping[str, Sequence[int]]] = None
                                 ) -> dict[TopicPartition, dict[str, list[int]]]:
    """(topic, partition) -> {"replicas", "adding_replicas", "removing_replicas"} of each move under way
    among `partitions` (None: every partition)."""
    request = cpb.ListPartitionReassignmentsRequest(topics=[
        cpb.TopicPartitions(topic=topic, partitions=ids) for topic, ids in (partitions or {}).items()])
    response = ask_any_broker(cluster, "ListPartitionReassignments", request)
    return {(t.name, p.partition_index): {"replicas": list(p.replicas), "adding_replicas": list(p.adding_replicas),
                                          "removing_replicas": list(p.removing_replicas)}
            for t in response.topics for p in t.partitions}


def unregister_broker(cluster: Cluster, broker_id: int) -> None:
    """Remove a broker's registration (after its replicas have moved away and it has stopped);
    BROKER_ID_NOT_REGISTERED raises."""
    ask_any_broker(cluster, "UnregisterBroker", cpb.UnregisterBrokerRequest(broker_id=broker_id))
