"""The transactional workload of a chaos run (chaos/txn_checks.py documents
the ops it records and what is checked).

- Workers, one transactional id each (`chaos-txn-<w>`), consume-transform-
  produce on one topic: worker w reads partition w (read_committed, in the
  workload's group, assigned), then runs a transaction that writes unique
  values to one or more partitions of the same topic and commits the
  offsets it consumed with send_offsets_to_transaction. What one worker
  writes another consumes, so transactions read each other's writes (the
  write-read edges of the G1c check). A fraction of transactions is aborted
  on purpose; after an abort the worker seeks back to what it had consumed
  (those records belong to the next transaction).
- A transaction whose outcome the client cannot know (a timeout, a fatal
  error) is `info`; the worker then replaces its producer with a new one of
  the same transactional id (init_transactions ends the old transaction
  either way) and resumes from the group's committed offset.
- `crash_producer()` (the nemesis's producer fault) makes a worker's
  producer a zombie mid-transaction: a new producer of the same id is
  initialized (fencing it), then the zombie tries to commit. Its
  transaction is recorded `info` with "zombie": true; it must not commit.
- Late EndTxn (Bufstream's finding, client side): now and then, after the
  next transaction began and wrote, the worker re-sends the EndTxn of its
  previous transaction (same producer id, the ended epoch, commit or
  abort) as a raw request. Recorded as `late-end-txn` with the error it got;
  the data shows whether it did harm.
- Readers poll every partition from the beginning during the run, most with
  read_committed, one with read_uncommitted.
- `final_read()`, after the faults are healed: waits until no transaction is
  open (each partition's last stable offset reaches its high watermark),
  reads every partition whole both ways, and reads the group's offsets.
"""
from __future__ import annotations

import asyncio
import itertools
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from client.consumer import Consumer
from client.consumer_types import TopicPartition
from client.coordinator import TRANSACTION, Coordinator
from client.errors import KafkaException
from client.metadata import Metadata
from client.producer import Producer
from kafka_protocol.errors import error_name
from kraftlog_api import transactions_pb2 as tpb
from kraftlog_api import transactions_pb2_grpc as tpb_grpc

from .history import FAIL, INFO, OK, Call, HistoryRecorder
from .txn_checks import (ABORT, ASSIGN, COMMIT, FINAL_READ, GROUP_OFFSETS, LATE_END_TXN, POLL, READ_COMMITTED,
                         READ_UNCOMMITTED, STABLE, TXN)
from .workload import WorkloadThreads

POLL_TIMEOUT_S = 0.3
CALL_TIMEOUT_S = 20.0  # each transactional call
FINAL_READ_TIMEOUT_S = 120.0
STABLE_WAIT_S = 45.0  # the transaction timeout, the coordinator's sweep, and room for markers after healing
TRANSACTION_TIMEOUT_MS = 10_000  # short: a zombie's open transaction is aborted by the coordinator soon


def transactional_id(worker: int) -> str:
    return f"chaos-txn-{worker}"


@dataclass
class TxnWorkload(WorkloadThreads):
    history: HistoryRecorder
    bootstrap: str
    topic: str
    partitions: int
    seed: int = 0
    workers: int = 3
    committed_readers: int = 2
    uncommitted_readers: int = 1
    abort_fraction: float = 0.2
    late_end_txn_fraction: float = 0.3
    hold_s: float = 0.4  # a transaction stays open up to this long before it ends
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _threads: list[threading.Thread] = field(default_factory=list, init=False)
    _processes: "itertools.count[int]" = field(default_factory=itertools.count, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _crash: dict[int, threading.Event] = field(default_factory=dict, init=False)
    errors: list[str] = field(default_factory=list, init=False)

    @property
    def group(self) -> str:
        return f"chaos-txn-{self.topic}"

    def key(self, partition: int) -> str:
        return f"{self.topic}-{partition}"

    def _process(self) -> int:
        with self._lock:
            return next(self._processes)

    # -- running ------------------------------------------------------------------------------
    def start(self) -> None:
        for w in range(self.workers):
            self._crash[w] = threading.Event()
            self._spawn(f"txn-worker-{w}", self._work, w)
        for i in range(self.committed_readers):
            self._spawn(f"rc-reader-{i}", self._read, f"rc-{i}", READ_COMMITTED)
        for i in range(self.uncommitted_readers):
            self._spawn(f"ru-reader-{i}", self._read, f"ru-{i}", READ_UNCOMMITTED)


    def crash_producer(self, rng: random.Random) -> dict[str, Any]:
        """The nemesis's producer fault: a worker's producer becomes a zombie at
        its next transaction (replaced by a new one of the same id)."""
        worker = rng.randrange(self.workers)
        self._crash[worker].set()
        return {"transactional_id": transactional_id(worker)}

    # -- a worker -----------------------------------------------------------------------------
    def _work(self, worker: int) -> None:
        rng = random.Random(self.seed * 1000 + worker)
        tid = transactional_id(worker)
        source = TopicPartition(self.topic, worker % self.partitions)
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                             "client.id": f"chaos-{tid}-consumer", "isolation.level": READ_COMMITTED,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        process = self._process()
        producer: Optional[Producer] = None
        previous: Optional[tuple[int, int, bool]] = None  # the last ended transaction's pid, epoch, result
        try:
            consumer.assign([source])
            producer = self._new_producer(tid, consumer, source)
            for n in itertools.count():
                if self._stop.is_set() or producer is None:
                    break
                after, previous = self._transaction(worker, n, rng, tid, producer, consumer, source, process,
                                                    previous)
                if after is not producer:
                    _abandon(producer)
                producer = after if after is not None else self._new_producer(tid, consumer, source)
        finally:
            if producer is not None:
                _abandon(producer)
            consumer.close()

    def _new_producer(self, tid: str, consumer: Consumer, source: TopicPartition) -> Optional[Producer]:
        """A producer of `tid`, initialized (fencing any older one and ending its
        transaction), and the consumer moved to the group's committed offset;
        None when the run stops first."""
        while not self._stop.is_set():
            producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": tid,
                                 "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS, "linger.ms": 2,
                                 "request.timeout.ms": 5000, "delivery.timeout.ms": 30000,
                                 "client.id": f"chaos-{tid}"})
            try:
                producer.init_transactions(CALL_TIMEOUT_S)
                committed = consumer.committed([source], timeout=CALL_TIMEOUT_S).get(source)
            except Exception:  # noqa: BLE001 - the coordinator is down or moving: try again
                _abandon(producer)
                time.sleep(0.5)
                continue
            if committed is not None and committed.offset >= 0:
                consumer.seek(source, committed.offset)
            else:
                consumer.seek_to_beginning([source])
            # the consumer's stream restarts here (the checker's streams are per assignment)
            call = self.history.invoke(self._process(), ASSIGN, None, {"consumer": tid})
            self.history.complete(call, OK, [self.key(source.partition)])
            return producer
        return None

    def _transaction(self, worker: int, n: int, rng: random.Random, tid: str, producer: Producer,
                     consumer: Consumer, source: TopicPartition, process: int,
                     previous: Optional[tuple[int, int, bool]],
                     ) -> tuple[Optional[Producer], Optional[tuple[int, int, bool]]]:
        """One transaction: (the producer to go on with - None: replace it -, the
        producer id, epoch and result of the transaction that ended now)."""
        try:
            records = consumer.poll(POLL_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - nothing consumed; the next poll tries again
            if len(self.errors) < 50:
                self.errors.append(f"{tid} poll: {_describe(exc)}")
            time.sleep(0.2)
            return producer, previous
        consumed = [[r.offset, r.value.decode()] for r in records if r.value is not None]
        targets = rng.sample(range(self.partitions), rng.randint(1, self.partitions))
        writes = {self.key(p): [f"w{worker}-{n}-{p}-{i}" for i in range(rng.randint(1, 2))] for p in sorted(targets)}
        intent = ABORT if rng.random() < self.abort_fraction else COMMIT
        offsets = {self.key(source.partition): consumed[-1][0] + 1} if consumed else {}
        call = self.history.invoke(process, TXN, tid, {
            "id": f"w{worker}-{n}", "writes": writes, "intent": intent, "offsets": offsets,
            "consumed": {self.key(source.partition): consumed} if consumed else {}})
        end_ns: Optional[int] = None
        try:
            producer.begin_transaction()
            for partition in sorted(targets):
                for value in writes[self.key(partition)]:
                    producer.produce(self.topic, value.encode(), partition=partition)
            if consumed:
                producer.send_offsets_to_transaction({source: consumed[-1][0] + 1}, consumer.group_metadata(),
                                                     CALL_TIMEOUT_S)
            if previous is not None and rng.random() < self.late_end_txn_fraction:
                producer.flush(CALL_TIMEOUT_S)  # this transaction is open at its partitions now
                self._late_end_txn(tid, previous, rng)
            time.sleep(rng.uniform(0, self.hold_s))
            if self._crash[worker].is_set():
                self._crash[worker].clear()
                return self._zombie(tid, producer, consumer, source, call)
            pid, epoch = _producer_identity(producer)
            end_ns = self.history.now_ns()
            if intent == COMMIT:
                producer.commit_transaction(CALL_TIMEOUT_S)
            else:
                producer.abort_transaction(CALL_TIMEOUT_S)
        except KafkaException as exc:
            error = exc.args[0]
            if not error.txn_requires_abort():
                self.history.complete(call, INFO, error=_describe(exc), end_ns=end_ns)
                return None, None
            try:
                end_ns = end_ns or self.history.now_ns()
                producer.abort_transaction(CALL_TIMEOUT_S)
            except Exception as again:  # noqa: BLE001 - the abort's outcome is unknown too
                self.history.complete(call, INFO, error=f"{_describe(exc)}; abort: {_describe(again)}",
                                      end_ns=end_ns)
                return None, None
            self.history.complete(call, OK, ABORT, error=_describe(exc), end_ns=end_ns)
            _rewind(consumer, source, consumed)
            return producer, None
        except Exception as exc:  # noqa: BLE001 - anything else: unknown, and a new producer
            self.history.complete(call, INFO, error=_describe(exc), end_ns=end_ns)
            return None, None
        self.history.complete(call, OK, intent, end_ns=end_ns)
        if intent == ABORT:
            _rewind(consumer, source, consumed)
        if _producer_identity(producer) == (pid, epoch):
            # No EndTxn went out (a transaction ended in the client alone keeps
            # its epoch): a "late" copy would end the next transaction, as its
            # own producer may, which is no fault to test.
            return producer, None
        return producer, (pid, epoch, intent == COMMIT)

    def _zombie(self, tid: str, zombie: Producer, consumer: Consumer, source: TopicPartition,
                call: Call) -> tuple[Optional[Producer], None]:
        """A new producer of the id fences `zombie`, whose commit then must fail;
        the replacement goes on (None if the run stopped first)."""
        replacement = self._new_producer(tid, consumer, source)
        end_ns = self.history.now_ns()
        try:
            zombie.commit_transaction(CALL_TIMEOUT_S)
            outcome = "the zombie's commit returned"
        except Exception as exc:  # noqa: BLE001 - expected: PRODUCER_FENCED or the like
            outcome = _describe(exc)
        self.history.complete(call, INFO, zombie=True, error=outcome, end_ns=end_ns)
        return replacement, None

    def _late_end_txn(self, tid: str, previous: tuple[int, int, bool], rng: random.Random) -> None:
        """Re-send the previous transaction's EndTxn (its epoch has ended) as a raw request."""
        pid, epoch, committed = previous
        committed = committed if rng.random() < 0.5 else not committed
        call = self.history.invoke(self._process(), LATE_END_TXN, tid,
                                   {"producer_id": pid, "epoch": epoch, "committed": committed})
        request = tpb.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                    committed=committed)
        try:
            response = asyncio.run(_end_txn_once(self.bootstrap, tid, request))
        except Exception as exc:  # noqa: BLE001 - it never arrived, or its answer was lost
            self.history.complete(call, FAIL if isinstance(exc, TimeoutError) else INFO, error=_describe(exc))
            return
        self.history.complete(call, OK, error_name(response.error_code))

    # -- readers ------------------------------------------------------------------------------
    def _read(self, name: str, isolation: str) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "client.id": f"chaos-{name}",
                             "isolation.level": isolation, "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        process = self._process()
        try:
            partitions = [TopicPartition(self.topic, p) for p in range(self.partitions)]
            consumer.assign(partitions)
            consumer.seek_to_beginning(partitions)
            while not self._stop.is_set():
                call = self.history.invoke(process, POLL, None, {"consumer": name, "isolation": isolation})
                try:
                    records = consumer.poll(POLL_TIMEOUT_S)
                except Exception as exc:  # noqa: BLE001 - a failed poll read nothing
                    self.history.complete(call, FAIL, error=_describe(exc))
                    time.sleep(0.2)
                    continue
                polled: dict[str, list[list[Any]]] = {}
                for r in records:
                    polled.setdefault(self.key(r.partition), []).append(
                        [r.offset, r.value.decode() if r.value is not None else None])
                self.history.complete(call, OK, polled)
        finally:
            consumer.close()

    # -- after healing ------------------------------------------------------------------------
    def final_read(self, timeout: float = FINAL_READ_TIMEOUT_S) -> dict[str, int]:
        """Every partition read whole with both isolation levels once no
        transaction is open (or, past `STABLE_WAIT_S`, with the hanging ones
        recorded); then the group's offsets. The record counts."""
        deadline = time.monotonic() + timeout
        partitions = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        consumers = {level: Consumer({"bootstrap.servers": self.bootstrap, "client.id": f"chaos-final-{level}",
                                      "isolation.level": level, "auto.offset.reset": "earliest",
                                      "enable.auto.commit": False})
                     for level in (READ_COMMITTED, READ_UNCOMMITTED)}
        counts: dict[str, int] = {}
        process = self._process()
        try:
            ends = self._wait_until_stable(consumers, partitions, process)
            for level, consumer in consumers.items():
                for tp in partitions:
                    call = self.history.invoke(process, FINAL_READ, self.key(tp.partition), {"isolation": level})
                    records = _read_whole(consumer, tp, ends[level][tp], deadline)
                    if records is None:
                        self.history.complete(call, INFO, error=f"did not reach offset {ends[level][tp]}")
                        raise TimeoutError(f"final {level} read of {self.key(tp.partition)} did not reach "
                                           f"{ends[level][tp]}")
                    self.history.complete(call, OK, records)
                    counts[f"{level}:{tp.partition}"] = len(records)
            self._group_offsets(partitions, process)
        finally:
            for consumer in consumers.values():
                consumer.close()
        return counts

    def _wait_until_stable(self, consumers: dict[str, Consumer], partitions: list[TopicPartition],
                           process: int) -> dict[str, dict[TopicPartition, int]]:
        """Wait for every partition's last stable offset to reach its high
        watermark (the coordinator aborts what zombies left open after the
        transaction timeout); record both, which the checker judges."""
        call = self.history.invoke(process, STABLE, None)
        give_up = time.monotonic() + STABLE_WAIT_S
        while True:
            ends = {level: c.end_offsets(partitions, timeout=CALL_TIMEOUT_S) for level, c in consumers.items()}
            if ends[READ_COMMITTED] == ends[READ_UNCOMMITTED] or time.monotonic() > give_up:
                break
            time.sleep(0.5)
        self.history.complete(call, OK, {self.key(tp.partition): [ends[READ_COMMITTED][tp], ends[READ_UNCOMMITTED][tp]]
                                         for tp in partitions})
        return ends

    def _group_offsets(self, partitions: list[TopicPartition], process: int) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                             "client.id": "chaos-final-offsets", "enable.auto.commit": False})
        try:
            call = self.history.invoke(process, GROUP_OFFSETS, self.group)
            committed = consumer.committed(partitions, timeout=CALL_TIMEOUT_S)
            self.history.complete(call, OK, {self.key(tp.partition): om.offset for tp, om in committed.items()
                                             if om is not None and om.offset >= 0})
        finally:
            consumer.close()


def _read_whole(consumer: Consumer, tp: TopicPartition, end: int, deadline: float) -> Optional[list[list[Any]]]:
    consumer.assign([tp])
    consumer.seek_to_beginning([tp])
    records: list[list[Any]] = []
    while consumer.position(tp) < end:
        if time.monotonic() > deadline:
            return None
        for r in consumer.poll(POLL_TIMEOUT_S):
            records.append([r.offset, r.value.decode() if r.value is not None else None])
    return records


def _rewind(consumer: Consumer, source: TopicPartition, consumed: list[list[Any]]) -> None:
    """An aborted transaction's input is the next transaction's: read it again."""
    if consumed:
        consumer.seek(source, consumed[0][0])


def _producer_identity(producer: Producer) -> tuple[int, int]:
    """The producer id and epoch of the open transaction (its EndTxn's), for a late re-send."""
    state = producer._producer._idempotence  # noqa: SLF001 - the workload's own client, read only
    assert state is not None
    return state.producer_id, state.producer_epoch


def _abandon(producer: Producer) -> None:
    """Close without waiting on what a dead or fenced producer still holds."""
    threading.Thread(target=_close_quietly, args=(producer,), daemon=True).start()


def _close_quietly(producer: Producer) -> None:
    try:
        producer.close(timeout=5.0)
    except Exception:  # noqa: BLE001 - a zombie's close may fail; it is gone either way
        pass


async def _end_txn_once(bootstrap: str, tid: str, request: tpb.EndTxnRequest) -> Any:
    metadata = Metadata(bootstrap)
    try:
        await metadata.update()
        coordinator = Coordinator(metadata, tid, request_timeout_s=5.0, backoff_s=0.1, key_type=TRANSACTION,
                                  stub_factory=tpb_grpc.TransactionCoordinatorStub)
        return await coordinator.call_once("EndTxn", request, 5.0)
    finally:
        await metadata.close()


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
