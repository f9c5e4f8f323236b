"""The queue workload of a chaos run: producers and consumers recording every
operation into the history (chaos/queue_checks.py documents the ops).

- Producers (idempotent, acks=all) send unique values `p<i>-<n>` to explicit
  partitions, round robin, a bounded number in flight each. A send that
  completed with an offset is `ok`; one that failed is `info` (after the
  producer's own retries the outcome is unknown to the client: the batch may
  have been appended before the connection broke), never `fail`.
- Consumers poll: some with assign() from the beginning (their streams must
  not skip), some subscribed in a group (their streams restart on
  reassignment; the `assign` lines mark where). Group members commit what
  they polled, synchronously, and now and then read the group's committed
  offsets back: `commit`/`fetch` ops per (group, partition), the checker's
  `offsets` model (written to the same history; `model_history()` picks
  them out).
- After the faults are healed, `final_read()` reads every partition from its
  log start to its end with a fresh consumer.
- The clients are kraftlog's own over gRPC, or (`Clients` KAFKA, `chaos run
  --client kafka`) librdkafka over the brokers' Kafka-protocol listener
  (chaos/kafka_clients.py), which adapts assign()-based reading only: its
  consumers are all assigned ones.

Everything is bounded: the run's deadline stops the loops; every client is
closed at the end.
"""
from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from client.consumer import Consumer
from client.consumer_types import TopicPartition
from client.producer import Producer

from .history import FAIL, INFO, OK, HistoryRecorder

POLL_TIMEOUT_S = 0.5


@dataclass(frozen=True)
class Clients:
    """The client library a workload drives: producer(config) and consumer(config)
    with kraftlog's Producer and Consumer calls, Kafka-named settings."""
    name: str
    producer: Callable[[dict[str, Any]], Any]
    consumer: Callable[[dict[str, Any]], Any]
    groups: bool  # its consumers can join a consumer group


def kafka_clients() -> Clients:
    """librdkafka (confluent-kafka) through the Kafka-protocol listener; imported only when asked for."""
    from .kafka_clients import KafkaConsumer, KafkaProducer
    return Clients("kafka", KafkaProducer, KafkaConsumer, groups=False)


GRPC_CLIENTS = Clients("grpc", Producer, Consumer, groups=True)
CLIENTS: dict[str, Callable[[], Clients]] = {"grpc": lambda: GRPC_CLIENTS, "kafka": kafka_clients}
FINAL_READ_TIMEOUT_S = 120.0


class WorkloadThreads:
    """The threads of a workload, each one's failure recorded in `errors`; for
    a dataclass with the fields `_stop` (an Event), `_threads` and `errors`."""

    _stop: threading.Event
    _threads: list[threading.Thread]
    errors: list[str]

    def stop(self, timeout: float = 60.0) -> None:
        self._stop.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            self.errors.append(f"workload threads still running after {timeout:g}s: {alive}")

    def _spawn(self, name: str, target: Any, *args: Any) -> None:
        def guarded() -> None:
            try:
                target(*args)
            except Exception as exc:  # noqa: BLE001 - recorded in the run's summary, not swallowed
                self.errors.append(f"{name}: {type(exc).__name__}: {exc}")
        thread = threading.Thread(target=guarded, name=f"chaos-{name}", daemon=True)
        self._threads.append(thread)
        thread.start()


@dataclass
class QueueWorkload(WorkloadThreads):
    history: HistoryRecorder
    bootstrap: str
    topic: str
    partitions: int
    producers: int = 2
    assigned_consumers: int = 1
    group_consumers: int = 2
    in_flight_per_producer: int = 16
    rate_per_producer: float = 200.0  # sends per second at most
    producer_config: dict[str, Any] = field(default_factory=dict)
    # Every client's security settings (security.protocol, sasl.*, ssl.*): a secured run's user.
    client_security: dict[str, Any] = field(default_factory=dict)
    clients: Clients = GRPC_CLIENTS
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _threads: list[threading.Thread] = field(default_factory=list, init=False)
    _processes: "itertools.count[int]" = field(default_factory=itertools.count, init=False)
    _process_lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    errors: list[str] = field(default_factory=list, init=False)

    def _process(self) -> int:
        with self._process_lock:
            return next(self._processes)

    def key(self, partition: int) -> str:
        return f"{self.topic}-{partition}"

    # -- running ------------------------------------------------------------------------------
    def start(self) -> None:
        for i in range(self.producers):
            self._spawn(f"producer-{i}", self._produce, i)
        for i in range(self.assigned_consumers):
            self._spawn(f"assigned-{i}", self._consume, f"assigned-{i}", False)
        for i in range(self.group_consumers if self.clients.groups else 0):
            self._spawn(f"group-{i}", self._consume, f"group-{i}", True)


    def _produce(self, index: int) -> None:
        config = {**self.client_security, "bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 2, "delivery.timeout.ms": 30000, "request.timeout.ms": 5000,
                  "client.id": f"chaos-producer-{index}", **self.producer_config}
        slots = threading.BoundedSemaphore(self.in_flight_per_producer)
        interval = 1.0 / self.rate_per_producer
        producer = self.clients.producer(config)
        try:
            for n in itertools.count():
                if self._stop.is_set():
                    break
                partition = n % self.partitions
                value = f"p{index}-{n}"
                if not slots.acquire(timeout=1.0):
                    continue
                call = self.history.invoke(self._process(), "send", self.key(partition), value)
                future = producer.produce(self.topic, value.encode(), partition=partition)
                future.add_done_callback(lambda f, call=call: self._sent(f, call, slots))
                time.sleep(interval)
            producer.flush(timeout=40.0)
        finally:
            producer.close(timeout=10.0)

    def _sent(self, future: Any, call: Any, slots: threading.BoundedSemaphore) -> None:
        try:
            error = future.exception()
            if error is None:
                self.history.complete(call, OK, future.result().offset)
            else:
                self.history.complete(call, INFO, error=f"{type(error).__name__}: {error}")
        finally:
            slots.release()

    def _consume(self, name: str, in_group: bool) -> None:
        # Commits are explicit, so that every one is in the history.
        config = {**self.client_security, "bootstrap.servers": self.bootstrap, "client.id": f"chaos-{name}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False}
        if in_group:
            config["group.id"] = self.group
        consumer = self.clients.consumer(config)
        process = self._process()
        mode = "subscribe" if in_group else "assign"
        polls = 0

        def assigned(_consumer: Any, partitions: Any) -> None:
            call = self.history.invoke(process, "assign", None, {"consumer": name})
            self.history.complete(call, OK, sorted(self.key(tp.partition) for tp in partitions))

        try:
            if in_group:
                consumer.subscribe([self.topic], on_assign=assigned)
            else:
                partitions = [TopicPartition(self.topic, p) for p in range(self.partitions)]
                consumer.assign(partitions)
                consumer.seek_to_beginning(partitions)
            while not self._stop.is_set():
                call = self.history.invoke(process, "poll", None, {"consumer": name, "mode": mode})
                try:
                    records = consumer.poll(POLL_TIMEOUT_S)
                except Exception as exc:  # noqa: BLE001 - a failed poll read nothing
                    self.history.complete(call, FAIL, error=f"{type(exc).__name__}: {exc}")
                    time.sleep(0.2)
                    continue
                polled: dict[str, list[list[Any]]] = {}
                for r in records:
                    polled.setdefault(self.key(r.partition), []).append(
                        [r.offset, r.value.decode() if r.value is not None else None])
                self.history.complete(call, OK, polled)
                if in_group and records:
                    self._commit(consumer, records)
                    polls += 1
                    if polls % 5 == 0:
                        self._fetch_committed(consumer)
        finally:
            consumer.close()

    def _commit(self, consumer: Consumer, records: list[Any]) -> None:
        """Commit past what was polled; one `commit` op per partition, all at the request's times."""
        offsets = {TopicPartition(r.topic, r.partition): r.offset + 1 for r in records}
        calls = [self.history.invoke(self._process(), "commit", self._group_key(tp.partition), offset)
                 for tp, offset in sorted(offsets.items())]
        try:
            consumer.commit(offsets)
        except Exception as exc:  # noqa: BLE001 - refused or timed out: it may still have taken effect
            for call in calls:
                self.history.complete(call, INFO, error=f"{type(exc).__name__}: {exc}")
            return
        for call in calls:
            self.history.complete(call, OK)

    def _fetch_committed(self, consumer: Consumer) -> None:
        partitions = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        calls = {tp: self.history.invoke(self._process(), "fetch", self._group_key(tp.partition))
                 for tp in partitions}
        try:
            committed = consumer.committed(partitions, timeout=10.0)
        except Exception as exc:  # noqa: BLE001 - a failed read changed nothing
            for call in calls.values():
                self.history.complete(call, FAIL, error=f"{type(exc).__name__}: {exc}")
            return
        for tp, call in calls.items():
            found = committed.get(tp)
            self.history.complete(call, OK, found.offset if found is not None else -1)

    @property
    def group(self) -> str:
        return group_of(self.topic)

    def _group_key(self, partition: int) -> dict[str, str]:
        return {"group": self.group, "partition": self.key(partition)}

    # -- after healing ------------------------------------------------------------------------
    def final_read(self, timeout: float = FINAL_READ_TIMEOUT_S) -> dict[int, int]:
        """Read every partition whole; the record count per partition."""
        consumer = self.clients.consumer({**self.client_security, "bootstrap.servers": self.bootstrap,
                             "client.id": "chaos-final-read",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        process = self._process()
        counts: dict[int, int] = {}
        try:
            partitions = [TopicPartition(self.topic, p) for p in range(self.partitions)]
            deadline = time.monotonic() + timeout
            ends = consumer.end_offsets(partitions, timeout=timeout)
            for tp in partitions:
                call = self.history.invoke(process, "final-read", self.key(tp.partition))
                consumer.assign([tp])
                consumer.seek_to_beginning([tp])
                records: list[list[Any]] = []
                end = ends[tp]
                while consumer.position(tp) < end:
                    if time.monotonic() > deadline:
                        self.history.complete(call, INFO, error=f"final read did not reach offset {end}")
                        raise TimeoutError(f"final read of {self.key(tp.partition)} did not reach {end}")
                    for r in self._final_poll(consumer):
                        records.append([r.offset, r.value.decode() if r.value is not None else None])
                self.history.complete(call, OK, records)
                counts[tp.partition] = len(records)
        finally:
            consumer.close()
        return counts

    def _final_poll(self, consumer: Any) -> list[Any]:
        """One poll of the final read. One that fails (a corrupt batch served, a
        leader gone) is recorded as a failed `poll` and retried until the
        read's deadline: the run's summary counts the corrupt ones."""
        try:
            return consumer.poll(POLL_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - recorded; the read goes on
            # its own process: the final-read op stays open on the reader's
            call = self.history.invoke(self._process(), "poll", None, {"consumer": "final-read", "mode": "assign"})
            self.history.complete(call, FAIL, error=f"{type(exc).__name__}: {exc}")
            time.sleep(0.2)
            return []


def group_of(topic: str) -> str:
    """The consumer group of the workload on `topic`."""
    return f"chaos-{topic}"


def leader_of(metadata: Any, topic: str, partition: int = 0) -> Optional[int]:
    """The leader of a partition in a Metadata answer; None if offline or unknown."""
    if metadata is None:
        return None
    for t in metadata.topics:
        if t.name == topic:
            for p in t.partitions:
                if p.partition_index == partition and p.leader_id >= 0:
                    return p.leader_id
    return None
