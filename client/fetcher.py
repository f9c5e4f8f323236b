"""The consumer's prefetcher, on the background loop: it keeps one Fetch in
flight per leader broker for the assigned partitions that have a position,
are not paused and have nothing prefetched, decodes the answers into
records and leaves them in the SubscriptionState for poll() to take. So
the buffer holds at most one fetch answer per partition
(max.partition.fetch.bytes each) and the application's processing time
overlaps the network's.

It also gives positions to partitions that have none: the group's
committed offset (OffsetFetch), else auto.offset.reset (ListOffsets).

Errors, per partition: a moved leader (NOT_LEADER_OR_FOLLOWER,
FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, ...) or a leader that
cannot serve it (KAFKA_STORAGE_ERROR: its log directory went offline and
leadership is moving; REPLICA_NOT_AVAILABLE, OFFSET_NOT_AVAILABLE) refreshes
the metadata and retries after retry.backoff.ms, as Kafka's consumer does;
OFFSET_OUT_OF_RANGE resets by
auto.offset.reset, or with `none` is raised by the next poll(); anything
else is raised by the next poll().

Each leader's fetches form a KIP-227 session
(kafka_protocol/fetch_session_handler.py): a partition is sent again only
when its position or leader epoch changed (one with records waiting in the
buffer is left out, so forgotten, until poll() takes them), and the answer
holds only the partitions with something new.

A broker that answers with throttle_time_ms (the consumer is over its
consumer_byte_rate quota) gets no further Fetch from this consumer until
that time has passed (Kafka's client behaviour since KIP-219).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Awaitable, Callable, Iterator, Optional

import grpc

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.batch import NO_PARTITION_LEADER_EPOCH, parse_header
from kafka_protocol.errors import Errors, KafkaError
from kafka_protocol.fetch_framing import fetch_stream
from kafka_protocol.fetch_session_handler import FetchSessionHandler
from kafka_protocol.in_order_calls import StreamEnded, failure_status
from kafka_protocol.records import DecodedBatch, decode_batch

from .consumer_config import ConsumerConfig
from .consumer_types import ConsumerRecord, OffsetAndMetadata, TimestampType, TopicPartition
from .errors import NoOffsetForPartitionError, OffsetOutOfRangeError, error_for_code
from .io_thread import LoopWorker
from .metadata import STALE_METADATA_ERRORS, TRANSPORT_FAILURES, Metadata
from .offsets import list_offsets
from kafka_protocol.read_committed import AbortedTransactions
from .subscription_state import RESET_TIMESTAMPS, CompletedFetch, SubscriptionState

# Fetch errors after which the leader may move (Kafka's consumer refreshes its metadata and retries).
LEADER_CANNOT_SERVE = frozenset({Errors.KAFKA_STORAGE_ERROR, Errors.REPLICA_NOT_AVAILABLE, Errors.OFFSET_NOT_AVAILABLE})

log = logging.getLogger(__name__)

IDLE_WAKE_S = 1.0  # a bound on any sleep, so nothing waits on a lost wake-up forever

CommittedLookup = Callable[[list[TopicPartition]], Awaitable[dict[TopicPartition, Optional[OffsetAndMetadata]]]]


def decode_fetched(tp: TopicPartition, position: int, data: bpb.FetchResponse.PartitionData,
                   read_committed: bool = False) -> CompletedFetch:
    """The records of a fetch answer from `position` on, below the high
    watermark (read_committed: the last stable offset); control batches
    (transaction markers) are stepped over, and with read_committed the
    batches of aborted transactions too (kafka_protocol/read_committed.py). The
    position moves past what is dropped.

    A batch that does not decode ends the answer there: the records before
    it are returned, and the fetch that starts at it raises, naming the
    partition and the offset (as Kafka's consumer: the application may seek
    past it; the other partitions go on)."""
    records: list[ConsumerRecord] = []
    append, new = records.append, tuple.__new__  # a ConsumerRecord per record: built without argument parsing
    topic, partition = tp.topic, tp.partition
    next_offset = position
    hw = data.high_watermark
    if read_committed and data.last_stable_offset >= 0:
        hw = data.last_stable_offset  # nothing at or past the LSO is decided yet
    end = hw if hw >= 0 else _NO_LIMIT  # offsets from here on are not returned
    raw = data.records
    aborted = AbortedTransactions((a.producer_id, a.first_offset) for a in data.aborted_transactions) \
        if read_committed else None
    for batch in _batches(tp, raw, position):
        if batch is None:
            break  # a batch that does not decode follows these records: the next fetch starts at it
        h = batch.header
        if h.base_offset >= end:
            break  # not stable yet (read_committed) or past the high watermark: fetched again later
        next_offset = max(next_offset, h.next_offset)
        if aborted is not None:
            if not aborted.keep(batch):
                continue
        elif h.is_control:
            continue
        # The decoder already gives LogAppendTime batches' records the batch's max timestamp.
        ts_type = TimestampType.LOG_APPEND_TIME if h.is_log_append_time else TimestampType.CREATE_TIME
        epoch = h.partition_leader_epoch if h.partition_leader_epoch != NO_PARTITION_LEADER_EPOCH else None
        for key, value, timestamp, headers, offset in batch.records:
            if position <= offset < end:
                append(new(ConsumerRecord, (topic, partition, offset, timestamp, ts_type, key, value, headers, epoch)))
    if hw >= 0:
        next_offset = min(next_offset, max(hw, position))
    if records:
        next_offset = max(next_offset, records[-1].offset + 1)
    return CompletedFetch(tp, position, records, next_offset, size=len(raw))


def _batches(tp: TopicPartition, raw: bytes, position: int) -> Iterator[Optional[DecodedBatch]]:
    """The decoded batches of `raw`; at a batch that does not decode, None
    if some records of `raw` at or past `position` came before it, else the
    error naming the partition and the batch's offset."""
    pos, size, delivered = 0, len(raw), False
    while pos < size:
        try:
            batch = decode_batch(raw, pos)
        except KafkaError as exc:
            if delivered:
                yield None
                return
            raise _undecodable(tp, raw, pos, exc) from exc
        delivered = delivered or (not batch.header.is_control and batch.header.last_offset >= position)
        yield batch
        pos += batch.header.size


def _undecodable(tp: TopicPartition, raw: bytes, pos: int, exc: KafkaError) -> KafkaError:
    """`exc` (same class and code) saying which partition and offset it is about."""
    try:
        offset = str(parse_header(raw, pos).base_offset)
    except KafkaError:  # not even 61 bytes of header: no offset to name
        offset = "unknown"
    error = type(exc)(f"{tp.topic}-{tp.partition} at offset {offset}: the fetched batch does not decode "
                      f"({Exception.__str__(exc)}); seek past it to consume the records after it")
    error.name, error.code = exc.name, exc.code
    return error


_NO_LIMIT = 2**63


class Fetcher(LoopWorker):
    def __init__(self, config: ConsumerConfig, metadata: Metadata, state: SubscriptionState,
                 committed_lookup: Optional[CommittedLookup]) -> None:
        super().__init__()
        self._config = config
        self._metadata = metadata
        self._state = state
        self._committed_lookup = committed_lookup
        self._backoff_s = config.retry_backoff_ms / 1000
        self._in_flight: dict[int, set[TopicPartition]] = {}  # leader -> the partitions of its fetch
        self._sessions: dict[int, FetchSessionHandler] = {}  # leader -> its KIP-227 fetch session
        self._throttled_until: dict[int, float] = {}  # leader -> monotonic time its quota throttle ends
        self.max_throttle_time_ms = 0  # the longest throttle a broker asked for (Kafka's fetch-throttle-time-max)
        self._resolving: Optional[asyncio.Task[None]] = None
        # One fetch per leader at a time, on the leader's FetchStream (unary with SASL).
        self._fetch_streams = metadata.in_order_streams(fetch_stream)

    async def run(self) -> None:
        """Woken when something changed: a poll took records, a seek, an
        assignment, a fetch or a look-up ended."""
        try:
            while self._next_turn():
                self._metadata.maybe_update()
                waiting = self._start_resolving()
                waiting |= self._send_fetches()
                await self._sleep(self._backoff_s if waiting else IDLE_WAKE_S)
        finally:
            self._fetch_streams.close()

    # --- fetching -------------------------------------------------------------

    def _send_fetches(self) -> bool:
        """Start a fetch to every leader that has none in flight; whether some
        partition waits on metadata or a backoff (so the loop looks again soon)."""
        now = time.monotonic()
        with self._state.cond:
            candidates = self._state.fetchable(now)
            waiting = any(ps.retry_at > now and ps.retry_at != float("inf")
                          for ps in self._state.assignment.values())
        busy = set().union(*self._in_flight.values()) if self._in_flight else set()
        by_leader: dict[int, list[tuple[TopicPartition, int, int]]] = {}
        for tp, position in candidates:
            if tp in busy:
                continue
            info = self._metadata.leader_for(tp.topic, tp.partition)
            if info is None:
                self._metadata.add_topics([tp.topic])
                self._metadata.request_update()
                waiting = True
                continue
            by_leader.setdefault(info.leader, []).append((tp, position, info.leader_epoch))
        for leader, parts in by_leader.items():
            if self._throttled_until.get(leader, 0.0) > now:
                waiting = True  # look again soon: the loop sleeps a backoff at most
                continue
            if leader not in self._in_flight:
                self._in_flight[leader] = {tp for tp, _, _ in parts}
                asyncio.get_running_loop().create_task(self._fetch(leader, parts))
        return waiting

    async def _fetch(self, leader: int, parts: list[tuple[TopicPartition, int, int]]) -> None:
        try:
            await self._fetch_from(leader, parts)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - surfaced by poll(), not lost in a task
            log.exception("fetch from broker %s failed", leader)
            with self._state.cond:
                for tp, position, _ in parts:
                    ps = self._state.position_is(tp, position)
                    if ps is not None:
                        ps.error = exc if isinstance(exc, KafkaError) else KafkaError(f"{tp}: {exc!r}")
                self._state.cond.notify_all()
        finally:
            self._in_flight.pop(leader, None)
            self.wake()

    async def _send_fetch(self, leader: int, request: bpb.FetchRequest, timeout: float) -> Any:
        stub = self._metadata.stub(leader)
        return await self._fetch_streams.call(self._metadata.brokers[leader], request, timeout,
                                              lambda: stub.Fetch(request, timeout=timeout))

    async def _fetch_from(self, leader: int, parts: list[tuple[TopicPartition, int, int]]) -> None:
        c = self._config
        session = self._sessions.setdefault(leader, FetchSessionHandler())
        plan = session.plan({tp: (epoch if epoch is not None else -1, position)
                             for tp, position, epoch in parts})
        topics: dict[str, list[bpb.FetchRequest.FetchPartition]] = {}
        for tp, (epoch, position) in plan.send.items():
            topics.setdefault(tp.topic, []).append(bpb.FetchRequest.FetchPartition(
                partition=tp.partition, current_leader_epoch=epoch, fetch_offset=position,
                last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=c.max_partition_fetch_bytes))
        forgotten: dict[str, list[int]] = {}
        for tp in plan.forgotten:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        request = bpb.FetchRequest(replica_id=-1, max_wait_ms=c.fetch_max_wait_ms, min_bytes=c.fetch_min_bytes,
                                   max_bytes=c.fetch_max_bytes, isolation_level=c.isolation_level,
                                   topics=[bpb.FetchRequest.FetchTopic(topic=t, partitions=ps)
                                           for t, ps in topics.items()],
                                   session_id=plan.session_id, session_epoch=plan.epoch,
                                   forgotten=[bpb.FetchRequest.ForgottenTopic(topic=t, partitions=ps)
                                              for t, ps in forgotten.items()])
        try:
            response = await self._send_fetch(leader, request, (c.request_timeout_ms + c.fetch_max_wait_ms) / 1000)
        except (grpc.aio.AioRpcError, StreamEnded, TimeoutError, KeyError) as exc:
            session.failed()
            status = failure_status(exc)
            if status is not None and status[0] not in TRANSPORT_FAILURES:
                raise
            log.info("fetch from broker %s: %s", leader, status[0].name if status is not None else "not in metadata")
            self._metadata.note_unreachable(leader)
            with self._state.cond:
                for tp, _, _ in parts:
                    self._state.back_off(tp, self._backoff_s)
            return
        if not session.answered(plan, response.error_code, response.session_id):
            log.info("fetch session %d on broker %s: %s, starting a new one", plan.session_id, leader,
                     Errors(response.error_code).name)
            return
        if response.throttle_time_ms > 0:
            self._throttled_until[leader] = time.monotonic() + response.throttle_time_ms / 1000
            self.max_throttle_time_ms = max(self.max_throttle_time_ms, response.throttle_time_ms)
        positions = {tp: position for tp, position, _ in parts}
        read_committed = c.isolation_level == 1
        arrow_headers = self._state.arrow_headers  # poll_arrow(): decode into Arrow rows
        decoded: list[tuple[TopicPartition, int, CompletedFetch | int | KafkaError]] = []
        for topic in response.responses:
            for data in topic.partitions:
                tp = TopicPartition(topic.topic, data.partition_index)
                position = positions.get(tp)
                if position is None:
                    continue
                if data.error_code:
                    session.resend(tp)  # the broker's session answers it again only when it changes
                    decoded.append((tp, position, data.error_code))
                    continue
                try:
                    if arrow_headers is None:
                        decoded.append((tp, position, decode_fetched(tp, position, data, read_committed)))
                    else:
                        from .arrow_fetch import decode_fetched_arrow  # pyarrow: only for poll_arrow()
                        decoded.append((tp, position, decode_fetched_arrow(tp, position, data, read_committed,
                                                                           arrow_headers)))
                except KafkaError as exc:  # a corrupt batch: poll() says so
                    decoded.append((tp, position, exc))
        with self._state.cond:
            for tp, position, result in decoded:
                self._apply(tp, position, result)

    def _apply(self, tp: TopicPartition, position: int, result: CompletedFetch | int | KafkaError) -> None:
        """One partition's answer (caller holds the state's lock)."""
        state = self._state
        if isinstance(result, CompletedFetch):
            state.add_fetched(result)
            return
        ps = state.position_is(tp, position)
        if ps is None:
            return  # sought or revoked meanwhile: the answer no longer applies
        if isinstance(result, KafkaError):
            ps.error = result
        elif result in STALE_METADATA_ERRORS or result in LEADER_CANNOT_SERVE:
            self._metadata.request_update()
            state.back_off(tp, self._backoff_s)
        elif result == Errors.OFFSET_OUT_OF_RANGE:
            policy = self._config.auto_offset_reset
            if policy == "none":
                ps.error = OffsetOutOfRangeError(f"{tp}: fetch position {position} is out of range "
                                                 "and auto.offset.reset=none")
            else:
                log.info("%s: fetch position %d out of range, resetting to %s", tp, position, policy)
                state.request_reset(tp, RESET_TIMESTAMPS[policy])
        else:
            ps.error = error_for_code(result, f"Fetch {tp} at offset {position}")
        state.cond.notify_all()

    # --- positions --------------------------------------------------------------

    def _start_resolving(self) -> bool:
        """Start looking up positions for partitions that have none; whether some wait."""
        if self._resolving is not None and not self._resolving.done():
            return True
        with self._state.cond:
            pending = bool(self._state.awaiting_committed() or self._state.awaiting_reset())
        if pending:
            self._resolving = asyncio.get_running_loop().create_task(self._resolve())
        return pending

    async def _resolve(self) -> None:
        try:
            await self._resolve_committed()
            await self._resolve_resets()
        except asyncio.CancelledError:
            raise
        except KafkaError as exc:
            log.info("looking up positions: %s", exc)
            if not exc.retriable:
                self._fail_unresolved(exc)
            await asyncio.sleep(self._backoff_s)
        finally:
            self.wake()

    async def _resolve_committed(self) -> None:
        with self._state.cond:
            wanted = self._state.awaiting_committed()
        if not wanted or self._committed_lookup is None:
            return
        found = await self._committed_lookup(wanted)
        policy = self._config.auto_offset_reset
        with self._state.cond:
            for tp, committed in found.items():
                ps = self._state.assignment.get(tp)
                if ps is None or not ps.awaiting_committed:
                    continue  # revoked, or sought, meanwhile
                ps.awaiting_committed = False
                if committed is not None:
                    ps.position, ps.leader_epoch = committed.offset, committed.leader_epoch
                elif policy == "none":
                    ps.error = NoOffsetForPartitionError(f"{tp}: no committed offset and auto.offset.reset=none")
                else:
                    ps.reset_to = RESET_TIMESTAMPS[policy]
            self._state.cond.notify_all()

    async def _resolve_resets(self) -> None:
        with self._state.cond:
            wanted = self._state.awaiting_reset()
        if not wanted:
            return
        c = self._config
        found = await list_offsets(self._metadata, wanted, isolation_level=c.isolation_level,
                                   deadline=time.monotonic() + c.default_api_timeout_ms / 1000,
                                   backoff_s=self._backoff_s, timeout_s=c.request_timeout_ms / 1000)
        with self._state.cond:
            for tp, result in found.items():
                ps = self._state.assignment.get(tp)
                if ps is None or ps.reset_to != wanted[tp] or ps.awaiting_committed:
                    continue
                ps.reset_to = None
                ps.position, ps.leader_epoch = (result.offset, result.leader_epoch) if result else (0, None)
                self._state.buffer.pop(tp, None)
            self._state.cond.notify_all()

    def _fail_unresolved(self, exc: KafkaError) -> None:
        with self._state.cond:
            for ps in self._state.assignment.values():
                if (ps.awaiting_committed or ps.reset_to is not None) and ps.error is None:
                    ps.error = exc
            self._state.cond.notify_all()
