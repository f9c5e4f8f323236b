"""What a consumer has been given and how far it has read: the assigned
partitions, each one's position (the offset of the next record poll()
returns), pause flags, pending offset look-ups, and the prefetched records.

Shared by the application thread (poll, seek, pause) and the background
loop (fetch results, resolved positions), so every access holds `cond`'s
lock; `cond` is also what poll() sleeps on until records or a rebalance
arrive.

Why records are never returned twice nor skipped: a prefetched chunk says
which position it starts at, and it is only ever returned while the
partition's position is exactly that (a seek, a reset or a revocation in
between makes it stale and it is dropped). Positions advance only past
records returned, or past offsets the log has no record for.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from .consumer_types import ConsumerRecord, TopicPartition
from .errors import IllegalStateError, KafkaError

# ListOffsets' special timestamps, which are also what a reset asks for.
EARLIEST, LATEST = -2, -1
RESET_TIMESTAMPS = {"earliest": EARLIEST, "latest": LATEST}


@dataclass
class PartitionState:
    position: Optional[int] = None
    leader_epoch: Optional[int] = None     # of the last record returned
    paused: bool = False
    awaiting_committed: bool = False       # group: look up the committed offset first
    reset_to: Optional[int] = None         # EARLIEST/LATEST: a ListOffsets is due
    error: Optional[KafkaError] = None     # raised by the next poll (then cleared)
    retry_at: float = 0.0                  # monotonic: no fetch before this (after an error)

    @property
    def failed(self) -> bool:
        """An error was or is to be raised: nothing more is tried until a seek."""
        return self.error is not None or self.retry_at == float("inf")

    @property
    def has_position(self) -> bool:
        return self.position is not None and not self.awaiting_committed and self.reset_to is None


@dataclass
class FetchedRows:
    """A fetch answer's records decoded column-wise (for poll_arrow): Arrow
    rows, their offsets, and each batch's base offset and leader epoch (the
    epoch of a returned row's batch is what commit() sends)."""

    batch: Any                             # pyarrow.RecordBatch, Spark's Kafka source rows
    headers: bool                          # whether `batch` has the headers column
    offsets: Any                           # numpy int64, one per row
    batch_bases: Any                       # numpy int64, ascending
    batch_epochs: Any                      # numpy int64, -1: none

    def epoch_at(self, offset: int) -> Optional[int]:
        epoch = int(self.batch_epochs[int(self.batch_bases.searchsorted(offset, "right")) - 1])
        return None if epoch < 0 else epoch


@dataclass
class CompletedFetch:
    """Records fetched for one partition, starting exactly at `position`:
    ConsumerRecords, or with `rows` Arrow rows (poll_arrow) and no `records`."""

    tp: TopicPartition
    position: int                          # where the unreturned records start
    records: list[ConsumerRecord]
    next_offset: int                       # the position once all are returned
    cursor: int = 0
    size: int = 0                          # the batch bytes they came from
    rows: Optional[FetchedRows] = None

    @property
    def count(self) -> int:
        return len(self.records) if self.rows is None else len(self.rows.offsets)


@dataclass
class SubscriptionState:
    cond: threading.Condition = field(default_factory=threading.Condition)
    assignment: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    buffer: dict[TopicPartition, CompletedFetch] = field(default_factory=dict)
    wake_fetcher: Callable[[], None] = lambda: None  # set by the consumer once its loop runs
    # Positions are looked up only once the application asks (poll(),
    # position()), as Kafka's updateFetchPositions: so assign() then commit()
    # then poll() starts from what was just committed.
    positions_wanted: bool = False
    # How the fetcher decodes: None, into ConsumerRecords (poll()); else into
    # Arrow rows (poll_arrow()), with the headers column or not. A prefetched
    # chunk of the other kind is dropped unreturned and fetched again.
    arrow_headers: Optional[bool] = None

    # --- assignment (callers hold cond) -------------------------------------

    def assign(self, partitions: Iterable[TopicPartition], *, awaiting_committed: bool, reset_to: Optional[int]) -> None:
        """Add partitions without a position: the committed offset or a reset gives one."""
        for tp in partitions:
            if tp not in self.assignment:
                self.assignment[tp] = PartitionState(awaiting_committed=awaiting_committed,
                                                     reset_to=None if awaiting_committed else reset_to)
        self.wake_fetcher()

    def unassign(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching them and drop what was prefetched."""
        for tp in partitions:
            self.assignment.pop(tp, None)
            self.buffer.pop(tp, None)

    def seek(self, tp: TopicPartition, offset: int, leader_epoch: Optional[int] = None) -> None:
        ps = self._state(tp)
        ps.position, ps.leader_epoch = offset, leader_epoch
        ps.awaiting_committed, ps.reset_to, ps.error, ps.retry_at = False, None, None, 0.0
        self.buffer.pop(tp, None)
        self.wake_fetcher()

    def request_reset(self, tp: TopicPartition, timestamp: int) -> None:
        ps = self._state(tp)
        ps.reset_to, ps.awaiting_committed, ps.error = timestamp, False, None
        self.buffer.pop(tp, None)
        self.wake_fetcher()

    def set_paused(self, partitions: Iterable[TopicPartition], paused: bool) -> None:
        for tp in partitions:
            self._state(tp).paused = paused
        self.wake_fetcher()

    def _state(self, tp: TopicPartition) -> PartitionState:
        ps = self.assignment.get(tp)
        if ps is None:
            raise IllegalStateError(f"{tp} is not assigned to this consumer")
        return ps

    # --- fetching (callers hold cond) ---------------------------------------

    def fetchable(self, now: float) -> list[tuple[TopicPartition, int]]:
        """(partition, position) of every partition a fetch may be sent for:
        a position, not paused, nothing prefetched, no error or backoff."""
        return [(tp, ps.position) for tp, ps in self.assignment.items()  # type: ignore[misc]
                if ps.has_position and not ps.paused and ps.error is None and ps.retry_at <= now
                and tp not in self.buffer]

    def position_is(self, tp: TopicPartition, offset: int) -> Optional[PartitionState]:
        """The partition's state if it is still assigned at `offset` (a fetch result still applies)."""
        ps = self.assignment.get(tp)
        if ps is None or not ps.has_position or ps.position != offset:
            return None
        return ps

    def add_fetched(self, fetched: CompletedFetch) -> None:
        ps = self.position_is(fetched.tp, fetched.position)
        if ps is None:
            return
        if fetched.count:
            self.buffer[fetched.tp] = fetched
            self.cond.notify_all()
        elif fetched.next_offset > fetched.position:
            ps.position = fetched.next_offset  # only control batches or a compacted gap: nothing to return

    def drain(self, max_records: int) -> list[ConsumerRecord]:
        """Up to `max_records` prefetched records, advancing positions past them."""
        out: list[ConsumerRecord] = []
        for tp, fetched in list(self.buffer.items()):
            ps = self.position_is(tp, fetched.position)
            if ps is None:
                del self.buffer[tp]  # stale: sought, reset or revoked since
                continue
            if ps.paused:
                continue
            if fetched.rows is not None:  # decoded for poll_arrow(): fetched again as records
                self._drop(tp)
                continue
            take = fetched.records[fetched.cursor:fetched.cursor + max_records - len(out)]
            out.extend(take)
            fetched.cursor += len(take)
            ps.position = fetched.position = take[-1].offset + 1
            ps.leader_epoch = take[-1].leader_epoch
            if fetched.cursor == len(fetched.records):
                ps.position = max(ps.position, fetched.next_offset)
                del self.buffer[tp]
                self.wake_fetcher()
            if len(out) >= max_records:
                break
        return out

    def drain_rows(self, max_records: int, include_headers: bool) -> list[Any]:
        """drain() for poll_arrow(): up to `max_records` prefetched rows, as
        slices (no copy) of each partition's pyarrow.RecordBatch."""
        out: list[Any] = []
        left = max_records
        for tp, fetched in list(self.buffer.items()):
            ps = self.position_is(tp, fetched.position)
            if ps is None:
                del self.buffer[tp]
                continue
            if ps.paused:
                continue
            rows = fetched.rows
            if rows is None or rows.headers != include_headers:  # decoded another way: fetched again
                self._drop(tp)
                continue
            take = min(left, len(rows.offsets) - fetched.cursor)
            out.append(rows.batch.slice(fetched.cursor, take))
            fetched.cursor += take
            left -= take
            last = int(rows.offsets[fetched.cursor - 1])
            ps.position = fetched.position = last + 1
            ps.leader_epoch = rows.epoch_at(last)
            if fetched.cursor == len(rows.offsets):
                ps.position = max(ps.position, fetched.next_offset)
                del self.buffer[tp]
                self.wake_fetcher()
            if not left:
                break
        return out

    def _drop(self, tp: TopicPartition) -> None:
        """Forget a prefetched chunk unreturned: the position is where it starts, so it is fetched again."""
        del self.buffer[tp]
        self.wake_fetcher()

    def take_errors(self) -> list[tuple[TopicPartition, KafkaError]]:
        """Errors to raise from poll(), each once."""
        errors = []
        for tp, ps in self.assignment.items():
            if ps.error is not None:
                errors.append((tp, ps.error))
                ps.error = None
                ps.retry_at = float("inf")  # until a seek gives it a position again
        return errors

    def back_off(self, tp: TopicPartition, seconds: float) -> None:
        ps = self.assignment.get(tp)
        if ps is not None:
            ps.retry_at = time.monotonic() + seconds

    # --- positions (callers hold cond) --------------------------------------

    def want_positions(self) -> None:
        if not self.positions_wanted:
            self.positions_wanted = True
            self.wake_fetcher()

    def awaiting_committed(self) -> list[TopicPartition]:
        if not self.positions_wanted:
            return []
        return [tp for tp, ps in self.assignment.items() if ps.awaiting_committed and not ps.failed]

    def awaiting_reset(self) -> dict[TopicPartition, int]:
        if not self.positions_wanted:
            return {}
        return {tp: ps.reset_to for tp, ps in self.assignment.items()
                if ps.reset_to is not None and not ps.awaiting_committed and not ps.failed}

    def consumed(self) -> dict[TopicPartition, tuple[int, Optional[int]]]:
        """Position and leader epoch of every partition that has a position (what commit() commits)."""
        return {tp: (ps.position, ps.leader_epoch) for tp, ps in self.assignment.items()  # type: ignore[misc]
                if ps.has_position}
