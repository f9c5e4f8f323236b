"""One producer batch: the records bound for one partition, sent together.

A batch collects records until it is full (`batch.size`) or its linger
time is up, is encoded once into a v2 record batch (compressed, with the
producer id, epoch and base sequence of an idempotent producer), and
finishes with one outcome for all its records (a base offset, or an error),
from which each record's future reads its own (record_future.py).

The records are held as columns - a list of values, one of timestamps, and
keys and headers only once a record has them - so that produce() appends a
value and a timestamp, and the batch is encoded when it is sent by the
compiled encoder produce_arrow() uses (kafka_protocol.record_encode, the
same bytes as kafka_protocol.records.encode_batch); a batch with record
headers, or of a few records, or sent before the compiled encoder is
loaded (a thread loads it, once per process, when the first batch of
COMPILED_MIN_RECORDS is sent), is encoded by encode_batch.
A retried batch keeps its records section and rewrites only its header
when its producer epoch or sequence changed (after a KIP-360 epoch bump).
"""
from __future__ import annotations

import logging
import os
import threading
from itertools import chain, repeat
from typing import Any, NamedTuple, Optional, Sequence

from kafka_protocol import batch as b
from kafka_protocol.compression import Codec, compress
from kafka_protocol.records import Headers, encode_batch, seal_batch

from .record_future import RecordFuture, Settlement, settle

log = logging.getLogger(__name__)

# Kafka's upper bound of one record's encoded overhead: length, attributes,
# timestamp delta, offset delta, key length, value length, header count (varints).
RECORD_OVERHEAD_UPPER_BOUND = 21
HEADER_OVERHEAD_UPPER_BOUND = 10

# A record as the producer holds it: kafka_protocol.records.Record's fields in
# Record's order (key, value, timestamp, headers, offset -1), in a plain tuple -
# a third of a named tuple's cost to build, and left alone by the garbage
# collector (tuples of bytes and ints are untracked), however many are buffered.
# Its timestamp is in ns, time.time_ns()'s own unit: produce() stores the clock's
# reading as it is (no division per record); the ms Kafka writes are taken when a
# batch is encoded (all of its records at once) or its metadata read.
ProducerRecord = tuple[Optional[bytes], Optional[bytes], int, Headers, int]
NS_PER_MS = 1_000_000

# Fewer records than this are encoded by encode_batch: the compiled call's own
# cost (numpy arrays, the dispatch) is worth it from about there on.
COMPILED_MIN_RECORDS = 16
_encode_lists: Any = None  # kafka_protocol.record_encode.encode_lists, once loaded
_loader: Optional[threading.Thread] = None
_loader_lock = threading.Lock()


def load_compiled_encoder() -> None:
    """Import the compiled encoder and load its machine code (numba's disk
    cache, else a compile of seconds); from then on batches use it."""
    global _encode_lists
    if _encode_lists is None:
        from kafka_protocol.record_encode import encode_lists
        encode_lists(None, [b""], [0], stamps_in_ns=True)
        _encode_lists = encode_lists


def encode_sections(batches: Sequence["ProducerBatch"], codec: Codec) -> None:
    """Encode, in one call of the compiled encoder, the records sections of
    those of `batches` (about to be sent together) that it can encode and
    that have none yet: the call's fixed cost is paid once per request."""
    todo = [batch for batch in batches if batch._section is None and batch.headers is None
            and len(batch.values) >= COMPILED_MIN_RECORDS]
    if not todo:
        return
    encode = _encode_lists
    if encode is None:
        _load_in_background()
        return
    if len(todo) == 1:
        [batch] = todo
        bodies = encode(batch.keys, batch.values, batch.stamps, stamps_in_ns=True)
    else:
        keys = None
        if any(batch.keys is not None for batch in todo):
            keys = list(chain.from_iterable(batch.keys if batch.keys is not None else repeat(None, len(batch.values))
                                            for batch in todo))
        bodies = encode(keys, list(chain.from_iterable(batch.values for batch in todo)),
                        list(chain.from_iterable(batch.stamps for batch in todo)), [len(b.values) for b in todo],
                        stamps_in_ns=True)
    if bodies is None:
        return  # timestamps it cannot write: each batch is encoded on its own (encode_batch where need be)
    for i, batch in enumerate(todo):
        batch._section = (compress(codec, bodies.body(i)), int(bodies.base_ts[i]), int(bodies.max_ts[i]))


def _load_in_background() -> None:
    global _loader
    with _loader_lock:
        if _loader is None:
            _loader = threading.Thread(target=_load_quietly, name="kraftlog-encoder-load", daemon=True)
            _loader.start()


def _load_quietly() -> None:
    try:
        load_compiled_encoder()
    except Exception:  # noqa: BLE001 - the Python encoder goes on doing the work
        log.warning("the compiled record encoder could not be loaded; batches are encoded in Python",
                    exc_info=True)


def _forget_loader() -> None:
    global _loader
    _loader = None  # a forked child has no loading thread: it starts its own when needed


os.register_at_fork(after_in_child=_forget_loader)


def _compiled_section(batch: "ProducerBatch", codec: Codec) -> Optional[tuple[bytes, int, int]]:
    """The batch's records section by the compiled encoder, compressed, with
    its base and max timestamp; None until the encoder is loaded (its loading
    starts) or where it cannot write the timestamps."""
    encode_sections([batch], codec)
    return batch._section


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
    __slots__ = ("topic", "partition", "serial", "created", "keys", "values", "stamps", "headers", "listeners",
                 "settlement", "size", "reserved", "closed", "attempts", "retry_at", "last_error", "producer_id",
                 "producer_epoch", "base_sequence", "next_when_sent", "_encoded", "_encoded_for", "_section",
                 "finished", "base_offset", "log_append_time", "error")

    def __init__(self, topic: str, partition: int, serial: int, created: float,
                 settlement: Optional[Settlement] = None) -> None:
        self.topic = topic
        self.partition = partition
        self.serial = serial          # creation order within the producer: retries go back in this order
        self.created = created        # monotonic seconds, for linger.ms and delivery.timeout.ms
        # The records, as columns: record i is (keys[i], values[i], stamps[i], headers[i]).
        self.values: list[Optional[bytes]] = []
        self.stamps: list[int] = []   # ns (see ProducerRecord)
        self.keys: Optional[list[Optional[bytes]]] = None  # None: every key so far is null
        self.headers: Optional[list[Headers]] = None       # None: no record so far has headers
        self.listeners: list[RecordFuture] = []  # the records' futures with a callback to run when it finishes
        self.settlement = settlement or Settlement()
        self.size = b.HEADER_SIZE     # upper bound of the encoded, uncompressed size
        self.reserved = 0             # bytes of buffer.memory it holds (set by the accumulator)
        self.closed = False           # no more records: full, drained, expired or failed
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
        # The compiled encoder's compressed records section, base and max timestamp (kept for a retry).
        self._section: Optional[tuple[bytes, int, int]] = None
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
        return len(self.values)

    @property
    def records(self) -> list[ProducerRecord]:
        """The records as kafka_protocol.records.Record's fields, timestamps in ms (what
        encode_batch takes), built on demand."""
        n = len(self.values)
        keys = self.keys if self.keys is not None else repeat(None, n)
        headers = self.headers if self.headers is not None else repeat((), n)
        stamps = [stamp // NS_PER_MS for stamp in self.stamps]
        return list(zip(keys, self.values, stamps, headers, repeat(-1, n)))

    def has_room(self, size: int, batch_size: int) -> bool:
        """A first record always fits (a record larger than batch.size gets a batch of its own)."""
        return not self.closed and (not self.values or self.size + size <= batch_size)

    def append(self, record: ProducerRecord, size: int, future: RecordFuture) -> None:
        """Add a record and tie its future to this batch (with the settlement's lock held when the
        future may be read on another thread: the sync producer's hand-over takes it)."""
        key, value, timestamp, headers, _ = record
        values = self.values
        n = len(values)
        future._batch = self
        future._index = n
        if future._on_delivery is not None or future._callbacks is not None:
            self.listeners.append(future)
        keys = self.keys
        if keys is not None:
            keys.append(key)
        elif key is not None:
            self.keys = [*repeat(None, n), key]
        if self.headers is not None:
            self.headers.append(headers)
        elif headers:
            self.headers = [*repeat((), n), headers]
        values.append(value)
        self.stamps.append(timestamp)
        self.size += size

    def encode(self, codec: Codec, transactional: bool = False) -> bytes:
        """The v2 batch; `transactional` sets the attribute bit (a transactional producer's every batch)."""
        identity = (self.producer_id, self.producer_epoch, self.base_sequence)
        if self._encoded is None or identity != self._encoded_for:
            section = self._section
            if section is None and self.headers is None and len(self.values) >= COMPILED_MIN_RECORDS:
                section = _compiled_section(self, codec)
            if section is None:
                self._encoded = encode_batch(self.records, codec=codec, producer_id=self.producer_id,
                                             producer_epoch=self.producer_epoch, base_sequence=self.base_sequence,
                                             transactional=transactional)
            else:
                self._encoded = self.seal(section[0], len(self.values), section[1], section[2], codec,
                                          transactional)
            self._encoded_for = identity
        return self._encoded

    def seal(self, payload: Any, count: int, base_ts: int, max_ts: int, codec: Codec, transactional: bool) -> bytes:
        """A v2 batch around an encoded (and compressed) records section, with this batch's producer stamp."""
        return seal_batch(payload, count, base_offset=0, codec=codec, log_append_time=False,
                          producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                          base_sequence=self.base_sequence, partition_leader_epoch=b.NO_PARTITION_LEADER_EPOCH,
                          transactional=transactional, control=False, delete_horizon=False,
                          last_offset_delta=count - 1, base_timestamp=base_ts, max_timestamp=max_ts)

    def metadata(self, index: int) -> RecordMetadata:
        """Where the record at `index` landed (offset -1 when unknown or failed)."""
        base, append_time = self.base_offset, self.log_append_time
        return RecordMetadata(self.topic, self.partition, base + index if base >= 0 else -1,
                              append_time if append_time >= 0 else self.stamps[index] // NS_PER_MS)  # its own

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
        self.closed = True
        self._encoded = self._section = None
        if listeners:
            settle(listeners)

    def __repr__(self) -> str:
        return (f"ProducerBatch({self.topic}-{self.partition} #{self.serial}, {len(self.values)} records, "
                f"seq {self.base_sequence}, attempts {self.attempts})")
