"""AlterPartitionReassignments (v0-v1) and ListPartitionReassignments (v0)
through KafkaBrokerService's methods of the same names (Alter, resp.
Describe, on the cluster; forwarded to the active controller).

Both messages have a request-level error, so the controller's answer goes
back as it is. A null replica list cancels a partition's move (the gRPC
request leaves `replicas` out); v1's allow_replication_factor_change
(KIP-860) is passed on, and echoed as Kafka echoes it. ListPartitionReassignments
with a null topic list asks for every partition; an empty list asks for none
and is answered without the controller. The requests' timeouts are not
used: the controller answers once its decision is committed.
"""
from __future__ import annotations

from typing import Any

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build

from .context import KafkaCallContext

Reassign = cpb.AlterPartitionReassignmentsRequest


async def alter_partition_reassignments(services: Any, request: Any, context: KafkaCallContext) -> Any:
    allow = getattr(request, "allow_replication_factor_change", True)
    forwarded = Reassign(topics=[Reassign.ReassignableTopic(name=t.name, partitions=[
        Reassign.ReassignablePartition(partition_index=p.partition_index, replicas=(
            None if p.replicas is None else mpb.BrokerIdList(ids=p.replicas)))
        for p in t.partitions]) for t in request.topics])
    if not allow:
        forwarded.allow_replication_factor_change = False
    answer = await services.broker.AlterPartitionReassignments(forwarded, context)
    return build(response_type(request), {
        "throttle_time": 0, "allow_replication_factor_change": allow, "error_code": answer.error_code,
        "error_message": answer.error_message or None,
        "responses": [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": p.error_code,
             "error_message": p.error_message or None} for p in t.partitions]} for t in answer.responses]})


async def list_partition_reassignments(services: Any, request: Any, context: KafkaCallContext) -> Any:
    kind = response_type(request)
    if request.topics is not None and not request.topics:
        return build(kind, {"throttle_time": 0, "error_code": 0, "error_message": None, "topics": ()})
    answer = await services.broker.ListPartitionReassignments(cpb.ListPartitionReassignmentsRequest(topics=[
        cpb.TopicPartitions(topic=t.name, partitions=t.partition_indexes) for t in request.topics or ()]), context)
    return build(kind, {
        "throttle_time": 0, "error_code": answer.error_code, "error_message": answer.error_message or None,
        "topics": [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "replicas": p.replicas, "adding_replicas": p.adding_replicas,
             "removing_replicas": p.removing_replicas} for p in t.partitions]} for t in answer.topics]})
