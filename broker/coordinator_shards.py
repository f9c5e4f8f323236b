"""The shell the group and the transaction coordinators share: one shard per
partition of their internal topic (__consumer_offsets, __transaction_state)
that this broker leads, for one leader epoch.

- Leadership: a new leader epoch of one of the topic's partitions here
  starts a fresh shard, whose task (the coordinator's `run_shard`) loads the
  machine by replaying the partition's log (COORDINATOR_LOAD_IN_PROGRESS
  meanwhile); a follower or a stopped replica drops the shard
  (NOT_COORDINATOR). So the state moves with the partition's leadership.
- Writes: `append` appends a machine's records with acks=all right where
  the machine made them. An append that failed before reaching the log
  leaves the machine ahead of the log, so the shard is reloaded from the log
  (after a pause, so a partition that keeps refusing is not reloaded in a
  busy loop); an append that timed out or lost its ISR on the way may be in
  the log anyway, and the machine stays.
- A shard whose task failed answers COORDINATOR_NOT_AVAILABLE with the
  reason, instead of taking the broker down.
"""
from __future__ import annotations

import asyncio
import logging
from typing import AsyncIterator, Awaitable, Callable, Generic, Optional, TypeVar

from kafka_protocol.batch import end_offset

from .errors import Error
from .partition import Partition
from .produce import AppendOrigin, ProduceResult, start_append
from .replica_manager import ReplicaChanges, ReplicaManager
from .waiting import Signal

log = logging.getLogger(__name__)

LOAD_CHUNK_BYTES = 1 << 20
RELOAD_PAUSE_S = 0.2
# Append errors whose records may be in the log anyway: the machine stays.
APPENDED_ANYWAY = (Error.REQUEST_TIMED_OUT, Error.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
# What a client is told when its records could not be written (as Kafka maps them).
NOT_COORDINATOR_ERRORS = (Error.NOT_LEADER_OR_FOLLOWER, Error.KAFKA_STORAGE_ERROR, Error.UNKNOWN_TOPIC_OR_PARTITION)
UNAVAILABLE_ERRORS = (Error.NOT_ENOUGH_REPLICAS, Error.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Error.REQUEST_TIMED_OUT)

M = TypeVar("M")


class Shard(Generic[M]):
    """The coordinator of one partition of the internal topic, for one leader epoch."""

    def __init__(self, partition: Partition, machine: M) -> None:
        self.partition = partition
        self.leader_epoch = partition.leader_epoch
        self.machine = machine
        self.loaded = False
        self.failed: Optional[str] = None
        self.closed = False
        self.wake = Signal()  # deadlines changed, or work is waiting
        self.task: Optional[asyncio.Task[None]] = None

    @property
    def index(self) -> int:
        return self.partition.index

    @property
    def current(self) -> bool:
        return (not self.closed and self.partition.is_leader and not self.partition.stopped
                and self.partition.leader_epoch == self.leader_epoch)

    def cancel(self) -> list[asyncio.Task[None]]:
        """Stop the shard's tasks; the ones to await."""
        if self.task is None:
            return []
        self.task.cancel()
        return [self.task]


S = TypeVar("S", bound=Shard)


class ShardedCoordinator(Generic[S]):
    """What both coordinators do with their shards. A subclass names its
    `topic` and `role` (for logs), makes shards (`new_shard`) and runs one
    (`run_shard`: load, then serve its timers until closed)."""

    topic: str
    role: str

    def __init__(self, broker_id: int, replicas: ReplicaManager) -> None:
        self.broker_id = broker_id
        self.replicas = replicas
        self.shards: dict[int, S] = {}

    def new_shard(self, partition: Partition) -> S:
        raise NotImplementedError

    async def run_shard(self, shard: S) -> None:
        raise NotImplementedError

    # -- leadership ------------------------------------------------------------------------------
    def on_replica_changes(self, changes: ReplicaChanges) -> None:
        for partition in changes.leaders:
            if partition.topic == self.topic:
                self.unload(partition.index)
                shard = self.shards[partition.index] = self.new_shard(partition)
                self._start(shard)
        for partition in changes.followers:
            if partition.topic == self.topic:
                self.unload(partition.index)
        for topic, index in changes.stopped:
            if topic == self.topic:
                self.unload(index)

    def unload(self, index: int) -> list[asyncio.Task[None]]:
        shard = self.shards.pop(index, None)
        if shard is None:
            return []
        shard.closed = True
        log.info("broker %d: no longer the %s of %s-%d", self.broker_id, self.role, self.topic, index)
        return shard.cancel()

    async def stop(self) -> None:
        tasks = [t for index in list(self.shards) for t in self.unload(index)]
        await asyncio.gather(*tasks, return_exceptions=True)

    def _start(self, shard: S, pause_s: float = 0.0) -> None:
        shard.task = asyncio.create_task(self._guarded(shard, pause_s),
                                         name=f"{self.role.replace(' ', '-')}-{shard.index}")

    async def _guarded(self, shard: S, pause_s: float) -> None:
        try:
            await asyncio.sleep(pause_s)
            await self.run_shard(shard)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken coordinator answers, it does not take the broker down
            shard.failed = f"{type(exc).__name__}: {exc}"
            log.exception("broker %d: the %s of %s-%d failed", self.broker_id, self.role, self.topic, shard.index)

    def reload(self, shard: S) -> None:
        """The machine holds changes the log does not: start again from the log."""
        if shard.current and shard.task is not None:
            shard.cancel()
            shard.loaded = False
            self._start(shard, RELOAD_PAUSE_S)

    # -- loading ---------------------------------------------------------------------------------
    async def log_chunks(self, shard: S) -> AsyncIterator[bytes | memoryview]:
        """The partition's batches from its log start, a chunk at a time,
        yielding to the loop between chunks, until the log end - read again
        after each pass, so what was appended while loading (a transaction
        marker) is not missed. Stops early when the shard is closed."""
        if not shard.partition.opened:
            return  # an unopened replica's log is empty (broker/partition.py): nothing to load
        lg = shard.partition.log
        offset = lg.log_start_offset
        while offset < lg.log_end_offset and not shard.closed:
            read_from = offset
            for data in lg.iter_reads(offset, LOAD_CHUNK_BYTES):
                yield data
                offset = end_offset(data)
                await asyncio.sleep(0)
                if shard.closed:
                    return
            if offset == read_from:
                return  # nothing readable there: a log whose end is past its last batch

    async def wait_replicated(self, shard: S) -> None:
        """Until the high watermark reaches the log end as it is now: what a
        load replayed above it (written by an earlier leader, or by this one
        before an append timed out) may still be lost with this leadership,
        so it is not served before it is replicated. Returns early when the
        shard closes (the caller checks)."""
        partition = shard.partition
        end = partition.log_end_offset
        while partition.high_watermark < end and shard.current:
            await partition.changed.wait()

    # -- routing and writes ----------------------------------------------------------------------
    def partitions_of(self, topic: str, default: int) -> int:
        """The topic's partition count in the image, `default` (the configured one) before it exists."""
        state = self.replicas.image.topic(topic)
        return len(state.partitions) if state is not None and state.partitions else default

    def shard_at(self, index: int, error: Callable[[int, str], Exception]) -> S:
        """The loaded, current shard of partition `index`, or `error(code, message)` raised."""
        shard = self.shards.get(index)
        if shard is None or not shard.current:
            raise error(Error.NOT_COORDINATOR, f"broker {self.broker_id} does not coordinate {self.topic}-{index}")
        if shard.failed is not None:
            raise error(Error.COORDINATOR_NOT_AVAILABLE, shard.failed)
        if not shard.loaded:
            raise error(Error.COORDINATOR_LOAD_IN_PROGRESS, f"{self.topic}-{index} is loading")
        return shard

    def append(self, shard: S, batches: bytes, timeout_ms: int, what: str, *,
               origin: AppendOrigin = AppendOrigin.COORDINATOR,
               on_refused: Optional[Callable[[], None]] = None,
               reload_when_unreplicated: bool = False) -> Awaitable[ProduceResult]:
        """Append with acks=all and wait for the high watermark; on a refusal
        the shard reloads from the log (`on_refused` runs first). With
        `reload_when_unreplicated` also when the records reached the local log
        but not the ISR in time: the state is then what the log says, served
        once replicated (`wait_replicated`), never the machine's guess.
        Runs to its end even when the request that asked for it is cancelled
        (gRPC cancels a handler at its client's deadline): the machine holds
        the change already, so a failure must still reload it. The records
        are in the log when this returns (appended right where the machine
        made them); the answer is awaited."""
        answer = start_append(self.replicas, self.topic, shard.index, batches, -1, timeout_ms, origin)
        return asyncio.shield(self._outcome(shard, answer, what, on_refused, reload_when_unreplicated))

    async def _outcome(self, shard: S, answer: Awaitable[ProduceResult], what: str,
                       on_refused: Optional[Callable[[], None]], reload_when_unreplicated: bool) -> ProduceResult:
        result = await answer
        if result.error == Error.NONE:
            return result
        log.warning("%s-%d: appending %s failed: %s", self.topic, shard.index, what, result.message or result.error)
        if result.error not in APPENDED_ANYWAY or reload_when_unreplicated:
            if on_refused is not None:
                on_refused()
            self.reload(shard)
        return result


def client_error(code: int) -> int:
    """What a client is told of a failed append (Kafka's mapping for coordinators)."""
    if code in NOT_COORDINATOR_ERRORS:
        return Error.NOT_COORDINATOR
    if code in UNAVAILABLE_ERRORS:
        return Error.COORDINATOR_NOT_AVAILABLE
    return Error.UNKNOWN_SERVER_ERROR
