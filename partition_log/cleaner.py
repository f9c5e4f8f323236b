"""Log compaction (`cleanup.policy=compact`): keep the newest record per key.

The cleaner rewrites closed segments below the first uncleanable offset (the
active segment, the high watermark, `min.compaction.lag.ms`), group by group,
each group into one new segment that replaces it through a crash-safe swap.
Offsets are preserved (gaps appear); batches that lose no record are copied as
bytes. Tombstones (null value) first get a delete horizon (KIP-534: now +
`delete.retention.ms`, stored in the batch's base timestamp) and are removed
by a later pass after that horizon, so consumers have time to see them.

Cleaning decodes records: it is background work, off the produce/fetch path.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafka_protocol import batch as b
from kafka_protocol.compression import Codec
from kafka_protocol.records import Record, decode_batch, encode_batch

from .log import Log
from .segment import BatchPosition, LogSegment


@dataclass
class CleanStats:
    segments_cleaned: int = 0
    records_read: int = 0
    records_kept: int = 0
    tombstones_removed: int = 0
    bytes_read: int = 0
    bytes_written: int = 0


def dirty_ratio(log: Log, first_dirty_offset: int) -> float:
    """Share of the cleanable bytes written since the last clean."""
    segments = _cleanable_segments(log)
    total = sum(s.size for s in segments)
    dirty = sum(s.size for s in segments if s.base_offset >= first_dirty_offset)
    return dirty / total if total else 0.0


def _first_uncleanable_offset(log: Log) -> int:
    bound = min(log.active_segment.base_offset, log.high_watermark)
    lag = log.config.min_compaction_lag_ms
    if lag > 0:
        now = log.clock()
        for seg in log.segments:
            if seg.max_timestamp_and_offset[0] >= 0 and now - seg.max_timestamp_and_offset[0] < lag:
                bound = min(bound, seg.base_offset)
                break
    return bound


def _cleanable_segments(log: Log) -> list[LogSegment]:
    bound = _first_uncleanable_offset(log)
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


def clean(log: Log) -> CleanStats:
    """One full cleaning pass over `log`; returns what it did."""
    stats = CleanStats()
    segments = _cleanable_segments(log)
    if not segments:
        return stats
    latest = _build_offset_map(segments)
    now = log.clock()
    for group in _groups(log, segments):
        cleaned = _clean_group(log, group, latest, now, stats)
        log.replace_segments(cleaned, group)
        stats.segments_cleaned += len(group)
    return stats


def _build_offset_map(segments: list[LogSegment]) -> dict[bytes, int]:
    latest: dict[bytes, int] = {}
    for seg in segments:
        for bp in seg.iter_batch_positions():
            if bp.header.is_control:
                continue
            for record in decode_batch(seg.read_batch(bp)).records:
                if record.key is not None:
                    latest[record.key] = record.offset
    return latest


def _clean_group(log: Log, group: list[LogSegment], latest: dict[bytes, int], now: int,
                 stats: CleanStats) -> LogSegment:
    cleaned = LogSegment(log.directory, group[0].base_offset, index_interval_bytes=log.config.index_interval_bytes,
                         max_index_bytes=log.config.segment_index_bytes, created_ms=now, suffix=".cleaned",
                         handles=log.handles)
    cleaned.delete()  # leftovers of an earlier crashed pass
    positions = [(seg, bp) for seg in group for bp in seg.iter_batch_positions()]
    for n, (seg, bp) in enumerate(positions):
        raw = seg.read_batch(bp)
        stats.bytes_read += len(raw)
        out = _filter_batch(raw, bp.header, latest, now, log.config.delete_retention_ms,
                            keep_empty=n == len(positions) - 1, stats=stats)
        if out is not None:
            cleaned.append([out], len(out), [BatchPosition(0, b.parse_header(out))])
            stats.bytes_written += len(out)
    cleaned.on_become_inactive()
    return cleaned


def _filter_batch(raw: bytes, h: b.BatchHeader, latest: dict[bytes, int], now: int, delete_retention_ms: int,
                  *, keep_empty: bool, stats: CleanStats) -> bytes | None:
    """The batch as it should be after cleaning: unchanged bytes, a rewritten
    batch, or None when nothing in it survives (the group's last batch is kept
    empty so the cleaned segment still ends at the group's last offset)."""
    if h.is_control:
        return raw
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
