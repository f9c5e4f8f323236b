"""The chaos workload's clients through Kafka's binary protocol: confluent-kafka
(librdkafka, a client nobody here wrote) behind the few calls the queue
workload makes of kraftlog's own Producer and Consumer (`chaos run --client
kafka`). Only the calls are adapted; what librdkafka does underneath
(batching, retries, idempotent sequences, leader changes, fetching) is its own.

- `KafkaProducer.produce()` answers a Future completed by the delivery
  report (its offset, or the error librdkafka gave up with). librdkafka
  calls delivery reports only from poll(): a thread of the producer's own
  polls, so that a report is recorded when it arrives and not when the
  workload next sends.
- `KafkaConsumer` is assign()-based (no group membership): poll() is a batch
  of consume(), and position() is the offset after the last record polled
  (from the log start on seek_to_beginning), which is what the final read
  compares with the end offsets; an error event librdkafka recovers from
  (a broker gone, a leader moved) is not a failed poll. Records are read
  read_uncommitted, as
  kraftlog's consumer reads by default (librdkafka's default is
  read_committed).
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, Iterable, NamedTuple, Optional

from client.consumer_types import TopicPartition

POLL_BATCH = 500
DELIVERY_POLL_S = 0.05


class Delivered(NamedTuple):
    topic: str
    partition: int
    offset: int


class Record(NamedTuple):
    topic: str
    partition: int
    offset: int
    value: Optional[bytes]


class KafkaClientError(Exception):
    """What librdkafka reported (a KafkaError), as an exception."""


class KafkaProducer:
    def __init__(self, config: dict[str, Any]) -> None:
        from confluent_kafka import Producer  # only runs with --client kafka load it

        self._producer = Producer(config)
        self._closed = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="chaos-kafka-delivery", daemon=True)
        self._poller.start()

    def _poll(self) -> None:
        while not self._closed.is_set():
            self._producer.poll(DELIVERY_POLL_S)

    def produce(self, topic: str, value: bytes, partition: int) -> "Future[Delivered]":
        future: Future[Delivered] = Future()

        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                future.set_exception(KafkaClientError(str(error)))
            else:
                future.set_result(Delivered(message.topic(), message.partition(), message.offset()))
        try:
            self._producer.produce(topic, value, partition=partition, on_delivery=delivered)
        except Exception as exc:  # noqa: BLE001 - refused before sending (queue full, fatal error): not sent
            future.set_exception(KafkaClientError(f"{type(exc).__name__}: {exc}"))
        return future

    def flush(self, timeout: float) -> int:
        return self._producer.flush(timeout)

    def close(self, timeout: float) -> None:
        """Flush what is left (its reports still arrive), then stop the poller."""
        try:
            self._producer.flush(timeout)
        finally:
            self._closed.set()
            self._poller.join(timeout)


class KafkaConsumer:
    def __init__(self, config: dict[str, Any]) -> None:
        from confluent_kafka import Consumer

        settings = {key: value for key, value in config.items() if key != "group.id"}
        # confluent-kafka refuses a consumer without a group id; assign() never uses it.
        # check.crcs: librdkafka checks each batch's CRC as kraftlog's consumer always does (off by default).
        settings.update({"group.id": f"{config.get('client.id', 'chaos')}-unused", "enable.auto.commit": False,
                         "isolation.level": "read_uncommitted", "enable.partition.eof": False, "check.crcs": True})
        self._consumer = Consumer(settings)
        self._positions: dict[TopicPartition, int] = {}
        self._corrupt: Optional[KafkaClientError] = None  # a batch whose CRC failed, for the next poll to raise

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition as KafkaTopicPartition

        wanted = list(partitions)
        self._positions = {tp: self._positions.get(tp, -1) for tp in wanted}
        self._consumer.assign([KafkaTopicPartition(tp.topic, tp.partition, OFFSET_BEGINNING) for tp in wanted])

    def seek_to_beginning(self, partitions: Iterable[TopicPartition]) -> None:
        """Assigned partitions read from their log start (assign() already starts there)."""
        for tp in partitions:
            self._positions[tp] = self._watermarks(tp, 30.0)[0]

    def poll(self, timeout: float) -> list[Record]:
        from confluent_kafka import KafkaError

        if self._corrupt is not None:  # met by the last poll, after records it returned
            corrupt, self._corrupt = self._corrupt, None
            raise corrupt
        records = []
        for message in self._consumer.consume(POLL_BATCH, timeout):
            error = message.error()
            if error is not None:
                # librdkafka tells of a broker gone or a leader moved this way and carries on
                # (the batch's records still count); only a fatal error ends the consumer,
                # and a CRC that fails (_BAD_MSG), a corrupt batch served, is raised by the next poll.
                if error.fatal():
                    raise KafkaClientError(str(error))
                if error.code() == KafkaError._BAD_MSG and self._corrupt is None:
                    self._corrupt = KafkaClientError(f"CorruptRecordError: {error}")
                continue
            tp = TopicPartition(message.topic(), message.partition())
            records.append(Record(tp.topic, tp.partition, message.offset(), message.value()))
            self._positions[tp] = message.offset() + 1
        return records

    def position(self, partition: TopicPartition) -> int:
        return self._positions[partition]

    def end_offsets(self, partitions: Iterable[TopicPartition], timeout: float) -> dict[TopicPartition, int]:
        return {tp: self._watermarks(tp, timeout)[1] for tp in partitions}

    def _watermarks(self, tp: TopicPartition, timeout: float) -> tuple[int, int]:
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        return self._consumer.get_watermark_offsets(KafkaTopicPartition(tp.topic, tp.partition), timeout=timeout)

    def close(self) -> None:
        self._consumer.close()
