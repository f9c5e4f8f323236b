"""DescribeCluster (v0-v2), ElectLeaders (v0-v2) and OffsetForLeaderEpoch
(v2-v4) through KafkaBrokerService's methods of the same names.

DescribeCluster lists the brokers reachable on this listener, unfenced
ones only unless v2's include_fenced_brokers asks for all, as Kafka's
brokers answer; controllers (endpoint type 2) are not reachable by
clients here: UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker answers. The
controller id is a broker's, as in Metadata (metadata.py). Authorized
operations are not computed: Kafka's "not provided" (INT32_MIN).

ElectLeaders: a null topic list is every partition, as in gRPC; an empty
one is none, answered without asking the controller.
"""
from __future__ import annotations

from typing import Any

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kafka_protocol.errors import Errors
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build

from .context import KafkaCallContext
from .metadata import controller_for_clients

BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT = 1, 2
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
NO_EPOCH = -1


async def describe_cluster(services: Any, request: Any, context: KafkaCallContext) -> Any:
    kind = response_type(request)
    endpoint_type = getattr(request, "endpoint_type", BROKERS_ENDPOINT)
    common = {"throttle_time": 0, "endpoint_type": endpoint_type, "cluster_authorized_operations":
              AUTHORIZED_OPERATIONS_OMITTED}
    if endpoint_type != BROKERS_ENDPOINT:
        return build(kind, {**common, "error_code": Errors.UNSUPPORTED_ENDPOINT_TYPE, "cluster_id": "",
                            "controller_id": -1, "brokers": (), "error_message":
                            "clients reach brokers only: ask for endpoint type 1"})
    answer = await services.broker.DescribeCluster(bpb.DescribeClusterRequest(), context)
    fenced_too = getattr(request, "include_fenced_brokers", False)
    brokers = [b for b in answer.brokers if b.port >= 0 and (fenced_too or not b.fenced)]
    return build(kind, {**common, "error_code": answer.error_code, "error_message": None,
                        "cluster_id": answer.cluster_id,
                        "controller_id": controller_for_clients(answer.controller_id,
                                                                [b.broker_id for b in brokers if not b.fenced]),
                        "brokers": [{"broker_id": b.broker_id, "host": b.host, "port": b.port,
                                     "rack": b.rack if b.HasField("rack") else None, "is_fenced": b.fenced}
                                    for b in brokers]})


async def elect_leaders(services: Any, request: Any, context: KafkaCallContext) -> Any:
    kind = response_type(request)
    if request.topic_partitions is not None and not request.topic_partitions:
        return build(kind, {"throttle_time": 0, "error_code": 0, "replica_election_results": ()})
    answer = await services.broker.ElectLeaders(cpb.ElectLeadersRequest(
        election_type=getattr(request, "election_type", cpb.PREFERRED),
        topic_partitions=[cpb.TopicPartitions(topic=t.topic, partitions=t.partitions)
                          for t in request.topic_partitions or ()]), context)
    results = [{"topic": r.topic, "partition_result": [
        {"partition_id": p.partition_id, "error_code": p.error_code, "error_message": p.error_message or None}
        for p in r.partitions]} for r in answer.results]
    if answer.error_code and not results and request.topic_partitions:
        # v0 has no request-level error: it becomes each partition's.
        results = [{"topic": t.topic, "partition_result": [
            {"partition_id": p, "error_code": answer.error_code, "error_message": None} for p in t.partitions]}
            for t in request.topic_partitions]
    return build(kind, {"throttle_time": 0, "error_code": answer.error_code, "replica_election_results": results})


async def offset_for_leader_epoch(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.OffsetForLeaderEpoch(bpb.OffsetForLeaderEpochRequest(
        replica_id=getattr(request, "replica_id", -1), topics=[
            bpb.OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=t.topic, partitions=[
                bpb.OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                    partition=p.partition, current_leader_epoch=getattr(p, "current_leader_epoch", NO_EPOCH),
                    leader_epoch=p.leader_epoch) for p in t.partitions]) for t in request.topics]), context)
    return build(response_type(request), {"throttle_time": 0, "topics": [
        {"topic": t.topic, "partitions": [
            {"error_code": p.error_code, "partition": p.partition, "leader_epoch": p.leader_epoch,
             "end_offset": p.end_offset} for p in t.partitions]} for t in answer.topics]})
