"""QuorumNode: the asyncio shell that runs one RaftCore against the disk and the network.

The core decides; this class carries out its `Ready` bundles in the order
ready.py prescribes, on the event loop thread:

1. quorum-state: written and fsynced right here (rare: elections), so a
   vote or epoch acknowledgement never leaves before its promise is durable.
2. snapshots: saved (and, for an install, the log reset) right here (rare).
3. truncation: right here, fsynced (rare: a diverged follower).
4. entries: written right here, but fsynced by the flusher task in a worker
   thread. Appends keep going while an fsync runs; when it returns, the core
   is told how far the log is durable (`core.advance`). Every fsync thus
   covers whatever accumulated meanwhile: group commit for free.
5. log start: segments below it deleted.
6. messages: handed to the transport (requests) or to the RPC waiting for
   them (responses, matched by (requester, correlation id)).
7. committed entries: applied to the state machine; appends waiting on them
   are answered; a snapshot is taken when enough bytes went by.

A truncation or snapshot install while an fsync is in flight bumps the log
generation: the fsync's result then describes a log that no longer exists
and is discarded instead of reported to the core.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Protocol, Sequence

from partition_log import clock

from .raft import (
    CommittedEntries,
    Entry,
    Errors,
    Message,
    NotLeaderError,
    QuorumConfig,
    QuorumInfo,
    RaftCore,
    Ready,
    is_request,
)
from .raft.voters import Endpoint, Voter, VoterSet
from .storage import MetadataStorage
from kafka_protocol.errors import KafkaStorageError

log = logging.getLogger(__name__)


class StateMachine(Protocol):
    """What runs above the quorum: the metadata image, or (tests, bench) records_only.RecordStore."""

    def apply(self, records: Iterable[tuple[int, bytes]]) -> None: ...

    def snapshot(self) -> bytes: ...

    def load_snapshot(self, data: Optional[bytes]) -> None: ...

    def committed_through(self, offset: int) -> None:
        """Every entry up to `offset` is committed and applied, control entries included."""


class AppendLostError(Exception):
    """An append was overwritten by a new leader before it committed; retry it."""


class StorageFailure(Exception):
    """The metadata log could not be written; the node must stop (as Kafka halts)."""


@dataclass
class _Waiter:
    last_offset: int
    epoch: int
    future: "asyncio.Future[None]"


class QuorumNode:
    def __init__(
        self,
        node_id: int,
        voters: Iterable[int] | VoterSet,
        cluster_id: str,
        storage: MetadataStorage,
        state_machine: StateMachine,
        *,
        config: QuorumConfig,
        max_bytes_between_snapshots: int,
        send: Callable[[Message], None],
        rng: Optional[random.Random] = None,
        bootstrap_ids: Iterable[int] = (),
    ) -> None:
        """`voters`: static ids (controller.quorum.voters), or the bootstrap
        VoterSet of a dynamic quorum (KIP-853; empty for a node that joins).
        `bootstrap_ids`: the ids the shell gave controller.quorum.bootstrap.servers."""
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.storage = storage
        self.state_machine = state_machine
        self.config = config
        self.max_bytes_between_snapshots = max_bytes_between_snapshots
        self._send = send
        self._epoch_start = time.monotonic()
        durable = storage.durable
        self.core = RaftCore(
            node_id, voters, cluster_id, rng or random.Random(), config, now=self.now_ms(), durable=durable,
            directory_id=storage.directory_id if isinstance(voters, VoterSet) else None,
            bootstrap_ids=bootstrap_ids,
        )
        self.core.on_transition = self._on_transition
        state_machine.load_snapshot(durable.snapshot.data if durable.snapshot else None)
        self._bytes_since_snapshot = 0
        # Committed entries handed to the state machine end here.
        self.applied_end = durable.log_start_offset
        state_machine.committed_through(self.applied_end - 1)
        self._responses: dict[tuple[int, int], asyncio.Future[Message]] = {}
        self._waiters: list[_Waiter] = []
        self._listeners: list[Callable[[int, Sequence[Entry]], None]] = []
        self._wakeup = asyncio.Event()
        self._unflushed = asyncio.Event()
        self._log_generation = 0
        self._flush_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"flush-{node_id}")
        self._tasks: list[asyncio.Task[None]] = []
        self.failure: Optional[BaseException] = None
        self._closing = False  # set by stop(): nothing more is stepped, written or sent
        self.stopped = asyncio.Event()
        # Every voter seen in a voter set, by id: a removed voter (a leader
        # handing over) must still be reachable while it leads.
        self._known_voters: dict[int, Voter] = {}
        self._remember_voters()

    # ------------------------------------------------------------------
    # Lifecycle
    # ------------------------------------------------------------------

    def now_ms(self) -> int:
        """The core's clock: monotonic milliseconds since this node started."""
        return int((time.monotonic() - self._epoch_start) * 1000)

    def wall_ms(self, core_ms: int) -> int:
        """A core timestamp as wall-clock milliseconds (-1 stays -1)."""
        if core_ms < 0:
            return core_ms
        return clock.wall_ms() - (self.now_ms() - core_ms)

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._timer_loop(), name=f"raft-timer-{self.node_id}"),
            asyncio.create_task(self._flush_loop(), name=f"raft-flush-{self.node_id}"),
        ]
        self.drain()

    async def resign(self, wait_s: float = 1.0) -> None:
        """Graceful shutdown of a leader: hand over before going away (EndQuorumEpoch)."""
        if self.core.is_leader():
            self.core.resign()
            self.drain()
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and self.core.leader() in (None, self.node_id):
                await asyncio.sleep(0.02)

    async def stop(self) -> None:
        """Stop timers, flushing, sending and applying; close the log. Idempotent."""
        if self._closing:
            return
        self._closing = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._flush_executor.shutdown(wait=True)
        try:
            self.storage.log.close()
        except OSError:
            log.exception("closing the metadata log")
        for fut in self._responses.values():
            fut.cancel()
        for waiter in self._waiters:
            if not waiter.future.done():
                waiter.future.set_exception(NotLeaderError(self.core.leader(), self.core.epoch()))
        self.stopped.set()

    def _fail(self, exc: BaseException) -> None:
        if self.failure is None:
            log.critical("node %d stops: %s", self.node_id, exc)
            self.failure = exc
            self.stopped.set()

    # ------------------------------------------------------------------
    # Public face for the layer above
    # ------------------------------------------------------------------

    def leader(self) -> Optional[int]:
        return self.core.leader()

    def epoch(self) -> int:
        return self.core.epoch()

    def is_leader(self) -> bool:
        return self.core.is_leader()

    def high_watermark(self) -> int:
        return self.core.high_watermark

    def leader_ready(self) -> bool:
        """This node leads and its state machine has applied everything committed
        (the new epoch's first entry included): it may act on the state."""
        state = self.core.state
        hw = getattr(state, "high_watermark", None) if self.core.is_leader() else None
        return hw is not None and self.applied_end >= hw

    def describe_quorum(self) -> QuorumInfo:
        self.core.tick(self.now_ms())
        return self.core.describe_quorum()

    def voter_set(self) -> VoterSet:
        """The voter set in force here (KIP-853; a static quorum's ids without endpoints)."""
        return self.core.voter_set

    def endpoint(self, node_id: int, listener: Optional[str] = None) -> Optional[Endpoint]:
        """Where voter `node_id` listens: in the voter set in force, else as last seen in one."""
        found = self.core.voter_set.endpoint(node_id, listener)
        if found is None and node_id in self._known_voters:
            found = VoterSet([self._known_voters[node_id]]).endpoint(node_id, listener)
        return found

    def known_voter(self, node_id: int) -> Optional[Voter]:
        return self.core.voter_set.get(node_id) or self._known_voters.get(node_id)

    def _remember_voters(self) -> None:
        voters = self.core.voter_set
        if getattr(self, "_remembered", None) is not voters:
            self._remembered = voters
            self._known_voters.update((v.key.id, v) for v in voters if v.endpoints)

    def add_listener(self, listener: Callable[[int, Sequence[Entry]], None]) -> None:
        """Called with (base_offset, entries) for every committed run, control entries included."""
        self._listeners.append(listener)

    async def append(self, records: Sequence[bytes]) -> tuple[int, int]:
        """Append through this node (the leader); return (base, last) offsets once committed.

        Raises NotLeaderError when this node does not lead, AppendLostError
        when a leader change overwrote the records before they committed.
        """
        base, last, committed = self.submit(records)
        await committed
        return base, last

    def submit(self, records: Sequence[bytes]) -> tuple[int, int, "asyncio.Future[None]"]:
        """Append through this node (the leader) without waiting: (base, last,
        a future done once they commit). Several submits may be in flight;
        they commit in the order submitted. Raises NotLeaderError (at once)
        or StorageFailure; the future fails with AppendLostError or
        StorageFailure."""
        if self.failure is not None:
            raise StorageFailure(str(self.failure))
        core = self.core
        core.tick(self.now_ms())
        last = core.append(records)
        epoch = core.epoch()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(_Waiter(last, epoch, future))
        self.drain()
        return last - len(records) + 1, last, future

    # ------------------------------------------------------------------
    # Network input
    # ------------------------------------------------------------------

    async def handle_request(self, request: Message, timeout_s: float) -> Optional[Message]:
        """Step a request from a peer and wait for the core's response to it (None on timeout)."""
        if self._closing:
            return None
        key = (request.src, request.correlation_id)
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._responses[key] = future
        try:
            self.core.step(request, self.now_ms())
            self.drain()
            return await asyncio.wait_for(future, timeout_s)
        except asyncio.TimeoutError:
            return None
        finally:
            if self._responses.get(key) is future:
                del self._responses[key]

    def handle_response(self, response: Message) -> None:
        if self._closing:
            return
        self.core.step(response, self.now_ms())
        self.drain()

    def peer_unreachable(self, node_id: int) -> None:
        """The transport could not connect to `node_id` at all."""
        if self._closing:
            return
        self.core.peer_unreachable(node_id, self.now_ms())
        self.drain()

    # ------------------------------------------------------------------
    # Carrying out Ready bundles
    # ------------------------------------------------------------------

    def drain(self) -> None:
        if self.failure is not None or self._closing:
            return
        try:
            while (ready := self.core.ready()) is not None:
                self._handle(ready)
        except (OSError, KafkaStorageError) as exc:
            # A failed write or fsync stops the node before anything it promised
            # leaves (step 6 comes after): never retried, never acknowledged.
            self._fail(StorageFailure(f"metadata log I/O error: {exc}"))
        self._remember_voters()
        self._wakeup.set()

    def _handle(self, r: Ready) -> None:
        storage = self.storage
        if r.quorum_state is not None:
            storage.quorum_state.write(r.quorum_state)
        if r.snapshot_to_install is not None:
            snapshot = r.snapshot_to_install
            storage.snapshots.save(snapshot)
            self._log_generation += 1
            storage.log.reset_to(snapshot.snapshot_id.end_offset)
            self.state_machine.load_snapshot(snapshot.data)
            self.applied_end = snapshot.snapshot_id.end_offset
            self.state_machine.committed_through(self.applied_end - 1)
            self._bytes_since_snapshot = 0
            log.info("node %d installed snapshot %s", self.node_id, tuple(snapshot.snapshot_id))
        if r.snapshot_to_save is not None:
            storage.snapshots.save(r.snapshot_to_save)
        if r.truncate_to is not None:
            self._log_generation += 1
            storage.log.truncate_to(r.truncate_to)
        if r.entries:
            storage.log.append(r.entries_base_offset, r.entries)
            self._unflushed.set()
        if r.log_start_offset is not None:
            storage.log.delete_below(r.log_start_offset)
        for message in r.messages:
            if is_request(message):
                self._send(message)
            else:
                future = self._responses.pop((message.dst, message.correlation_id), None)
                if future is not None and not future.done():
                    future.set_result(message)
        if r.committed is not None:
            self._apply(r.committed)

    def _apply(self, committed: CommittedEntries) -> None:
        base, entries = committed
        records = [(base + i, e.data) for i, e in enumerate(entries) if not e.control]
        self.state_machine.apply(records)
        self._bytes_since_snapshot += sum(len(data) for _, data in records)
        end = base + len(entries)
        self.applied_end = end
        self.state_machine.committed_through(end - 1)
        if self._waiters:
            self._answer_waiters(base, entries, end)
        for listener in self._listeners:
            listener(base, entries)
        if self._bytes_since_snapshot >= self.max_bytes_between_snapshots:
            self._take_snapshot(end)

    def _answer_waiters(self, base: int, entries: Sequence[Entry], end: int) -> None:
        still_waiting = []
        for waiter in self._waiters:
            if waiter.last_offset >= end:
                still_waiting.append(waiter)
            elif not waiter.future.done():
                if waiter.last_offset >= base and entries[waiter.last_offset - base].epoch == waiter.epoch:
                    waiter.future.set_result(None)
                else:
                    # Another leader's entry committed at our offset: ours is gone.
                    waiter.future.set_exception(AppendLostError(f"offset {waiter.last_offset} was overwritten"))
        self._waiters = still_waiting

    def _take_snapshot(self, end: int) -> None:
        data = self.state_machine.snapshot()
        snapshot_id = self.core.create_snapshot(end, data)
        self._bytes_since_snapshot = 0
        log.info("node %d snapshot %s (%d bytes)", self.node_id, tuple(snapshot_id), len(data))
        # The bundle that saves it is handled by the drain loop we are in.

    # ------------------------------------------------------------------
    # Background tasks
    # ------------------------------------------------------------------

    async def _timer_loop(self) -> None:
        # _closing as well as cancellation: Python 3.11's wait_for can swallow a
        # cancellation that lands as the awaited event is set.
        while self.failure is None and not self._closing:
            delay = (self.core.next_deadline() - self.now_ms()) / 1000
            if delay > 0:
                self._wakeup.clear()
                try:
                    await asyncio.wait_for(self._wakeup.wait(), min(delay, 1.0))
                except asyncio.TimeoutError:
                    pass
            self.core.tick(self.now_ms())
            self.drain()

    async def _flush_loop(self) -> None:
        loop = asyncio.get_running_loop()
        # _closing as well as cancellation: Python 3.11's wait_for can swallow a
        # cancellation that lands as the awaited event is set.
        while self.failure is None and not self._closing:
            await self._unflushed.wait()
            self._unflushed.clear()
            pending = self.storage.log.begin_flush()
            if pending is None:
                continue
            generation = self._log_generation
            try:
                await loop.run_in_executor(self._flush_executor, pending.run)
            except OSError as exc:
                if generation == self._log_generation:
                    self._fail(StorageFailure(f"fsync of the metadata log failed: {exc}"))
                    return
            if generation != self._log_generation:
                self._unflushed.set()  # the log changed under the fsync: flush again
                continue
            self.storage.log.complete_flush(pending)
            self.core.advance(pending.end_offset)
            self.drain()

    def _on_transition(self, old: object, new: object) -> None:
        # Called mid-transition, before the new state is entered: only the
        # durable quorum-state may be looked at here.
        epoch, leader_id, voted_for = self.core.quorum.data
        log.info(
            "node %d: %s -> %s (epoch %d, leader %s, voted for %s)",
            self.node_id, type(old).__name__, type(new).__name__, epoch, leader_id, voted_for,
        )


__all__ = ["AppendLostError", "Errors", "QuorumNode", "StateMachine", "StorageFailure"]
