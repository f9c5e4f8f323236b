"""ListOffsets (v1-v6) through KafkaBrokerService.ListOffsets."""
from __future__ import annotations

from typing import Any

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build

from .context import KafkaCallContext

NO_EPOCH = -1


async def serve(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.broker.ListOffsets(bpb.ListOffsetsRequest(
        replica_id=request.replica_id, isolation_level=getattr(request, "isolation_level", 0),
        topics=[bpb.ListOffsetsRequest.ListOffsetsTopic(name=t.name, partitions=[
            bpb.ListOffsetsRequest.ListOffsetsPartition(
                partition_index=p.partition_index, timestamp=p.timestamp,
                current_leader_epoch=getattr(p, "current_leader_epoch", NO_EPOCH)) for p in t.partitions])
            for t in request.topics]), context)
    return build(response_type(request), {
        "throttle_time": 0,
        "topics": [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": p.error_code, "timestamp": p.timestamp,
             "offset": p.offset, "leader_epoch": p.leader_epoch} for p in t.partitions]} for t in answer.topics]})
