"""Encoding and decoding of records inside a v2 batch.

Producers, consumers, the cleaner and the dump tool use this; the broker's
append and fetch paths never do (they work on `batch.BatchHeader` and bytes).

Record layout (all varints zig-zag): length, attributes int8, timestampDelta,
offsetDelta, keyLength, key, valueLength, value, headerCount, then per header
keyLength, key (UTF-8), valueLength, value. A length of -1 means null.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, NamedTuple, Sequence

import crc32c

from . import batch as b
from .compression import Codec, compress, decompress
from .errors import CorruptRecordError, InvalidRecordError
from .varint import SMALL_ZIGZAG, TABLE_BIAS, read_zigzag, zigzag_bytes

Headers = tuple[tuple[str, bytes | None], ...]


class Record(NamedTuple):
    """One record. `offset` is absolute once read from a log; when encoding,
    -1 means "next offset", any other value is kept (the cleaner keeps gaps).

    A named tuple rather than a frozen dataclass: clients make and unpack
    one per record, and a tuple is several times cheaper to build."""

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
    # r[2], Record.timestamp: the producer's batches hold plain tuples in Record's field order
    # (cheaper to build than named tuples, and the garbage collector stops tracking them).
    timestamps = [r[2] for r in records] or [b.NO_TIMESTAMP]
    max_ts = max(timestamps) if max_timestamp is None else max_timestamp
    base_ts = min(timestamps) if delete_horizon_ms is None else delete_horizon_ms
    body, last_delta = _encode_records(records, base_offset, base_ts)
    if last_offset_delta is not None:
        if last_offset_delta < last_delta:
            raise InvalidRecordError(f"last_offset_delta {last_offset_delta} is below the last record's {last_delta}")
        last_delta = last_offset_delta
    payload = compress(codec, body)
    return seal_batch(payload, len(records), base_offset=base_offset, codec=codec, log_append_time=log_append_time,
                      producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
                      partition_leader_epoch=partition_leader_epoch, transactional=transactional, control=control,
                      delete_horizon=delete_horizon_ms is not None, last_offset_delta=last_delta,
                      base_timestamp=base_ts, max_timestamp=max_ts)


def seal_batch(payload: bytes, count: int, *, base_offset: int, codec: Codec, log_append_time: bool,
               producer_id: int, producer_epoch: int, base_sequence: int, partition_leader_epoch: int,
               transactional: bool, control: bool, delete_horizon: bool, last_offset_delta: int,
               base_timestamp: int, max_timestamp: int) -> bytes:
    """A batch around its (compressed) records section: the header, then the
    CRC-32C of everything from the attributes on (encode_batch's last step,
    and the columnar encoder's)."""
    attributes = int(codec)
    if log_append_time:
        attributes |= b.TIMESTAMP_TYPE_MASK
    if transactional:
        attributes |= b.TRANSACTIONAL_MASK
    if control:
        attributes |= b.CONTROL_MASK
    if delete_horizon:
        attributes |= b.DELETE_HORIZON_MASK
    size = b.HEADER_SIZE + len(payload)
    header = bytearray(b.HEADER_SIZE)
    b.HEADER.pack_into(
        header, 0, base_offset, size - b.LOG_OVERHEAD, partition_leader_epoch, b.MAGIC, 0, attributes,
        last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, count,
    )
    # The CRC of the header's tail, continued over the payload: the payload is copied once, by the join.
    crc = crc32c.crc32c(payload, crc32c.crc32c(memoryview(header)[b.ATTRIBUTES_OFFSET:]))
    header[b.CRC_OFFSET:b.CRC_OFFSET + 4] = crc.to_bytes(4, "big")
    return b"".join((header, payload))


_NULL = zigzag_bytes(-1)       # the length of a null key, value or header value
_NO_HEADERS = zigzag_bytes(0)
_ATTRIBUTES = b"\x00"          # a record's attributes byte: unused, always 0


def _encode_records(records: Sequence[Record], base_offset: int, base_ts: int) -> tuple[bytes, int]:
    """The records section of a batch, and the last record's offset delta.

    One pass, no helper call per record: each record's fields are joined
    once (its length prefix needs its size) and the batch once at the end.
    Varints of small values (nearly all lengths and deltas) are table
    look-ups, inlined for speed."""
    small, bias, encode_long = SMALL_ZIGZAG, TABLE_BIAS, zigzag_bytes
    parts: list[bytes] = []
    extend, join = parts.extend, b"".join
    last_delta = -1
    for i, (key, value, timestamp, headers, offset) in enumerate(records):
        delta = i if offset < 0 else offset - base_offset
        if delta <= last_delta:
            raise InvalidRecordError(f"record offsets must increase within a batch (delta {delta} after {last_delta})")
        last_delta = delta
        ts_delta = timestamp - base_ts
        if key is None:
            key_length, key = _NULL, b""
        else:
            n = len(key)
            key_length = small[n + bias] if n < bias else encode_long(n)
        if value is None:
            value_length, value = _NULL, b""
        else:
            n = len(value)
            value_length = small[n + bias] if n < bias else encode_long(n)
        record = join((_ATTRIBUTES,
                       small[ts_delta + bias] if -bias <= ts_delta < bias else encode_long(ts_delta),
                       small[delta + bias] if delta < bias else encode_long(delta),
                       key_length, key, value_length, value,
                       _encode_headers(headers) if headers else _NO_HEADERS))
        n = len(record)
        extend((small[n + bias] if n < bias else encode_long(n), record))
    return b"".join(parts), last_delta


def _encode_headers(headers: Headers) -> bytes:
    """Header count, then each header's key (UTF-8) and value."""
    small, bias, encode_long = SMALL_ZIGZAG, TABLE_BIAS, zigzag_bytes
    parts = [encode_long(len(headers))]
    for hkey, hval in headers:
        raw = hkey.encode("utf-8")
        n = len(raw)
        parts += (small[n + bias] if n < bias else encode_long(n)), raw
        if hval is None:
            parts.append(_NULL)
        else:
            n = len(hval)
            parts += (small[n + bias] if n < bias else encode_long(n)), hval
    return b"".join(parts)


def decode_batch(buf: bytes | bytearray | memoryview, pos: int = 0, *, verify_crc: bool = True) -> DecodedBatch:
    """Decode the batch at `pos` into records with absolute offsets."""
    h = b.validate_batch(buf, pos) if verify_crc else b.parse_header(buf, pos)
    if not verify_crc:
        b.check_header(h, len(buf) - pos, pos)
    body = decompress(h.codec, memoryview(buf)[pos + b.HEADER_SIZE:pos + h.size])
    return DecodedBatch(h, _decode_records(h, body))


# The value of each one-byte varint (high bit clear), indexed by the byte.
_ONE_BYTE = tuple((u >> 1) ^ -(u & 1) for u in range(0x80))
_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1
_new_tuple = tuple.__new__


def _decode_records(h: b.BatchHeader, body: bytes) -> list[Record]:
    """Every record of a batch's (decompressed) records section.

    One pass with everything bound to locals. Timestamp and offset deltas
    are mostly one-byte varints: those are read inline with a table, longer
    ones through read_zigzag (which has a two-byte fast path). Reads index
    `body` unchecked where a bad length could run past its end: the
    IndexError that follows becomes a CorruptRecordError. Records are built
    with tuple.__new__, which skips the named tuple's argument parsing."""
    read, one, new, field = read_zigzag, _ONE_BYTE, _new_tuple, _read_field
    base_offset, last_delta = h.base_offset, h.last_offset_delta
    base_ts = h.base_timestamp
    append_ts = h.max_timestamp if h.is_log_append_time else None
    records: list[Record] = []
    append = records.append
    pos, end = 0, len(body)
    i = 0
    try:
        for i in range(h.records_count):
            length, pos = read(body, pos)
            rec_end = pos + length
            if length < 0 or rec_end > end:
                raise CorruptRecordError(f"record {i} of batch at offset {base_offset} runs past the batch end")
            pos += 1  # attributes: unused
            v = body[pos]
            if v < 0x80:
                ts_delta, pos = one[v], pos + 1
            else:
                ts_delta, pos = read(body, pos)
            v = body[pos]
            if v < 0x80:
                offset_delta, pos = one[v], pos + 1
            else:
                offset_delta, pos = read(body, pos)
            key, pos = field(body, pos, rec_end)
            value, pos = field(body, pos, rec_end)
            if body[pos] == 0:  # no headers
                headers: Headers = ()
                pos += 1
            else:
                headers, pos = _read_headers(body, pos, rec_end)
            if pos != rec_end:
                raise CorruptRecordError(f"record {i} of batch at offset {base_offset} has {rec_end - pos} stray bytes")
            if not 0 <= offset_delta <= last_delta:
                raise CorruptRecordError(f"record {i} has offsetDelta {offset_delta} outside the batch")
            timestamp = base_ts + ts_delta if append_ts is None else append_ts
            if not _INT64_MIN <= timestamp <= _INT64_MAX:
                raise CorruptRecordError(f"record {i} of batch at offset {base_offset} has a timestamp beyond int64")
            append(new(Record, (key, value, timestamp, headers, base_offset + offset_delta)))
    except IndexError:  # a read past the section's end
        raise CorruptRecordError(f"record {i} of batch at offset {base_offset} runs past the batch end") from None
    if pos != end:
        raise CorruptRecordError(f"batch at offset {base_offset} has {end - pos} bytes after its last record")
    return records


def _bad_length(length: int) -> CorruptRecordError:
    """The error for a field length that is neither null (-1) nor inside its record."""
    if length < 0:
        return CorruptRecordError(f"negative length {length}")
    return CorruptRecordError("field runs past the end of its record")


def _read_headers(body: bytes, pos: int, rec_end: int) -> tuple[Headers, int]:
    """A record's header count and headers (key UTF-8, value bytes or null)."""
    count, pos = read_zigzag(body, pos)
    if count < 0:
        raise CorruptRecordError(f"record has {count} headers")
    headers = []
    for _ in range(count):
        hkey, pos = _read_field(body, pos, rec_end)
        if hkey is None:
            raise CorruptRecordError("record has a null header key")
        hval, pos = _read_field(body, pos, rec_end)
        try:
            headers.append((hkey.decode("utf-8"), hval))
        except UnicodeDecodeError:
            raise CorruptRecordError("header key is not UTF-8") from None
    return tuple(headers), pos


def _read_field(body: bytes, pos: int, rec_end: int) -> tuple[bytes | None, int]:
    """A length-prefixed byte field (-1: null) that must end inside its record."""
    v = body[pos]
    if v < 0x80:
        n, pos = _ONE_BYTE[v], pos + 1
    else:
        n, pos = read_zigzag(body, pos)
    if 0 <= n and pos + n <= rec_end:
        return body[pos:pos + n], pos + n
    if n == -1:
        return None, pos
    raise _bad_length(n)


def iter_batches(buf: bytes | bytearray | memoryview, *, verify_crc: bool = True) -> Iterator[DecodedBatch]:
    """Decode every batch of concatenated batch bytes (a fetch response, a file)."""
    for pos, _ in b.iter_headers(buf, validate=verify_crc):
        yield decode_batch(buf, pos, verify_crc=False)


def iter_records(buf: bytes | bytearray | memoryview) -> Iterable[Record]:
    for decoded in iter_batches(buf):
        yield from decoded.records
