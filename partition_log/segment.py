"""One log segment: a `.log` file of batches, its `.index`/`.timeindex`, and
the `.txnindex` of aborted transactions whose marker it holds (txn_index.py).

Appends write batch bytes as they are; reads return file bytes as they are.
The only parsing is of 61-byte batch headers, to find batch boundaries.
"""
from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kafka_protocol import batch as b
from kafka_protocol.errors import KafkaError, KafkaStorageError
from .index import IndexCorruptError, OffsetIndex, TimeIndex
from .segment_handles import SegmentHandles
from .txn_index import TxnIndex

OFFSET_DIGITS = 20
_IOV_MAX = 512  # buffers per gather write, below the kernel's IOV_MAX of 1024
TAIL_BATCHES = 64  # the last batches appended whose positions a segment keeps (translate_offset)


def segment_name(base_offset: int) -> str:
    return f"{base_offset:0{OFFSET_DIGITS}d}"


@dataclass(frozen=True, slots=True)
class RecoveryResult:
    valid_bytes: int
    truncated_bytes: int
    next_offset: int
    reason: str | None  # why the tail was cut, if it was
    txn_index_damaged: bool = False  # the .txnindex did not read back: emptied, to be rebuilt from the log


@dataclass(frozen=True, slots=True)
class BatchPosition:
    position: int
    header: b.BatchHeader


class LogSegment:
    def __init__(self, directory: Path, base_offset: int, *, index_interval_bytes: int,
                 max_index_bytes: int, created_ms: int, suffix: str = "",
                 handles: SegmentHandles | None = None) -> None:
        self.directory = directory
        self.handles = handles  # the bound on open descriptors this segment counts against
        self.base_offset = base_offset
        self.suffix = suffix
        stem = segment_name(base_offset)
        self.offset_index = OffsetIndex(directory / f"{stem}.index{suffix}", base_offset, max_index_bytes)
        self.time_index = TimeIndex(directory / f"{stem}.timeindex{suffix}", base_offset, max_index_bytes)
        self.txn_index = TxnIndex(directory / f"{stem}.txnindex{suffix}", base_offset)
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        self._fd: int | None = None
        try:
            self.size = os.stat(self.log_path).st_size
        except FileNotFoundError:
            self.size = 0
        self.bytes_since_last_index_entry = 0
        self._max_timestamp: tuple[int, int] | None = None  # (timestamp, offset), loaded lazily
        self._first_batch_timestamp: int | None = None
        # The last batches appended, back to back up to the end of the file:
        # followers and tailing consumers fetch there, and find their batch
        # here instead of reading headers from the last index entry on.
        self._tail: deque[BatchPosition] = deque(maxlen=TAIL_BATCHES)

    # -- files ---------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        """Made on each use: a broker holds a segment per replica, often
        100,000 of them, and a kept Path costs ~300 bytes each."""
        return self.directory / f"{segment_name(self.base_offset)}.log{self.suffix}"

    @property
    def fd(self) -> int:
        """The .log file's descriptor, opened on first use. Use it at once and
        never keep it: with `handles`, another segment's use may close it."""
        if self._fd is None:
            try:
                self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise KafkaStorageError(f"cannot open {self.log_path}: {exc.strerror}") from exc
        if self.handles is not None:
            self.handles.used(self)
        return self._fd

    def close_handle(self) -> None:
        """Close the .log descriptor only (it reopens on the next use)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def create(self) -> None:
        """A new segment: create the empty .log file without keeping a
        descriptor; the indexes start empty (their files come with the first entry)."""
        try:
            os.close(os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644))
        except OSError as exc:
            raise KafkaStorageError(f"cannot create {self.log_path}: {exc.strerror}") from exc
        self.offset_index.start_empty()
        self.time_index.start_empty()

    def start_empty(self) -> None:
        """An empty segment found on disk: whatever index files it has describe
        nothing, so they go, and the indexes start empty."""
        for index in (self.offset_index, self.time_index):
            index.delete()
            index.start_empty()
        self.txn_index.reset()

    def close(self) -> None:
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self.close_handle()
        if self.handles is not None:
            self.handles.closed(self)

    def flush(self) -> None:
        os.fsync(self.fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def delete(self) -> None:
        self.close()
        self.log_path.unlink(missing_ok=True)
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()

    def change_suffix(self, suffix: str) -> None:
        """Rename all the segment's files (used by the cleaner's crash-safe swap)."""
        self.close()
        stem = segment_name(self.base_offset)
        new_log = self.directory / f"{stem}.log{suffix}"
        os.replace(self.log_path, new_log)
        self.suffix = suffix  # log_path follows it
        for index, ext in ((self.offset_index, "index"), (self.time_index, "timeindex")):
            target = self.directory / f"{stem}.{ext}{suffix}"
            if index.path.exists():
                index.rename(target)
            else:
                index.path = target
        self.txn_index.rename(self.directory / f"{stem}.txnindex{suffix}")

    # -- timestamps ----------------------------------------------------------
    @property
    def max_timestamp_and_offset(self) -> tuple[int, int]:
        if self._max_timestamp is None:
            last = self.time_index.last_entry()
            self._max_timestamp = last if last is not None else (b.NO_TIMESTAMP, self.base_offset)
        return self._max_timestamp

    @property
    def largest_timestamp(self) -> int:
        """What retention compares with retention.ms; file mtime if no timestamp is known."""
        ts = self.max_timestamp_and_offset[0]
        if ts >= 0:
            return ts
        try:
            return int(os.stat(self.log_path).st_mtime * 1000)
        except FileNotFoundError:
            return self.created_ms

    @property
    def first_batch_timestamp(self) -> int | None:
        """The first batch's max timestamp (what segment.ms counts from), if known."""
        if self._first_batch_timestamp is None and self.size > 0:
            first = self._header_at(0)
            self._first_batch_timestamp = first.max_timestamp if first else b.NO_TIMESTAMP
        ts = self._first_batch_timestamp
        return ts if ts is not None and ts >= 0 else None

    # -- append --------------------------------------------------------------
    def append(self, chunks: list[bytes | bytearray | memoryview], size: int, batches: list[BatchPosition]) -> None:
        """Write already validated, already stamped batches at the end of the file.

        `chunks` are written back to back (one gather write); `batches` gives
        each batch's position within them and its header.
        """
        start = self.size
        written = 0
        try:
            for i in range(0, len(chunks), _IOV_MAX):
                written += os.pwritev(self.fd, chunks[i:i + _IOV_MAX], start + written)
        except OSError as exc:
            os.ftruncate(self.fd, start)
            raise KafkaStorageError(f"cannot write {self.log_path}: {exc.strerror}") from exc
        if written != size:
            # A short write means the disk is full: cut what was written so the
            # file ends at a batch boundary, and refuse the append.
            os.ftruncate(self.fd, start)
            raise KafkaStorageError(f"short write to {self.log_path}: {written} of {size} bytes")
        self.size = start + size
        self._index_batches(start, batches)

    def _index_batches(self, start: int, batches: list[BatchPosition]) -> None:
        ts, ts_offset = self.max_timestamp_and_offset
        for bp in batches:
            h = bp.header
            self._tail.append(BatchPosition(start + bp.position, h))
            if self._first_batch_timestamp is None and start + bp.position == 0:
                self._first_batch_timestamp = h.max_timestamp
            if h.max_timestamp > ts:
                ts, ts_offset = h.max_timestamp, h.last_offset
            if self.bytes_since_last_index_entry > self.index_interval_bytes:
                self.offset_index.append(h.last_offset, start + bp.position)
                self.time_index.maybe_append(ts, ts_offset)
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += h.size
        self._max_timestamp = (ts, ts_offset)

    # -- read ----------------------------------------------------------------
    def _header_at(self, position: int) -> b.BatchHeader | None:
        raw = os.pread(self.fd, b.HEADER_SIZE, position)
        if len(raw) < b.HEADER_SIZE:
            return None
        return b.parse_header(raw)

    def translate_offset(self, offset: int, start_position: int = 0) -> BatchPosition | None:
        """The first batch at or after `start_position` whose last offset >= `offset`."""
        tail = self._tail
        if tail and tail[0].header.base_offset <= offset:  # in the tail, or past the end
            found = None
            for bp in reversed(tail):
                if bp.header.last_offset < offset or bp.position < start_position:
                    break
                found = bp
            return found
        entry = self.offset_index.lookup(offset)
        position = max(start_position, entry[1] if entry else 0)
        while position < self.size:
            h = self._header_at(position)
            if h is None:
                return None
            if h.last_offset >= offset:
                return BatchPosition(position, h)
            position += h.size
        return None

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> tuple[int, bytes | memoryview] | None:
        """Whole batches from the one holding `offset`, at most `max_bytes` of them
        (but at least one batch when `min_one_batch`, as KIP-74), stopping before
        a batch that starts at or after `max_offset` (the high watermark).
        Each batch's CRC is checked before it is returned: a read stops before
        a corrupt batch, and one that starts at it is a KafkaStorageError (bit
        rot below the recovery point, which no recovery re-reads).
        A read cut short before its last, partial batch is a memoryview of
        what was read: fetches of megabytes are not copied to trim them."""
        start = self.translate_offset(offset)
        if start is None or (max_offset is not None and start.header.base_offset >= max_offset):
            return None
        want = min(max(max_bytes, start.header.size if min_one_batch else 0), self.size - start.position)
        data = os.pread(self.fd, want, start.position)
        # The walk reads three header fields a batch (b.BOUNDS), no BatchHeader: it is this
        # read's Python cost per batch, on every fetch (issue 21 target 1).
        end, available, bounds, overhead = 0, len(data), b.BOUNDS.unpack_from, b.LOG_OVERHEAD
        stop = max_offset if max_offset is not None else 1 << 63
        while end + b.HEADER_SIZE <= available:
            base_offset, length, crc = bounds(data, end)
            if base_offset >= stop:
                break
            size = length + overhead
            if end + size > available:
                break
            if size < b.HEADER_SIZE or b.compute_crc(data, end, size) != crc:
                if end:
                    break  # the whole batches before it are served; the next read starts at it
                # Never served: the caller's log directory goes offline (KIP-112), so the
                # broker hands its leaderships to replicas whose copy is whole.
                raise KafkaStorageError(f"{self.log_path}: the batch at offset {base_offset} "
                                        f"(byte {start.position}) fails its CRC")
            end += size
        if end == 0:
            return None
        return start.position, memoryview(data)[:end] if end < len(data) else data

    def load_tail(self) -> int:
        """Scan from the last index entry to the end of the file: restores the
        max timestamp and the bytes since the last index entry, and returns the
        offset after the last batch. Cheap: at most one index interval is read."""
        entry = self.offset_index.last_entry()
        position = entry[1] if entry else 0
        ts, ts_offset = self.time_index.last_entry() or (b.NO_TIMESTAMP, self.base_offset)
        next_offset = entry[0] + 1 if entry else self.base_offset
        self.bytes_since_last_index_entry = 0
        for bp in self.iter_batch_positions(position):
            h = bp.header
            if h.max_timestamp > ts:
                ts, ts_offset = h.max_timestamp, h.last_offset
            next_offset = h.next_offset
            self.bytes_since_last_index_entry += h.size
        self._max_timestamp = (ts, ts_offset)
        return next_offset

    def tail_damage(self) -> str | None:
        """What is wrong with the batches load_tail reads (from the last index
        entry to the end of the file), if anything: one that fails its header
        or CRC checks, or a file that ends inside a batch. Checked at a load
        after a clean shutdown, which recovers nothing: a tail damaged while
        the node was down would otherwise count offsets the file does not hold."""
        entry = self.offset_index.last_entry()
        position = entry[1] if entry else 0
        while position < self.size:
            try:
                h = b.parse_header(os.pread(self.fd, b.HEADER_SIZE, position))
                b.check_header(h, self.size - position, position)
            except KafkaError as exc:
                return str(exc)
            if b.compute_crc(os.pread(self.fd, h.size, position), 0, h.size) != h.crc:
                return f"batch at byte {position} fails its CRC"
            position += h.size
        return None

    def iter_batch_positions(self, start_position: int = 0):
        position = start_position
        while position < self.size:
            h = self._header_at(position)
            if h is None:
                return
            yield BatchPosition(position, h)
            position += h.size

    def read_batch(self, bp: BatchPosition) -> bytes:
        return os.pread(self.fd, bp.header.size, bp.position)

    # -- recovery and truncation ---------------------------------------------
    def recover(self, max_batch_bytes: int,
                on_batch: Callable[[b.BatchHeader], None] | None = None) -> RecoveryResult:
        """Validate every batch, rebuild both indexes, cut a torn or corrupt tail;
        `on_batch` sees each valid batch's header, in order."""
        self.offset_index.reset()
        self.time_index.reset()
        self._max_timestamp = (b.NO_TIMESTAMP, self.base_offset)
        self._first_batch_timestamp = None
        self.bytes_since_last_index_entry = 0
        self._tail.clear()
        self.size = os.fstat(self.fd).st_size
        position, next_offset, reason = 0, self.base_offset, None
        while position < self.size:
            raw = os.pread(self.fd, b.HEADER_SIZE, position)
            try:
                h = b.parse_header(raw)
                b.check_header(h, self.size - position, position)
                if h.size > max_batch_bytes:
                    raise ValueError(f"batch at byte {position} is {h.size} bytes, over the {max_batch_bytes} limit")
                if h.base_offset < next_offset or h.last_offset - self.base_offset > 2**31 - 1:
                    raise ValueError(f"batch at byte {position} has offset {h.base_offset} out of order")
                data = os.pread(self.fd, h.size, position)
                b.validate_batch(data)
            except (KafkaError, ValueError) as exc:
                reason = str(exc)
                break
            self._index_batches(position, [BatchPosition(0, h)])
            if on_batch is not None:
                on_batch(h)
            next_offset = h.next_offset
            position += h.size
        truncated = self.size - position
        if truncated:
            os.ftruncate(self.fd, position)
            self.size = position
        # An abort whose marker did not survive is no abort: its entry goes too.
        try:
            self.txn_index.truncate_to(next_offset)
            txn_index_damaged = False
        except IndexCorruptError:
            self.txn_index.reset()
            txn_index_damaged = True
        return RecoveryResult(position, truncated, next_offset, reason, txn_index_damaged)

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= `offset`; returns bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        removed = self.size - found.position
        os.ftruncate(self.fd, found.position)
        self.size = found.position
        self._tail.clear()
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        if found.position == 0:
            self._first_batch_timestamp = None
        self.load_tail()
        return removed

    def on_become_inactive(self) -> None:
        """Seal the segment when a newer one is rolled (or the log closes):
        final time entry, trimmed indexes. An empty one has nothing to seal."""
        if self.size == 0:
            return
        ts, offset = self.max_timestamp_and_offset
        if ts >= 0:
            self.time_index.maybe_append(ts, offset)
        self.offset_index.trim()
        self.time_index.trim()
