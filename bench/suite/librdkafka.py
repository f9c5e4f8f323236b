"""librdkafka (confluent-kafka's Producer and Consumer, a C client nobody
here wrote) against the kraftlog cluster's Kafka-protocol listener: the same
brokers, topics and 100-byte records as the gRPC client's runs beside it.

The jobs are run_jobs() jobs (bench/suite/parallel.py), one client process
each. What the process's CPU time then counts is librdkafka's threads plus
the Python loop handing it records (or taking them), so client and broker
CPU per record are reported apart: the broker's is what kraftlog costs.

Producer settings, as a Kafka user tuning for throughput would choose them
(PRODUCER_SETTINGS): batch.size 1 MB, so that a Produce request carries a
few thousand records per partition (the per-request cost on the broker is
paid per batch, not per record); linger.ms 5 (Kafka's default), long enough
to fill those batches at this rate; compression none (the broker never
decodes records either way, and the peers are sent raw bytes);
queue.buffering.max.messages 1,000,000 so that the Python loop is rarely
told the queue is full; delivery reports only for errors (each report is a
Python callback: their cost would be the client's, not the broker's). acks
1 for RF1 and all (idempotent) for RF3, as the gRPC client's runs.

Consumer settings: assign() to every partition from offset 0 (no group
protocol), fetch.max.bytes and max.partition.fetch.bytes large enough that
one Fetch brings megabytes, a deep pre-fetch queue, and consume() taking
records in batches of 10,000 (each still a Python Message object).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

PRODUCER_SETTINGS: dict[str, Any] = {
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "batch.num.messages": 100_000,
    "compression.type": "none",
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
    "max.in.flight.requests.per.connection": 5,
    "delivery.report.only.error": True,
}
CONSUMER_SETTINGS: dict[str, Any] = {
    "fetch.max.bytes": 52_428_800,
    "max.partition.fetch.bytes": 8_388_608,
    "fetch.wait.max.ms": 100,
    "queued.min.messages": 1_000_000,
    "queued.max.messages.kbytes": 1_048_576,
    "enable.auto.commit": False,
    "enable.partition.eof": False,
}
CONSUME_BATCH = 10_000
PRODUCE_BATCH = 10_000  # records a produce_batch() call (1 MB: batch.size)
QUEUE_HIGH = 500_000  # records queued in librdkafka before produce_batch() waits


@dataclass
class RdProduceJob:
    """confluent-kafka's Producer: `records` values of `value_bytes` bytes, no key
    (librdkafka spreads them by its sticky partitioner), then flush()."""
    bootstrap: str
    topic: str
    records: int
    value_bytes: int
    acks: str
    idempotence: bool
    seconds: float
    # produce_batch() of PRODUCE_BATCH records to one partition at a time (round robin, as the sticky
    # partitioner fills one batch at a time) instead of produce() per record: less Python per record.
    batch_api: bool = False

    async def prepare(self) -> None:
        from confluent_kafka import Producer  # in the worker process only

        self._errors = 0
        self._producer = Producer({"bootstrap.servers": self.bootstrap, **PRODUCER_SETTINGS, "acks": self.acks,
                                   "enable.idempotence": self.idempotence, "on_delivery": self._failed})
        self._producer.produce(self.topic, b"warm-up")  # metadata, connections and the producer id first
        if self._producer.flush(60) != 0:
            raise RuntimeError(f"librdkafka could not deliver a warm-up record to {self.topic}")

    def _failed(self, error: Any, _message: Any) -> None:
        if error is not None:  # delivery.report.only.error: called for failures only
            self._errors += 1

    async def run(self) -> dict[str, Any]:
        if self.batch_api:
            return self._run_batches()
        producer, value, topic = self._producer, bytes(self.value_bytes), self.topic
        produce = producer.produce
        deadline = time.monotonic() + self.seconds
        sent = 0
        while sent < self.records and time.monotonic() < deadline:
            try:
                produce(topic, value)
                sent += 1
            except BufferError:  # the local queue is full: let librdkafka send
                producer.poll(0.001)
        undelivered = producer.flush(300)
        return {"records": sent - self._errors - undelivered, "errors": self._errors, "undelivered": undelivered}

    def _run_batches(self) -> dict[str, Any]:
        producer, topic = self._producer, self.topic
        messages = [{"value": bytes(self.value_bytes)} for _ in range(PRODUCE_BATCH)]
        partitions = len(producer.list_topics(topic, timeout=30).topics[topic].partitions)
        deadline = time.monotonic() + self.seconds
        sent = refused = turn = 0
        while sent < self.records and time.monotonic() < deadline:
            if len(producer) > QUEUE_HIGH:  # records not yet acknowledged: let librdkafka catch up
                producer.poll(0.001)
                continue
            chunk = messages if self.records - sent >= PRODUCE_BATCH else messages[:self.records - sent]
            queued = producer.produce_batch(topic, chunk, partition=turn % partitions)
            turn += 1
            sent += queued
            if queued < len(chunk):  # refused ones carry an "_error" key from now on: fresh dicts
                refused += len(chunk) - queued
                messages = [{"value": bytes(self.value_bytes)} for _ in range(PRODUCE_BATCH)]
        undelivered = producer.flush(300)
        return {"records": sent - self._errors - undelivered, "errors": self._errors, "undelivered": undelivered,
                "refused": refused}

    async def close(self) -> None:
        if hasattr(self, "_producer"):
            self._producer.flush(10)


@dataclass
class RdConsumeJob:
    """confluent-kafka's Consumer assigned every partition from offset 0: the
    records up to each partition's high watermark (taken in prepare())."""
    bootstrap: str
    topic: str
    partitions: int
    seconds: float

    async def prepare(self) -> None:
        from confluent_kafka import Consumer, TopicPartition

        # group.id: confluent-kafka refuses a consumer without one, though assign() uses no group.
        self._consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "bench-librdkafka",
                                   **CONSUMER_SETTINGS})
        self._expected = topic_records(self._consumer, self.topic, self.partitions)
        # Fetching under way (connections, leaders, the first answer) before the clock starts; then
        # every partition back to offset 0, which drops what was fetched meanwhile.
        assignment = [TopicPartition(self.topic, p, 0) for p in range(self.partitions)]
        self._consumer.assign(assignment)
        deadline = time.monotonic() + 60
        while self._expected and not any(m.error() is None for m in self._consumer.consume(1, 1.0)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"librdkafka read nothing of {self.topic} within 60 s")
        for partition in assignment:
            self._consumer.seek(partition)

    async def run(self) -> dict[str, Any]:
        consume, read, errors = self._consumer.consume, 0, 0
        deadline = time.monotonic() + self.seconds
        while read < self._expected and time.monotonic() < deadline:
            for message in consume(CONSUME_BATCH, 1.0):
                if message.error() is None:
                    read += 1
                else:
                    errors += 1
        return {"records": read, "expected": self._expected, "errors": errors}

    async def close(self) -> None:
        if hasattr(self, "_consumer"):
            self._consumer.close()


def topic_records(consumer: Any, topic: str, partitions: int) -> int:
    """The records in `topic` now (log end minus log start, summed), asked of its leaders by
    `consumer` (a confluent-kafka Consumer)."""
    from confluent_kafka import TopicPartition

    marks = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30) for p in range(partitions)]
    return sum(high - low for low, high in marks)


def count_records(bootstrap: str, topic: str, partitions: int) -> int:
    """topic_records() with a consumer of its own."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-librdkafka"})
    try:
        return topic_records(consumer, topic, partitions)
    finally:
        consumer.close()
