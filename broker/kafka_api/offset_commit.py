"""OffsetCommit (v2-v9) through GroupCoordinatorService.OffsetCommit and
TxnOffsetCommit (v0-v3) through GroupCoordinatorService.TxnOffsetCommit:
the same per-partition shape both ways.

OffsetCommit's generation_id_or_member_epoch is a classic member's
generation or a KIP-848 member's epoch; the coordinator checks it against
the kind of group it is. v2-v4's retention_time is ignored, as Kafka 4
does (offsets.retention.minutes decides)."""
from __future__ import annotations

from typing import Any

from kraftlog_api import groups_pb2 as gpb
from kafka_protocol.wire.codec import response_type
from kafka_protocol.wire.entities import build

from .context import KafkaCallContext

NO_EPOCH = -1


def _topics(request: Any, kind: Any) -> list[Any]:
    return [kind.Topic(name=t.name, partitions=[kind.Partition(
        partition_index=p.partition_index, committed_offset=p.committed_offset,
        committed_leader_epoch=getattr(p, "committed_leader_epoch", NO_EPOCH),
        committed_metadata=p.committed_metadata or "") for p in t.partitions]) for t in request.topics]


def _answer(request: Any, answer: Any) -> Any:
    return build(response_type(request), {"throttle_time": 0, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p.partition_index, "error_code": p.error_code}
                                        for p in t.partitions]} for t in answer.topics]})


async def serve(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.groups.OffsetCommit(gpb.OffsetCommitRequest(
        group_id=request.group_id, member_id=request.member_id or "",
        member_epoch=request.generation_id_or_member_epoch,
        group_instance_id=getattr(request, "group_instance_id", None) or "",
        topics=_topics(request, gpb.OffsetCommitRequest)), context)
    if answer.error_code and not answer.topics:
        # A refusal of the group as a whole (authorization): Kafka's answer repeats it per partition.
        answer.topics.extend(gpb.OffsetCommitResponse.Topic(name=t.name, partitions=[
            gpb.OffsetCommitResponse.Partition(partition_index=p.partition_index, error_code=answer.error_code)
            for p in t.partitions]) for t in request.topics)
    return _answer(request, answer)


async def serve_txn(services: Any, request: Any, context: KafkaCallContext) -> Any:
    answer = await services.groups.TxnOffsetCommit(gpb.TxnOffsetCommitRequest(
        transactional_id=request.transactional_id, group_id=request.group_id, producer_id=request.producer_id,
        producer_epoch=request.producer_epoch, generation_id=getattr(request, "generation_id", -1),
        member_id=getattr(request, "member_id", ""), group_instance_id=getattr(request, "group_instance_id", None) or "",
        topics=_topics(request, gpb.TxnOffsetCommitRequest)), context)
    return _answer(request, answer)
