"""Writing a test's records and reading a whole topic back, through the
client's Producer and Consumer, for tests whose subject is something else."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from client.consumer import ConsumerRecord
from client.producer import Producer
from devcluster.read_back import read_back
from kraftlog.commands.console import topic_partitions

TOPIC_WAIT_MS = 60_000  # for the brokers to know a topic just created; never part of an assert
IDLE_S = 60.0           # a read ends once nothing new came for this long; never part of an assert


@dataclass
class ProduceSummary:
    acknowledged: int = 0
    failed: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # error name -> records that failed with it


def produce_values(bootstrap: str, topic: str, values: Iterable[bytes], *, acks: int | str = "all",
                   batch_records: int = 500, delivery_timeout_s: float = 30.0,
                   partition: Optional[int] = None) -> ProduceSummary:
    """Keyless records, `batch_records` at a time, each lot one batch, flushed
    before the next; lot i goes to `partition`, else to partition i modulo the
    topic's partition count, so a test knows where its records are."""
    delivery_ms = int(delivery_timeout_s * 1000)
    request_timeout_ms = min(30_000, delivery_ms // 2)
    values = list(values)
    partitions = topic_partitions(bootstrap, topic, TOPIC_WAIT_MS) if partition is None and values else []
    summary = ProduceSummary()
    # linger.ms as long as delivery.timeout.ms allows: flush() sends, so a lot is one batch (if under batch.size).
    with Producer({"bootstrap.servers": bootstrap, "acks": str(acks), "delivery.timeout.ms": delivery_ms,
                   "request.timeout.ms": request_timeout_ms,
                   "linger.ms": delivery_ms - request_timeout_ms}) as producer:
        for lot, first in enumerate(range(0, len(values), batch_records)):
            target = partition if partition is not None else partitions[lot % len(partitions)]
            futures = [producer.produce(topic, value, partition=target)
                       for value in values[first:first + batch_records]]
            producer.flush()
            for future in futures:
                error = future.exception()
                if error is None:
                    summary.acknowledged += 1
                    continue
                summary.failed += 1
                name = getattr(error, "name", type(error).__name__)
                summary.errors[name] = summary.errors.get(name, 0) + 1
    return summary


def consume(bootstrap: str, topic: str, *, max_messages: int, idle_timeout_s: float = IDLE_S) -> list[ConsumerRecord]:
    """Every partition's records from its first offset, in offset order per
    partition, without a group: until `max_messages` came, or nothing new
    for `idle_timeout_s`."""
    partitions = topic_partitions(bootstrap, topic, TOPIC_WAIT_MS)
    got = read_back(bootstrap, topic, partitions, max_messages=max_messages, idle_timeout_s=idle_timeout_s)
    return got[:max_messages]
