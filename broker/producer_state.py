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

Transactions (KIP-98, with KIP-890's epoch bump per transaction): a
producer's transactional batches open a transaction at the partition
(`current_txn_first_offset`, its first batch's offset) that only a marker -
a COMMIT or ABORT control batch from the transaction coordinator - closes.
The marker makes a `CompletedTxn`; an aborted one goes to the segment's
.txnindex (the caller writes it). While a transaction is open, the
producer's non-transactional batches are refused (INVALID_TXN_STATE). A
marker from a deposed coordinator (coordinator epoch below the last one
seen) is refused with TRANSACTION_COORDINATOR_FENCED, one for an older
producer epoch with INVALID_PRODUCER_EPOCH; a marker with a newer epoch
moves the producer there with no batches, so its sequences restart at 0.
Batches from a broker's own coordinator (TxnOffsetCommit, `AppendOrigin.COORDINATOR`)
carry no sequence: only their epoch is checked.

The last stable offset (LSO) is the high watermark held back by every
transaction not yet decided for readers: open ones, and completed ones
whose marker is not yet below the high watermark (`first_unstable_offset`).

A producer silent for producer.id.expiration.ms is forgotten, unless its
transaction is open. As in Kafka,
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

from kafka_protocol.control_records import TxnMarker
from partition_log.producer_snapshot import SnapshotEntry

from .errors import BrokerError, Error

NUM_BATCHES_TO_RETAIN = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
NO_PRODUCER_EPOCH = -1
NO_COORDINATOR_EPOCH = -1
NO_TXN = -1  # current_txn_first_offset of a producer without an open transaction
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


class AppendOrigin(enum.Enum):
    """Who wrote a leader's batches (Kafka's AppendOrigin)."""

    CLIENT = "client"            # a producer: sequences checked
    COORDINATOR = "coordinator"  # this broker's group coordinator (TxnOffsetCommit): no sequences


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    last_timestamp: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    coordinator_epoch: int = NO_COORDINATOR_EPOCH
    current_txn_first_offset: int = NO_TXN

    @property
    def in_txn(self) -> bool:
        return self.current_txn_first_offset != NO_TXN

    def move_to_epoch(self, epoch: int) -> None:
        """A new epoch forgets the old one's batches (sequences start over);
        the transaction fields stay."""
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()

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


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker ended at this partition: its first batch (the
    marker's own offset when none was here) and the marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


class _Kind(enum.Enum):
    NEW = "new"
    DUPLICATE = "duplicate"  # one of the cached batches
    OLD = "old"              # written before, older than the cached batches


def _is_idempotent(h: BatchHeader) -> bool:
    return h.producer_id != NO_PRODUCER_ID and not h.is_control


@dataclass(slots=True)
class _Pending:
    """A producer as the batches of one request before the current one leave it."""

    epoch: int
    last_seq: int
    in_txn: bool


class ProducerStateManager:
    def __init__(self, *, expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
                 check_interval_ms: int = DEFAULT_EXPIRATION_CHECK_INTERVAL_MS) -> None:
        self.expiration_ms = expiration_ms
        self.check_interval_ms = check_interval_ms
        self.producers: dict[int, ProducerEntry] = {}
        self._last_expiration_check_ms: Optional[int] = None
        # Transactions not yet decided for readers: open ones (producer id ->
        # first offset) and completed ones whose marker may still be at or
        # above the high watermark, in marker order. A list, not a deque: it
        # holds a few entries at most, and every replica has one (an empty
        # deque costs 600 bytes, a list 56).
        self.ongoing: dict[int, int] = {}
        self.unreplicated: list[CompletedTxn] = []

    def __len__(self) -> int:
        return len(self.producers)

    def entry(self, producer_id: int, now_ms: int) -> Optional[ProducerEntry]:
        """The producer's state, None when unknown or expired (then forgotten)."""
        entry = self.producers.get(producer_id)
        if entry is not None and self._expired(entry, now_ms):
            del self.producers[producer_id]
            return None
        return entry

    def in_txn(self, producer_id: int) -> bool:
        """The producer has an open transaction at this partition."""
        return producer_id in self.ongoing

    def has_ongoing_txn(self, producer_id: int, producer_epoch: int) -> bool:
        """The producer's transaction of this epoch is open here: its next
        batches need no verification (Kafka's hasOngoingTransaction)."""
        entry = self.producers.get(producer_id)
        return entry is not None and entry.in_txn and entry.epoch == producer_epoch

    # -- the leader's decision ------------------------------------------------
    def check_leader_append(self, headers: Sequence[BatchHeader], now_ms: int,
                            origin: AppendOrigin = AppendOrigin.CLIENT) -> Optional[Duplicate]:
        """Decide a request's batches for one partition, in order. None: append
        them all; a Duplicate: append nothing, answer with the original offsets.
        Raises BrokerError with Kafka's code for a batch that must be refused
        (nothing of the request is appended then). Changes no state but
        forgetting expired producers: the caller appends, then `update_appended`.
        A COORDINATOR's batches have no sequences: only epochs and the
        transaction rule are checked, and none is a duplicate."""
        self.maybe_expire(now_ms)
        pending: dict[int, _Pending] = {}  # producer id -> as this request's new batches leave it
        kinds: list[_Kind] = []
        duplicates: list[BatchMetadata] = []
        for h in headers:
            if not _is_idempotent(h):
                kinds.append(_Kind.NEW)
                continue
            if h.producer_epoch < 0 or (h.base_sequence < 0 and origin is AppendOrigin.CLIENT):
                raise BrokerError(Error.INVALID_RECORD,
                                  f"batch of producer {h.producer_id} has epoch {h.producer_epoch} and base "
                                  f"sequence {h.base_sequence}: an idempotent batch needs both")
            entry = self.entry(h.producer_id, now_ms)
            duplicate = (entry.find_duplicate(h) if entry is not None and origin is AppendOrigin.CLIENT
                         else None)
            if duplicate is not None:
                kinds.append(_Kind.DUPLICATE)
                duplicates.append(duplicate)
                continue
            state = pending.get(h.producer_id)
            if state is None:
                state = (_Pending(entry.epoch, entry.last_seq, entry.in_txn) if entry is not None
                         else _Pending(NO_PRODUCER_EPOCH, NO_SEQUENCE, False))
            if origin is AppendOrigin.CLIENT:
                kind = self._check_sequence(h, state.epoch, state.last_seq)
            else:
                kind = self._check_epoch(h, state.epoch)
            if state.in_txn and not h.is_transactional:
                raise BrokerError(Error.INVALID_TXN_STATE,
                                  f"producer {h.producer_id} has an open transaction here: expected a "
                                  "transactional batch")
            kinds.append(kind)
            pending[h.producer_id] = _Pending(h.producer_epoch, h.last_sequence, state.in_txn or h.is_transactional)
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
    def _check_epoch(h: BatchHeader, epoch: int) -> _Kind:
        if h.producer_epoch < epoch:
            raise BrokerError(Error.INVALID_PRODUCER_EPOCH,
                              f"producer {h.producer_id} epoch {h.producer_epoch} is fenced by epoch {epoch}")
        return _Kind.NEW

    @classmethod
    def _check_sequence(cls, h: BatchHeader, epoch: int, last_seq: int) -> _Kind:
        pid, seq = h.producer_id, h.base_sequence
        if epoch == NO_PRODUCER_EPOCH:
            if seq != 0:
                raise BrokerError(Error.UNKNOWN_PRODUCER_ID,
                                  f"producer {pid} is unknown to this partition (never seen, expired, or its "
                                  f"batches are gone) and its batch starts at sequence {seq}, not 0")
            return _Kind.NEW
        cls._check_epoch(h, epoch)
        if h.producer_epoch > epoch or last_seq == NO_SEQUENCE:
            # A new epoch, or one a marker opened (no batch yet): sequences start at 0.
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

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, now_ms: int, *,
                     keep_epoch: bool = False) -> None:
        """A leader's check of a COMMIT/ABORT marker before it is appended
        (Kafka's order: the producer epoch, then the coordinator's).
        keep_epoch: a transaction version 1 marker (a Kafka client before
        KIP-890's second part), which carries its data's epoch, as Kafka's
        markers did before KIP-890 (and with that, the late-marker exposure
        KIP-890 closes)."""
        entry = self.entry(producer_id, now_ms)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise BrokerError(Error.INVALID_PRODUCER_EPOCH,
                              f"marker for producer {producer_id} has epoch {producer_epoch}, older than its "
                              f"epoch {entry.epoch} here")
        if entry.in_txn and producer_epoch <= entry.epoch and not keep_epoch:
            # KIP-890: every transaction ends with an epoch bump and its marker
            # carries the bumped epoch, so the marker of the transaction open
            # here has an epoch above its data's. One that does not is a late
            # or re-sent marker of an EARLIER transaction (whose marker bore
            # the epoch this one's data now uses): it must not commit or abort
            # this one (Jepsen's Bufstream finding, reproduced in Kafka).
            raise BrokerError(Error.INVALID_PRODUCER_EPOCH,
                              f"marker for producer {producer_id} has epoch {producer_epoch}, but the "
                              f"transaction open here was written with epoch {entry.epoch}: a marker must "
                              f"carry the epoch its coordinator bumped to end the transaction")
        if coordinator_epoch < entry.coordinator_epoch:
            raise BrokerError(Error.TRANSACTION_COORDINATOR_FENCED,
                              f"marker for producer {producer_id} comes from coordinator epoch "
                              f"{coordinator_epoch}; epoch {entry.coordinator_epoch} wrote here before")

    # -- every replica: what the log now holds ----------------------------------
    def update(self, h: BatchHeader, now_ms: int, marker: Optional[TxnMarker] = None) -> Optional[CompletedTxn]:
        """Record a batch the log holds (its offsets assigned): after a leader's
        append, a follower's, or while replaying a log. Never refuses: the log
        is the truth. A transaction marker's batch comes with what it says
        (`marker`, from control_records.decode_txn_marker); the transaction
        it ends is returned, and is then undecided until `on_high_watermark`
        passes it."""
        if h.producer_id == NO_PRODUCER_ID:
            return None
        timestamp = h.max_timestamp if h.max_timestamp >= 0 else now_ms
        if h.is_control:
            return None if marker is None else self._end_txn(h, marker, timestamp)
        if h.base_sequence < 0 and not h.is_transactional:
            return None
        entry = self._entry_for(h.producer_id, h.producer_epoch, timestamp)
        if h.base_sequence >= 0:
            entry.batches.append(BatchMetadata(h.base_sequence, h.last_sequence, h.base_offset, h.last_offset,
                                               timestamp))
        entry.last_timestamp = timestamp
        if h.is_transactional and not entry.in_txn:
            entry.current_txn_first_offset = h.base_offset
            self.ongoing[h.producer_id] = h.base_offset
        return None

    def _entry_for(self, producer_id: int, epoch: int, timestamp: int) -> ProducerEntry:
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(producer_id, epoch, timestamp)
        entry.move_to_epoch(epoch)
        return entry

    def _end_txn(self, h: BatchHeader, marker: TxnMarker, timestamp: int) -> CompletedTxn:
        entry = self._entry_for(h.producer_id, h.producer_epoch, timestamp)
        entry.coordinator_epoch = marker.coordinator_epoch
        entry.last_timestamp = timestamp
        first = entry.current_txn_first_offset if entry.in_txn else h.base_offset
        entry.current_txn_first_offset = NO_TXN
        self.ongoing.pop(h.producer_id, None)
        completed = CompletedTxn(h.producer_id, first, h.base_offset, not marker.committed)
        self.unreplicated.append(completed)
        return completed

    def update_all(self, headers: Iterable[BatchHeader], now_ms: int) -> None:
        """Data batches only (a marker needs what it says: `update`)."""
        for h in headers:
            self.update(h, now_ms)

    def update_appended(self, headers: Iterable[BatchHeader], first_offset: int, now_ms: int) -> None:
        """A leader's append of data batches: `headers` as the producer sent
        them, written one after the other from `first_offset`."""
        offset = first_offset
        for h in headers:
            if _is_idempotent(h):
                self.update(replace(h, base_offset=offset), now_ms)
            offset += h.last_offset_delta + 1

    def clear(self) -> None:
        self.producers.clear()
        self.ongoing.clear()
        self.unreplicated.clear()

    # -- the last stable offset -------------------------------------------------
    def on_high_watermark(self, high_watermark: int) -> None:
        """Completed transactions whose marker is below the high watermark are
        decided for every reader: forget them."""
        while self.unreplicated and self.unreplicated[0].last_offset < high_watermark:
            self.unreplicated.pop(0)

    def first_unstable_offset(self, high_watermark: int) -> Optional[int]:
        """The first offset of the earliest undecided transaction, None when none is."""
        self.on_high_watermark(high_watermark)
        firsts = list(self.ongoing.values())
        firsts += (t.first_offset for t in self.unreplicated)
        return min(firsts) if firsts else None

    def last_stable_offset(self, high_watermark: int) -> int:
        first = self.first_unstable_offset(high_watermark)
        return high_watermark if first is None else min(first, high_watermark)

    def aborted_lso(self, completed: CompletedTxn) -> int:
        """The `last_stable_offset` of a .txnindex entry (Kafka's): the first
        offset of the earliest transaction of ANOTHER producer still open,
        else the offset after the marker."""
        others = [first for pid, first in self.ongoing.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    # -- snapshots ------------------------------------------------------------------
    def snapshot_entries(self) -> list[SnapshotEntry]:
        """The state as Kafka's snapshot holds it: per producer its last batch only."""
        out = []
        for entry in self.producers.values():
            last = entry.batches[-1] if entry.batches else None
            out.append(SnapshotEntry(
                producer_id=entry.producer_id, epoch=entry.epoch,
                last_sequence=last.last_seq if last else NO_SEQUENCE,
                last_offset=last.last_offset if last else -1,
                offset_delta=last.last_offset - last.first_offset if last else 0,
                timestamp=entry.last_timestamp, coordinator_epoch=entry.coordinator_epoch,
                current_txn_first_offset=entry.current_txn_first_offset))
        return out

    def load_snapshot(self, entries: Iterable[SnapshotEntry], now_ms: int) -> None:
        """Replace the state with a snapshot's (expired producers left out, as Kafka)."""
        self.clear()
        for e in entries:
            entry = ProducerEntry(e.producer_id, e.epoch, e.timestamp, coordinator_epoch=e.coordinator_epoch,
                                  current_txn_first_offset=e.current_txn_first_offset)
            if self._expired(entry, now_ms):
                continue
            if e.last_offset >= 0 and e.last_sequence >= 0:
                first_seq = (e.last_sequence - e.offset_delta) % SEQUENCE_MODULUS
                entry.batches.append(BatchMetadata(first_seq, e.last_sequence, e.last_offset - e.offset_delta,
                                                   e.last_offset, e.timestamp))
            self.producers[e.producer_id] = entry
            if entry.in_txn:
                self.ongoing[e.producer_id] = entry.current_txn_first_offset

    # -- expiration ---------------------------------------------------------------
    def _expired(self, entry: ProducerEntry, now_ms: int) -> bool:
        # An open transaction keeps its producer: its marker must find it.
        return not entry.in_txn and now_ms - entry.last_timestamp >= self.expiration_ms

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
