"""One producer batch: the records bound for one partition, sent together.

A batch collects records until it is full (`batch.size`) or its linger
time is up, is encoded once into a v2 record batch (compressed, with the
producer id, epoch and base sequence of an idempotent producer), and
finishes with one outcome for all its records (a base offset, or an error),
from which each record's future reads its own (record_future.py).
A retried batch keeps its bytes unless its producer epoch or sequence
changed (after a KIP-360 epoch bump).
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from kafka_protocol import batch as b
from kafka_protocol.compression import Codec
from kafka_protocol.records import Headers, encode_batch

from .record_future import RecordFuture, Settlement, settle

# Kafka's upper bound of one record's encoded overhead: length, attributes,
# timestamp delta, offset delta, key length, value length, header count (varints).
RECORD_OVERHEAD_UPPER_BOUND = 21
HEADER_OVERHEAD_UPPER_BOUND = 10

# A record as the producer holds it: kafka_protocol.records.Record's fields in
# Record's order (key, value, timestamp, headers, offset -1), in a plain tuple -
# a third of a named tuple's cost to build, and left alone by the garbage
# collector (tuples of bytes and ints are untracked), however many are buffered.
ProducerRecord = tuple[Optional[bytes], Optional[bytes], int, Headers, int]


class RecordMetadata(NamedTuple):
    """Where a record landed. `offset` is -1 when unknown (acks=0, or a
    duplicate the broker no longer remembers the offset of). A named tuple
    (as kafka-python's), made when a future or on_delivery asks for it."""

    topic: str
    partition: int
    offset: int
    timestamp: int


def record_size_upper_bound(record: ProducerRecord) -> int:
    key, value, _, headers, _ = record
    size = RECORD_OVERHEAD_UPPER_BOUND + (len(key) if key else 0) + (len(value) if value else 0)
    for hkey, hvalue in headers:
        size += HEADER_OVERHEAD_UPPER_BOUND + len(hkey.encode("utf-8")) + (len(hvalue) if hvalue else 0)
    return size


class ProducerBatch:
    __slots__ = ("topic", "partition", "serial", "created", "records", "listeners", "settlement", "size", "closed",
                 "attempts", "retry_at", "last_error", "producer_id", "producer_epoch", "base_sequence",
                 "next_when_sent", "_encoded", "_encoded_for", "finished", "base_offset", "log_append_time", "error")

    def __init__(self, topic: str, partition: int, serial: int, created: float,
                 settlement: Optional[Settlement] = None) -> None:
        self.topic = topic
        self.partition = partition
        self.serial = serial          # creation order within the producer: retries go back in this order
        self.created = created        # monotonic seconds, for linger.ms and delivery.timeout.ms
        self.records: list[ProducerRecord] = []
        self.listeners: list[RecordFuture] = []  # the records' futures with a callback to run when it finishes
        self.settlement = settlement or Settlement()
        self.size = b.HEADER_SIZE     # upper bound of the encoded, uncompressed size
        self.closed = False           # no more records: full, or drained
        self.attempts = 0             # times sent
        self.retry_at = 0.0           # monotonic time before which a retry waits (retry.backoff.ms)
        # The error of the last attempt that was retried, named when the batch expires (else a
        # batch retried until delivery.timeout.ms would fail saying only that time ran out).
        self.last_error: Optional[BaseException] = None
        self.producer_id = b.NO_PRODUCER_ID
        self.producer_epoch = -1
        self.base_sequence = b.NO_SEQUENCE
        self.next_when_sent = False   # everything before it was acknowledged when it was last sent
        self._encoded: Optional[bytes] = None
        self._encoded_for: tuple[int, int, int] = (0, 0, 0)
        # The outcome, shared by every record: set once, when finished.
        self.finished = False
        self.base_offset = -1         # -1: unknown (acks=0, or a duplicate whose offset the broker forgot)
        self.log_append_time = -1     # -1: the records keep their create time
        self.error: Optional[BaseException] = None

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def record_count(self) -> int:
        return len(self.records)

    def has_room(self, size: int, batch_size: int) -> bool:
        """A first record always fits (a record larger than batch.size gets a batch of its own)."""
        return not self.closed and (not self.records or self.size + size <= batch_size)

    def append(self, record: ProducerRecord, size: int, future: RecordFuture) -> None:
        """Add a record and tie its future to this batch (with the settlement's lock held when the
        future may be read on another thread: the sync producer's hand-over takes it)."""
        records = self.records
        future._batch = self
        future._index = len(records)
        if future._on_delivery is not None or future._callbacks is not None:
            self.listeners.append(future)
        records.append(record)
        self.size += size

    def encode(self, codec: Codec, transactional: bool = False) -> bytes:
        """The v2 batch; `transactional` sets the attribute bit (a transactional producer's every batch)."""
        identity = (self.producer_id, self.producer_epoch, self.base_sequence)
        if self._encoded is None or identity != self._encoded_for:
            self._encoded = encode_batch(self.records, codec=codec, producer_id=self.producer_id,
                                         producer_epoch=self.producer_epoch, base_sequence=self.base_sequence,
                                         transactional=transactional)
            self._encoded_for = identity
        return self._encoded

    def metadata(self, index: int) -> RecordMetadata:
        """Where the record at `index` landed (offset -1 when unknown or failed)."""
        base, append_time = self.base_offset, self.log_append_time
        return RecordMetadata(self.topic, self.partition, base + index if base >= 0 else -1,
                              append_time if append_time >= 0 else self.records[index][2])  # its timestamp

    def complete(self, base_offset: int, log_append_time: int) -> None:
        """Acknowledged at `base_offset` (-1: unknown)."""
        self._finish(base_offset, log_append_time, None)

    def fail(self, error: BaseException) -> None:
        self._finish(-1, -1, error)

    def _finish(self, base_offset: int, log_append_time: int, error: Optional[BaseException]) -> None:
        settlement = self.settlement
        with settlement.lock:
            self.base_offset, self.log_append_time, self.error = base_offset, log_append_time, error
            self.finished = True
            listeners, self.listeners = self.listeners, []
            settlement.settled()
        self._encoded = None
        if listeners:
            settle(listeners)

    def __repr__(self) -> str:
        return (f"ProducerBatch({self.topic}-{self.partition} #{self.serial}, {len(self.records)} records, "
                f"seq {self.base_sequence}, attempts {self.attempts})")
