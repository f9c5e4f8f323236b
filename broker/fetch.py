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
- KIP-73 leader throttle (replication_quota.py): a follower's partition
  throttled on this leader is answered without records while the leader's
  rate is over its bound and the follower is not in the ISR (so it counts
  nothing towards min_bytes, as Kafka's delayed fetch); the bytes of the
  throttled partitions of the final answer are recorded.
- Long poll: with max_wait_ms > 0 and fewer than min_bytes ready, the fetch
  waits on the partitions' change signals (appends, high watermark moves,
  role changes) until min_bytes are there or max_wait_ms has passed. Errors
  and divergence answer at once.
- Fetch sessions (KIP-227, fetch_session.py): a request with a session
  epoch is full (epoch 0: it makes a session of its partitions; -1: none)
  or incremental on its session (fetches only the partitions added or
  changed, answers only those with something new). An incremental fetch
  reads only the partitions whose signal fired since the last answer and
  is parked on the session otherwise: no work per idle partition. A
  session serves only the replica and principal that made it; an unknown
  one is FETCH_SESSION_ID_NOT_FOUND, a wrong epoch INVALID_FETCH_SESSION_EPOCH
  (the request-level error_code, no partitions).
"""
from __future__ import annotations

import asyncio
from typing import Callable, Optional

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.batch import end_offset
from kafka_protocol.fetch_framing import BytesLike, encode_fetch_response
from kafka_protocol.fetch_session_handler import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch

from .errors import Error, as_broker_error
from .fetch_session import DEFAULT_PARTITION_MAX_BYTES, FetchSession, SessionPartition
from .offsets import READ_COMMITTED
from .partition import Partition
from .replica_manager import ReplicaManager, TopicPartition

DEFAULT_MAX_BYTES = 52428800         # fetch.max.bytes

FetchPartition = bpb.FetchRequest.FetchPartition
PartitionData = bpb.FetchResponse.PartitionData


async def handle_fetch(replicas: ReplicaManager, request: bpb.FetchRequest, owner: str = "") -> bytes:
    """The serialized FetchResponse (kafka_protocol/fetch_framing.py splices the batches in).
    `owner`: the caller's principal, the only one that may use a session it makes."""
    if not request.HasField("session_epoch"):
        return await _full_fetch(replicas, request)
    sessions = replicas.fetch_sessions
    session_id, epoch = request.session_id, request.session_epoch
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        # A full fetch closes the session it names (Kafka: any session named by a full fetch).
        if session_id != INVALID_SESSION_ID and _usable(sessions.get(session_id), request, owner):
            sessions.remove(session_id)
        if epoch == FINAL_EPOCH:
            return await _full_fetch(replicas, request)
        session = sessions.create(request.replica_id, owner)
        # The session id is framed after the batches, in the one join: no copy of the answer for it.
        return await _full_fetch(replicas, request, session,
                                 _session_field(session.id if session is not None else INVALID_SESSION_ID))
    session = sessions.get(session_id)
    if not _usable(session, request, owner):
        return _session_error(Error.FETCH_SESSION_ID_NOT_FOUND)
    assert session is not None
    if session.epoch != epoch:
        return _session_error(Error.INVALID_FETCH_SESSION_EPOCH)
    session.epoch = next_epoch(epoch)
    sessions.touch(session)
    return await _incremental_fetch(replicas, request, session, _session_field(session.id))


def _usable(session: Optional[FetchSession], request: bpb.FetchRequest, owner: str) -> bool:
    """A session only serves the replica and principal that made it: an id
    guessed or taken from another client is as good as unknown."""
    return session is not None and session.replica_id == request.replica_id and session.owner == owner


def _session_field(session_id: int) -> bytes:
    return bpb.FetchResponse(session_id=session_id).SerializeToString()


def _session_error(error: int) -> bytes:
    return bpb.FetchResponse(error_code=error).SerializeToString()


async def _full_fetch(replicas: ReplicaManager, request: bpb.FetchRequest,
                      session: Optional[FetchSession] = None, trailer: bytes = b"") -> bytes:
    """Every partition of the request answered; with `session`, they become
    its partitions and their answers its baseline. `trailer`: encoded fields
    appended to the answer."""
    wanted = [(t.topic, p) for t in request.topics for p in t.partitions]
    decided = _followers_fetched(replicas, request, wanted)
    if session is not None:
        session.update((((t, fp.partition), fp) for t, fp in wanted), (), replicas.partitions.get)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    while True:
        if session is not None:
            session.take_changed()  # what this pass reads
        answers, size = _read_all(replicas, request, wanted, decided, _held_back(replicas, request.replica_id))
        if (request.max_wait_ms <= 0 or size >= request.min_bytes
                or any(a.error_code != Error.NONE or a.HasField("diverging_epoch") for a, _ in answers)):
            break
        remaining = deadline - loop.time()
        if remaining <= 0 or not wanted or (session is not None and session.closed):
            break
        if session is not None:
            # Parked on the session's own listeners: a future per partition would stay on its
            # signal after the fetch, until the partition next changes.
            await session.wait_changed(remaining)
            continue
        waits = [p.changed.wait() for p in (replicas.partitions.get((t, fp.partition)) for t, fp in wanted) if p]
        if not waits:
            break
        await asyncio.wait(waits, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
    _account(replicas, request, wanted, answers, size)
    if session is not None:
        _settle(replicas, session, request, wanted, answers)
    return encode_fetch_response(((topic, answer, records) for (topic, _), (answer, records) in zip(wanted, answers)),
                                 trailer)


async def _incremental_fetch(replicas: ReplicaManager, request: bpb.FetchRequest, session: FetchSession,
                             trailer: bytes = b"") -> bytes:
    """The partitions of the session that changed since its last answer (or
    were added or changed by this request), read; parked on the session until
    min_bytes are there or max_wait_ms passes. The answer holds only those
    with something new."""
    fetches = [((t.topic, fp.partition), fp) for t in request.topics for fp in t.partitions]
    session.update(fetches, [(f.topic, index) for f in request.forgotten for index in f.partitions],
                   replicas.partitions.get)
    decided = _followers_fetched(replicas, request, [(tp[0], fp) for tp, fp in fetches])
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    pending: set[TopicPartition] = set()
    while True:
        for tp in session.take_changed():
            if tp in session.partitions:
                session.refresh(tp, replicas.partitions.get(tp))
                pending.add(tp)
        wanted = [(tp[0], session.partitions[tp]) for tp in sorted(pending) if tp in session.partitions]
        answers, size = _read_all(replicas, request, wanted, decided, _held_back(replicas, request.replica_id))
        news = [_is_news(entry, answer, records) for (_, entry), (answer, records) in zip(wanted, answers)]
        remaining = deadline - loop.time()
        if (request.max_wait_ms <= 0 or size >= request.min_bytes or remaining <= 0 or session.closed
                or any(a.error_code != Error.NONE or a.HasField("diverging_epoch") for a, _ in answers)):
            break
        await session.wait_changed(remaining)
    _account(replicas, request, wanted, answers, size)
    _settle(replicas, session, request, wanted, answers)
    return encode_fetch_response(((topic, answer, records) for (topic, _), (answer, records), new
                                  in zip(wanted, answers, news) if new), trailer)


def _is_news(entry: SessionPartition, answer: PartitionData, records: BytesLike) -> bool:
    """Whether an incremental answer carries this partition: records, an
    error, a divergence, or watermarks other than those last answered."""
    return bool(len(records) or answer.error_code != Error.NONE or answer.HasField("diverging_epoch")
                or (answer.high_watermark, answer.last_stable_offset, answer.log_start_offset)
                != (entry.high_watermark, entry.last_stable_offset, entry.log_start_offset))


def _settle(replicas: ReplicaManager, session: FetchSession, request: bpb.FetchRequest,
            wanted: list[tuple[str, FetchPartition]], answers: list[tuple[PartitionData, BytesLike]]) -> None:
    """Remember what was answered. A partition the next fetch must read
    again though nothing marks it: one answered with records (as Kafka's
    leader, which reads every partition of a session on every fetch, answers
    them again to a client that names it with no new offset: one that dropped
    them unreturned, after a seek to its own position say), or one answered
    without records though it has some to give (left out by max_bytes, held
    back by a throttle). A client that took the records names the partition
    with its next offset or forgets it, so this reads nothing twice."""
    follower = request.replica_id >= 0
    committed = not follower and request.isolation_level == READ_COMMITTED
    for (topic, fp), (answer, records) in zip(wanted, answers):
        tp = (topic, fp.partition)
        entry = session.partitions.get(tp)
        if entry is None:
            continue
        entry.answered(answer.high_watermark, answer.last_stable_offset, answer.log_start_offset)
        if len(records):
            session.changed.add(tp)
            continue
        if answer.error_code != Error.NONE:
            continue
        partition = replicas.partitions.get(tp)
        if partition is not None and fp.fetch_offset < _readable_end(partition, follower, committed):
            session.changed.add(tp)


def _readable_end(partition: Partition, follower: bool, committed: bool) -> int:
    if follower:
        return partition.log_end_offset
    return partition.last_stable_offset if committed else partition.high_watermark


def _followers_fetched(replicas: ReplicaManager, request: bpb.FetchRequest,
                       wanted: list[tuple[str, FetchPartition]]) -> dict[TopicPartition, PartitionData]:
    decided: dict[TopicPartition, PartitionData] = {}
    if request.replica_id >= 0:
        for topic, fp in wanted:
            answer = _follower_fetched(replicas, request.replica_id, request.replica_epoch, topic, fp)
            if answer is not None:
                decided[(topic, fp.partition)] = answer
    return decided


def _account(replicas: ReplicaManager, request: bpb.FetchRequest, wanted: list[tuple[str, FetchPartition]],
             answers: list[tuple[PartitionData, BytesLike]], size: int) -> None:
    if request.replica_id >= 0:
        replicas.traffic.replication_bytes_out += size
        _record_throttled(replicas, wanted, answers)
    else:
        replicas.traffic.bytes_out += size


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
        if partition.log_start_offset <= fp.fetch_offset <= partition.log_end_offset:
            if partition.record_follower_fetch(replica_id, fp.fetch_offset, replica_epoch, fp.log_start_offset):
                replicas.isr_change_wanted.fire()
    except Exception as exc:  # noqa: BLE001 - an error is this partition's answer
        return _error(replicas, topic, fp.partition, exc)
    return None


HeldBack = Callable[[str, Partition], bool]


def _held_back(replicas: ReplicaManager, replica_id: int) -> HeldBack:
    """Whether this pass answers a partition without records: Kafka's
    shouldLeaderThrottle (throttled here, follower out of the ISR, rate over
    the bound), the rate measured once per pass."""
    quota = replicas.replication_quotas.leader
    if replica_id < 0 or not quota.active or not quota.is_quota_exceeded(replicas.replication_quotas.clock()):
        return lambda topic, partition: False

    def held(topic: str, partition: Partition) -> bool:
        if quota.is_throttled(topic, partition.index) and replica_id not in partition.isr:
            quota.held_back += 1
            return True
        return False
    return held


def _record_throttled(replicas: ReplicaManager, wanted: list[tuple[str, FetchPartition]],
                      answers: list[tuple[PartitionData, BytesLike]]) -> None:
    quota = replicas.replication_quotas.leader
    if not quota.active:
        return
    sent = sum(len(records) for (topic, fp), (_, records) in zip(wanted, answers)
               if len(records) and quota.is_throttled(topic, fp.partition))
    quota.record(sent, replicas.replication_quotas.clock())


def _read_all(replicas: ReplicaManager, request: bpb.FetchRequest, wanted: list[tuple[str, FetchPartition]],
              decided: dict[TopicPartition, PartitionData], held: HeldBack,
              ) -> tuple[list[tuple[PartitionData, BytesLike]], int]:
    """One pass over the partitions, within max_bytes: the first batch found
    is returned whole even past the limits (KIP-74), so a fetch always progresses."""
    budget = request.max_bytes if request.max_bytes > 0 else DEFAULT_MAX_BYTES
    follower = request.replica_id >= 0
    committed = not follower and request.isolation_level == READ_COMMITTED
    answers = []
    size = 0
    for topic, fp in wanted:
        answer = decided.get((topic, fp.partition))
        if answer is None:
            limit = min(fp.partition_max_bytes if fp.partition_max_bytes > 0 else DEFAULT_PARTITION_MAX_BYTES,
                        max(budget - size, 0))
            answer, records = _read(replicas, topic, fp, limit, follower, committed, min_one_batch=size == 0,
                                    held=held)
            size += len(records)
            answers.append((answer, records))
        else:
            answers.append((answer, b""))
    return answers, size


def _read(replicas: ReplicaManager, topic: str, fp: FetchPartition, max_bytes: int, follower: bool,
          committed: bool, *, min_one_batch: bool, held: HeldBack) -> tuple[PartitionData, BytesLike]:
    """The partition's answer, its records kept apart (see kafka_protocol/fetch_framing.py)."""
    try:
        partition = replicas.get(topic, fp.partition)
        partition.leader(fp.current_leader_epoch)
        if held(topic, partition):
            return _watermarks(partition, fp.partition), b""
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
                         log_start_offset=partition.log_start_offset,
                         current_leader_id=partition.leader_id, current_leader_epoch=partition.leader_epoch)


def _error(replicas: ReplicaManager, topic: str, index: int, exc: Exception) -> PartitionData:
    err = as_broker_error(exc)
    leader, epoch = replicas.leader_hint(topic, index)
    return PartitionData(partition_index=index, error_code=err.error, high_watermark=-1, last_stable_offset=-1,
                         log_start_offset=-1, current_leader_id=leader, current_leader_epoch=epoch)
