"""What a segment file holds, for the dump tool (Kafka's DumpLogSegments).

Pure functions over a file's bytes (bytes, memoryview or mmap): the caller
opens the file, these say what is in it. Unlike recovery, which truncates at
the first bad batch, a dump wants to see past damage: a batch that fails its
CRC is listed as invalid and the scan goes on while the batch's length still
frames the next one. When the framing itself is gone (a torn tail, a length
that cannot be right) the scan ends with a `Stop` saying where and why.

A scan yields entries and then, only if the file did not end cleanly, one
`ZeroTail` or `Stop`. Index files are preallocated, so their zero tail is
normal; in a .log it means batches the writer never wrote. A `.txnindex` is
never preallocated (it grows by whole entries), and a producer `.snapshot`
is checked as a whole by its CRC: either its entries or one `Stop`.
"""
from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from typing import Iterator

from kafka_protocol import batch as b
from kafka_protocol.compression import Codec
from kafka_protocol.errors import KafkaError
from kafka_protocol.records import Record, decode_batch

from .producer_snapshot import CorruptSnapshotError, SnapshotEntry, decode_snapshot
from .txn_index import ENTRY as TXN_INDEX_ENTRY

Buffer = bytes | bytearray | memoryview | mmap.mmap

OFFSET_INDEX_ENTRY = struct.Struct(">ii")  # relative offset, position in the .log
TIME_INDEX_ENTRY = struct.Struct(">qi")  # timestamp, relative offset
_LENGTH = struct.Struct(">i")
_BATCH_LENGTH_OFFSET = 8
_ZERO_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class LogBatch:
    """One batch of a .log. `problem` says why it is invalid (CRC, magic,
    structure); `records` is None unless asked for, empty if they do not
    decode (`records_problem` says why)."""

    position: int
    header: b.BatchHeader
    problem: str | None = None
    records: tuple[Record, ...] | None = None
    records_problem: str | None = None

    @property
    def is_valid(self) -> bool:
        return self.problem is None


@dataclass(frozen=True, slots=True)
class OffsetIndexEntry:
    offset: int  # absolute: the segment's base offset plus the stored relative offset
    position: int  # byte position of the batch in the .log
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class TimeIndexEntry:
    timestamp: int
    offset: int
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class TxnIndexEntry:
    """One aborted transaction of a .txnindex (its fields as stored)."""

    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class ZeroTail:
    """Nothing but zero bytes from `position` to the end of the file."""

    position: int
    length: int

    @property
    def reason(self) -> str:
        return f"zero-filled tail at position {self.position}: {self.length} bytes of zeros"


@dataclass(frozen=True, slots=True)
class Stop:
    """The file cannot be read past `position`."""

    position: int
    reason: str


def codec_name(codec_id: int) -> str:
    """Kafka's name of a compression codec; ids 5-7 are not codecs but a
    corrupt batch can carry them."""
    try:
        return Codec(codec_id).label
    except ValueError:
        return f"unknown({codec_id})"


def segment_base_offset(file_name: str) -> int | None:
    """The base offset a segment file is named by (`00000000000000000100.index`)."""
    stem = file_name.split(".", 1)[0]
    return int(stem) if stem.isdigit() else None


def record_sequence(header: b.BatchHeader, offset: int) -> int:
    """A record's producer sequence: the batch's base sequence plus its offset
    delta, wrapping past int32 max to 0 as Kafka's producers do."""
    if header.base_sequence == b.NO_SEQUENCE:
        return b.NO_SEQUENCE
    return (header.base_sequence + offset - header.base_offset) & 0x7FFFFFFF


def scan_log(buf: Buffer, *, with_records: bool = False) -> Iterator[LogBatch | ZeroTail | Stop]:
    """Every batch of a .log file, in file order, then how the file ended."""
    pos, end = 0, len(buf)
    while pos < end:
        broken = _framing_problem(buf, pos, end)
        if broken is not None:
            yield ZeroTail(pos, end - pos) if _all_zero(buf, pos, end) else Stop(pos, broken)
            return
        header = b.parse_header(buf, pos)
        entry = LogBatch(pos, header, _batch_problem(buf, pos, end))
        if with_records:
            entry = _with_records(buf, entry)
        yield entry
        pos += header.size


def _framing_problem(buf: Buffer, pos: int, end: int) -> str | None:
    """Why the batch at `pos` does not frame a next batch, if it does not.
    Only baseOffset and batchLength matter here: everything else a damaged
    batch gets wrong still leaves the scan able to step over it."""
    left = end - pos
    if left < b.LOG_OVERHEAD:
        return (f"truncated batch at position {pos}: {left} bytes left, "
                f"fewer than the {b.LOG_OVERHEAD} of baseOffset and batchLength")
    (batch_length,) = _LENGTH.unpack_from(buf, pos + _BATCH_LENGTH_OFFSET)
    if batch_length < b.MIN_BATCH_LENGTH:
        return (f"bad batch length at position {pos}: batchLength {batch_length} "
                f"is below the {b.MIN_BATCH_LENGTH} bytes of a v2 batch header")
    size = batch_length + b.LOG_OVERHEAD
    if size > left:
        return f"truncated batch at position {pos}: batchLength says {size} bytes, {left} present"
    return None


def _batch_problem(buf: Buffer, pos: int, end: int) -> str | None:
    try:
        b.validate_batch(buf, pos, end)
    except KafkaError as exc:
        return str(exc)
    return None


def _with_records(buf: Buffer, entry: LogBatch) -> LogBatch:
    # Records of an invalid batch are decoded too: a flipped bit in a value
    # leaves the rest readable, and seeing it is the point of a dump.
    try:
        decoded = decode_batch(buf, entry.position, verify_crc=False)
    except KafkaError as exc:
        return LogBatch(entry.position, entry.header, entry.problem, (), str(exc))
    return LogBatch(entry.position, entry.header, entry.problem, tuple(decoded.records))


def scan_offset_index(buf: Buffer, base_offset: int) -> Iterator[OffsetIndexEntry | ZeroTail | Stop]:
    """Entries of a .index file; a problem is noted on each entry that does not
    increase in both offset and position over the one before."""
    entries_end, ending = _entries_end(buf, OFFSET_INDEX_ENTRY.size)
    prev: OffsetIndexEntry | None = None
    for pos in range(0, entries_end, OFFSET_INDEX_ENTRY.size):
        relative, position = OFFSET_INDEX_ENTRY.unpack_from(buf, pos)
        offset = base_offset + relative
        problem = None
        if relative < 0 or position < 0:
            problem = f"negative relative offset {relative} or position {position}"
        elif prev is not None and offset <= prev.offset:
            problem = f"offset {offset} does not follow the previous entry's {prev.offset}"
        elif prev is not None and position <= prev.position:
            problem = f"position {position} does not follow the previous entry's {prev.position}"
        prev = OffsetIndexEntry(offset, position, problem)
        yield prev
    if ending is not None:
        yield ending


def scan_time_index(buf: Buffer, base_offset: int) -> Iterator[TimeIndexEntry | ZeroTail | Stop]:
    """Entries of a .timeindex file. Kafka appends an entry only for a new
    maximum timestamp, so timestamps rise strictly and offsets never fall."""
    entries_end, ending = _entries_end(buf, TIME_INDEX_ENTRY.size)
    prev: TimeIndexEntry | None = None
    for pos in range(0, entries_end, TIME_INDEX_ENTRY.size):
        timestamp, relative = TIME_INDEX_ENTRY.unpack_from(buf, pos)
        offset = base_offset + relative
        problem = None
        if relative < 0:
            problem = f"negative relative offset {relative}"
        elif prev is not None and timestamp <= prev.timestamp:
            problem = f"timestamp {timestamp} does not follow the previous entry's {prev.timestamp}"
        elif prev is not None and offset < prev.offset:
            problem = f"offset {offset} is below the previous entry's {prev.offset}"
        prev = TimeIndexEntry(timestamp, offset, problem)
        yield prev
    if ending is not None:
        yield ending


def _entries_end(buf: Buffer, entry_size: int) -> tuple[int, ZeroTail | Stop | None]:
    """Where the real entries of an index end, and what follows them. An
    all-zero entry is never a real one (no batch but the first sits at
    position 0, and the first is never indexed), so it starts the tail."""
    end = len(buf)
    whole = end - end % entry_size
    empty = bytes(entry_size)
    pos = 0
    while pos < whole and buf[pos:pos + entry_size] != empty:
        pos += entry_size
    if pos < end and _all_zero(buf, pos, end):
        return pos, ZeroTail(pos, end - pos)
    if pos < whole:
        return pos, Stop(pos, f"all-zero entry at position {pos} is followed by non-zero bytes")
    if whole < end:
        return pos, Stop(whole, f"truncated entry at position {whole}: {end - whole} of {entry_size} bytes")
    return pos, None


def _all_zero(buf: Buffer, start: int, end: int) -> bool:
    # In chunks, so that a large mmapped segment is never copied whole.
    for chunk_start in range(start, end, _ZERO_CHUNK):
        chunk = bytes(buf[chunk_start:min(end, chunk_start + _ZERO_CHUNK)])
        if chunk.count(0) != len(chunk):
            return False
    return True


def scan_txn_index(buf: Buffer, base_offset: int) -> Iterator[TxnIndexEntry | Stop]:
    """Entries of a .txnindex file; a problem is noted on an entry of an unknown
    version, one ending below its segment or out of marker order."""
    whole = len(buf) - len(buf) % TXN_INDEX_ENTRY.size
    prev: TxnIndexEntry | None = None
    for pos in range(0, whole, TXN_INDEX_ENTRY.size):
        entry = TxnIndexEntry(*TXN_INDEX_ENTRY.unpack_from(buf, pos))
        problem = None
        if entry.version != 0:
            problem = f"unknown version {entry.version}"
        elif entry.last_offset < base_offset:
            problem = f"last offset {entry.last_offset} is below the segment's base offset {base_offset}"
        elif entry.first_offset > entry.last_offset:
            problem = f"first offset {entry.first_offset} is after the last offset {entry.last_offset}"
        elif prev is not None and entry.last_offset <= prev.last_offset:
            problem = f"last offset {entry.last_offset} does not follow the previous entry's {prev.last_offset}"
        prev = TxnIndexEntry(entry.version, entry.producer_id, entry.first_offset, entry.last_offset,
                             entry.last_stable_offset, problem)
        yield prev
    if whole < len(buf):
        yield Stop(whole, f"truncated entry at position {whole}: {len(buf) - whole} of "
                          f"{TXN_INDEX_ENTRY.size} bytes")


def scan_producer_snapshot(buf: Buffer) -> Iterator[SnapshotEntry | Stop]:
    """The producers of a .snapshot file, or one Stop if it is damaged (the
    CRC covers the whole file: no entry of a damaged one can be trusted)."""
    try:
        entries = decode_snapshot(bytes(buf), "producer snapshot")
    except CorruptSnapshotError as exc:
        yield Stop(0, str(exc))
        return
    yield from entries


def first_sequence(entry: SnapshotEntry) -> int:
    """The first sequence of a producer's last batch (Kafka's BatchMetadata.firstSeq):
    its last sequence minus the offset delta, wrapping below 0 to int32 max."""
    first = entry.last_sequence - entry.offset_delta
    return first if first >= 0 else 0x7FFFFFFF + first + 1
