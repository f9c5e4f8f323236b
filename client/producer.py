"""kraftlog's producer: Kafka's producer semantics over gRPC, in two flavours.

    async with AsyncProducer({"bootstrap.servers": "127.0.0.1:9092"}) as producer:
        delivered = await producer.produce("events", b"value", key=b"user-1")
        print(delivered.partition, delivered.offset)

    with Producer({"bootstrap.servers": "127.0.0.1:9092", "linger.ms": 20}) as producer:
        futures = [producer.produce("events", line) for line in lines]
        producer.flush()

`produce()` never waits for the network: it picks the partition (murmur2
of the key, else the sticky partition; or the one given), appends the record
to its partition's batch and returns a future of RecordMetadata(topic,
partition, offset, timestamp) (record_future.py: an asyncio future from
AsyncProducer, a concurrent.futures-like one from Producer; each is settled
from its batch's one outcome). A background sender sends batches, one
Produce request per broker, and settles the futures. `on_delivery(err,
metadata)` is called as well, on the producer's event loop (the sync
producer's I/O thread), in record order per partition: keep it short.

Settings are Kafka's (see ProducerConfig); idempotence is on by default.

Transactions (KIP-98), with confluent-kafka's calls; with `transactional.id` set:

    producer.init_transactions()
    producer.begin_transaction()
    producer.produce("out", value)
    producer.send_offsets_to_transaction(consumer.position_offsets(), consumer.group_metadata())
    producer.commit_transaction()        # or abort_transaction()

A failing call raises KafkaException; `exc.args[0]` says what to do:
retriable() (call it again: it resumes), txn_requires_abort() (call
abort_transaction() and start the transaction over) or fatal() (fenced by a
newer producer with the same id, or not authorized: close the producer).
client/transactions.py holds the states, client/txn_requests.py the requests.

Two-phase commit (KIP-939), with `transaction.two.phase.commit.enable=true`:
the coordinator never aborts the id's transactions by timeout, and one
process may prepare a transaction that another completes:

    state = producer.prepare_transaction()   # flushed; the transaction stays open
    ...ship str(state) to the deciding process, which runs
    other.init_transactions(keep_prepared_txn=True)   # same transactional.id: keeps it open
    other.complete_transaction(PreparedTxnState.parse(text))   # commit if it is that one, else abort
A record larger than max.request.size fails with MESSAGE_TOO_LARGE without
being sent; a topic unknown for max.block.ms fails its records with
UNKNOWN_TOPIC_OR_PARTITION.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from kafka_protocol.batch import HEADER_SIZE
from kafka_protocol.errors import Errors, KafkaError, MessageTooLargeError
from kafka_protocol.wording import counted

from .accumulator import RecordAccumulator
from .consumer_types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition
from .errors import KafkaErrorInfo, KafkaException, RequestTimedOutError, error_for_code
from .idempotence import IdempotenceState
from .io_thread import IoThread
from .metadata import Metadata
from .metadata_cache import PartitionInfo
from .partitioner import StickyPartitioner, key_partition
from .producer_batch import (RECORD_OVERHEAD_UPPER_BOUND, ProducerBatch, ProducerRecord, RecordMetadata,
                             record_size_upper_bound)
from .producer_config import ProducerConfig
from .record_future import AsyncRecordFuture, DeliveryCallback, RecordFuture, Settlement, SyncRecordFuture
from .sender import Sender
from .transactions import Outcome, PreparedTxnState, TransactionManager, TxnState, state_error, timed_out, txn_error
from .txn_requests import TxnRequests

log = logging.getLogger(__name__)

__all__ = ["AsyncProducer", "AsyncRecordFuture", "PreparedTxnState", "Producer", "RecordMetadata",
           "SyncRecordFuture"]

Bytes = Union[bytes, bytearray, memoryview, str]
HeadersArg = Union[Mapping[str, Optional[Bytes]], Iterable[tuple[str, Optional[Bytes]]], None]
_time_ns = time.time_ns


def make_record(value: Optional[Bytes], key: Optional[Bytes], headers: HeadersArg,
                timestamp: Optional[int]) -> ProducerRecord:
    """A record from produce()'s arguments: str is UTF-8; `timestamp` is ms (now when None), the
    record's is ns (see ProducerRecord)."""
    if headers:
        items = headers.items() if isinstance(headers, Mapping) else headers
        header_tuple = tuple((str(k), _as_bytes("header value", v)) for k, v in items)
    else:
        header_tuple = ()
    if type(key) is not bytes and key is not None:
        key = _as_bytes("key", key)
    if type(value) is not bytes and value is not None:
        value = _as_bytes("value", value)
    return (key, value, _time_ns() if timestamp is None else int(timestamp) * 1_000_000,  # type: ignore[return-value]
            header_tuple, -1)


def _as_bytes(what: str, data: Optional[Bytes]) -> Optional[bytes]:
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"{what} must be bytes, str or None, not {type(data).__name__}")


class AsyncProducer:
    """The producer on the caller's asyncio loop (every call from that loop)."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = ProducerConfig.parse(config)
        c = self.config
        self._metadata = Metadata(c.bootstrap_servers, retry_backoff_ms=c.retry_backoff_ms,
                                  retry_backoff_max_ms=c.retry_backoff_max_ms,
                                  metadata_max_age_ms=c.metadata_max_age_ms, request_timeout_ms=c.request_timeout_ms,
                                  security=c.security, client_id=c.client_id)
        self._settlement = Settlement()  # its loop is set by start()
        self._accumulator = RecordAccumulator(batch_size=c.batch_size, linger_ms=c.linger_ms,
                                              settlement=self._settlement)
        self._max_record_size = min(c.max_request_size, c.buffer_memory) - HEADER_SIZE
        idempotence = IdempotenceState() if c.enable_idempotence else None
        self._txn: Optional[TransactionManager] = None
        self._txn_requests: Optional[TxnRequests] = None
        if c.transactional_id is not None:
            assert idempotence is not None  # ProducerConfig makes a transactional producer idempotent
            self._txn = TransactionManager(c.transactional_id, c.transaction_timeout_ms, c.two_phase_commit)
            self._txn_requests = TxnRequests(self._metadata, self._txn, idempotence,
                                             request_timeout_s=c.request_timeout_ms / 1000,
                                             backoff_s=c.retry_backoff_ms / 1000)
        self._idempotence = idempotence
        self._sender = Sender(c, self._metadata, self._accumulator, idempotence, self._batch_finished,
                              txn=self._txn, txn_requests=self._txn_requests)
        self._sticky = StickyPartitioner()
        # Per topic, the open batch of its sticky partition, which produce() fills directly with
        # keyless records while it stays open (it closes when full, drained, expired or failed).
        # Kept only where that skips no check that could fail: not for a transactional producer
        # (each record checks the transaction's state), not where batch.size exceeds the largest
        # record allowed, never for a topic with records waiting for metadata (they go first) or
        # that the metadata forgot or gave another partition count (the slow path decides again),
        # and only while the batch has no key or header column (a record with either drops it).
        self._keyless_open: dict[str, ProducerBatch] = {}
        self._metadata.topic_listeners.append(self._topic_changed)
        self._batch_size = c.batch_size
        self._fill_open_batches = self._txn is None and c.batch_size <= self._max_record_size + HEADER_SIZE
        self._sender_task: Optional[asyncio.Task[None]] = None
        self._waiting: dict[str, list[tuple[Optional[int], ProducerRecord, int, RecordFuture]]] = {}
        self._waiting_bytes = 0
        self._topic_tasks: set[asyncio.Task[None]] = set()
        self._finished_event: Optional[asyncio.Event] = None
        self._listeners: list[Callable[[], None]] = []  # told when memory frees (the sync producer)
        self._closed = False

    async def __aenter__(self) -> "AsyncProducer":
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def start(self) -> None:
        """Start the sender (produce() does it too)."""
        if self._sender_task is None:
            loop = asyncio.get_running_loop()
            self._settlement.loop = loop
            self._sender_task = loop.create_task(self._sender.run())

    @property
    def buffered_bytes(self) -> int:
        """buffer.memory in use: each batch's reservation (batch.size, or its one larger
        record, as Kafka's BufferPool allocates; accumulator.py), and the records waiting
        for their topic's metadata."""
        return self._accumulator.buffered_bytes + self._waiting_bytes

    def metrics(self) -> dict[str, int]:
        """Counters by Kafka's producer metric names (record-send-total,
        record-retry-total, record-error-total, request-total,
        produce-throttle-time-max: the longest quota throttle in ms), plus
        producer-epoch-bump-total."""
        return dict(self._sender.metrics)

    # --- producing ---------------------------------------------------------

    def produce(self, topic: str, value: Optional[Bytes], key: Optional[Bytes] = None, headers: HeadersArg = None,
                partition: Optional[int] = None, timestamp: Optional[int] = None,
                on_delivery: Optional[DeliveryCallback] = None) -> AsyncRecordFuture:
        """Queue a record; a future of where it landed. Never waits (see send() for backpressure)."""
        if key is None and partition is None and headers is None and timestamp is None and type(value) is bytes:
            # The usual record - a value, no key - into the sticky partition's open batch, inlined:
            # what submit() and _append() below do for it, without their checks that cannot fail
            # while that batch is open (see _keyless_open).
            batch = self._keyless_open.get(topic)
            if batch is not None and not batch.closed:
                filled = batch.size + RECORD_OVERHEAD_UPPER_BOUND + len(value)
                if filled <= self._batch_size:
                    # RecordFuture.new, inlined: a slot a statement (four in one assignment build a tuple)
                    future = AsyncRecordFuture()
                    future._settlement = self._settlement
                    future._on_delivery = on_delivery
                    future._callbacks = None
                    future._cancelled = False
                    values = batch.values
                    future._batch = batch
                    future._index = len(values)
                    if on_delivery is not None:
                        batch.listeners.append(future)
                    values.append(value)  # the batch has no key or header column (see _keyless_open)
                    batch.stamps.append(_time_ns())  # ns: the ms are taken per batch when it is encoded
                    batch.size = filled  # within the batch's buffer.memory reservation (accumulator.py)
                    return future
        future = AsyncRecordFuture.new(self._settlement, on_delivery)
        self.submit(topic, make_record(value, key, headers, timestamp), partition, future)
        return future

    async def produce_arrow(self, topic: str, table: Any, partition: Optional[int] = None) -> list[AsyncRecordFuture]:
        """Queue the rows of a pyarrow Table or RecordBatch (columns `value`,
        optional `key`, `partition`, `timestamp`; see client/column_batch.py),
        encoded into batches by compiled code; a future per batch, of where
        its first row landed. Waits for the topic's metadata, not for room."""
        from .column_batch import encode_table  # pyarrow: only for produce_arrow()
        partitions = await self.partition_count(topic)
        c = self.config
        encoded = encode_table(table, partitions, partition, batch_size=c.batch_size,
                               max_record_size=self._max_record_size, codec=c.compression,
                               start=self._sticky.partition(topic, self._metadata.partitions(topic)))
        futures = [AsyncRecordFuture.new(self._settlement, None) for _ in encoded]
        self.enqueue_encoded(topic, encoded, futures)
        return futures

    async def partition_count(self, topic: str) -> int:
        if not self._metadata.partitions(topic):
            await self._metadata.partitions_for(topic, self.config.max_block_ms)
        return len(self._metadata.partitions(topic))

    def enqueue_encoded(self, topic: str, encoded: list[Any], futures: Sequence[RecordFuture]) -> None:
        """Queue produce_arrow's batches (on this loop), each tied to its future."""
        from .column_batch import ColumnBatch
        if self._closed:
            raise RuntimeError("cannot send after the producer is closed")
        if self._sender_task is None:
            self.start()
        if self._sender.fatal_error is not None:
            raise self._sender.fatal_error
        if self._txn is not None:
            self._txn.check_send()
        now = time.monotonic()
        with self._settlement.lock:  # the sync producer's futures may be read on other threads
            for e, future in zip(encoded, futures):
                batch = ColumnBatch(topic, e, self.config.compression, 0, now, self._settlement)
                future._batch, future._index = batch, 0
                if self._txn is not None:
                    self._txn.add_partition(batch.tp)
                self._accumulator.append_batch(batch)
        self._sender.wakeup()

    async def send(self, topic: str, value: Optional[Bytes], key: Optional[Bytes] = None,
                   headers: HeadersArg = None, partition: Optional[int] = None, timestamp: Optional[int] = None,
                   on_delivery: Optional[DeliveryCallback] = None) -> AsyncRecordFuture:
        """produce() after waiting, up to max.block.ms, for buffer.memory to have room."""
        await self.wait_for_room()
        return self.produce(topic, value, key, headers, partition, timestamp, on_delivery)

    async def wait_for_room(self) -> None:
        deadline = time.monotonic() + self.config.max_block_ms / 1000
        while self.buffered_bytes >= self.config.buffer_memory:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RequestTimedOutError(f"failed to allocate memory within max.block.ms "
                                           f"({self.config.max_block_ms} ms): buffer.memory is full")
            event = self._finished()
            try:
                await asyncio.wait_for(event.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def submit(self, topic: str, record: ProducerRecord, partition: Optional[int], future: RecordFuture) -> None:
        """Queue a built record with its future (on this loop; the sync producer holds the settlement's lock)."""
        value = record[1]
        if partition is None and record[0] is None and value is not None and not record[3]:
            batch = self._keyless_open.get(topic)  # as produce()'s fast path
            if batch is not None and not batch.closed:
                size = RECORD_OVERHEAD_UPPER_BOUND + len(value)
                if batch.size + size <= self._batch_size:
                    batch.append(record, size, future)
                    return
        if self._closed:
            raise RuntimeError("cannot send after the producer is closed")
        if self._sender_task is None:
            self.start()
        if self._sender.fatal_error is not None:
            future.fail_unsent(self._sender.fatal_error)
            return
        if self._txn is not None:
            try:
                self._txn.check_send()
            except KafkaException as exc:
                future.fail_unsent(exc)
                return
        key = record[0]
        if record[3] or value is None:
            size = record_size_upper_bound(record)
        else:  # inlined for the usual record: what record_size_upper_bound() gives
            size = RECORD_OVERHEAD_UPPER_BOUND + len(value) + (len(key) if key else 0)
        if size > self._max_record_size:
            limit = min(self.config.max_request_size, self.config.buffer_memory)
            future.fail_unsent(MessageTooLargeError(
                f"the message is {HEADER_SIZE + size} bytes when serialized, larger than "
                f"{'max.request.size' if limit == self.config.max_request_size else 'buffer.memory'} ({limit})"))
            return
        partitions = self._metadata.partitions(topic)
        if not partitions or topic in self._waiting:
            # Behind other records waiting for this topic's metadata, in order.
            waiting = self._waiting.get(topic)
            if waiting is None:
                waiting = self._waiting[topic] = []
                task = asyncio.get_running_loop().create_task(self._await_topic(topic))
                self._topic_tasks.add(task)
                task.add_done_callback(self._topic_tasks.discard)
            waiting.append((partition, record, size, future))
            self._waiting_bytes += size
            self._keyless_open.pop(topic, None)
            return
        self._append(topic, partitions, partition, record, size, future)

    def _topic_changed(self, topic: str) -> None:
        """The metadata forgot the topic or learnt another partition count for it."""
        self._keyless_open.pop(topic, None)

    async def _await_topic(self, topic: str) -> None:
        try:
            await self._metadata.partitions_for(topic, self.config.max_block_ms)
        except KafkaError as exc:
            self._fail_waiting(topic, exc)
            return
        waiting = self._waiting.pop(topic, [])
        self._waiting_bytes -= sum(size for _, _, size, _ in waiting)
        partitions = self._metadata.partitions(topic)
        with self._settlement.lock:  # the sync producer's futures may be read on other threads
            for partition, record, size, future in waiting:
                self._append(topic, partitions, partition, record, size, future)

    def _fail_waiting(self, topic: str, error: BaseException) -> None:
        waiting = self._waiting.pop(topic, [])
        self._waiting_bytes -= sum(size for _, _, size, _ in waiting)
        for _, _, _, future in waiting:
            future.fail_unsent(error)
        self._batch_finished()  # memory is free

    def _append(self, topic: str, partitions: list[PartitionInfo], partition: Optional[int], record: ProducerRecord,
                size: int, future: RecordFuture) -> None:
        accumulator = self._accumulator
        if partition is None:
            key = record[0]
            if key is not None:
                partition = key_partition(key, len(partitions))
            else:
                partition = self._sticky.partition(topic, partitions)
                if not accumulator.try_append((topic, partition), record, size, future):
                    # Its batch is full or gone: a new batch, on the next sticky partition (KIP-480).
                    partition = self._sticky.on_new_batch(topic, partitions, partition)
                    if accumulator.append((topic, partition), record, size, future, time.monotonic()):
                        self._sender.wakeup()
                if self._txn is not None:
                    self._txn.add_partition((topic, partition))
                else:
                    batch = future._batch
                    if self._fill_open_batches and batch.keys is None and batch.headers is None:
                        self._keyless_open[topic] = batch
                    else:
                        self._keyless_open.pop(topic, None)
                return
        elif not 0 <= partition < len(partitions):
            future.fail_unsent(error_for_code(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                              f"partition {partition} of {topic} is not "
                                              f"in the range [0...{len(partitions) - 1}]"))
            return
        if self._txn is not None:
            self._txn.add_partition((topic, partition))
        if accumulator.append((topic, partition), record, size, future, time.monotonic()):
            self._sender.wakeup()
        if (record[0] is not None or record[3]) and self._keyless_open.get(topic) is future._batch:
            del self._keyless_open[topic]  # it has a key or header column now

    # --- transactions ------------------------------------------------------

    def _transactions(self) -> tuple[TransactionManager, TxnRequests, IdempotenceState]:
        if self._txn is None or self._txn_requests is None or self._idempotence is None:
            raise state_error("the transactional API needs transactional.id to be set")
        if self._closed:
            raise state_error("the producer is closed")
        if self._sender_task is None:
            self.start()
        return self._txn, self._txn_requests, self._idempotence

    def _deadline(self, timeout: Optional[float]) -> float:
        """`timeout` seconds from now; None: max.block.ms, as Kafka's transactional calls."""
        return time.monotonic() + (self.config.max_block_ms / 1000 if timeout is None else timeout)

    async def _guarded(self, txn: TransactionManager, work: Any) -> Any:
        """Run a request coroutine; an abortable or fatal error is recorded in the state, then raised."""
        try:
            return await work
        except KafkaException as exc:
            if exc.info.fatal() or exc.info.txn_requires_abort():
                txn.fail(exc)
            raise
        except KafkaError as exc:  # not flagged: e.g. a broker without the API
            detail = str(exc.args[0]) if exc.args else ""
            error = txn_error(exc.code if exc.code > 0 else Errors.UNKNOWN_SERVER_ERROR, detail, Outcome.FATAL)
            txn.fatal(error)
            raise error from exc

    async def init_transactions(self, timeout: Optional[float] = None, keep_prepared_txn: bool = False) -> None:
        """Get the producer id and epoch for transactional.id from its coordinator,
        fencing an older producer with the same id and ending its open transaction.
        With keep_prepared_txn (KIP-939, two-phase commit only) an open transaction
        is kept instead, for this producer to commit, abort or complete_transaction()."""
        txn, requests, idempotence = self._transactions()
        if keep_prepared_txn:
            txn.check_two_phase("init_transactions(keep_prepared_txn=True)")
        txn.begin_init()
        producer_id, epoch, kept = await self._guarded(
            txn, requests.init_producer_id(self._deadline(timeout), keep_prepared_txn))
        idempotence.set_producer(producer_id, epoch)
        txn.initialized(kept)
        log.info("transactional id %s: producer id %d epoch %d%s", txn.transactional_id, producer_id, epoch,
                 f", prepared transaction {kept} kept" if kept else "")

    def begin_transaction(self) -> None:
        txn, _, _ = self._transactions()
        txn.begin_transaction()

    async def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, Union[int, OffsetAndMetadata]],
                                          group_metadata: ConsumerGroupMetadata,
                                          timeout: Optional[float] = None) -> None:
        """Commit the group's offsets (the next record to read per partition) with this
        transaction: they become the group's committed offsets when it commits."""
        txn, requests, _ = self._transactions()
        if not isinstance(group_metadata, ConsumerGroupMetadata):
            raise TypeError("group_metadata must be consumer.group_metadata()")
        normalized = {tp: om if isinstance(om, OffsetAndMetadata) else OffsetAndMetadata(int(om))
                      for tp, om in offsets.items()}
        txn.check_send_offsets()
        deadline = self._deadline(timeout)
        if not txn.offsets_added:
            txn.reached = True
            await self._guarded(txn, requests.add_offsets(group_metadata.group_id, deadline))
            txn.offsets_added = True
        if normalized:
            await self._guarded(txn, requests.txn_offset_commit(normalized, group_metadata, deadline))

    async def commit_transaction(self, timeout: Optional[float] = None) -> None:
        """Flush, then commit. After a timeout, calling it again resumes the commit."""
        txn, requests, _ = self._transactions()
        deadline = self._deadline(timeout)
        txn.begin_commit()
        left = await self.flush(max(0.0, deadline - time.monotonic()))
        if txn.has_error:
            assert txn.last_error is not None
            raise txn.last_error  # a record failed: the transaction can only be aborted
        if left:
            raise timed_out(f"commit_transaction: {counted(left, 'record')} not delivered in time")
        await self._end(txn, requests, True, deadline)

    async def prepare_transaction(self, timeout: Optional[float] = None) -> PreparedTxnState:
        """KIP-939's first phase: flush; the transaction stays open (never timed
        out) for this or another producer of the id to commit or abort."""
        txn, _, idempotence = self._transactions()
        txn.check_prepare()
        left = await self.flush(self._deadline(timeout) - time.monotonic())
        if txn.has_error:
            assert txn.last_error is not None
            raise txn.last_error
        if left:
            raise timed_out(f"prepare_transaction: {counted(left, 'record')} not delivered in time")
        state = PreparedTxnState(idempotence.producer_id, idempotence.producer_epoch)
        txn.prepared_as(state)
        return state

    async def complete_transaction(self, prepared_state: PreparedTxnState, timeout: Optional[float] = None) -> bool:
        """KIP-939's second phase, after init_transactions(keep_prepared_txn=True):
        commit the open transaction if it is the one `prepared_state` names, else
        abort it. True: committed; False: aborted, or none was open."""
        txn, _, _ = self._transactions()
        txn.check_two_phase("complete_transaction")
        if txn.state is TxnState.READY:
            return False
        if txn.state is not TxnState.PREPARED_TRANSACTION:
            raise state_error(f"complete_transaction: not allowed in state {txn.state.value}")
        if txn.prepared == prepared_state:
            await self.commit_transaction(timeout)
            return True
        await self.abort_transaction(timeout)
        return False

    async def abort_transaction(self, timeout: Optional[float] = None) -> None:
        """Drop what is not sent yet, wait for what is in flight, then abort."""
        txn, requests, _ = self._transactions()
        deadline = self._deadline(timeout)
        txn.begin_abort()
        purged = KafkaException(KafkaErrorInfo(-152, "purged: the transaction was aborted", name="_PURGE_QUEUE"))
        for topic in list(self._waiting):
            self._fail_waiting(topic, purged)
        self._sender.fail_queued(purged)
        await self._sender.wait_for_adds()
        left = await self.flush(max(0.0, deadline - time.monotonic()))
        if left:
            raise timed_out(f"abort_transaction: {counted(left, 'record')} still in flight")
        await self._end(txn, requests, False, deadline)

    async def _end(self, txn: TransactionManager, requests: TxnRequests, committed: bool, deadline: float) -> None:
        if txn.needs_end_txn:
            producer_id, epoch = await self._guarded(txn, requests.end_txn(committed, deadline))
            assert self._idempotence is not None
            # KIP-890: each transaction ends with a new epoch (sequences restart at 0).
            self._idempotence.set_producer(producer_id, epoch)
        txn.completed()

    # --- flush and close ---------------------------------------------------

    def _finished(self) -> asyncio.Event:
        if self._finished_event is None:
            self._finished_event = asyncio.Event()
        return self._finished_event

    def _batch_finished(self) -> None:
        if self._finished_event is not None:
            self._finished_event.set()
            self._finished_event = None
        for listener in self._listeners:
            listener()

    def add_room_listener(self, listener: Callable[[], None]) -> None:
        """Called (on this loop) whenever a batch finishes and frees memory."""
        self._listeners.append(listener)

    async def flush(self, timeout: Optional[float] = None) -> int:
        """Send everything queued now, without waiting for linger.ms, and wait
        until it is delivered or failed; the number of records still
        undelivered when `timeout` (seconds) ran out (0: all done)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self._accumulator.flushing += 1
        self._sender.wakeup()
        try:
            if self._topic_tasks:
                await asyncio.wait(list(self._topic_tasks), timeout=_remaining(deadline))
            batches = [*self._accumulator.queued(), *self._accumulator.in_flight()]
            while True:
                pending = [b for b in batches if not b.finished]
                waiting = sum(len(w) for w in self._waiting.values())
                if not pending:
                    return waiting
                remaining = _remaining(deadline)
                if remaining is not None and remaining <= 0:
                    return waiting + sum(b.record_count for b in pending)
                try:
                    await asyncio.wait_for(self._finished().wait(), remaining)
                except asyncio.TimeoutError:
                    pass
        finally:
            self._accumulator.flushing -= 1

    async def close(self, timeout: Optional[float] = None) -> None:
        """Deliver what is queued (up to `timeout` seconds; None: as long as it
        takes), then fail whatever is left and release the connections."""
        if self._closed:
            return
        self._closed = True
        self._keyless_open.clear()
        self._accumulator.closing = True
        try:
            left = await self.flush(timeout)
            if left:
                undelivered = counted(left, "record")
                await self._sender.abort(KafkaError(f"producer closed forcefully with {undelivered} undelivered"))
        finally:
            for task in list(self._topic_tasks):
                task.cancel()
            await asyncio.gather(*self._topic_tasks, return_exceptions=True)
            for topic in list(self._waiting):
                self._fail_waiting(topic, KafkaError(f"producer closed before {topic}'s metadata arrived"))
            self._sender.stop()
            if self._sender_task is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(self._sender_task), 5.0)
                except asyncio.TimeoutError:
                    self._sender_task.cancel()
                    await asyncio.gather(self._sender_task, return_exceptions=True)
            await self._metadata.close()


def _remaining(deadline: Optional[float]) -> Optional[float]:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


class Producer:
    """The producer for threaded code: an AsyncProducer on its own I/O thread.

    produce() returns a SyncRecordFuture (as a concurrent.futures.Future:
    result(timeout) blocks, callbacks run on the I/O thread) and blocks only when
    buffer.memory is full (up to max.block.ms), as Kafka's send() does.
    """

    def __init__(self, config: Mapping[str, Any]) -> None:
        ProducerConfig.parse(config)  # bad settings fail here, before a thread starts
        self._io = IoThread("kraftlog-producer")
        self._producer: AsyncProducer = self._io.call(_started(config))
        self._incoming: deque[tuple[str, ProducerRecord, Optional[int], SyncRecordFuture]] = deque()
        self._settlement: Settlement = self._producer._settlement
        self._buffer_memory = self._producer.config.buffer_memory
        self._scheduled = False
        self._room = threading.Condition()
        self._io.call_soon(self._producer.add_room_listener, self._notify_room)
        self._closed = False

    def __enter__(self) -> "Producer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def config(self) -> ProducerConfig:
        return self._producer.config

    @property
    def buffered_bytes(self) -> int:
        """buffer.memory in use (AsyncProducer.buffered_bytes)."""
        return self._producer.buffered_bytes

    def produce(self, topic: str, value: Optional[Bytes], key: Optional[Bytes] = None, headers: HeadersArg = None,
                partition: Optional[int] = None, timestamp: Optional[int] = None,
                on_delivery: Optional[DeliveryCallback] = None) -> SyncRecordFuture:
        if self._closed:
            raise RuntimeError("cannot send after the producer is closed")
        txn = self._producer._txn
        if txn is not None:
            txn.check_send()  # outside a transaction: raised here, as confluent-kafka's produce() does
        if key is None and headers is None and timestamp is None and type(value) is bytes:
            record: ProducerRecord = (None, value, _time_ns(), (), -1)  # make_record's, inlined
        else:
            record = make_record(value, key, headers, timestamp)
        producer = self._producer
        if producer._accumulator.buffered_bytes + producer._waiting_bytes >= self._buffer_memory:
            self._wait_for_room()
        future = SyncRecordFuture()  # SyncRecordFuture.new(self._settlement, on_delivery), inlined
        future._settlement = self._settlement
        future._on_delivery = on_delivery
        future._batch = None
        future._index = 0
        future._callbacks = None
        future._cancelled = False
        self._incoming.append((topic, record, partition, future))
        if not self._scheduled:
            self._scheduled = True
            self._io.call_soon(self._hand_over)
        return future

    def produce_arrow(self, topic: str, table: Any, partition: Optional[int] = None) -> list[SyncRecordFuture]:
        """AsyncProducer.produce_arrow from this thread: the rows are encoded
        here (compiled, the GIL released) while the I/O thread sends; after
        what produce() queued before. Blocks, as produce() does, while
        buffer.memory is full."""
        from .column_batch import encode_table  # pyarrow: only for produce_arrow()
        if self._closed:
            raise RuntimeError("cannot send after the producer is closed")
        p = self._producer
        partitions = self._io.call(p.partition_count(topic))
        start = self._io.call(_run(lambda: p._sticky.partition(topic, p._metadata.partitions(topic))))
        encoded = encode_table(table, partitions, partition, batch_size=p.config.batch_size,
                               max_record_size=p._max_record_size, codec=p.config.compression, start=start)
        self._wait_for_room()
        self._drain_incoming()
        futures = [SyncRecordFuture.new(self._settlement, None) for _ in encoded]
        self._io.call(_run(lambda: p.enqueue_encoded(topic, encoded, futures)))
        return futures

    def _hand_over(self) -> None:
        """On the I/O thread: move what produce() queued into the producer, in order."""
        self._scheduled = False
        incoming, submit = self._incoming, self._producer.submit
        # One lock for the burst: produce()'s caller may read a future while it joins its batch.
        with self._settlement.lock:
            while incoming:
                topic, record, partition, future = incoming.popleft()
                try:
                    submit(topic, record, partition, future)
                except RuntimeError as exc:  # closed meanwhile
                    future.fail_unsent(exc)

    def _wait_for_room(self) -> None:
        limit = self._producer.config.buffer_memory
        if self._producer.buffered_bytes < limit:
            return
        deadline = time.monotonic() + self._producer.config.max_block_ms / 1000
        with self._room:
            while self._producer.buffered_bytes >= limit:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RequestTimedOutError(f"failed to allocate memory within max.block.ms "
                                               f"({self._producer.config.max_block_ms} ms): buffer.memory is full")
                self._room.wait(min(remaining, 0.5))

    def _notify_room(self) -> None:
        with self._room:
            self._room.notify_all()

    def metrics(self) -> dict[str, int]:
        return self._producer.metrics()

    def flush(self, timeout: Optional[float] = None) -> int:
        """As AsyncProducer.flush: records still undelivered after `timeout` seconds (0: all done)."""
        self._drain_incoming()
        return self._io.call(self._producer.flush(timeout))

    # Transactions: AsyncProducer's, run on the I/O thread (see the module's docstring).

    def _drain_incoming(self) -> None:
        """What produce() queued joins the producer before a transaction call (it belongs to this transaction)."""
        if self._incoming:
            self._io.call(_run(self._hand_over))

    def init_transactions(self, timeout: Optional[float] = None, keep_prepared_txn: bool = False) -> None:
        self._io.call(self._producer.init_transactions(timeout, keep_prepared_txn))

    def begin_transaction(self) -> None:
        self._io.call(_run(self._producer.begin_transaction))

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, Union[int, OffsetAndMetadata]],
                                    group_metadata: ConsumerGroupMetadata, timeout: Optional[float] = None) -> None:
        self._drain_incoming()
        self._io.call(self._producer.send_offsets_to_transaction(offsets, group_metadata, timeout))

    def commit_transaction(self, timeout: Optional[float] = None) -> None:
        self._drain_incoming()
        self._io.call(self._producer.commit_transaction(timeout))

    def prepare_transaction(self, timeout: Optional[float] = None) -> PreparedTxnState:
        self._drain_incoming()
        return self._io.call(self._producer.prepare_transaction(timeout))

    def complete_transaction(self, prepared_state: PreparedTxnState, timeout: Optional[float] = None) -> bool:
        return self._io.call(self._producer.complete_transaction(prepared_state, timeout))

    def abort_transaction(self, timeout: Optional[float] = None) -> None:
        self._drain_incoming()
        self._io.call(self._producer.abort_transaction(timeout))

    def close(self, timeout: Optional[float] = None) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._io.call(self._producer.close(timeout))
        finally:
            self._io.stop()


async def _run(fn: Callable[[], Any]) -> Any:
    """`fn()` on the I/O thread's loop, its exception raised to the caller."""
    return fn()


async def _started(config: Mapping[str, Any]) -> AsyncProducer:
    producer = AsyncProducer(config)
    producer.start()
    return producer
