"""Encoding and decoding of records inside a v2 batch.

Producers, consumers, the cleaner and the dump tool use this; the broker's
append and fetch paths never do (they work on `batch.BatchHeader` and bytes).

Record layout (all varints zig-zag): length, attributes int8, timestampDelta,
offsetDelta, keyLength, key, valueLength, value, headerCount, then per header
keyLength, key (UTF-8), valueLength, value. A length of -1 means null.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

from . import batch as b
from .compression import Codec, compress, decompress
from .errors import CorruptRecordError, InvalidRecordError
from .varint import read_zigzag, write_zigzag

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, slots=True)
class Record:
    """One record. `offset` is absolute once read from a log; when encoding,
    -1 means "next offset", any other value is kept (the cleaner keeps gaps)."""

    key: bytes | None
    value: bytes | None
    timestamp: int = b.NO_TIMESTAMP
    headers: Headers = ()
    offset: int = -1


@dataclass(frozen=True, slots=True)
class DecodedBatch:
    header: b.BatchHeader
    records: list[Record] = field(default_factory=list)


def encode_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    codec: Codec = Codec.NONE,
    log_append_time: bool = False,
    producer_id: int = b.NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = b.NO_SEQUENCE,
    partition_leader_epoch: int = b.NO_PARTITION_LEADER_EPOCH,
    transactional: bool = False,
    control: bool = False,
    delete_horizon_ms: int | None = None,
    last_offset_delta: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """Build one batch. With `delete_horizon_ms` (KIP-534) the base timestamp
    carries the horizon and record timestamps stay exact through the deltas.

    The cleaner passes `last_offset_delta` (and `max_timestamp`) to keep a
    batch's original offset span when records were removed from it, down to
    an empty batch."""
    if not records and last_offset_delta is None:
        raise InvalidRecordError("a batch needs at least one record")
    timestamps = [r.timestamp for r in records] or [b.NO_TIMESTAMP]
    max_ts = max(timestamps) if max_timestamp is None else max_timestamp
    base_ts = min(timestamps) if delete_horizon_ms is None else delete_horizon_ms
    body = bytearray()
    last_delta = -1
    for i, r in enumerate(records):
        delta = i if r.offset < 0 else r.offset - base_offset
        if delta <= last_delta:
            raise InvalidRecordError(f"record offsets must increase within a batch (delta {delta} after {last_delta})")
        last_delta = delta
        _write_record(body, r, r.timestamp - base_ts, delta)
    if last_offset_delta is not None:
        if last_offset_delta < last_delta:
            raise InvalidRecordError(f"last_offset_delta {last_offset_delta} is below the last record's {last_delta}")
        last_delta = last_offset_delta
    payload = compress(codec, bytes(body))
    attributes = int(codec)
    if log_append_time:
        attributes |= b.TIMESTAMP_TYPE_MASK
    if transactional:
        attributes |= b.TRANSACTIONAL_MASK
    if control:
        attributes |= b.CONTROL_MASK
    if delete_horizon_ms is not None:
        attributes |= b.DELETE_HORIZON_MASK
    size = b.HEADER_SIZE + len(payload)
    out = bytearray(size)
    b.HEADER.pack_into(
        out, 0, base_offset, size - b.LOG_OVERHEAD, partition_leader_epoch, b.MAGIC, 0, attributes,
        last_delta, base_ts, max_ts, producer_id, producer_epoch, base_sequence, len(records),
    )
    out[b.HEADER_SIZE:] = payload
    crc = b.compute_crc(out, 0, size)
    out[b.CRC_OFFSET:b.CRC_OFFSET + 4] = crc.to_bytes(4, "big")
    return bytes(out)


def _write_record(out: bytearray, r: Record, ts_delta: int, offset_delta: int) -> None:
    rec = bytearray(b"\x00")  # attributes: unused, always 0
    write_zigzag(rec, ts_delta)
    write_zigzag(rec, offset_delta)
    _write_bytes(rec, r.key)
    _write_bytes(rec, r.value)
    write_zigzag(rec, len(r.headers))
    for hkey, hval in r.headers:
        _write_bytes(rec, hkey.encode("utf-8"))
        _write_bytes(rec, hval)
    write_zigzag(out, len(rec))
    out += rec


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        write_zigzag(out, -1)
    else:
        write_zigzag(out, len(data))
        out += data


def decode_batch(buf: bytes | bytearray | memoryview, pos: int = 0, *, verify_crc: bool = True) -> DecodedBatch:
    """Decode the batch at `pos` into records with absolute offsets."""
    h = b.validate_batch(buf, pos) if verify_crc else b.parse_header(buf, pos)
    if not verify_crc:
        b.check_header(h, len(buf) - pos, pos)
    body = decompress(h.codec, memoryview(buf)[pos + b.HEADER_SIZE:pos + h.size])
    return DecodedBatch(h, list(_iter_records(h, body)))


def _iter_records(h: b.BatchHeader, body: bytes) -> Iterator[Record]:
    pos = 0
    end = len(body)
    for i in range(h.records_count):
        length, pos = read_zigzag(body, pos)
        if length < 0 or pos + length > end:
            raise CorruptRecordError(f"record {i} of batch at offset {h.base_offset} runs past the batch end")
        rec_end = pos + length
        pos += 1  # attributes
        ts_delta, pos = read_zigzag(body, pos)
        offset_delta, pos = read_zigzag(body, pos)
        key, pos = _read_bytes(body, pos, rec_end)
        value, pos = _read_bytes(body, pos, rec_end)
        count, pos = read_zigzag(body, pos)
        if count < 0:
            raise CorruptRecordError(f"record {i} of batch at offset {h.base_offset} has {count} headers")
        headers = []
        for _ in range(count):
            hkey, pos = _read_bytes(body, pos, rec_end)
            hval, pos = _read_bytes(body, pos, rec_end)
            if hkey is None:
                raise CorruptRecordError(f"record {i} of batch at offset {h.base_offset} has a null header key")
            try:
                headers.append((hkey.decode("utf-8"), hval))
            except UnicodeDecodeError:
                raise CorruptRecordError("header key is not UTF-8") from None
        if pos != rec_end:
            raise CorruptRecordError(f"record {i} of batch at offset {h.base_offset} has {rec_end - pos} stray bytes")
        if offset_delta < 0 or offset_delta > h.last_offset_delta:
            raise CorruptRecordError(f"record {i} has offsetDelta {offset_delta} outside the batch")
        timestamp = h.max_timestamp if h.is_log_append_time else h.base_timestamp + ts_delta
        if not -2**63 <= timestamp < 2**63:
            raise CorruptRecordError(f"record {i} of batch at offset {h.base_offset} has a timestamp beyond int64")
        yield Record(key, value, timestamp, tuple(headers), h.base_offset + offset_delta)
    if pos != end:
        raise CorruptRecordError(f"batch at offset {h.base_offset} has {end - pos} bytes after its last record")


def _read_bytes(buf: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    n, pos = read_zigzag(buf, pos)
    if n < 0:
        if n != -1:
            raise CorruptRecordError(f"negative length {n}")
        return None, pos
    if pos + n > end:
        raise CorruptRecordError("field runs past the end of its record")
    return buf[pos:pos + n], pos + n


def iter_batches(buf: bytes | bytearray | memoryview, *, verify_crc: bool = True) -> Iterator[DecodedBatch]:
    """Decode every batch of concatenated batch bytes (a fetch response, a file)."""
    for pos, _ in b.iter_headers(buf, validate=verify_crc):
        yield decode_batch(buf, pos, verify_crc=False)


def iter_records(buf: bytes | bytearray | memoryview) -> Iterable[Record]:
    for decoded in iter_batches(buf):
        yield from decoded.records
