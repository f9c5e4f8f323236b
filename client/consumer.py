"""kraftlog's consumer, in the manner of Kafka's Java consumer and
confluent-kafka's Consumer:

    consumer = Consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "billing"})
    consumer.subscribe(["payments"], on_assign=..., on_revoke=...)
    while running:
        for record in consumer.poll(1.0):
            handle(record)
    consumer.close()

A background thread (io_thread.py) prefetches while the application
processes (fetcher.py), heartbeats for the group (group_membership.py) and
sends commits; the application thread reconciles assignments and runs the
rebalance callbacks inside poll(), as Kafka does. Like Kafka's, a Consumer
is meant for one application thread.

Positions: poll() returns each partition's records in offset order, never
one twice nor one skipped (subscription_state.py says how); commit() with
no offsets commits the positions, i.e. the offset after the last record
poll() returned. With enable.auto.commit (the default with a group.id)
poll() commits those positions every auto.commit.interval.ms, a revocation
commits the revoked partitions' positions before on_revoke (and before the
coordinator hears they are let go: the next owner starts there), and close()
commits before leaving the group: at-least-once, as Kafka's. Commits are
sent one at a time, in the order they were made.

Config: see consumer_config.py (Kafka's names and defaults). Callbacks take
(consumer, partitions), as confluent-kafka's. With
isolation.level=read_committed, poll() returns only records of committed
transactions (and non-transactional ones), up to the last stable offset
(fetcher.py, read_committed.py); `group_metadata()` is what a transactional
producer's send_offsets_to_transaction() takes.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import re
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Mapping, Optional, Sequence, TypeVar, Union

from kafka_protocol.errors import Errors

from .consumer_config import ConsumerConfig
from .consumer_types import (ConsumerGroupMetadata, ConsumerRecord, OffsetAndMetadata, OffsetAndTimestamp,
                             TimestampType, TopicPartition)
from .coordinator import Coordinator
from .errors import IllegalStateError, KafkaError, NoOffsetForPartitionError, error_for_code
from .fetcher import Fetcher
from .group_membership import GroupMembership
from .io_thread import IoThread
from .metadata import Metadata
from .offsets import list_offsets, offset_commit, offset_fetch
from .subscription_state import EARLIEST, LATEST, RESET_TIMESTAMPS, SubscriptionState

if TYPE_CHECKING:
    import pyarrow

log = logging.getLogger(__name__)

RebalanceCallback = Callable[["Consumer", list[TopicPartition]], None]
CommitCallback = Callable[[Optional[BaseException], dict[TopicPartition, OffsetAndMetadata]], None]
Offsets = Mapping[TopicPartition, Union[int, OffsetAndMetadata]]
T = TypeVar("T")

__all__ = ["Consumer", "ConsumerGroupMetadata", "ConsumerRecord", "OffsetAndMetadata", "OffsetAndTimestamp", "TimestampType",
           "TopicPartition"]


class Consumer:
    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = c = ConsumerConfig.parse(config)
        self._state = SubscriptionState()
        self._metadata = Metadata(list(c.bootstrap_servers), retry_backoff_ms=c.retry_backoff_ms,
                                  request_timeout_ms=c.request_timeout_ms, security=c.security,
                                  client_id=c.client_id)
        self._coordinator: Optional[Coordinator] = None
        self._membership: Optional[GroupMembership] = None
        if c.group_id is not None:
            self._coordinator = Coordinator(self._metadata, c.group_id, request_timeout_s=c.request_timeout_ms / 1000,
                                            backoff_s=c.retry_backoff_ms / 1000)
            self._membership = GroupMembership(c, self._coordinator, self._state)
        self._fetcher = Fetcher(c, self._metadata, self._state,
                                self._committed_for_positions if self._coordinator else None)
        self._io = IoThread(f"kraftlog-consumer-{c.client_id or hex(id(self))}")
        self._state.wake_fetcher = lambda: self._io.call_soon(self._fetcher.wake)
        self._io.spawn(self._fetcher.run())
        if self._membership is not None:
            self._io.spawn(self._membership.run())
        self._mode: Optional[str] = None  # "assign" | "subscribe"
        self._on_assign: Optional[RebalanceCallback] = None
        self._on_revoke: Optional[RebalanceCallback] = None
        self._on_lost: Optional[RebalanceCallback] = None
        self._next_auto_commit = time.monotonic() + c.auto_commit_interval_ms / 1000
        self._auto_committed: dict[TopicPartition, int] = {}
        self._commit_turn: Optional[asyncio.Lock] = None  # made on the background loop by the first commit
        self._closed = False

    # --- assignment -----------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions, no group membership (Kafka's assign()).
        Positions come from the group's committed offsets when there is a
        group.id, else from auto.offset.reset, unless seek() gives one."""
        self._check_open()
        if self._mode == "subscribe":
            raise IllegalStateError("assign() after subscribe(): call unsubscribe() first")
        wanted = list(dict.fromkeys(partitions))
        with self._state.cond:
            dropped = [tp for tp in self._state.assignment if tp not in wanted]
        if dropped and self.config.enable_auto_commit:
            self._commit_quietly(self._positions(dropped))
        with self._state.cond:
            self._state.unassign(dropped)
            self._state.positions_wanted = False  # until the next poll() or position()
            self._add_partitions([tp for tp in wanted if tp not in self._state.assignment])
        self._mode = "assign" if wanted else None

    def _add_partitions(self, partitions: list[TopicPartition]) -> None:
        """New partitions without a position (caller holds the lock)."""
        policy = self.config.auto_offset_reset
        self._state.assign(partitions, awaiting_committed=self._coordinator is not None,
                           reset_to=RESET_TIMESTAMPS.get(policy))
        if self._coordinator is None and policy == "none":
            for tp in partitions:
                self._state.assignment[tp].error = NoOffsetForPartitionError(
                    f"{tp}: no position, no group.id to look a committed offset up, and auto.offset.reset=none")

    def subscribe(self, topics: Union[Sequence[str], str, "re.Pattern[str]"], *,
                  on_assign: Optional[RebalanceCallback] = None, on_revoke: Optional[RebalanceCallback] = None,
                  on_lost: Optional[RebalanceCallback] = None) -> None:
        """Join the group for `topics` (names), or a regex (an re.Pattern, or a
        string starting with ^ as in confluent-kafka) that the coordinator
        matches against the cluster's topics. on_lost defaults to on_revoke."""
        self._check_open()
        if self._membership is None:
            raise error_for_code(Errors.INVALID_GROUP_ID, "subscribe() needs a group.id")
        if self._mode == "assign":
            raise IllegalStateError("subscribe() after assign(): call unsubscribe() first")
        if isinstance(topics, re.Pattern):
            names, pattern = None, topics.pattern
        elif isinstance(topics, str):
            names, pattern = (None, topics) if topics.startswith("^") else ((topics,), None)
        else:
            names, pattern = tuple(dict.fromkeys(topics)), None
            if not names:
                self.unsubscribe()
                return
        self._on_assign, self._on_revoke, self._on_lost = on_assign, on_revoke, on_lost
        with self._state.cond:
            self._membership.subscribe(names, pattern)
            self._membership.last_poll = time.monotonic()
        self._mode = "subscribe"
        self._io.call_soon(self._membership.wake)

    def unsubscribe(self) -> None:
        """Give up every partition (assigned or subscribed); a member leaves its group."""
        self._check_open()
        if self._mode == "subscribe" and self._membership is not None:
            self._release_group(leave=True)
        else:
            with self._state.cond:
                everything = list(self._state.assignment)
            if everything and self.config.enable_auto_commit:
                self._commit_quietly(self._positions(everything))
            with self._state.cond:
                self._state.unassign(everything)
        self._mode = None

    def assignment(self) -> set[TopicPartition]:
        with self._state.cond:
            return set(self._state.assignment)

    def metrics(self) -> dict[str, int]:
        """fetch-throttle-time-max (Kafka's name): the longest quota throttle a broker asked for, in ms."""
        return {"fetch-throttle-time-max": self._fetcher.max_throttle_time_ms}

    def subscription(self) -> set[str]:
        if self._membership is None:
            return set()
        with self._state.cond:
            return set(self._membership.topics or ())

    # --- polling --------------------------------------------------------------

    def poll(self, timeout: Optional[float] = None) -> list[ConsumerRecord]:
        """Records fetched since the last poll, at most max.poll.records; waits
        up to `timeout` seconds (None: until some arrive) when none are ready.
        Rebalance callbacks run in here. Raises a partition's error once
        (OFFSET_OUT_OF_RANGE with auto.offset.reset=none, ...)."""
        return self._poll(timeout, None, lambda state: state.drain(self.config.max_poll_records))

    def poll_arrow(self, timeout: Optional[float] = None, *, max_records: Optional[int] = None,
                   include_headers: bool = False) -> "pyarrow.RecordBatch":
        """poll() column-wise: the same records, positions, errors and
        callbacks, as one pyarrow.RecordBatch with the rows of Spark's Kafka
        source (key, value, topic, partition, offset, timestamp,
        timestampType; headers with `include_headers`), decoded by the
        compiled kernel the Spark source uses; no rows when none arrived in
        `timeout`. At most `max_records` rows (default max.poll.records).
        Records prefetched for poll() are fetched again for this, and the
        other way round: switching costs one fetch per partition."""
        from .arrow_fetch import join_rows  # pyarrow: only for poll_arrow()
        limit = self.config.max_poll_records if max_records is None else max_records
        if limit < 1:
            raise ValueError(f"max_records must be at least 1, not {limit}")
        batches = self._poll(timeout, include_headers, lambda state: state.drain_rows(limit, include_headers))
        return join_rows(batches, include_headers)

    def _poll(self, timeout: Optional[float], arrow_headers: Optional[bool],
              drain: Callable[[SubscriptionState], list[Any]]) -> list[Any]:
        self._check_open()
        if self._mode is None:
            raise IllegalStateError("poll() before assign() or subscribe()")
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0)
        with self._state.cond:
            if self._state.arrow_headers != arrow_headers:
                self._state.arrow_headers = arrow_headers  # the fetcher decodes for this kind of poll from now on
                self._state.wake_fetcher()
            self._state.want_positions()
            if self._membership is not None:
                self._membership.last_poll = time.monotonic()
        self._maybe_auto_commit()
        while True:
            self._reconcile()
            with self._state.cond:
                if self._membership is not None and self._membership.fatal is not None:
                    raise self._membership.fatal
                # As Kafka's consumer: records fetched for other partitions come
                # first, a partition's error (a batch that does not decode, ...)
                # is raised by a poll that has nothing else to return.
                records = drain(self._state)
                if not records:
                    self._raise_errors()
                if records or self._rebalance_pending():
                    if records:
                        return records
                    continue
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return []
                self._state.cond.wait(remaining if remaining is not None else 1.0)

    def _raise_errors(self) -> None:
        if self._membership is not None and self._membership.fatal is not None:
            raise self._membership.fatal
        errors = self._state.take_errors()
        if errors:
            tp, error = errors[0]
            for other_tp, other in errors[1:]:
                log.warning("%s: %s", other_tp, other)
            raise error

    def _rebalance_pending(self) -> bool:
        m = self._membership
        return m is not None and self._mode == "subscribe" and (m.lost or m.target is not None)

    # --- reconciliation (application thread, inside poll) ------------------------

    def _reconcile(self) -> None:
        m = self._membership
        if m is None or self._mode != "subscribe":
            return
        with self._state.cond:
            lost, target, owned = m.lost, m.target, m.owned
        if lost:
            log.info("group %s: partitions lost: %s", self.config.group_id, sorted(owned))
            with self._state.cond:
                self._state.unassign(owned)
            try:
                self._callback(self._on_lost or self._on_revoke, owned)
            finally:
                with self._state.cond:
                    m.released_all()
                self._io.call_soon(m.wake)
            return
        if target is None:
            return
        revoked, added = owned - target, target - owned
        errors: list[BaseException] = []
        if revoked:
            with self._state.cond:
                for tp in revoked:  # stop fetching; what was prefetched is not returned any more
                    ps = self._state.assignment.get(tp)
                    if ps is not None:
                        ps.paused = True
                    self._state.buffer.pop(tp, None)
            if self.config.enable_auto_commit:
                self._commit_quietly(self._positions(revoked))
            errors += self._callback_collecting(self._on_revoke, revoked)
            with self._state.cond:
                self._state.unassign(revoked)
        if added:
            with self._state.cond:
                self._add_partitions(sorted(added))
            errors += self._callback_collecting(self._on_assign, added)
        with self._state.cond:
            m.reconciled(target)
            if m.target == target:
                m.target = None
        self._io.call_soon(m.wake)
        if errors:
            raise errors[0]

    def _callback(self, callback: Optional[RebalanceCallback], partitions: Iterable[TopicPartition]) -> None:
        parts = sorted(partitions)
        if callback is not None and parts:
            callback(self, parts)

    def _callback_collecting(self, callback: Optional[RebalanceCallback],
                             partitions: Iterable[TopicPartition]) -> list[BaseException]:
        try:
            self._callback(callback, partitions)
            return []
        except Exception as exc:  # noqa: BLE001 - raised from poll() once the reconciliation is done
            log.exception("rebalance callback failed")
            return [exc]

    def _release_group(self, *, leave: bool) -> None:
        """Revoke everything owned (commit, on_revoke) and, with `leave`, leave the group."""
        m = self._membership
        assert m is not None
        with self._state.cond:
            owned = m.owned
        if owned and self.config.enable_auto_commit:
            self._commit_quietly(self._positions(owned))
        try:
            self._callback(self._on_revoke, owned)
        finally:
            with self._state.cond:
                self._state.unassign(list(self._state.assignment))
                m.subscribe(None, None)
                m.reconciled(frozenset())
                m.target, m.lost = None, False
            if leave:
                self._call(m.leave(), timeout=self.config.request_timeout_ms / 1000)

    # --- positions ----------------------------------------------------------------

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """The next poll() returns `partition`'s records from `offset` on."""
        if offset < 0:
            raise IllegalStateError(f"seek({partition}, {offset}): an offset is >= 0")
        with self._state.cond:
            self._state.seek(partition, offset)

    def seek_to_beginning(self, partitions: Optional[Iterable[TopicPartition]] = None) -> None:
        self._reset(partitions, EARLIEST)

    def seek_to_end(self, partitions: Optional[Iterable[TopicPartition]] = None) -> None:
        self._reset(partitions, LATEST)

    def _reset(self, partitions: Optional[Iterable[TopicPartition]], timestamp: int) -> None:
        with self._state.cond:
            for tp in list(partitions) if partitions is not None else list(self._state.assignment):
                self._state.request_reset(tp, timestamp)

    def position(self, partition: TopicPartition, timeout: Optional[float] = None) -> int:
        """The offset of the next record poll() returns for `partition`,
        looking it up (committed offset or reset) if need be."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.config.default_api_timeout_ms / 1000)
        with self._state.cond:
            while True:
                ps = self._state.assignment.get(partition)
                if ps is None:
                    raise IllegalStateError(f"{partition} is not assigned to this consumer")
                if ps.error is not None:
                    raise ps.error
                if ps.has_position:
                    return ps.position  # type: ignore[return-value]
                self._state.want_positions()
                self._state.wake_fetcher()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise error_for_code(Errors.REQUEST_TIMED_OUT, f"position of {partition}: no offset found in time")
                self._state.cond.wait(min(remaining, 0.5))

    def _positions(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        wanted = set(partitions)
        with self._state.cond:
            return {tp: OffsetAndMetadata(pos, "", epoch) for tp, (pos, epoch) in self._state.consumed().items()
                    if tp in wanted}

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """poll() returns nothing more from these until resume(); positions stay."""
        with self._state.cond:
            self._state.set_paused(partitions, True)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        with self._state.cond:
            self._state.set_paused(partitions, False)

    def paused(self) -> set[TopicPartition]:
        with self._state.cond:
            return {tp for tp, ps in self._state.assignment.items() if ps.paused}

    # --- offsets lookups ---------------------------------------------------------

    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int],
                          timeout: Optional[float] = None) -> dict[TopicPartition, Optional[OffsetAndTimestamp]]:
        """For each partition, the earliest offset whose timestamp is at or
        after the given one (ms); None when no record is that late."""
        for tp, ts in timestamps.items():
            if ts < 0:
                raise IllegalStateError(f"offsets_for_times: {tp} timestamp {ts} is negative")
        return self._list_offsets(dict(timestamps), timeout)

    def beginning_offsets(self, partitions: Iterable[TopicPartition],
                          timeout: Optional[float] = None) -> dict[TopicPartition, int]:
        return {tp: r.offset if r else 0 for tp, r in self._list_offsets({tp: EARLIEST for tp in partitions},
                                                                            timeout).items()}

    def end_offsets(self, partitions: Iterable[TopicPartition],
                    timeout: Optional[float] = None) -> dict[TopicPartition, int]:
        """The high watermarks: the offset after the last record a consumer can read."""
        return {tp: r.offset if r else 0 for tp, r in self._list_offsets({tp: LATEST for tp in partitions},
                                                                            timeout).items()}

    def _list_offsets(self, wanted: dict[TopicPartition, int],
                      timeout: Optional[float]) -> dict[TopicPartition, Optional[OffsetAndTimestamp]]:
        self._check_open()
        c = self.config
        timeout_s = timeout if timeout is not None else c.default_api_timeout_ms / 1000
        return self._call(list_offsets(self._metadata, wanted, isolation_level=c.isolation_level,
                                       deadline=time.monotonic() + timeout_s, backoff_s=c.retry_backoff_ms / 1000,
                                       timeout_s=c.request_timeout_ms / 1000), timeout=timeout_s + 1)

    # --- commits -------------------------------------------------------------------

    def committed(self, partitions: Iterable[TopicPartition],
                  timeout: Optional[float] = None) -> dict[TopicPartition, Optional[OffsetAndMetadata]]:
        """The group's committed offsets (None: nothing committed)."""
        coordinator = self._require_group("committed()")
        timeout_s = timeout if timeout is not None else self.config.default_api_timeout_ms / 1000
        return self._call(offset_fetch(coordinator, list(partitions), member_id="", member_epoch=-1,
                                       deadline=time.monotonic() + timeout_s), timeout=timeout_s + 1)

    async def _committed_for_positions(self, partitions: list[TopicPartition],
                                       ) -> dict[TopicPartition, Optional[OffsetAndMetadata]]:
        assert self._coordinator is not None
        return await offset_fetch(self._coordinator, partitions, member_id="", member_epoch=-1,
                                  deadline=time.monotonic() + self.config.default_api_timeout_ms / 1000)

    def commit(self, offsets: Optional[Offsets] = None, asynchronous: bool = False,
               ) -> Optional["concurrent.futures.Future[None]"]:
        """Commit `offsets` (partition -> the offset of the next record to read),
        or every assigned partition's position. Synchronous by default (as
        commitSync): raises the commit's error. With asynchronous=True returns
        a future instead."""
        coordinator = self._require_group("commit()")
        committing = self._normalize(offsets) if offsets is not None else self._positions(self.assignment())
        if not committing:
            return None
        deadline = time.monotonic() + self.config.default_api_timeout_ms / 1000
        coro = self._in_turn(lambda: offset_commit(coordinator, committing, member=self._member, deadline=deadline))
        if asynchronous:
            return self._io.spawn(coro)
        self._call(coro, timeout=self.config.default_api_timeout_ms / 1000 + 1)
        return None

    def commit_async(self, offsets: Optional[Offsets] = None,
                     callback: Optional[CommitCallback] = None) -> Optional["concurrent.futures.Future[None]"]:
        """commit(asynchronous=True); `callback(error, offsets)` runs on the
        consumer's background thread when the commit is done."""
        committing = self._normalize(offsets) if offsets is not None else self._positions(self.assignment())
        future = self.commit(committing, asynchronous=True)
        if future is not None and callback is not None:
            future.add_done_callback(lambda f: callback(f.exception(), committing))
        return future

    async def _in_turn(self, commit: Callable[[], Awaitable[T]]) -> T:
        """Commits run one at a time, in the order they were made (as Kafka's
        commitSync returns only after the commitAsyncs before it): so an
        earlier one still retrying - an auto-commit caught by a moving
        coordinator - never lands after a later one and takes the group's
        offset back, e.g. behind a revocation's commit, where the partition's
        next owner starts. Waiting in line counts against the commit's deadline."""
        if self._commit_turn is None:
            self._commit_turn = asyncio.Lock()  # every commit runs on the background loop
        async with self._commit_turn:
            return await commit()

    @staticmethod
    def _normalize(offsets: Offsets) -> dict[TopicPartition, OffsetAndMetadata]:
        out = {}
        for tp, value in offsets.items():
            om = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(int(value))
            if om.offset < 0:
                raise IllegalStateError(f"commit: {tp} offset {om.offset} is negative")
            out[tp] = om
        return out

    def _member(self) -> tuple[str, int]:
        """Who commits: the member's id and epoch, or ("", -1) outside a group's membership."""
        if self._membership is None or self._mode != "subscribe":
            return "", -1
        with self._state.cond:
            return self._membership.member()

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group id, member id and member epoch, for a transactional
        producer's send_offsets_to_transaction() (confluent-kafka's consumer_group_metadata())."""
        coordinator = self._require_group("group_metadata()")
        member_id, member_epoch = self._member()
        if not member_id:
            member_epoch = -1  # not (yet) a member: nothing for the coordinator to check, as Kafka's generation -1
        return ConsumerGroupMetadata(coordinator.group_id, member_id, member_epoch, self.config.group_instance_id)

    consumer_group_metadata = group_metadata

    def _maybe_auto_commit(self) -> None:
        if not self.config.enable_auto_commit or time.monotonic() < self._next_auto_commit:
            return
        self._next_auto_commit = time.monotonic() + self.config.auto_commit_interval_ms / 1000
        positions = self._positions(self.assignment())
        changed = {tp: om for tp, om in positions.items() if self._auto_committed.get(tp) != om.offset}
        if not changed:
            return
        future = self.commit(changed, asynchronous=True)
        if future is not None:
            future.add_done_callback(lambda f: self._auto_commit_done(f, changed))

    def _auto_commit_done(self, future: "concurrent.futures.Future[None]",
                          offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        if future.cancelled() or future.exception() is not None:
            log.warning("auto-commit of %d partitions failed: %s", len(offsets),
                        "cancelled" if future.cancelled() else future.exception())
            return
        self._auto_committed.update({tp: om.offset for tp, om in offsets.items()})

    def _commit_quietly(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        """A commit on the way out of a partition: a failure is logged, as Kafka's auto-commit does."""
        if not offsets or self._coordinator is None:
            return
        try:
            self.commit(offsets)
            self._auto_committed.update({tp: om.offset for tp, om in offsets.items()})
        except (KafkaError, concurrent.futures.TimeoutError) as exc:
            log.warning("commit of %s failed: %s", sorted(offsets), exc)

    def _require_group(self, what: str) -> Coordinator:
        self._check_open()
        if self._coordinator is None:
            raise error_for_code(Errors.INVALID_GROUP_ID, f"{what} needs a group.id")
        return self._coordinator

    # --- life cycle -------------------------------------------------------------------

    def _call(self, coro: Any, timeout: float) -> Any:
        return self._io.call(coro, timeout=timeout)

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("this consumer is closed")

    def close(self) -> None:
        """Commit (with enable.auto.commit), call on_revoke, leave the group,
        stop the background thread. Safe to call twice."""
        if self._closed:
            return
        try:
            if self._mode == "subscribe" and self._membership is not None:
                self._release_group(leave=True)
            elif self._mode == "assign" and self.config.enable_auto_commit:
                self._commit_quietly(self._positions(self.assignment()))
        finally:
            self._closed = True
            self._io.call_soon(self._fetcher.close)
            if self._membership is not None:
                self._io.call_soon(self._membership.close)
            try:
                self._io.call(self._metadata.close(), timeout=5)
            except (concurrent.futures.TimeoutError, RuntimeError):
                pass
            self._io.stop()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
