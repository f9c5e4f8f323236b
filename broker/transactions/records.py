"""The records of __transaction_state, in Kafka's binary schemas (its
TransactionLogKey and TransactionLogValue), so Kafka's tools would read them.

    key    int16 version 0, TransactionalId (int16-length string)
    value  int16 version, then
           v0 (non-flexible): ProducerId int64, ProducerEpoch int16,
              TransactionTimeoutMs int32, TransactionStatus int8,
              TransactionPartitions (int32-length array, -1 = null) of
              {Topic string, PartitionIds int32-length array of int32},
              TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64
           v1 (flexible): the same fields with compact strings and arrays, an
              (empty) tagged section after each partition entry, and at the end
              the tagged fields PreviousProducerId (tag 0, int64, default -1),
              NextProducerId (tag 1, int64, default -1) and
              ClientTransactionVersion (tag 2, int16, default 0), each written
              only when it differs from its default (as Kafka's generated code)
    null   a tombstone: the id expired (transactional.id.expiration.ms)

We write v1 and read both. TransactionPartitions is null while the id is
Empty, as Kafka writes it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import IntEnum
from typing import Optional

from kafka_protocol.schema_types import Reader, SchemaError, Writer

KEY_VERSION = 0
VALUE_VERSION = 1
NO_PRODUCER_ID = -1
TRANSACTION_VERSION_2 = 2  # KIP-890: every transaction ends with an epoch bump
TAG_PREVIOUS_PRODUCER_ID, TAG_NEXT_PRODUCER_ID, TAG_CLIENT_TRANSACTION_VERSION = 0, 1, 2

TopicPartition = tuple[str, int]


class TxnState(IntEnum):
    """Kafka's TransactionState ids (the TransactionStatus field)."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """Kafka's name of the state (DescribeTransactions, ListTransactions filters)."""
        return "".join(part.capitalize() for part in self.name.split("_"))


STATE_BY_NAME = {s.kafka_name: s for s in TxnState}


@dataclass(frozen=True, slots=True)
class TxnValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition] = frozenset()
    last_update_ms: int = -1
    start_ms: int = -1
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = TRANSACTION_VERSION_2

    def replace(self, **changes) -> "TxnValue":
        return dataclasses.replace(self, **changes)


Record = tuple[str, Optional[TxnValue]]  # (transactional id, value or None = tombstone)


def encode_key(transactional_id: str) -> bytes:
    return Writer().int16(KEY_VERSION).string(transactional_id).bytes()


def decode_key(data: bytes) -> str:
    r = Reader(data)
    version = r.int16()
    if version != KEY_VERSION:
        raise SchemaError(f"TransactionLogKey version {version}: only 0 exists")
    return r.string()


def _by_topic(partitions: frozenset[TopicPartition]) -> list[tuple[str, list[int]]]:
    topics: dict[str, list[int]] = {}
    for topic, index in sorted(partitions):
        topics.setdefault(topic, []).append(index)
    return sorted(topics.items())


def encode_value(value: Optional[TxnValue]) -> Optional[bytes]:
    if value is None:
        return None
    w = Writer().int16(VALUE_VERSION).int64(value.producer_id).int16(value.producer_epoch)
    w.int32(value.timeout_ms).int8(int(value.state))
    if value.state == TxnState.EMPTY:
        w.uvarint(0)  # null
    else:
        w.compact_array(_by_topic(value.partitions), lambda w, t: w.compact_string(t[0]).compact_array(
            t[1], Writer.int32).no_tagged_fields())
    w.int64(value.last_update_ms).int64(value.start_ms)
    tagged: dict[int, bytes] = {}
    if value.previous_producer_id != NO_PRODUCER_ID:
        tagged[TAG_PREVIOUS_PRODUCER_ID] = Writer().int64(value.previous_producer_id).bytes()
    if value.next_producer_id != NO_PRODUCER_ID:
        tagged[TAG_NEXT_PRODUCER_ID] = Writer().int64(value.next_producer_id).bytes()
    if value.client_transaction_version != 0:
        tagged[TAG_CLIENT_TRANSACTION_VERSION] = Writer().int16(value.client_transaction_version).bytes()
    return w.tagged_fields(tagged).bytes()


def _fixed_tag(data: bytes, read, size: int, name: str) -> int:
    if len(data) != size:
        raise SchemaError(f"tagged field {name}: {len(data)} bytes, expected {size}")
    return read(Reader(data))


def decode_value(data: Optional[bytes]) -> Optional[TxnValue]:
    if data is None:
        return None
    r = Reader(data)
    version = r.int16()
    if version not in (0, 1):
        raise SchemaError(f"TransactionLogValue version {version}: only 0 and 1 exist")
    flexible = version >= 1
    producer_id, epoch, timeout_ms, status = r.int64(), r.int16(), r.int32(), r.int8()
    try:
        state = TxnState(status)
    except ValueError:
        raise SchemaError(f"unknown transaction status {status}") from None
    partitions: set[TopicPartition] = set()
    count = (r.uvarint() - 1) if flexible else r.int32()
    if count > len(data):
        raise SchemaError(f"{count} topics in {len(data)} bytes")
    for _ in range(max(count, 0)):  # -1: null
        topic = r.compact_string() if flexible else r.string()
        if topic is None:
            raise SchemaError("null topic name")
        n = (r.uvarint() - 1) if flexible else r.int32()
        if not 0 <= n <= len(data):
            raise SchemaError(f"{n} partition ids of {topic!r}")
        partitions.update((topic, r.int32()) for _ in range(n))
        if flexible:
            r.skip_tagged_fields()
    last_update_ms, start_ms = r.int64(), r.int64()
    value = TxnValue(producer_id, epoch, timeout_ms, state, frozenset(partitions), last_update_ms, start_ms,
                     client_transaction_version=0)
    if flexible:
        tags = r.tagged_fields()
        value = value.replace(
            previous_producer_id=_fixed_tag(tags[0], Reader.int64, 8, "PreviousProducerId") if 0 in tags
            else NO_PRODUCER_ID,
            next_producer_id=_fixed_tag(tags[1], Reader.int64, 8, "NextProducerId") if 1 in tags
            else NO_PRODUCER_ID,
            client_transaction_version=_fixed_tag(tags[2], Reader.int16, 2, "ClientTransactionVersion")
            if 2 in tags else 0)
    if r.pos != len(data):
        raise SchemaError(f"{len(data) - r.pos} bytes after the TransactionLogValue")
    return value


def encode_record(record: Record) -> tuple[bytes, Optional[bytes]]:
    return encode_key(record[0]), encode_value(record[1])


def decode_record(key: Optional[bytes], value: Optional[bytes]) -> Optional[Record]:
    """A record of the log, or None for a record without a key. Raises SchemaError."""
    if key is None:
        return None
    return decode_key(key), decode_value(value)
