"""The producer state of one partition replica kept in step with its log:
the I/O around broker/producer_state.py's pure state.

- Load: the newest producer snapshot in [log start, log end]
  (partition_log/producer_snapshot.py; a damaged one is logged, deleted and
  the next older tried), then the batches from its offset replayed; with
  none, the log from its start. Replay reads batch headers only, and the
  record of a transaction marker's batch (COMMIT or ABORT).
- Appends: every batch the log takes (a leader's, a follower's, a marker)
  updates the state at once, so the state at a segment roll is the state as
  of the new segment's base offset: the log calls `write_snapshot` there
  (`Log.snapshot_listener`) and again at close, at the log end.
- An ABORT marker appended here (leader or follower) adds its transaction to
  the log's .txnindex; a replay does not (the index is on disk, and the log
  rebuilds a damaged one itself at load).
- `Log.first_unstable_offset`, which the cleaner stops at, follows the state.
"""
from __future__ import annotations

import logging
from typing import Callable, Iterable, Optional

from kafka_protocol.batch import NO_PRODUCER_ID, BatchHeader, iter_headers
from kafka_protocol.control_records import TxnMarker, decode_txn_marker
from kafka_protocol.errors import CorruptRecordError
from partition_log import producer_snapshot as snapshots
from partition_log.log import Log
from partition_log.txn_index import AbortedTxn

from .producer_state import ProducerStateManager

log = logging.getLogger(__name__)


def is_txn_marker(h: BatchHeader) -> bool:
    """A batch that may be a COMMIT/ABORT marker (its record says which, or neither)."""
    return h.is_control and h.is_transactional and h.producer_id != NO_PRODUCER_ID


class ProducerLog:
    def __init__(self, lg: Log, producers: ProducerStateManager, clock: Callable[[], int]) -> None:
        self.log = lg
        self.producers = producers
        self.clock = clock
        lg.snapshot_listener = self.write_snapshot

    # -- load ------------------------------------------------------------------
    def load(self) -> None:
        """The state as the log holds it: from the newest usable snapshot, then replay."""
        now = self.clock()
        self.producers.clear()
        start = self._load_snapshot(now)
        for h in self.log.iter_batch_headers(start):
            if h.base_offset >= start:
                self.producers.update(h, now, self._stored_marker(h) if is_txn_marker(h) else None)
        self.producers.expire(now)
        self.sync_unstable()

    def _load_snapshot(self, now: int) -> int:
        """Load the newest readable snapshot in [log start, log end]; the
        offset to replay from (the log start without one)."""
        lg = self.log
        for offset in reversed(snapshots.snapshot_offsets(lg.directory)):
            if not lg.log_start_offset <= offset <= lg.log_end_offset:
                continue
            try:
                entries = snapshots.read_snapshot(snapshots.snapshot_path(lg.directory, offset))
            except snapshots.CorruptSnapshotError as exc:
                log.warning("%s-%d: %s; deleted, the producer state is replayed from the log instead",
                            lg.topic, lg.partition, exc)
                snapshots.delete_snapshot(lg.directory, offset)
                continue
            self.producers.load_snapshot(entries, now)
            return offset
        return lg.log_start_offset

    def _stored_marker(self, h: BatchHeader) -> Optional[TxnMarker]:
        data = self.log.read(h.base_offset, h.size, min_one_batch=True)
        return self._decode_marker(h, memoryview(data)[:h.size])

    def _decode_marker(self, h: BatchHeader, batch: bytes | memoryview) -> Optional[TxnMarker]:
        try:
            return decode_txn_marker(batch)
        except CorruptRecordError as exc:
            # Only a broker writes markers and the leader checked this one's
            # CRC: the log is the truth, and it holds no transaction end here.
            log.error("%s-%d: the control batch at offset %d is no transaction marker: %s",
                      self.log.topic, self.log.partition, h.base_offset, exc)
            return None

    # -- appends -----------------------------------------------------------------
    def appended_data(self, headers: Iterable[BatchHeader], first_offset: int) -> None:
        """A leader appended these data batches (as sent) from `first_offset`."""
        self.producers.update_appended(headers, first_offset, self.clock())
        self.sync_unstable()

    def appended_from_leader(self, records: bytes | memoryview) -> None:
        """A follower appended these batches, with the leader's offsets."""
        now = self.clock()
        view = memoryview(records)
        for pos, h in iter_headers(view, validate=False):
            marker = self._decode_marker(h, view[pos:pos + h.size]) if is_txn_marker(h) else None
            self.appended_batch(h, marker, now)
        self.producers.maybe_expire(now)
        self.sync_unstable()

    def appended_marker(self, h: BatchHeader, marker: TxnMarker, now: int) -> None:
        """A leader appended this marker (`h` with its offset)."""
        self.appended_batch(h, marker, now)
        self.sync_unstable()

    def appended_batch(self, h: BatchHeader, marker: Optional[TxnMarker], now: int) -> None:
        """One batch now in the log (offsets assigned); an aborted transaction
        its marker ends goes to the active segment's .txnindex."""
        completed = self.producers.update(h, now, marker)
        if completed is not None and completed.aborted:
            self.log.append_aborted_txn(AbortedTxn(completed.producer_id, completed.first_offset,
                                                   completed.last_offset, self.producers.aborted_lso(completed)))

    # -- derived state --------------------------------------------------------
    def sync_unstable(self) -> None:
        """Tell the log (its cleaner) where the first undecided transaction starts."""
        self.log.first_unstable_offset = self.producers.first_unstable_offset(self.log.high_watermark)

    def last_stable_offset(self) -> int:
        """Kafka's LSO: the high watermark, held back by undecided transactions
        (never below the log start)."""
        lg = self.log
        return max(self.producers.last_stable_offset(lg.high_watermark), lg.log_start_offset)

    def write_snapshot(self, offset: int) -> None:
        """Log.snapshot_listener: the state is the state as of `offset` here."""
        try:
            snapshots.write_snapshot(self.log.directory, offset, self.producers.snapshot_entries())
        except Exception as exc:  # noqa: BLE001 - a missing snapshot costs a longer replay, nothing else
            log.error("%s-%d: cannot write the producer snapshot at offset %d: %s",
                      self.log.topic, self.log.partition, offset, exc)
