"""The producer's sender: one asyncio task that moves ready batches to the
partition leaders and settles every batch with its answer.

Each turn it expires batches past `delivery.timeout.ms`, starts a metadata
refresh when one is due, gets (or bumps, once every batch it sent is
settled: idempotence.py) the producer id of an idempotent producer, drains the accumulator for every broker with room for another
request (`max.in.flight.requests.per.connection`), and sends one Produce
request per broker. Answers are handled per partition: success completes
the batch, a retriable error puts it back in order after a backoff
(`retry.backoff.ms` doubling up to `retry.backoff.max.ms`) while `retries`
and the delivery timeout allow, anything else fails it. Then it sleeps until
the next linger or backoff deadline, or until something wakes it.

A broker that answers with throttle_time_ms (the client is over its
producer_byte_rate quota) gets no further Produce from this producer until
that time has passed (Kafka's client behaviour since KIP-219).

A transactional producer's sender (KIP-98) sends a partition's batches only
once the partition is in the transaction: it sends AddPartitionsToTxn for
the partitions written to since the last one (one request in flight), and
until it succeeded leaves their batches queued. Its batches carry the
transactional bit, its Produce requests the transactional id. A batch that
fails for good makes the transaction abortable (or the producer fatally
failed, when fenced), and then every queued batch fails with that error, as
Kafka's sender does; the epoch is bumped by EndTxn, never by this sender.
"""
from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Callable, Optional

import grpc

from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.batch import epoch_exhausted
from kafka_protocol.errors import Errors, KafkaError
from kafka_protocol.fetch_framing import produce_stream
from kafka_protocol.in_order_calls import StreamEnded, failure_status
from kafka_protocol.produce_framing import encode_produce_request

from .accumulator import IDLE_DELAY_S, RecordAccumulator
from .errors import KafkaException, NetworkError, RequestTimedOutError, error_for_code
from .idempotence import IdempotenceState
from .metadata import Metadata
from .producer_batch import ProducerBatch, encode_sections
from .producer_config import ProducerConfig
from .transactions import Outcome, Request, TransactionManager, outcome, txn_error
from .txn_requests import TxnRequests

log = logging.getLogger(__name__)

# Retried as Kafka does, but said at WARN each time: the ISR is below
# min.insync.replicas, which lasts until an operator or the cluster fixes it.
NOT_ENOUGH_REPLICAS_ERRORS = frozenset({Errors.NOT_ENOUGH_REPLICAS, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND})


def _wake_up(sleeping: "asyncio.Future[None]") -> None:
    if not sleeping.done():
        sleeping.set_result(None)


def _detail(error: KafkaError) -> str:
    """The error's message without its name (a KafkaException puts its own name first)."""
    return str(error.args[0]) if error.args else error.name


def transport_error(code: grpc.StatusCode, details: str) -> KafkaError:
    """A failed gRPC call (its status, in_order_calls.failure_status) as the Kafka error a Java client would see."""
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return RequestTimedOutError(f"no answer within request.timeout.ms ({details})")
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN):
        return NetworkError(f"{code.name}: {details}")
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return error_for_code(Errors.MESSAGE_TOO_LARGE, f"request refused by the transport: {details}")
    return error_for_code(Errors.UNKNOWN_SERVER_ERROR, f"gRPC {code.name}: {details}")


class Sender:
    def __init__(self, config: ProducerConfig, metadata: Metadata, accumulator: RecordAccumulator,
                 idempotence: Optional[IdempotenceState], on_batch_finished: Callable[[], None],
                 clock: Callable[[], float] = time.monotonic, txn: Optional[TransactionManager] = None,
                 txn_requests: Optional[TxnRequests] = None) -> None:
        self._config = config
        self._txn = txn
        self._txn_requests = txn_requests
        self._add_task: Optional[asyncio.Task[None]] = None
        self._metadata = metadata
        self._acc = accumulator
        self._idem = idempotence
        self._on_batch_finished = on_batch_finished
        self._clock = clock
        self._request_timeout_s = config.request_timeout_ms / 1000
        self._delivery_timeout_s = config.delivery_timeout_ms / 1000
        self._woken = False  # wakeup() since the last turn began
        self._sleeping: Optional[asyncio.Future[None]] = None
        self._node_in_flight: dict[int, int] = {}
        # Produce goes on a ProduceStream per broker, up to max.in.flight requests on it (unary with SASL).
        self._produce_streams = metadata.in_order_streams(produce_stream, max_in_flight=config.max_in_flight)
        self._throttled_until: dict[int, float] = {}  # node -> clock time its quota throttle ends
        self._requests: set[asyncio.Task[None]] = set()
        self._init_task: Optional[asyncio.Task[None]] = None
        self._init_retry_at = 0.0
        self._init_failures = 0
        self._stopping = False
        self.fatal_error: Optional[KafkaError] = None
        # A few of Kafka's producer metrics, by Kafka's names.
        self.metrics = {"request-total": 0, "record-send-total": 0, "record-retry-total": 0,
                        "record-error-total": 0, "producer-epoch-bump-total": 0, "produce-throttle-time-max": 0}

    # --- the loop ----------------------------------------------------------

    def wakeup(self) -> None:
        self._woken = True
        sleeping = self._sleeping
        if sleeping is not None and not sleeping.done():
            sleeping.set_result(None)

    def stop(self) -> None:
        """Finish what is queued and in flight, then end run()."""
        self._stopping = True
        self.wakeup()

    @property
    def idle(self) -> bool:
        return not self._acc.has_unsent() and not self._requests

    async def run(self) -> None:
        try:
            while not (self._stopping and self.idle):
                self._woken = False
                delay = self._run_once()
                if not self._woken:
                    await self._sleep(delay)
        finally:
            self._produce_streams.close()

    async def _sleep(self, delay: float) -> None:
        """Until `delay` seconds pass or wakeup(). One future and one timer: not
        wait_for(Event.wait()), which makes a task per turn, and in Python 3.11
        can swallow a cancellation that meets a wakeup (the task then never ends)."""
        loop = asyncio.get_running_loop()
        sleeping = self._sleeping = loop.create_future()
        timer = loop.call_later(max(delay, 0.0), _wake_up, sleeping)
        try:
            await sleeping
        finally:
            timer.cancel()
            self._sleeping = None

    def _run_once(self) -> float:
        now = self._clock()
        for batch in self._acc.expired(now, self._delivery_timeout_s):
            last = batch.last_error
            self._fail(batch, RequestTimedOutError(
                f"expiring {batch.record_count} record(s) for {batch.topic}-{batch.partition}: "
                f"{(now - batch.created) * 1000:.0f} ms has passed since batch creation"
                + (f"; last error: {last}" if last is not None else "")))
        refresh = self._metadata.maybe_update()
        if refresh is not None:
            refresh.add_done_callback(lambda _: self.wakeup())
        if self.fatal_error is not None:
            for batch in self._acc.take_all_queued():
                self._fail(batch, self.fatal_error)
            return IDLE_DELAY_S
        allowed = None
        if self._txn is not None:
            if self._txn.has_error:
                # Kafka's abortUndrainedBatches: nothing more of this transaction can commit.
                assert self._txn.last_error is not None
                self.fail_queued(self._txn.last_error)
            self._maybe_add_partitions()
            allowed = self._txn.sendable
        elif self._idem is not None and (not self._idem.has_producer_id or self._idem.bump_needed):
            # Before a new epoch, retry what was sent and may be written under its old stamp
            # (idempotence.py); nothing new goes out meanwhile.
            allowed = self._idem.unsettled_partitions(self._acc.queued())
            if not allowed:
                return self._init_producer_id_step(now)
        check = self._acc.ready(now, self._metadata_leader, allowed)
        if check.unknown_leaders:
            self._metadata.request_update()
        throttled = {n: until for n, until in self._throttled_until.items() if until > now}
        self._throttled_until = throttled
        open_nodes = frozenset(n for n in check.nodes
                               if self._node_in_flight.get(n, 0) < self._config.max_in_flight and n not in throttled)
        drained = self._acc.drain(open_nodes, self._metadata_leader, self._config.max_request_size, now, allowed)
        for node, batches in drained.items():
            self._send(node, batches, now)
        if drained and self._acc.has_unsent():
            return 0.0  # the next batches of those partitions may be ready too: look again at once
        delay = check.next_delay_s
        if throttled:
            delay = min(delay, min(throttled.values()) - now)
        if self._metadata.update_due:
            delay = min(delay, max(self._metadata.next_update_in(), 0.005))
        return delay

    def _metadata_leader(self, topic: str, partition: int) -> Optional[int]:
        info = self._metadata.leader_for(topic, partition)
        return None if info is None else info.leader

    # --- producing ---------------------------------------------------------

    def _send(self, node: int, batches: list[ProducerBatch], now: float) -> None:
        topics: dict[str, list[tuple[int, bytes]]] = {}
        transactional = self._txn is not None
        encode_sections(batches, self._config.compression)  # the request's batches in one compiled call
        for batch in batches:
            if self._idem is not None:
                self._idem.stamp(batch)
            batch.attempts += 1
            self.metrics["record-send-total"] += batch.record_count
            if batch.attempts > 1:
                self.metrics["record-retry-total"] += batch.record_count
            topics.setdefault(batch.topic, []).append(
                (batch.partition, batch.encode(self._config.compression, transactional)))
        # Serialized here, the batches copied once (protobuf would copy them twice).
        request = encode_produce_request(self._config.acks, self._config.request_timeout_ms, topics.items(),
                                         self._txn.transactional_id if self._txn is not None else "")
        self._node_in_flight[node] = self._node_in_flight.get(node, 0) + 1
        self.metrics["request-total"] += 1
        log.debug("Produce to broker %d: %s", node, batches)
        task = asyncio.get_running_loop().create_task(self._produce(node, request, batches))
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    async def _send_produce(self, node: int, request: bytes) -> bpb.ProduceResponse:
        unary = self._metadata.stub(node).ProduceEncoded
        return await self._produce_streams.call(self._metadata.brokers[node], request, self._request_timeout_s,
                                                lambda: unary(request, timeout=self._request_timeout_s))

    async def _produce(self, node: int, request: bytes, batches: list[ProducerBatch]) -> None:
        try:
            try:
                response = await self._send_produce(node, request)
            except (grpc.aio.AioRpcError, StreamEnded, TimeoutError, KeyError) as exc:
                status = failure_status(exc)
                error = transport_error(*status) if status is not None else \
                    NetworkError(f"broker {node} left the metadata")
                if error.retriable:
                    self._metadata.note_unreachable(node)
                for batch in batches:
                    self._settle(batch, error.code, -1, -1, str(error), error)
                return
            if response.throttle_time_ms > 0:
                self._throttled_until[node] = self._clock() + response.throttle_time_ms / 1000
                self.metrics["produce-throttle-time-max"] = max(self.metrics["produce-throttle-time-max"],
                                                                 response.throttle_time_ms)
            answers = {(t.name, p.index): p for t in response.responses for p in t.partitions}
            for batch in batches:
                answer = answers.get(batch.tp)
                if answer is None:
                    self._settle(batch, Errors.UNKNOWN_SERVER_ERROR, -1, -1, f"broker {node} did not answer for it")
                else:
                    self._settle(batch, answer.error_code, answer.base_offset, answer.log_append_time_ms,
                                 answer.error_message)
        finally:
            self._node_in_flight[node] -= 1
            self.wakeup()

    def _settle(self, batch: ProducerBatch, code: int, base_offset: int, log_append_time: int,
                message: str, error: Optional[KafkaError] = None) -> None:
        """One batch's answer (or its request's failure)."""
        self._acc.returned(batch)
        if batch.finished:
            return  # failed by a forced close meanwhile
        if code in (Errors.NONE, Errors.DUPLICATE_SEQUENCE_NUMBER):
            if self._idem is not None:
                self._idem.acknowledged(batch)
            if self._config.acks == 0:
                base_offset, log_append_time = -1, -1  # acks=0: the producer learns no offset
            batch.complete(base_offset, log_append_time)
            self._finished(batch)
            return
        if error is None:
            error = error_for_code(code, f"{batch.topic}-{batch.partition}: {message}" if message
                                   else f"{batch.topic}-{batch.partition}")
        self._metadata.note_error(code)
        retriable = error.retriable  # Kafka's retriable flag of the code (the table's)
        if self._idem is not None and code in (Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, Errors.UNKNOWN_PRODUCER_ID):
            self._idem.refused(batch)
            if not self._idem.earlier_batch_may_explain(batch):
                # The broker's sequence state and ours differ: start a new epoch (KIP-360).
                log.info("%s for %s: bumping the producer epoch", error.name, batch)
                self._idem.request_epoch_bump()
                if self._txn is not None:  # the epoch moves with the transaction's end: abort it
                    self._fail(batch, error)
                    return
            retriable = True
        now = self._clock()
        if retriable and batch.attempts <= self._config.retries and now - batch.created < self._delivery_timeout_s:
            batch.last_error = error
            log.log(logging.WARNING if code in NOT_ENOUGH_REPLICAS_ERRORS else logging.DEBUG,
                    "retrying %s after %s", batch, error)
            self._acc.reenqueue(batch, now + self._backoff_s(batch.attempts))
            return
        self._fail(batch, error)

    def _fail(self, batch: ProducerBatch, error: BaseException) -> None:
        if self._idem is not None and batch.attempts > 0:
            # Its sequence number may now be a gap the broker waits to see filled.
            self._idem.request_epoch_bump()
        if self._txn is not None and not self._txn.has_error and isinstance(error, KafkaError):
            # A record of the transaction is lost: it cannot commit (or the producer is fenced).
            code = error.code if error.code > 0 else Errors.UNKNOWN_SERVER_ERROR
            self._txn.fail(txn_error(code, f"{batch.topic}-{batch.partition}: {_detail(error)}",
                                     outcome(Request.PRODUCE, code)))
        batch.fail(error)
        self.metrics["record-error-total"] += batch.record_count
        self._finished(batch)

    def _finished(self, batch: ProducerBatch) -> None:
        if self._idem is not None:
            self._idem.forget(batch)
        self._acc.finished(batch)
        self._on_batch_finished()

    def _backoff_s(self, attempts: int) -> float:
        """retry.backoff.ms doubling per attempt up to retry.backoff.max.ms, with 20% jitter (KIP-580)."""
        base = self._config.retry_backoff_ms * (2 ** max(attempts - 1, 0))
        return min(base, self._config.retry_backoff_max_ms) * random.uniform(0.8, 1.2) / 1000

    # --- transactions -------------------------------------------------------

    def _maybe_add_partitions(self) -> None:
        if self._add_task is not None and not self._add_task.done():
            return
        assert self._txn is not None
        partitions = self._txn.partitions_to_add()
        if partitions:
            self._add_task = asyncio.get_running_loop().create_task(self._add_partitions(partitions))
            self._add_task.add_done_callback(lambda _: self.wakeup())

    async def _add_partitions(self, partitions: list[tuple[str, int]]) -> None:
        """AddPartitionsToTxn for these partitions; the ones not added wait for the next try."""
        assert self._txn is not None and self._txn_requests is not None
        deadline = self._clock() + self._delivery_timeout_s
        try:
            codes = await self._txn_requests.add_partitions(partitions, deadline)
        except KafkaError as exc:
            self._txn.adding_failed()
            if not exc.retriable:
                self._txn.fail(exc if isinstance(exc, KafkaException) else
                               txn_error(exc.code, _detail(exc), Outcome.FATAL))
            return
        result = self._txn.partitions_added(codes)
        if result in (Outcome.ABORTABLE, Outcome.FATAL):
            worst = next(c for c in codes.values() if outcome(Request.ADD_PARTITIONS, c) is result)
            failed = sorted(tp for tp, c in codes.items() if c)
            self._txn.fail(txn_error(worst, f"AddPartitionsToTxn {failed}", result))
        elif result is not Outcome.OK:
            await asyncio.sleep(self._txn.add_retry_backoff_s(codes, self._backoff_s(1)))

    def fail_queued(self, error: KafkaError) -> None:
        """Fail every batch not sent yet (an abort drops them; an abortable error dooms them)."""
        for batch in self._acc.take_all_queued():
            self._fail(batch, error)

    async def wait_for_adds(self) -> None:
        """Until the AddPartitionsToTxn under way (if any) is answered."""
        if self._add_task is not None and not self._add_task.done():
            await asyncio.gather(asyncio.shield(self._add_task), return_exceptions=True)

    # --- producer id -------------------------------------------------------

    def _init_producer_id_step(self, now: float) -> float:
        """Get a producer id, or bump the epoch once nothing is in flight."""
        if self._init_task is not None and not self._init_task.done():
            return IDLE_DELAY_S
        if self._requests:
            return IDLE_DELAY_S  # a response wakes us up
        if now < self._init_retry_at:
            return self._init_retry_at - now
        self._init_task = asyncio.get_running_loop().create_task(self._init_producer_id())
        self._init_task.add_done_callback(lambda _: self.wakeup())
        return IDLE_DELAY_S

    async def _init_producer_id(self) -> None:
        assert self._idem is not None
        bump = self._idem.has_producer_id
        if bump and not epoch_exhausted(self._idem.producer_epoch):
            # As Kafka's Java producer bumps an idempotent producer's epoch (KIP-360): here, with no request.
            # A broker answers InitProducerId without a transactional.id with a new id whatever id it names
            # (broker/producer_ids.py), and takes a newer epoch of a known id from its sequence 0.
            self.metrics["producer-epoch-bump-total"] += 1
            self._idem.set_producer(self._idem.producer_id, self._idem.producer_epoch + 1)
            log.info("producer id %d epoch %d (epoch bump)", self._idem.producer_id, self._idem.producer_epoch)
            return
        # The first id, or a new one once the epoch is exhausted (the last epoch is kept back, as in Kafka).
        request = bpb.InitProducerIdRequest(transactional_id="", transaction_timeout_ms=60000,
                                            producer_id=-1, producer_epoch=-1)
        try:
            response = await self._metadata.any_broker("InitProducerId", request, self._request_timeout_s)
        except KafkaError as exc:
            if exc.retriable:
                self._retry_init(exc)
            else:
                self._fatal(exc)
            return
        if response.error_code:
            error = error_for_code(response.error_code, response.error_message or "InitProducerId")
            if error.retriable:  # Kafka's flag: REQUEST_TIMED_OUT, COORDINATOR_*, CONCURRENT_TRANSACTIONS, ...
                self._retry_init(error)
            else:
                self._fatal(error)
            return
        self._init_failures = 0
        if bump:
            self.metrics["producer-epoch-bump-total"] += 1
        self._idem.set_producer(response.producer_id, response.producer_epoch)
        log.info("producer id %d epoch %d%s", response.producer_id, response.producer_epoch,
                 " (a new id: the epoch was exhausted)" if bump else "")

    def _retry_init(self, error: KafkaError) -> None:
        self._init_failures += 1
        self._init_retry_at = self._clock() + self._backoff_s(self._init_failures)
        log.info("InitProducerId failed (%s); retrying", error)

    def _fatal(self, error: KafkaError) -> None:
        """The producer cannot go on (e.g. the brokers lack InitProducerId): fail everything."""
        log.error("producer failed: %s", error)
        self.fatal_error = error
        self.wakeup()

    # --- closing -----------------------------------------------------------

    async def abort(self, error: KafkaError) -> None:
        """A forced close: fail everything queued and in flight, stop waiting for answers."""
        for batch in self._acc.take_all_queued():
            self._fail(batch, error)
        for task in list(self._requests):
            task.cancel()
        for batch in list(self._acc.in_flight()):
            self._acc.returned(batch)
            if not batch.finished:
                batch.fail(error)
                self._finished(batch)
        await asyncio.gather(*self._requests, return_exceptions=True)
        if self._init_task is not None:
            self._init_task.cancel()
        if self._add_task is not None:
            self._add_task.cancel()
        self.stop()
