"""The consumer's offset requests: ListOffsets to partition leaders (earliest,
latest, by timestamp) and OffsetFetch/OffsetCommit to the group
coordinator. Each returns per-partition results; retrying on a moved
leader or coordinator happens here, deciding what a result means does not.
"""
from __future__ import annotations

import asyncio
import time
from typing import Callable, Mapping, Optional

import grpc

from kafka_protocol.errors import Errors
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import groups_pb2 as gpb

from .consumer_types import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition
from .coordinator import Coordinator
from .errors import KafkaError, error_for_code
from .metadata import STALE_METADATA_ERRORS, TRANSPORT_FAILURES, Metadata

# Retried until the commit's deadline, as Kafka's commitSync retries them: a
# newer member epoch is on its way in the heartbeat, and a coordinator whose
# metadata has not yet seen a just-created topic refuses offsets for it
# until it does (a deleted topic's commit fails once the deadline passes).
COMMIT_RETRIABLE = frozenset({Errors.STALE_MEMBER_EPOCH, Errors.UNKNOWN_TOPIC_OR_PARTITION})
COMMIT_RETRY_BACKOFF_S = 0.05


async def list_offsets(metadata: Metadata, wanted: Mapping[TopicPartition, int], *, isolation_level: int,
                       deadline: float, backoff_s: float, timeout_s: float,
                       ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
    """For each partition, the offset for its timestamp (-2 earliest, -1
    latest, else the first offset with a timestamp at or after it; None when
    there is none). Raises the partition's error when not retriable, and
    REQUEST_TIMED_OUT at `deadline`."""
    metadata.add_topics({tp.topic for tp in wanted})
    results: dict[TopicPartition, OffsetAndTimestamp | None] = {}
    pending = dict(wanted)
    last = ""
    while pending:
        by_leader: dict[int, dict[TopicPartition, int]] = {}
        for tp, ts in pending.items():
            info = metadata.leader_for(tp.topic, tp.partition)
            if info is None:
                metadata.request_update()
                last = f"{tp}: leader unknown"
                continue
            by_leader.setdefault(info.leader, {})[tp] = ts
        answers = await asyncio.gather(*(_list_offsets_from(metadata, leader, parts, isolation_level, timeout_s)
                                         for leader, parts in by_leader.items()))
        for answer in answers:
            for tp, result in answer.items():
                if isinstance(result, str):
                    last = result
                    continue
                results[tp] = result
                del pending[tp]
        if not pending:
            break
        if time.monotonic() + backoff_s >= deadline:
            raise error_for_code(Errors.REQUEST_TIMED_OUT, f"ListOffsets: no answer in time ({last})")
        metadata.maybe_update()
        await asyncio.sleep(backoff_s)
    return results


async def _list_offsets_from(metadata: Metadata, leader: int, parts: Mapping[TopicPartition, int],
                             isolation_level: int, timeout_s: float) -> dict[TopicPartition, object]:
    """Results by partition: an OffsetAndTimestamp or None, or a string saying why to retry."""
    by_topic: dict[str, list[bpb.ListOffsetsRequest.ListOffsetsPartition]] = {}
    for tp, ts in parts.items():
        info = metadata.leader_for(tp.topic, tp.partition)
        by_topic.setdefault(tp.topic, []).append(bpb.ListOffsetsRequest.ListOffsetsPartition(
            partition_index=tp.partition, current_leader_epoch=info.leader_epoch if info else -1, timestamp=ts))
    request = bpb.ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=[
        bpb.ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=ps) for t, ps in by_topic.items()])
    try:
        response = await metadata.stub(leader).ListOffsets(request, timeout=timeout_s)
    except (grpc.aio.AioRpcError, KeyError) as exc:
        if isinstance(exc, grpc.aio.AioRpcError) and exc.code() not in TRANSPORT_FAILURES:
            raise
        metadata.note_unreachable(leader)
        return {tp: f"broker {leader} unreachable" for tp in parts}
    out: dict[TopicPartition, object] = {}
    for topic in response.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if p.error_code in STALE_METADATA_ERRORS:
                metadata.note_error(p.error_code)
                out[tp] = f"{tp}: {error_for_code(p.error_code, '')}"
            elif p.error_code:
                raise error_for_code(p.error_code, f"ListOffsets {tp}")
            elif p.offset < 0:
                out[tp] = None  # no record at or after that timestamp
            else:
                out[tp] = OffsetAndTimestamp(p.offset, p.timestamp, p.leader_epoch if p.leader_epoch >= 0 else None)
    return out


async def offset_fetch(coordinator: Coordinator, partitions: list[TopicPartition], *, member_id: str,
                       member_epoch: int, deadline: float) -> dict[TopicPartition, Optional[OffsetAndMetadata]]:
    """The group's committed offsets for `partitions` (None: nothing committed)."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    request = gpb.OffsetFetchRequest(group_id=coordinator.group_id, member_id=member_id, member_epoch=member_epoch,
                                     topics=[gpb.TopicPartitions(topic=t, partitions=ps) for t, ps in by_topic.items()])
    response = await coordinator.call("OffsetFetch", lambda: request, deadline)
    if response.error_code:
        raise error_for_code(response.error_code, f"OffsetFetch for group {coordinator.group_id}")
    wanted = set(partitions)
    out: dict[TopicPartition, Optional[OffsetAndMetadata]] = {tp: None for tp in partitions}
    for topic in response.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if tp not in wanted:
                continue
            if p.error_code:
                raise error_for_code(p.error_code, f"OffsetFetch {tp} for group {coordinator.group_id}")
            if p.committed_offset >= 0:
                epoch = p.committed_leader_epoch if p.committed_leader_epoch >= 0 else None
                out[tp] = OffsetAndMetadata(p.committed_offset, p.metadata, epoch)
    return out


async def offset_commit(coordinator: Coordinator, offsets: Mapping[TopicPartition, OffsetAndMetadata], *,
                        member: Callable[[], tuple[str, int]], deadline: float) -> None:
    """Commit, retrying on a moved coordinator, on STALE_MEMBER_EPOCH (with
    the member's newer epoch: `member()` gives (member_id, epoch) per attempt)
    and on UNKNOWN_TOPIC_OR_PARTITION until `deadline`.
    Raises the first partition error that is not retriable."""
    by_topic: dict[str, list[gpb.OffsetCommitRequest.Partition]] = {}
    for tp, om in offsets.items():
        by_topic.setdefault(tp.topic, []).append(gpb.OffsetCommitRequest.Partition(
            partition_index=tp.partition, committed_offset=om.offset,
            committed_leader_epoch=om.leader_epoch if om.leader_epoch is not None else -1,
            committed_metadata=om.metadata))
    topics = [gpb.OffsetCommitRequest.Topic(name=t, partitions=ps) for t, ps in by_topic.items()]

    def request() -> gpb.OffsetCommitRequest:
        member_id, epoch = member()
        return gpb.OffsetCommitRequest(group_id=coordinator.group_id, member_id=member_id, member_epoch=epoch,
                                       topics=topics)

    while True:
        response = await coordinator.call("OffsetCommit", request, deadline)
        codes = [response.error_code] + [p.error_code for t in response.topics for p in t.partitions]
        failed = next((c for c in codes if c), 0)
        if not failed:
            return
        if failed in COMMIT_RETRIABLE and time.monotonic() + COMMIT_RETRY_BACKOFF_S < deadline:
            await asyncio.sleep(COMMIT_RETRY_BACKOFF_S)
            continue
        raise error_for_code(failed, f"OffsetCommit for group {coordinator.group_id}")


__all__ = ["KafkaError", "list_offsets", "offset_commit", "offset_fetch"]
