"""ListOffsets and OffsetForLeaderEpoch, answered by a partition's leader.

ListOffsets: -2 is the log start offset, -1 the high watermark for consumers
(the last stable offset for read_committed ones, isolation_level 1; the log
end offset for a follower, replica_id >= 0), any other timestamp
the first offset whose record timestamp is at least it - below the high
watermark for consumers; offset and timestamp are -1 when there is none.
"""
from __future__ import annotations

from typing import Optional

from kraftlog_api import broker_pb2 as bpb
from partition_log.leader_epoch import UNDEFINED_EPOCH

from .errors import BrokerError, Error, as_broker_error
from .replica_manager import ReplicaManager

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
NO_TIMESTAMP = -1
READ_COMMITTED = 1  # isolation_level of FetchRequest and ListOffsetsRequest

ListOffsetsAnswer = bpb.ListOffsetsResponse.ListOffsetsPartitionResponse
EpochAnswer = bpb.OffsetForLeaderEpochResponse.EpochEndOffsetResult


def list_offset(replicas: ReplicaManager, topic: str, index: int, timestamp: int, current_leader_epoch: int,
                replica_id: int = -1, isolation_level: int = 0) -> ListOffsetsAnswer:
    answer = ListOffsetsAnswer(partition_index=index, timestamp=NO_TIMESTAMP, offset=-1, leader_epoch=UNDEFINED_EPOCH)
    try:
        partition = replicas.get(topic, index)
        partition.leader(current_leader_epoch)
        # What a consumer may read: below the high watermark, or the LSO for read_committed.
        visible_end = partition.last_stable_offset if isolation_level == READ_COMMITTED else partition.high_watermark
        found: Optional[tuple[int, int]]
        if timestamp == EARLIEST_TIMESTAMP:
            found = (partition.log_start_offset, NO_TIMESTAMP)
            answer.leader_epoch = partition.epoch_for_offset(partition.log_start_offset)
        elif timestamp == LATEST_TIMESTAMP:
            found = (partition.log_end_offset if replica_id >= 0 else visible_end, NO_TIMESTAMP)
            answer.leader_epoch = partition.latest_epoch
        elif timestamp >= 0:
            # An unopened replica's log is empty: no record has the timestamp.
            found = partition.log.find_offset_by_timestamp(timestamp) if partition.opened else None
            if found is not None and replica_id < 0 and found[0] >= visible_end:
                found = None  # not visible to consumers yet
            if found is not None:
                answer.leader_epoch = partition.epoch_for_offset(found[0])
        else:
            raise BrokerError(Error.INVALID_REQUEST, f"timestamp {timestamp}: expected -2, -1 or >= 0")
        if found is not None:
            answer.offset, answer.timestamp = found
    except Exception as exc:  # noqa: BLE001 - an error is this partition's answer
        answer.error_code = as_broker_error(exc).error
        answer.leader_epoch = UNDEFINED_EPOCH
    return answer


def handle_list_offsets(replicas: ReplicaManager, request: bpb.ListOffsetsRequest) -> bpb.ListOffsetsResponse:
    response = bpb.ListOffsetsResponse()
    for t in request.topics:
        out = response.topics.add(name=t.name)
        for p in t.partitions:
            out.partitions.append(list_offset(replicas, t.name, p.partition_index, p.timestamp,
                                              p.current_leader_epoch, request.replica_id, request.isolation_level))
    return response


def offset_for_leader_epoch(replicas: ReplicaManager, topic: str, index: int, leader_epoch: int,
                            current_leader_epoch: int) -> EpochAnswer:
    """(the largest epoch <= `leader_epoch` we know, the offset where it
    ended); see epochs.py."""
    answer = EpochAnswer(partition=index, leader_epoch=UNDEFINED_EPOCH, end_offset=-1)
    try:
        partition = replicas.get(topic, index)
        partition.leader(current_leader_epoch)
        answer.leader_epoch, answer.end_offset = partition.end_offset_for_epoch(leader_epoch)
    except Exception as exc:  # noqa: BLE001 - an error is this partition's answer
        answer.error_code = as_broker_error(exc).error
    return answer


def handle_offset_for_leader_epoch(replicas: ReplicaManager,
                                   request: bpb.OffsetForLeaderEpochRequest) -> bpb.OffsetForLeaderEpochResponse:
    response = bpb.OffsetForLeaderEpochResponse()
    for t in request.topics:
        out = response.topics.add(topic=t.topic)
        for p in t.partitions:
            out.partitions.append(offset_for_leader_epoch(replicas, t.topic, p.partition, p.leader_epoch,
                                                          p.current_leader_epoch))
    return response
