"""What a leader checks of a producer's batches before it appends them, as
Kafka's LogValidator does for appends from clients: every batch's header
(batch.validate_batch, run by Log.validate_as_leader) and then every record.

A CRC only says the bytes arrived as the client sent them; a client that
builds garbage with a valid CRC would otherwise have it acknowledged, stored
and replicated, and every consumer of the partition would fail on it. So the
body is decompressed (the C codecs of kafka_protocol.compression) and its
records walked by a compiled kernel (kafka_protocol.record_check): no Python
runs per record. Nothing is appended unless every batch of the request
passes. Followers do not run this: they append what their leader checked.

Errors, with Kafka's codes: a codec id above 4 UNSUPPORTED_COMPRESSION_TYPE;
a body that does not decompress CORRUPT_MESSAGE; control batches from a
client, transactional batches without a producer id, records that break the
format or do not fill the batch exactly, offset deltas other than 0..n-1,
keyless records in a compacted topic INVALID_RECORD; a CreateTime timestamp
outside message.timestamp.before/after.max.ms INVALID_TIMESTAMP.
Transactional batches of a producer pass here: whether the producer may
write in a transaction is the broker's producer state's question (it holds
the transactions), and transaction markers are control batches, which only
brokers write.
"""
from __future__ import annotations

from typing import Sequence

from kafka_protocol import record_check as rc
from kafka_protocol.batch import BatchHeader, NO_PRODUCER_ID
from kafka_protocol.compression import Codec
from kafka_protocol.errors import InvalidRecordError, InvalidTimestampError, UnsupportedCompressionTypeError

from .config import LogConfig

_MAX_CODEC = max(Codec)


def check_producer_batches(buf, batches: Sequence[tuple[int, BatchHeader]], config: LogConfig,
                           now_ms: int) -> None:
    """Raise the KafkaError for the first bad batch of `batches` ((position in
    `buf`, header) from Log.validate_as_leader: headers and CRCs are checked)."""
    for index, (pos, h) in enumerate(batches):
        _check_attributes(index, pos, h)
    bodies = rc.Bodies.of(buf, batches)
    low, high = timestamp_bounds(config, now_ms)
    b, i, reason = rc.check_producer_bodies(bodies.data, bodies.starts, bodies.ends, bodies.counts,
                                            bodies.base_ts, bodies.max_ts, bodies.append_time,
                                            config.compact, low, high)
    if reason != rc.OK:
        raise _record_error(b, batches[b][0], i, reason, config, now_ms)


def _check_attributes(index: int, pos: int, h: BatchHeader) -> None:
    where = f"batch {index} (at byte {pos})"
    if h.codec > _MAX_CODEC:
        raise UnsupportedCompressionTypeError(f"{where} has compression codec id {h.codec}; "
                                              "Kafka's are 0-4 (none, gzip, snappy, lz4, zstd)")
    if h.is_control:
        raise InvalidRecordError(f"{where} is a control batch: clients may not write control records")
    if h.is_transactional and h.producer_id == NO_PRODUCER_ID:
        raise InvalidRecordError(f"{where} is transactional but has no producer id")


def timestamp_bounds(config: LogConfig, now_ms: int) -> tuple[int, int]:
    """The CreateTime timestamps a record may carry now, clamped to int64."""
    low = max(now_ms - config.timestamp_before_max_ms, rc.INT64_MIN)
    high = min(now_ms + config.timestamp_after_max_ms, rc.INT64_MAX)
    return low, high


def _record_error(index: int, pos: int, record: int, reason: int, config: LogConfig, now_ms: int) -> Exception:
    where = f"batch {index} (at byte {pos}), record {record}"
    if reason == rc.OFFSET_DELTA:
        return InvalidRecordError(f"{where}: its offset delta is not {record}; a producer numbers "
                                  "the records of a batch 0, 1, 2, ...")
    if reason == rc.TRAILING:
        return InvalidRecordError(f"batch {index} (at byte {pos}) has bytes after its last record "
                                  f"(recordsCount {record})")
    if reason == rc.NULL_KEY:
        return InvalidRecordError(f"{where} has no key: a compacted topic cannot take records without a key")
    if reason == rc.TIMESTAMP:
        low, high = timestamp_bounds(config, now_ms)
        return InvalidTimestampError(
            f"{where} has a CreateTime timestamp outside [{low}, {high}] (message.timestamp.before.max.ms="
            f"{config.timestamp_before_max_ms}, message.timestamp.after.max.ms={config.timestamp_after_max_ms})")
    return InvalidRecordError(f"{where} is malformed (a length, varint, offset delta, timestamp or "
                              "header key breaks the record format, or the records run past the batch)")


def warm_up() -> None:
    """Load (or, the first time on a machine, compile) the record kernel now,
    so that no client's first produce waits for it."""
    from kafka_protocol.batch import iter_headers
    from kafka_protocol.records import Record, encode_batch
    data = encode_batch([Record(b"k", b"v", 0)])
    check_producer_batches(data, list(iter_headers(data)), LogConfig(), 0)
