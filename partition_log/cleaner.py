"""Log compaction (`cleanup.policy=compact`): keep the newest record per key.

The cleaner rewrites closed segments below the first uncleanable offset (the
active segment, the high watermark, `min.compaction.lag.ms`), group by group,
each group into one new segment that replaces it through a crash-safe swap.
Offsets are preserved (gaps appear); batches that lose no record are copied as
bytes. Tombstones (null value) first get a delete horizon (KIP-534: now +
`delete.retention.ms`, stored in the batch's base timestamp) and are removed
by a later pass after that horizon, so consumers have time to see them.

Transactions, as Kafka's LogCleaner handles them: nothing at or past the
partition's first unstable offset is cleaned (`Log.first_unstable_offset`,
kept by the broker, or the `first_unstable_offset` argument of `clean`), so
an open transaction's batches are never judged. Batches of ABORTED
transactions (the .txnindex entries say which producer's offsets) are
removed at once and never shadow an older committed value of their key. A
COMMIT or ABORT marker stays while any batch of its transaction is left;
then it gets a delete horizon like a tombstone and goes in a pass after it.
An ABORT marker that stays keeps its .txnindex entry in the cleaned segment.

Cleaning decodes records: it is background work, off the produce/fetch path.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafka_protocol import batch as b
from kafka_protocol.compression import Codec
from kafka_protocol.control_records import TxnMarker, decode_txn_marker
from kafka_protocol.errors import CorruptRecordError
from kafka_protocol.records import Record, decode_batch, encode_batch

from .log import Log
from .segment import BatchPosition, LogSegment
from .txn_index import AbortedTxn, TxnIndex


@dataclass
class CleanStats:
    segments_cleaned: int = 0
    records_read: int = 0
    records_kept: int = 0
    tombstones_removed: int = 0
    aborted_records_removed: int = 0
    markers_removed: int = 0
    bytes_read: int = 0
    bytes_written: int = 0


def dirty_ratio(log: Log, first_dirty_offset: int) -> float:
    """Share of the cleanable bytes written since the last clean."""
    segments = _cleanable_segments(log)
    total = sum(s.size for s in segments)
    dirty = sum(s.size for s in segments if s.base_offset >= first_dirty_offset)
    return dirty / total if total else 0.0


def _first_uncleanable_offset(log: Log, first_unstable_offset: int | None = None) -> int:
    bound = min(log.active_segment.base_offset, log.high_watermark)
    unstable = log.first_unstable_offset if first_unstable_offset is None else first_unstable_offset
    if unstable is not None:
        bound = min(bound, unstable)
    lag = log.config.min_compaction_lag_ms
    if lag > 0:
        now = log.clock()
        for seg in log.segments:
            if seg.max_timestamp_and_offset[0] >= 0 and now - seg.max_timestamp_and_offset[0] < lag:
                bound = min(bound, seg.base_offset)
                break
    return bound


def _cleanable_segments(log: Log, first_unstable_offset: int | None = None) -> list[LogSegment]:
    bound = _first_uncleanable_offset(log, first_unstable_offset)
    out = []
    for seg, nxt in zip(log.segments, log.segments[1:]):
        if nxt.base_offset > bound:
            break
        out.append(seg)
    return out


def _groups(log: Log, segments: list[LogSegment]) -> list[list[LogSegment]]:
    """Consecutive segments whose total fits one segment, as Kafka groups them."""
    groups: list[list[LogSegment]] = []
    for seg in segments:
        if groups:
            last = groups[-1]
            size = sum(s.size for s in last) + seg.size
            if size <= log.config.segment_bytes and seg.base_offset - last[0].base_offset < 2**31 - 1:
                last.append(seg)
                continue
        groups.append([seg])
    return groups


def clean(log: Log, first_unstable_offset: int | None = None) -> CleanStats:
    """One full cleaning pass over `log`; returns what it did.
    `first_unstable_offset`: overrides `log.first_unstable_offset` (the bound
    of what may be cleaned while transactions are open)."""
    stats = CleanStats()
    segments = _cleanable_segments(log, first_unstable_offset)
    if not segments:
        return stats
    # Markers may lie past the cleanable range: the search reads on until stable.
    aborted = log.collect_aborted_txns(segments[0].base_offset, log.segments[len(segments)].base_offset)
    latest = _build_offset_map(segments, _TxnFilter(aborted))
    now = log.clock()
    # One walk over the transactions for the whole pass, in offset order: a
    # marker is judged by every batch of its transaction, in whichever group.
    txns = _TxnFilter(aborted)
    for group in _groups(log, segments):
        cleaned = _clean_group(log, group, latest, now, stats, txns)
        log.replace_segments(cleaned, group)
        stats.segments_cleaned += len(group)
    return stats


@dataclass
class _TxnFilter:
    """Kafka's CleanedTransactionMetadata: fed every batch in offset order, it
    says which data batches belong to aborted transactions and which markers
    no longer guard any batch (and may go once their delete horizon passed)."""

    aborted: list[AbortedTxn]
    index: TxnIndex | None = None  # where the entries of ABORT markers that stay go
    _next: int = 0
    _ongoing_aborted: dict[int, tuple[AbortedTxn, bool]] = field(default_factory=dict)  # pid -> (txn, seen data)
    _ongoing_committed: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.aborted = sorted(self.aborted, key=lambda t: t.first_offset)

    def _start_aborted_up_to(self, offset: int) -> None:
        while self._next < len(self.aborted) and self.aborted[self._next].first_offset <= offset:
            txn = self.aborted[self._next]
            self._ongoing_aborted[txn.producer_id] = (txn, False)
            self._next += 1

    def is_aborted(self, h: b.BatchHeader) -> bool:
        """A data batch: does it belong to an aborted transaction?"""
        self._start_aborted_up_to(h.last_offset)
        if not h.is_transactional:
            return False
        ongoing = self._ongoing_aborted.get(h.producer_id)
        if ongoing is not None:
            self._ongoing_aborted[h.producer_id] = (ongoing[0], True)
            return True
        self._ongoing_committed.add(h.producer_id)
        return False

    def marker_is_discardable(self, h: b.BatchHeader, marker: TxnMarker | None) -> bool:
        """A control batch: may it go (after its horizon)? Not while a batch of
        its transaction was seen in this pass; other control batches stay."""
        self._start_aborted_up_to(h.last_offset)
        if marker is None:
            return False
        if not marker.committed:
            ongoing = self._ongoing_aborted.pop(h.producer_id, None)
            if ongoing is not None and ongoing[1]:
                if self.index is not None:
                    self.index.append(ongoing[0])
                return False
            return True
        if h.producer_id in self._ongoing_committed:
            self._ongoing_committed.discard(h.producer_id)
            return False
        return True


def _marker(raw: bytes, h: b.BatchHeader) -> TxnMarker | None:
    """The COMMIT/ABORT a control batch carries; None for any other control
    batch, and for a marker that does not decode (kept as it is, never judged)."""
    if not h.is_transactional:
        return None
    try:
        return decode_txn_marker(raw)
    except CorruptRecordError:
        return None


def _build_offset_map(segments: list[LogSegment], txns: _TxnFilter) -> dict[bytes, int]:
    """The newest offset of each key, among records of no aborted transaction."""
    latest: dict[bytes, int] = {}
    for seg in segments:
        for bp in seg.iter_batch_positions():
            h = bp.header
            if h.is_control:
                if h.is_transactional:
                    txns.marker_is_discardable(h, _marker(seg.read_batch(bp), h))
                continue
            if txns.is_aborted(h):
                continue
            for record in decode_batch(seg.read_batch(bp)).records:
                if record.key is not None:
                    latest[record.key] = record.offset
    return latest


def _clean_group(log: Log, group: list[LogSegment], latest: dict[bytes, int], now: int,
                 stats: CleanStats, txns: _TxnFilter) -> LogSegment:
    cleaned = LogSegment(log.directory, group[0].base_offset, index_interval_bytes=log.config.index_interval_bytes,
                         max_index_bytes=log.config.segment_index_bytes, created_ms=now, suffix=".cleaned",
                         handles=log.handles)
    cleaned.delete()  # leftovers of an earlier crashed pass
    txns.index = cleaned.txn_index
    positions = [(seg, bp) for seg in group for bp in seg.iter_batch_positions()]
    for n, (seg, bp) in enumerate(positions):
        raw = seg.read_batch(bp)
        stats.bytes_read += len(raw)
        out = _filter_batch(raw, bp.header, latest, now, log.config.delete_retention_ms,
                            keep_empty=n == len(positions) - 1, stats=stats, txns=txns)
        if out is not None:
            cleaned.append([out], len(out), [BatchPosition(0, b.parse_header(out))])
            stats.bytes_written += len(out)
    cleaned.on_become_inactive()
    return cleaned


def _filter_batch(raw: bytes, h: b.BatchHeader, latest: dict[bytes, int], now: int, delete_retention_ms: int,
                  *, keep_empty: bool, stats: CleanStats, txns: _TxnFilter) -> bytes | None:
    """The batch as it should be after cleaning: unchanged bytes, a rewritten
    batch, or None when nothing in it survives (the group's last batch is kept
    empty so the cleaned segment still ends at the group's last offset)."""
    if h.is_control:
        return _filter_control_batch(raw, h, now, delete_retention_ms, keep_empty=keep_empty, stats=stats,
                                     txns=txns)
    if txns.is_aborted(h):
        stats.records_read += h.records_count
        stats.aborted_records_removed += h.records_count
        return _placeholder(h) if keep_empty else None
    records = decode_batch(raw).records
    stats.records_read += len(records)
    horizon = h.delete_horizon_ms
    kept: list[Record] = []
    for r in records:
        if r.key is not None and latest.get(r.key, r.offset) != r.offset:
            continue  # a newer record with this key exists
        if r.value is None and horizon != b.NO_TIMESTAMP and horizon <= now:
            stats.tombstones_removed += 1
            continue
        kept.append(r)
    stats.records_kept += len(kept)
    needs_horizon = horizon == b.NO_TIMESTAMP and any(r.value is None for r in kept)
    if len(kept) == len(records) and not needs_horizon:
        return raw
    if not kept and not keep_empty:
        return None
    if needs_horizon:
        horizon = now + delete_retention_ms
    return encode_batch(
        kept, base_offset=h.base_offset, codec=Codec(h.codec), log_append_time=h.is_log_append_time,
        producer_id=h.producer_id, producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
        partition_leader_epoch=h.partition_leader_epoch, transactional=h.is_transactional,
        delete_horizon_ms=None if horizon == b.NO_TIMESTAMP else horizon,
        last_offset_delta=h.last_offset_delta, max_timestamp=h.max_timestamp if not kept else None,
    )


def _filter_control_batch(raw: bytes, h: b.BatchHeader, now: int, delete_retention_ms: int, *, keep_empty: bool,
                          stats: CleanStats, txns: _TxnFilter) -> bytes | None:
    """A marker whose transaction has no batch left gets a delete horizon
    (KIP-534), and goes in a pass after it; every other control batch stays."""
    marker = _marker(raw, h)
    if not txns.marker_is_discardable(h, marker):
        return raw
    horizon = h.delete_horizon_ms
    if horizon == b.NO_TIMESTAMP:
        return encode_batch(decode_batch(raw).records, base_offset=h.base_offset, producer_id=h.producer_id,
                            producer_epoch=h.producer_epoch, partition_leader_epoch=h.partition_leader_epoch,
                            transactional=True, control=True, delete_horizon_ms=now + delete_retention_ms)
    if horizon > now:
        return raw
    stats.markers_removed += 1
    return _placeholder(h) if keep_empty else None


def _placeholder(h: b.BatchHeader) -> bytes:
    """An empty batch holding a removed batch's offsets at the end of a group.
    It names no producer: an empty transactional batch would reopen, on replay,
    the very transaction whose batches and marker are gone."""
    return encode_batch([], base_offset=h.base_offset, partition_leader_epoch=h.partition_leader_epoch,
                        last_offset_delta=h.last_offset_delta, max_timestamp=h.max_timestamp)
