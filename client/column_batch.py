"""Producer batches made from Arrow columns (Producer.produce_arrow): rows
cut into batches per partition and their records sections encoded by one
compiled pass (kafka_protocol.record_encode.encode_bodies), compressed
once; no Python object per record. Such a batch then travels as any other
ProducerBatch (accumulator, sender, retries, idempotent sequences,
transactions): only its header is written when it is sent, since the
producer id, epoch and base sequence are known only then.

Which partition a row goes to, as the per-record API decides it: the
`partition` argument, else a `partition` column, else the key's murmur2
hash (Kafka's default partitioner), else, keyless, batches spread over the
partitions in turn (KIP-480's sticky partitioner moves on per batch too).
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pyarrow as pa

from kafka_protocol import batch as b
from kafka_protocol.columnar_records import binary_parts
from kafka_protocol.record_encode import encode_bodies
from kafka_protocol.compression import Codec, compress

from kafka_protocol.errors import Errors, MessageTooLargeError

from .errors import error_for_code
from .partitioner import key_partition
from .producer_batch import RECORD_OVERHEAD_UPPER_BOUND, ProducerBatch, RecordMetadata
from .record_future import Settlement


@dataclass(frozen=True)
class EncodedBatch:
    partition: int
    payload: bytes       # the records section, compressed with the producer's codec
    count: int
    first_timestamp: int
    base_timestamp: int
    max_timestamp: int


def encode_table(table: Any, partitions: int, partition: Optional[int], *, batch_size: int,
                 max_record_size: int, codec: Codec, start: int = 0) -> list[EncodedBatch]:
    """The rows of `table` (a pyarrow Table or RecordBatch with a binary
    `value` column; optional `key`, `partition` and `timestamp` (ms or an
    Arrow timestamp) columns) as encoded batches of at most about
    `batch_size` bytes; `start`: the first partition keyless rows go to."""
    columns = {name: _column(table, name) for name in table.schema.names}
    if "headers" in columns:
        raise ValueError("produce_arrow does not write headers; use produce() for records with headers")
    if "value" not in columns:
        raise ValueError("produce_arrow needs a 'value' column")
    n = table.num_rows
    if not n:
        return []
    values = binary_parts(columns["value"])
    keys = binary_parts(columns["key"]) if "key" in columns and columns["key"].null_count < n else None
    sizes = RECORD_OVERHEAD_UPPER_BOUND + np.diff(values[0]) + (np.diff(keys[0]) if keys else 0)
    biggest = int(sizes.max())
    if biggest > max_record_size:
        raise MessageTooLargeError(f"a row is {b.HEADER_SIZE + biggest} bytes when serialized, larger than "
                                   f"{max_record_size + b.HEADER_SIZE}")
    stamps = _timestamps(columns.get("timestamp"), n)
    targets = _partitions(columns, keys, n, partitions, partition)
    per_batch = max(1, batch_size // max(1, int(sizes.mean())))
    if targets is None:  # keyless rows: consecutive runs, one batch each, the partitions in turn
        rows = np.arange(n, dtype=np.int64)
        bounds = np.append(np.arange(0, n, per_batch, dtype=np.int64), n)
        owners = [(start + i) % partitions for i in range(len(bounds) - 1)]
    else:
        rows = np.argsort(targets, kind="stable").astype(np.int64)
        ordered = targets[rows]
        cuts = np.flatnonzero(np.diff(ordered)) + 1
        bounds_list, owners = [], []
        for lo, hi in zip(itertools.chain([0], cuts), itertools.chain(cuts, [n])):
            for cut in range(int(lo), int(hi), per_batch):
                bounds_list.append(cut)
                owners.append(int(ordered[cut]))
        bounds = np.asarray([*bounds_list, n], dtype=np.int64)
    bodies = encode_bodies(keys, values, stamps, rows, bounds)
    return [EncodedBatch(owners[i], compress(codec, bodies.body(i)), int(bodies.counts[i]),
                         int(stamps[rows[bounds[i]]]), int(bodies.base_ts[i]), int(bodies.max_ts[i]))
            for i in range(len(owners))]


def _column(table: Any, name: str) -> pa.Array:
    column = table.column(name)
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _timestamps(column: Optional[pa.Array], n: int) -> np.ndarray:
    if column is None:
        return np.full(n, int(time.time() * 1000), dtype=np.int64)
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("ms", tz=column.type.tz)).cast(pa.int64())
    if column.null_count:
        raise ValueError("the 'timestamp' column has nulls")
    return column.to_numpy(zero_copy_only=False).astype(np.int64)


def _partitions(columns: dict[str, pa.Array], keys: Optional[tuple], n: int, partitions: int,
                partition: Optional[int]) -> Optional[np.ndarray]:
    """Each row's partition; None: keyless rows the caller spreads."""
    if partition is not None:
        targets = np.full(n, partition, dtype=np.int64)
    elif "partition" in columns:
        if columns["partition"].null_count:
            raise ValueError("the 'partition' column has nulls")
        targets = columns["partition"].to_numpy(zero_copy_only=False).astype(np.int64)
    elif keys is not None:
        offsets, data, valid = keys
        raw = data.tobytes()
        sticky = 0  # keyless rows among keyed ones: one partition for the call
        targets = np.asarray([key_partition(raw[offsets[i]:offsets[i + 1]], partitions) if valid[i] else sticky
                              for i in range(n)], dtype=np.int64)
    else:
        return None
    bad = (targets < 0) | (targets >= partitions)
    if bad.any():
        raise error_for_code(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                             f"partition {int(targets[bad][0])} is not in the range [0...{partitions - 1}]")
    return targets


class ColumnBatch(ProducerBatch):
    """A ProducerBatch whose records are already encoded (encode_table)."""

    __slots__ = ("encoded", "codec")

    def __init__(self, topic: str, encoded: EncodedBatch, codec: Codec, serial: int, created: float,
                 settlement: Settlement) -> None:
        super().__init__(topic, encoded.partition, serial, created, settlement)
        self.encoded, self.codec = encoded, codec
        self.size = b.HEADER_SIZE + len(encoded.payload)
        self.closed = True

    @property
    def record_count(self) -> int:
        return self.encoded.count

    def has_room(self, size: int, batch_size: int) -> bool:
        return False

    def encode(self, codec: Codec, transactional: bool = False) -> bytes:
        if codec != self.codec:  # the payload was compressed with the producer's codec, which does not change
            raise ValueError(f"batch compressed with {self.codec.name}, asked for {codec.name}")
        identity = (self.producer_id, self.producer_epoch, self.base_sequence)
        if self._encoded is None or identity != self._encoded_for:
            e = self.encoded
            self._encoded = self.seal(e.payload, e.count, e.base_timestamp, e.max_timestamp, codec, transactional)
            self._encoded_for = identity
        return self._encoded

    def metadata(self, index: int) -> RecordMetadata:
        """Where the batch's first row landed (its only future)."""
        base, append_time = self.base_offset, self.log_append_time
        return RecordMetadata(self.topic, self.partition, base + index if base >= 0 else -1,
                              append_time if append_time >= 0 else self.encoded.first_timestamp)

    def __repr__(self) -> str:
        return (f"ColumnBatch({self.topic}-{self.partition} #{self.serial}, {self.encoded.count} records, "
                f"seq {self.base_sequence}, attempts {self.attempts})")
