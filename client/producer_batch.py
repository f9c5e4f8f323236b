"""One producer batch: the records bound for one partition, sent together.

A batch collects records until it is full (`batch.size`) or its linger
time is up, is encoded once into a v2 record batch (compressed, with the
producer id, epoch and base sequence of an idempotent producer), and
completes every record's delivery with a RecordMetadata or an error.
A retried batch keeps its bytes unless its producer epoch or sequence
changed (after a KIP-360 epoch bump).
"""
from __future__ import annotations

import logging
from typing import Callable, NamedTuple, Optional

from partition_log import batch as b
from partition_log.compression import Codec
from partition_log.records import Record, encode_batch

log = logging.getLogger(__name__)

# Kafka's upper bound of one record's encoded overhead: length, attributes,
# timestamp delta, offset delta, key length, value length, header count (varints).
RECORD_OVERHEAD_UPPER_BOUND = 21
HEADER_OVERHEAD_UPPER_BOUND = 10


class RecordMetadata(NamedTuple):
    """Where a record landed. `offset` is -1 when unknown (acks=0, or a
    duplicate the broker no longer remembers the offset of). A named tuple
    (as kafka-python's): one is made per record, and tuples are cheap."""

    topic: str
    partition: int
    offset: int
    timestamp: int


# Called once per record, from the producer's event loop: (metadata, None) on
# success, (metadata with offset -1 or None, error) on failure.
Completion = Callable[[Optional[RecordMetadata], Optional[BaseException]], None]


def record_size_upper_bound(record: Record) -> int:
    key, value, _, headers, _ = record
    size = RECORD_OVERHEAD_UPPER_BOUND + (len(key) if key else 0) + (len(value) if value else 0)
    for hkey, hvalue in headers:
        size += HEADER_OVERHEAD_UPPER_BOUND + len(hkey.encode("utf-8")) + (len(hvalue) if hvalue else 0)
    return size


class ProducerBatch:
    __slots__ = ("topic", "partition", "serial", "created", "records", "completions", "size", "closed",
                 "attempts", "retry_at", "producer_id", "producer_epoch", "base_sequence",
                 "next_when_sent", "_encoded", "_encoded_for", "finished")

    def __init__(self, topic: str, partition: int, serial: int, created: float) -> None:
        self.topic = topic
        self.partition = partition
        self.serial = serial          # creation order within the producer: retries go back in this order
        self.created = created        # monotonic seconds, for linger.ms and delivery.timeout.ms
        self.records: list[Record] = []
        self.completions: list[Completion] = []
        self.size = b.HEADER_SIZE     # upper bound of the encoded, uncompressed size
        self.closed = False           # no more records: full, or drained
        self.attempts = 0             # times sent
        self.retry_at = 0.0           # monotonic time before which a retry waits (retry.backoff.ms)
        self.producer_id = b.NO_PRODUCER_ID
        self.producer_epoch = -1
        self.base_sequence = b.NO_SEQUENCE
        self.next_when_sent = False   # everything before it was acknowledged when it was last sent
        self._encoded: Optional[bytes] = None
        self._encoded_for: tuple[int, int, int] = (0, 0, 0)
        self.finished = False

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def record_count(self) -> int:
        return len(self.records)

    def has_room(self, size: int, batch_size: int) -> bool:
        """A first record always fits (a record larger than batch.size gets a batch of its own)."""
        return not self.closed and (not self.records or self.size + size <= batch_size)

    def append(self, record: Record, size: int, completion: Completion) -> None:
        self.records.append(record)
        self.completions.append(completion)
        self.size += size

    def encode(self, codec: Codec) -> bytes:
        identity = (self.producer_id, self.producer_epoch, self.base_sequence)
        if self._encoded is None or identity != self._encoded_for:
            self._encoded = encode_batch(self.records, codec=codec, producer_id=self.producer_id,
                                         producer_epoch=self.producer_epoch, base_sequence=self.base_sequence)
            self._encoded_for = identity
        return self._encoded

    def complete(self, base_offset: int, log_append_time: int) -> None:
        """Acknowledged at `base_offset` (-1: unknown)."""
        topic, partition = self.topic, self.partition
        step = 1 if base_offset >= 0 else 0  # an unknown offset stays -1 for every record
        offset = base_offset
        for record, done in zip(self.records, self.completions):
            timestamp = log_append_time if log_append_time >= 0 else record.timestamp
            _call(done, RecordMetadata(topic, partition, offset, timestamp), None)
            offset += step
        self._finish()

    def fail(self, error: BaseException) -> None:
        for record, done in zip(self.records, self.completions):
            _call(done, RecordMetadata(self.topic, self.partition, -1, record.timestamp), error)
        self._finish()

    def _finish(self) -> None:
        self.finished = True
        self.completions = []
        self._encoded = None

    def __repr__(self) -> str:
        return (f"ProducerBatch({self.topic}-{self.partition} #{self.serial}, {len(self.records)} records, "
                f"seq {self.base_sequence}, attempts {self.attempts})")


def _call(done: Completion, metadata: Optional[RecordMetadata], error: Optional[BaseException]) -> None:
    try:
        done(metadata, error)
    except Exception:  # noqa: BLE001 - a user's callback must not stop the producer
        log.exception("delivery callback raised")
