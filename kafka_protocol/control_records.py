"""Kafka's control records: the records of a batch whose control attribute
bit is set, written by brokers and the metadata quorum, never by clients.

A control record's key is `version int16 (0), type int16` (ControlRecordType).
Types: ABORT (0) and COMMIT (1) end a transaction; LEADER_CHANGE (2),
SNAPSHOT_HEADER (3) and SNAPSHOT_FOOTER (4) belong to the metadata quorum's
log and snapshots. A control batch holds exactly one control record.

A transaction marker (COMMIT or ABORT, Kafka's EndTransactionMarker) is a
control batch that is also transactional, carrying the producer id and epoch
of the transaction it ends and no sequence; its value is
`version int16 (0), coordinator_epoch int32` - the leader epoch of the
coordinator's __transaction_state partition, so a partition can refuse a
marker from a deposed coordinator.
"""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Optional

from . import batch as b
from .errors import CorruptRecordError, KafkaError
from .records import Record, encode_batch, iter_batches


class ControlType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5  # KIP-853: the metadata quorum's kraft.version
    KRAFT_VOTERS = 6  # KIP-853: the metadata quorum's voter set (VotersRecord)


_KEY = struct.Struct(">hh")
_KEY_VERSION = 0
_MARKER_VALUE = struct.Struct(">hi")
_MARKER_VERSION = 0


def control_key(control_type: int) -> bytes:
    return _KEY.pack(_KEY_VERSION, control_type)


def control_type(key: Optional[bytes]) -> Optional[int]:
    """The type a control record key names; None if it is not a version-0 control key."""
    if key is None or len(key) != _KEY.size:
        return None
    version, kind = _KEY.unpack(key)
    return kind if version == _KEY_VERSION else None


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """What a COMMIT or ABORT control batch says (the producer is in its header)."""

    committed: bool
    coordinator_epoch: int


def encode_txn_marker(producer_id: int, producer_epoch: int, committed: bool, coordinator_epoch: int,
                      timestamp: int, *, base_offset: int = 0,
                      partition_leader_epoch: int = b.NO_PARTITION_LEADER_EPOCH) -> bytes:
    """One COMMIT/ABORT control batch, as Kafka's brokers write it."""
    kind = ControlType.COMMIT if committed else ControlType.ABORT
    record = Record(key=control_key(kind), value=_MARKER_VALUE.pack(_MARKER_VERSION, coordinator_epoch),
                    timestamp=timestamp)
    return encode_batch([record], base_offset=base_offset, producer_id=producer_id,
                        producer_epoch=producer_epoch, transactional=True, control=True,
                        partition_leader_epoch=partition_leader_epoch)


def decode_txn_marker(batch_bytes: bytes | memoryview) -> Optional[TxnMarker]:
    """The marker a control batch carries; None for a control batch of another
    type. Raises CorruptRecordError for a marker that does not decode, whatever
    is wrong with it (an unknown magic or codec included)."""
    try:
        return _decode_txn_marker(batch_bytes)
    except CorruptRecordError:
        raise
    except KafkaError as exc:
        raise CorruptRecordError(f"not a readable transaction marker: {exc}") from None


def _decode_txn_marker(batch_bytes: bytes | memoryview) -> Optional[TxnMarker]:
    for parsed in iter_batches(batch_bytes):
        if not parsed.header.is_control:
            raise CorruptRecordError("not a control batch")
        if len(parsed.records) != 1:
            raise CorruptRecordError(f"a control batch holds one record, not {len(parsed.records)}")
        record = parsed.records[0]
        kind = control_type(record.key)
        if kind not in (ControlType.COMMIT, ControlType.ABORT):
            return None
        value = record.value
        if value is None or len(value) < _MARKER_VALUE.size:
            raise CorruptRecordError("a transaction marker without its version and coordinator epoch")
        version, coordinator_epoch = _MARKER_VALUE.unpack_from(value)
        if version < 0:
            raise CorruptRecordError(f"transaction marker version {version}")
        return TxnMarker(kind == ControlType.COMMIT, coordinator_epoch)
    raise CorruptRecordError("no batch")
