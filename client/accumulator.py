"""The producer's record accumulator: batches waiting to be sent, per partition.

Records are appended to the last open batch of their partition; a batch is
ready once it is full (`batch.size`), has waited `linger.ms`, or a flush or
close wants everything out. A broker is ready when one of the partitions it
leads is; then the first batch of every partition it leads goes into one
Produce request (up to `max.request.size`), so a request carries all it can.

Order per partition: batches leave in creation order, and a failed batch
goes back in that order. A batch that has been sent before waits until no
other batch of its partition is in flight and its backoff has passed, so
retries never overtake (or get overtaken by) what is already on the wire.

buffer.memory is counted per batch, as Kafka's BufferPool allocates it: a
batch takes batch.size bytes when it opens (or its one record's size, when
that is larger), and gives them back when it finishes; the records appended
meanwhile count nothing more (produce() adds none per record).
produce_arrow's batches, encoded already, take their encoded size.

No I/O and no clock of its own: the sender passes `now` and a leader lookup.
"""
from __future__ import annotations

import itertools
from collections import deque
from typing import Callable, Container, Iterator, NamedTuple, Optional

from kafka_protocol.batch import HEADER_SIZE

from .producer_batch import ProducerBatch, ProducerRecord
from .record_future import RecordFuture, Settlement

TopicPartition = tuple[str, int]
LeaderOf = Callable[[str, int], Optional[int]]
IDLE_DELAY_S = 1.0  # how long the sender sleeps when nothing is queued (a wakeup cuts it short)


class ReadyCheck(NamedTuple):  # made every sender turn: a named tuple, not a frozen dataclass
    nodes: frozenset[int]      # brokers with a batch to send now
    next_delay_s: float        # when to look again if nothing changes before
    unknown_leaders: bool      # some partition with data has no known leader


class RecordAccumulator:
    def __init__(self, *, batch_size: int, linger_ms: int, settlement: Optional[Settlement] = None) -> None:
        self._batch_size = batch_size
        self._settlement = settlement or Settlement()  # shared by the batches: their futures' lock and loop
        self._linger_s = linger_ms / 1000
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._in_flight: dict[TopicPartition, set[ProducerBatch]] = {}
        self._serials = itertools.count()
        self._drain_offset = 0
        self.buffered_bytes = 0  # buffer.memory in use: the batches' reservations (see above)
        self.flushing = 0       # flush() calls under way: linger is ignored
        self.closing = False

    # --- appending ---------------------------------------------------------

    def has_room(self, tp: TopicPartition, size: int) -> bool:
        """The partition's open batch can take a record of `size` bytes."""
        dq = self._queues.get(tp)
        return bool(dq) and dq[-1].has_room(size, self._batch_size)

    def try_append(self, tp: TopicPartition, record: ProducerRecord, size: int, future: RecordFuture) -> bool:
        """Add a record to the partition's open batch if it has room (the usual
        case: one lookup); False, and nothing done, when a new batch is needed."""
        dq = self._queues.get(tp)
        if dq:
            last = dq[-1]
            # has_room() inlined: a queued batch holds at least one record
            if not last.closed and last.size + size <= self._batch_size:
                last.append(record, size, future)  # within the batch's reservation
                return True
        return False

    def append(self, tp: TopicPartition, record: ProducerRecord, size: int, future: RecordFuture,
               now: float) -> bool:
        """Add a record; whether it opened a new batch (the last one is now
        full, and a new batch may be worth a wakeup)."""
        if self.try_append(tp, record, size, future):
            return False
        dq = self._queues.get(tp)
        if dq:
            dq[-1].closed = True
        elif dq is None:
            dq = self._queues[tp] = deque()
        batch = ProducerBatch(tp[0], tp[1], next(self._serials), now, self._settlement)
        batch.append(record, size, future)
        dq.append(batch)
        # Kafka's BufferPool.allocate(max(batch.size, the record's size)): what the batch may grow to.
        batch.reserved = max(self._batch_size, HEADER_SIZE + size)
        self.buffered_bytes += batch.reserved
        return True

    def append_batch(self, batch: ProducerBatch) -> None:
        """Queue a whole batch (produce_arrow's, already encoded) behind the
        partition's others, closing the open one: records keep their order."""
        dq = self._queues.get(batch.tp)
        if dq:
            dq[-1].closed = True
        elif dq is None:
            dq = self._queues[batch.tp] = deque()
        batch.serial = next(self._serials)
        dq.append(batch)
        batch.reserved = batch.size
        self.buffered_bytes += batch.size

    # --- choosing what to send ---------------------------------------------

    def _sendable_now(self, tp: TopicPartition, batch: ProducerBatch, now: float) -> Optional[float]:
        """0 when the partition's first batch may go now; else seconds to wait
        (None: until something else happens, like a response)."""
        if batch.attempts > 0:
            if self._in_flight.get(tp):
                return None
            if now < batch.retry_at:
                return batch.retry_at - now
            return 0.0
        if batch.closed or len(self._queues[tp]) > 1 or self.flushing or self.closing:
            return 0.0
        waited = now - batch.created
        return 0.0 if waited >= self._linger_s else self._linger_s - waited

    def ready(self, now: float, leader_of: LeaderOf, allowed: Optional[Container[TopicPartition]] = None,
              ) -> ReadyCheck:
        """`allowed`: the only partitions that may be sent now (a transactional
        producer's partitions already added to its transaction); None: all."""
        nodes: set[int] = set()
        delay = IDLE_DELAY_S
        unknown = False
        for tp, dq in self._queues.items():
            if not dq or allowed is not None and tp not in allowed:
                continue
            leader = leader_of(*tp)
            if leader is None:
                unknown = True
                continue
            wait = self._sendable_now(tp, dq[0], now)
            if wait == 0.0:
                nodes.add(leader)
            elif wait is not None:
                delay = min(delay, wait)
        return ReadyCheck(frozenset(nodes), delay, unknown)

    def drain(self, nodes: frozenset[int], leader_of: LeaderOf, max_request_size: int,
              now: float, allowed: Optional[Container[TopicPartition]] = None) -> dict[int, list[ProducerBatch]]:
        """For each ready broker, the first batch of every partition it leads
        that may go now (whatever its linger), up to max.request.size."""
        if not nodes:
            return {}
        out: dict[int, list[ProducerBatch]] = {}
        sizes: dict[int, int] = {}
        tps = [tp for tp, dq in self._queues.items() if dq and (allowed is None or tp in allowed)]
        # Start where the last drain stopped, so no partition starves behind others.
        self._drain_offset = (self._drain_offset + 1) % max(len(tps), 1)
        for tp in tps[self._drain_offset:] + tps[:self._drain_offset]:
            leader = leader_of(*tp)
            if leader not in nodes:
                continue
            dq = self._queues[tp]
            first = dq[0]
            if first.attempts > 0 and self._sendable_now(tp, first, now) != 0.0:
                continue
            size = sizes.get(leader, 0)
            if size and size + first.size > max_request_size:
                continue
            dq.popleft()
            first.closed = True
            self._in_flight.setdefault(tp, set()).add(first)
            out.setdefault(leader, []).append(first)
            sizes[leader] = size + first.size
        return out

    # --- after sending -----------------------------------------------------

    def returned(self, batch: ProducerBatch) -> None:
        """A sent batch's answer (or failure) is in."""
        self._in_flight.get(batch.tp, set()).discard(batch)

    def reenqueue(self, batch: ProducerBatch, retry_at: float) -> None:
        """Back into its partition's queue, in creation order, to be retried after `retry_at`."""
        batch.retry_at = retry_at
        dq = self._queues.setdefault(batch.tp, deque())
        index = next((i for i, queued in enumerate(dq) if queued.serial > batch.serial), len(dq))
        dq.insert(index, batch)

    def finished(self, batch: ProducerBatch) -> None:
        """Completed or failed for good: its memory is free."""
        self.buffered_bytes -= batch.reserved

    def expired(self, now: float, delivery_timeout_s: float) -> list[ProducerBatch]:
        """Queued batches older than delivery.timeout.ms, taken out (oldest first per partition)."""
        out = []
        for dq in self._queues.values():
            while dq and now - dq[0].created >= delivery_timeout_s:
                out.append(dq.popleft())
        return out

    def take_all_queued(self) -> list[ProducerBatch]:
        """Everything not in flight, taken out (a forced close fails them)."""
        out = [batch for dq in self._queues.values() for batch in dq]
        for dq in self._queues.values():
            dq.clear()
        return out

    # --- state -------------------------------------------------------------

    def queued(self) -> Iterator[ProducerBatch]:
        for dq in self._queues.values():
            yield from dq

    def in_flight(self) -> Iterator[ProducerBatch]:
        for batches in self._in_flight.values():
            yield from batches

    @property
    def in_flight_count(self) -> int:
        return sum(len(batches) for batches in self._in_flight.values())

    def has_unsent(self) -> bool:
        return any(self._queues.values())

