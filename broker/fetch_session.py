"""KIP-227 incremental fetch sessions, the leader's side: the session cache
(`max.incremental.fetch.session.cache.slots`) and what one session holds.

A session remembers, per partition, the fetch parameters last sent (offset,
leader epoch, max bytes, ...) and what its last answer said (high
watermark, last stable offset, log start offset), so that

- an incremental request names only the partitions added or changed, and
  `forgotten` those dropped: its size does not grow with the partitions
  that did not move;
- an incremental answer carries only the partitions with something new
  (records, an error, a divergence, a moved watermark).

Unlike Kafka's leader, which reads every partition of the session on every
fetch, a session here listens on its partitions' change signals
(`Partition.changed`, broker/waiting.py) and keeps the set of those that
changed since its last answer: a fetch reads only those, and one with
nothing to read is parked on the session's own wake-up until a partition
changes or max_wait_ms passes. An idle broker does no work per partition.

Epochs and ids are Kafka's (FetchMetadata): id 0 is no session; epoch 0
asks for a new one, -1 closes (or does without) one, an incremental fetch
carries the epoch after the last one the session answered (wrapping past
2^31-1 to 1). A full cache evicts the least recently used session idle for
EVICTION_MS, else (for a follower's session) the least recently used
consumer's session, else creates none (the answer's id is 0: the client
goes on with full fetches).
"""
from __future__ import annotations

import asyncio
import random
from collections import OrderedDict
from typing import Callable, Iterable, Optional

from kafka_protocol.fetch_session_handler import INITIAL_EPOCH, INVALID_SESSION_ID, MAX_EPOCH, next_epoch

from .partition import Partition

EVICTION_MS = 120_000  # Kafka's FetchSessionCache evictionMs: a session idle this long may give way

TopicPartition = tuple[str, int]
DEFAULT_PARTITION_MAX_BYTES = 1048576  # max.partition.fetch.bytes (replica.fetch.max.bytes is the same by default)


class SessionPartition:
    """One partition of a session: the client's fetch parameters that the
    leader reads with (a FetchRequest.FetchPartition's, copied: holding the
    parsed message would keep its whole request alive) and what the last
    answer carrying it said. It stands for the FetchPartition in the
    session's reads (same field names). It is also the listener on the
    partition's change signal (called: its session marks it), so watching
    costs no closure per partition."""
    __slots__ = ("session", "tp", "current_leader_epoch", "fetch_offset", "partition_max_bytes",
                 "high_watermark", "last_stable_offset", "log_start_offset", "watched")

    def __init__(self, session: "FetchSession", tp: TopicPartition, fetch) -> None:
        self.session = session
        self.tp = tp
        self.take(fetch)
        self.high_watermark = self.last_stable_offset = self.log_start_offset = -2  # never answered
        self.watched: Optional[Partition] = None

    @property
    def partition(self) -> int:
        return self.tp[1]

    def take(self, fetch) -> None:
        """The parameters of a FetchPartition naming this partition again."""
        self.current_leader_epoch = fetch.current_leader_epoch
        self.fetch_offset = fetch.fetch_offset
        max_bytes = fetch.partition_max_bytes
        # The usual value (followers' and consumers' default) as one shared int, not one per entry.
        self.partition_max_bytes = (DEFAULT_PARTITION_MAX_BYTES if max_bytes == DEFAULT_PARTITION_MAX_BYTES
                                    else max_bytes)

    def answered(self, high_watermark: int, last_stable_offset: int, log_start_offset: int) -> bool:
        """Record an answer's watermarks; whether any differs from the last one sent."""
        moved = (high_watermark != self.high_watermark or last_stable_offset != self.last_stable_offset
                 or log_start_offset != self.log_start_offset)
        self.high_watermark, self.last_stable_offset, self.log_start_offset = (
            high_watermark, last_stable_offset, log_start_offset)
        return moved

    def __call__(self) -> None:
        self.session.mark(self.tp)


class FetchSession:
    def __init__(self, session_id: int, replica_id: int, owner: str, now_ms: int) -> None:
        self.id = session_id
        self.replica_id = replica_id  # -1: a consumer's
        self.owner = owner            # the principal that made it: nobody else may use it
        self.epoch = next_epoch(INITIAL_EPOCH)  # the one the next incremental fetch must carry
        self.partitions: dict[TopicPartition, SessionPartition] = {}
        self.changed: set[TopicPartition] = set()
        self.last_used_ms = now_ms
        self._wake: Optional[asyncio.Future[None]] = None
        self.closed = False

    @property
    def privileged(self) -> bool:
        return self.replica_id >= 0

    def update(self, fetches: Iterable[tuple[TopicPartition, object]], forgotten: Iterable[TopicPartition],
               lookup: Callable[[TopicPartition], Optional[Partition]]) -> None:
        """Apply an incremental request (or a full one's partitions): add or
        replace, then forget; each changed partition is read this time."""
        for tp in forgotten:
            entry = self.partitions.pop(tp, None)
            if entry is not None:
                _unwatch(entry)
            self.changed.discard(tp)
        for tp, fetch in fetches:
            partition = lookup(tp)
            entry = self.partitions.get(tp)
            if entry is None:
                # Keyed by the broker's own (topic, partition) tuple when it has the replica, not the
                # request's: one tuple and topic name per partition, however many sessions name it.
                tp = partition.tp if partition is not None else tp
                entry = self.partitions[tp] = SessionPartition(self, tp, fetch)
            else:
                entry.take(fetch)
            _watch(entry, partition)
            self.changed.add(entry.tp)

    def refresh(self, tp: TopicPartition, partition: Optional[Partition]) -> None:
        """The broker's Partition for `tp` now (a replica removed and made
        again is a new object, whose signal is the one to listen on)."""
        entry = self.partitions.get(tp)
        if entry is not None:
            _watch(entry, partition)

    def mark(self, tp: TopicPartition) -> None:
        """A partition of the session changed (its signal fired)."""
        self.changed.add(tp)
        if self._wake is not None:
            _wake_up(self._wake)

    def take_changed(self) -> set[TopicPartition]:
        changed, self.changed = self.changed, set()
        return changed

    async def wait_changed(self, timeout: float) -> None:
        """Until a partition of the session changes, at most `timeout` seconds."""
        if self.changed or timeout <= 0:
            return
        # A future and a timer, not asyncio.wait_for: that (3.11) swallows a
        # cancellation arriving as the future completes, leaving the fetch running.
        loop = asyncio.get_running_loop()
        wake = self._wake = loop.create_future()
        timer = loop.call_later(timeout, _wake_up, wake)
        try:
            await wake
        finally:
            timer.cancel()
            self._wake = None

    def close(self) -> None:
        for entry in self.partitions.values():
            _unwatch(entry)
        self.partitions.clear()
        self.changed.clear()
        self.closed = True
        self.mark(("", -1))  # a parked fetch on it answers now


def _watch(entry: SessionPartition, partition: Optional[Partition]) -> None:
    if entry.watched is partition:
        return
    _unwatch(entry)
    if partition is not None:
        partition.changed.listen(entry)
    entry.watched = partition


def _unwatch(entry: SessionPartition) -> None:
    if entry.watched is not None:
        entry.watched.changed.unlisten(entry)
        entry.watched = None


def _wake_up(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class FetchSessionCache:
    def __init__(self, max_slots: int, clock_ms: Callable[[], int], rng: Optional[random.Random] = None) -> None:
        self.max_slots = max_slots
        self.clock_ms = clock_ms
        self._rng = rng or random.Random()
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()  # least recently used first
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> Optional[FetchSession]:
        return self._sessions.get(session_id)

    def touch(self, session: FetchSession) -> None:
        session.last_used_ms = self.clock_ms()
        self._sessions.move_to_end(session.id)

    def remove(self, session_id: int) -> Optional[FetchSession]:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.close()
        return session

    def create(self, replica_id: int, owner: str) -> Optional[FetchSession]:
        """A new session, or None when no slot is free nor can be freed."""
        if self.max_slots <= 0:
            return None
        now = self.clock_ms()
        if len(self._sessions) >= self.max_slots and not self._evict_one(replica_id >= 0, now):
            return None
        session_id = INVALID_SESSION_ID
        while session_id == INVALID_SESSION_ID or session_id in self._sessions:
            session_id = self._rng.randint(1, MAX_EPOCH)
        session = self._sessions[session_id] = FetchSession(session_id, replica_id, owner, now)
        return session

    def _evict_one(self, privileged: bool, now: int) -> bool:
        victim = next((s for s in self._sessions.values() if now - s.last_used_ms >= EVICTION_MS), None)
        if victim is None and privileged:
            victim = next((s for s in self._sessions.values() if not s.privileged), None)
        if victim is None:
            return False
        self.remove(victim.id)
        self.evictions += 1
        return True

    def close_all(self) -> None:
        for session_id in list(self._sessions):
            self.remove(session_id)
