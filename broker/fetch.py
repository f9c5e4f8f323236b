"""Fetch, for consumers (replica_id -1) and followers (replica_id = their
broker id), long-polled.

- Consumers read whole batches below the high watermark; followers read to
  the log end, and their fetch offset tells the leader what they hold: it
  moves the high watermark and their caught-up time (partition.py).
- A follower's (fetch_offset, last_fetched_epoch) that our epoch cache does
  not match is answered with `diverging_epoch` and no records: it truncates
  there first. Consumers do not take part (their last_fetched_epoch is
  ignored; they use OffsetForLeaderEpoch).
- read_committed consumers (isolation_level 1) read below the last stable
  offset instead, and their answer lists the aborted transactions whose
  batches may be among the records (Log.collect_aborted_txns from the fetch
  offset to the end of what was read), for the consumer to drop. Every
  answer carries the partition's last stable offset.
- Long poll: with max_wait_ms > 0 and fewer than min_bytes ready, the fetch
  waits on the partitions' change signals (appends, high watermark moves,
  role changes) until min_bytes are there or max_wait_ms has passed. Errors
  and divergence answer at once.
"""
from __future__ import annotations

import asyncio
from typing import Optional

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.batch import end_offset
from kafka_protocol.fetch_framing import BytesLike, encode_fetch_response

from .errors import Error, as_broker_error
from .offsets import READ_COMMITTED
from .partition import Partition
from .replica_manager import ReplicaManager

DEFAULT_MAX_BYTES = 52428800         # fetch.max.bytes
DEFAULT_PARTITION_MAX_BYTES = 1048576  # max.partition.fetch.bytes

FetchPartition = bpb.FetchRequest.FetchPartition
PartitionData = bpb.FetchResponse.PartitionData


async def handle_fetch(replicas: ReplicaManager, request: bpb.FetchRequest) -> bytes:
    """The serialized FetchResponse (kafka_protocol/fetch_framing.py splices the batches in)."""
    wanted = [(t.topic, p) for t in request.topics for p in t.partitions]
    decided: dict[int, PartitionData] = {}
    if request.replica_id >= 0:
        for i, (topic, fp) in enumerate(wanted):
            answer = _follower_fetched(replicas, request.replica_id, request.replica_epoch, topic, fp)
            if answer is not None:
                decided[i] = answer
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    while True:
        answers, size = _read_all(replicas, request, wanted, decided)
        if (request.max_wait_ms <= 0 or size >= request.min_bytes
                or any(a.error_code != Error.NONE or a.HasField("diverging_epoch") for a, _ in answers)):
            break
        remaining = deadline - loop.time()
        waits = [p.changed.wait() for p in (replicas.partitions.get((t, fp.partition)) for t, fp in wanted) if p]
        if remaining <= 0 or not waits:
            break
        await asyncio.wait(waits, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
    return encode_fetch_response((topic, answer, records) for (topic, _), (answer, records) in zip(wanted, answers))


def _follower_fetched(replicas: ReplicaManager, replica_id: int, replica_epoch: int, topic: str,
                      fp: FetchPartition) -> Optional[PartitionData]:
    """The leader's side of a follower fetch, done once per request: the
    divergence check, then the follower's fetch offset is recorded. Returns
    the answer when it is already decided (an error, a divergence)."""
    try:
        partition = replicas.get(topic, fp.partition)
        partition.leader(fp.current_leader_epoch)
        if fp.last_fetched_epoch >= 0:
            diverging = partition.diverging_epoch(fp.fetch_offset, fp.last_fetched_epoch)
            if diverging is not None:
                answer = _watermarks(partition, fp.partition)
                answer.diverging_epoch.epoch, answer.diverging_epoch.end_offset = diverging
                return answer
        lg = partition.log
        if lg.log_start_offset <= fp.fetch_offset <= lg.log_end_offset:
            if partition.record_follower_fetch(replica_id, fp.fetch_offset, replica_epoch, fp.log_start_offset):
                replicas.isr_change_wanted.fire()
    except Exception as exc:  # noqa: BLE001 - an error is this partition's answer
        return _error(replicas, topic, fp.partition, exc)
    return None


def _read_all(replicas: ReplicaManager, request: bpb.FetchRequest, wanted: list[tuple[str, FetchPartition]],
              decided: dict[int, PartitionData]) -> tuple[list[tuple[PartitionData, BytesLike]], int]:
    """One pass over the partitions, within max_bytes: the first batch found
    is returned whole even past the limits (KIP-74), so a fetch always progresses."""
    budget = request.max_bytes if request.max_bytes > 0 else DEFAULT_MAX_BYTES
    follower = request.replica_id >= 0
    committed = not follower and request.isolation_level == READ_COMMITTED
    answers = []
    size = 0
    for i, (topic, fp) in enumerate(wanted):
        answer = decided.get(i)
        if answer is None:
            limit = min(fp.partition_max_bytes if fp.partition_max_bytes > 0 else DEFAULT_PARTITION_MAX_BYTES,
                        max(budget - size, 0))
            answer, records = _read(replicas, topic, fp, limit, follower, committed, min_one_batch=size == 0)
            size += len(records)
            answers.append((answer, records))
        else:
            answers.append((answer, b""))
    return answers, size


def _read(replicas: ReplicaManager, topic: str, fp: FetchPartition, max_bytes: int, follower: bool,
          committed: bool, *, min_one_batch: bool) -> tuple[PartitionData, BytesLike]:
    """The partition's answer, its records kept apart (see kafka_protocol/fetch_framing.py)."""
    try:
        partition = replicas.get(topic, fp.partition)
        partition.leader(fp.current_leader_epoch)
        records = partition.read(fp.fetch_offset, max_bytes, up_to_log_end=follower, min_one_batch=min_one_batch,
                                 committed=committed)
        answer = _watermarks(partition, fp.partition)
        if committed and len(records):
            for txn in partition.log.collect_aborted_txns(fp.fetch_offset, end_offset(records)):
                answer.aborted_transactions.add(producer_id=txn.producer_id, first_offset=txn.first_offset)
        return answer, records
    except Exception as exc:  # noqa: BLE001 - an error is this partition's answer
        return _error(replicas, topic, fp.partition, exc), b""


def _watermarks(partition: Partition, index: int) -> PartitionData:
    return PartitionData(partition_index=index, high_watermark=partition.high_watermark,
                         last_stable_offset=partition.last_stable_offset,
                         log_start_offset=partition.log.log_start_offset,
                         current_leader_id=partition.leader_id, current_leader_epoch=partition.leader_epoch)


def _error(replicas: ReplicaManager, topic: str, index: int, exc: Exception) -> PartitionData:
    err = as_broker_error(exc)
    leader, epoch = replicas.leader_hint(topic, index)
    return PartitionData(partition_index=index, error_code=err.error, high_watermark=-1, last_stable_offset=-1,
                         log_start_offset=-1, current_leader_id=leader, current_leader_epoch=epoch)
