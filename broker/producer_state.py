"""Idempotent producers on one partition replica (Kafka's ProducerStateManager),
without I/O: what is known of each producer id, and the leader's decision on
a produce request.

Per producer id: its epoch and the metadata of its last 5 batches (first and
last sequence, first and last offset, timestamp) - 5 because a producer has
at most max.in.flight.requests.per.connection=5 batches in flight, so any
retry it sends is among them. All of it is read from the v2 batch headers;
records are never decoded.

A leader checks each batch of a request in order, against the state left by
the batches before it (`check_leader_append`):
    producer id -1                  not idempotent: appended as it is
    one of the cached 5 (same epoch and sequences)   a duplicate: nothing is
                                    appended, the answer is the ORIGINAL offsets
    unknown producer                must start at sequence 0, else UNKNOWN_PRODUCER_ID
                                    (the producer bumps its epoch and starts over, KIP-360)
    older epoch                     INVALID_PRODUCER_EPOCH (fenced)
    newer epoch                     must start at sequence 0, else OUT_OF_ORDER_SEQUENCE_NUMBER
    same epoch, sequence last+1     appended
    same epoch, already written but older than the cached 5
                                    DUPLICATE_SEQUENCE_NUMBER (Kafka's clients take
                                    it as success with an unknown offset)
    same epoch, anything else       OUT_OF_ORDER_SEQUENCE_NUMBER (a gap)
Every replica - leader after its append, follower as it appends fetched
batches, any replica replaying its log at load or after a truncation - then
records the batches with `update`, so the state is the same function of the
log everywhere and survives leader changes.

A producer silent for producer.id.expiration.ms is forgotten. As in Kafka,
its last activity is its last batch's maxTimestamp (the broker's clock when
a batch has no timestamp), so the state replayed from a log matches the
state built by appends.
"""
from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Iterable, Optional, Sequence

from kafka_protocol.batch import NO_PRODUCER_ID, NO_SEQUENCE, BatchHeader

from .errors import BrokerError, Error

NUM_BATCHES_TO_RETAIN = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
NO_PRODUCER_EPOCH = -1
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms
DEFAULT_EXPIRATION_CHECK_INTERVAL_MS = 600_000  # producer.id.expiration.check.interval.ms
SEQUENCE_MODULUS = 2**31  # sequences wrap from Integer.MAX_VALUE to 0


def next_sequence(sequence: int) -> int:
    return (sequence + 1) % SEQUENCE_MODULUS


def at_or_before(sequence: int, last: int) -> bool:
    """`sequence` is `last` or before it, on the circle of sequences (within half of it)."""
    return (last - sequence) % SEQUENCE_MODULUS < SEQUENCE_MODULUS // 2


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    last_timestamp: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def find_duplicate(self, h: BatchHeader) -> Optional[BatchMetadata]:
        if h.producer_epoch != self.epoch:
            return None
        for meta in self.batches:
            if meta.first_seq == h.base_sequence and meta.last_seq == h.last_sequence:
                return meta
        return None


@dataclass(frozen=True, slots=True)
class Duplicate:
    """A retried request: every batch was written before, at these offsets."""

    first_offset: int
    last_offset: int
    timestamp: int


class _Kind(enum.Enum):
    NEW = "new"
    DUPLICATE = "duplicate"  # one of the cached batches
    OLD = "old"              # written before, older than the cached batches


def _is_idempotent(h: BatchHeader) -> bool:
    return h.producer_id != NO_PRODUCER_ID and not h.is_control


class ProducerStateManager:
    def __init__(self, *, expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
                 check_interval_ms: int = DEFAULT_EXPIRATION_CHECK_INTERVAL_MS) -> None:
        self.expiration_ms = expiration_ms
        self.check_interval_ms = check_interval_ms
        self.producers: dict[int, ProducerEntry] = {}
        self._last_expiration_check_ms: Optional[int] = None

    def __len__(self) -> int:
        return len(self.producers)

    def entry(self, producer_id: int, now_ms: int) -> Optional[ProducerEntry]:
        """The producer's state, None when unknown or expired (then forgotten)."""
        entry = self.producers.get(producer_id)
        if entry is not None and self._expired(entry, now_ms):
            del self.producers[producer_id]
            return None
        return entry

    # -- the leader's decision ------------------------------------------------
    def check_leader_append(self, headers: Sequence[BatchHeader], now_ms: int) -> Optional[Duplicate]:
        """Decide a request's batches for one partition, in order. None: append
        them all; a Duplicate: append nothing, answer with the original offsets.
        Raises BrokerError with Kafka's code for a batch that must be refused
        (nothing of the request is appended then). Changes no state but
        forgetting expired producers: the caller appends, then `update_appended`."""
        self.maybe_expire(now_ms)
        pending: dict[int, tuple[int, int]] = {}  # producer id -> (epoch, last seq) after this request's new batches
        kinds: list[_Kind] = []
        duplicates: list[BatchMetadata] = []
        for h in headers:
            if not _is_idempotent(h):
                kinds.append(_Kind.NEW)
                continue
            if h.producer_epoch < 0 or h.base_sequence < 0:
                raise BrokerError(Error.INVALID_RECORD,
                                  f"batch of producer {h.producer_id} has epoch {h.producer_epoch} and base "
                                  f"sequence {h.base_sequence}: an idempotent batch needs both")
            entry = self.entry(h.producer_id, now_ms)
            duplicate = entry.find_duplicate(h) if entry is not None else None
            if duplicate is not None:
                kinds.append(_Kind.DUPLICATE)
                duplicates.append(duplicate)
                continue
            if h.producer_id in pending:
                epoch, last_seq = pending[h.producer_id]
            elif entry is not None:
                epoch, last_seq = entry.epoch, entry.last_seq
            else:
                epoch, last_seq = NO_PRODUCER_EPOCH, NO_SEQUENCE
            kind = self._check_sequence(h, epoch, last_seq)
            kinds.append(kind)
            if kind is _Kind.NEW:
                pending[h.producer_id] = (h.producer_epoch, h.last_sequence)
        if all(k is _Kind.NEW for k in kinds):
            return None
        if _Kind.NEW in kinds:
            raise BrokerError(Error.INVALID_REQUEST,
                              "the request mixes batches written before with new ones: nothing appended; "
                              "send a partition's retried batches on their own")
        if _Kind.OLD in kinds:
            raise BrokerError(Error.DUPLICATE_SEQUENCE_NUMBER,
                              "every batch was written before, but not among the last "
                              f"{NUM_BATCHES_TO_RETAIN} of its producer: their offsets are no longer known")
        return Duplicate(duplicates[0].first_offset, duplicates[-1].last_offset, duplicates[-1].timestamp)

    @staticmethod
    def _check_sequence(h: BatchHeader, epoch: int, last_seq: int) -> _Kind:
        pid, seq = h.producer_id, h.base_sequence
        if epoch == NO_PRODUCER_EPOCH:
            if seq != 0:
                raise BrokerError(Error.UNKNOWN_PRODUCER_ID,
                                  f"producer {pid} is unknown to this partition (never seen, expired, or its "
                                  f"batches are gone) and its batch starts at sequence {seq}, not 0")
            return _Kind.NEW
        if h.producer_epoch < epoch:
            raise BrokerError(Error.INVALID_PRODUCER_EPOCH,
                              f"producer {pid} epoch {h.producer_epoch} is fenced by epoch {epoch}")
        if h.producer_epoch > epoch:
            if seq != 0:
                raise BrokerError(Error.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                  f"producer {pid} epoch {h.producer_epoch} is new here and must start at "
                                  f"sequence 0, not {seq}")
            return _Kind.NEW
        if seq == next_sequence(last_seq):
            return _Kind.NEW
        if at_or_before(h.last_sequence, last_seq) and at_or_before(seq, last_seq):
            return _Kind.OLD
        raise BrokerError(Error.OUT_OF_ORDER_SEQUENCE_NUMBER,
                          f"producer {pid} epoch {epoch}: expected sequence {next_sequence(last_seq)}, "
                          f"got {seq}")

    # -- every replica: what the log now holds ----------------------------------
    def update(self, h: BatchHeader, now_ms: int) -> None:
        """Record a batch the log holds (its offsets assigned): after a leader's
        append, a follower's, or while replaying a log. Never refuses: the log
        is the truth."""
        if not _is_idempotent(h) or h.base_sequence < 0:
            return
        timestamp = h.max_timestamp if h.max_timestamp >= 0 else now_ms
        entry = self.producers.get(h.producer_id)
        if entry is None or entry.epoch != h.producer_epoch:
            entry = self.producers[h.producer_id] = ProducerEntry(h.producer_id, h.producer_epoch, timestamp)
        entry.batches.append(BatchMetadata(h.base_sequence, h.last_sequence, h.base_offset, h.last_offset,
                                           timestamp))
        entry.last_timestamp = timestamp

    def update_all(self, headers: Iterable[BatchHeader], now_ms: int) -> None:
        for h in headers:
            self.update(h, now_ms)

    def update_appended(self, headers: Iterable[BatchHeader], first_offset: int, now_ms: int) -> None:
        """A leader's append: `headers` as the producer sent them, written
        one after the other from `first_offset`."""
        offset = first_offset
        for h in headers:
            if _is_idempotent(h):
                self.update(replace(h, base_offset=offset), now_ms)
            offset += h.last_offset_delta + 1

    def clear(self) -> None:
        self.producers.clear()

    # -- expiration ---------------------------------------------------------------
    def _expired(self, entry: ProducerEntry, now_ms: int) -> bool:
        return now_ms - entry.last_timestamp >= self.expiration_ms

    def maybe_expire(self, now_ms: int) -> int:
        """Forget every expired producer, at most once per check interval.
        Returns how many were forgotten."""
        last = self._last_expiration_check_ms
        if last is not None and now_ms - last < self.check_interval_ms:
            return 0
        self._last_expiration_check_ms = now_ms
        return self.expire(now_ms)

    def expire(self, now_ms: int) -> int:
        doomed = [pid for pid, entry in self.producers.items() if self._expired(entry, now_ms)]
        for pid in doomed:
            del self.producers[pid]
        return len(doomed)
