"""Fetch responses (v4-v12) framed by hand: the record batches are never copied
into a buffer of their own.

kio's writer puts every field, the batches included, into a BytesIO, which
is then copied out whole; for the flexible v12 that librdkafka 2.x asks for
it cost more than the rest of serving the Fetch (bench/kafka_clients.py
profiles it: megabytes of batches per answer). Here every field but the
records is packed with struct into small pieces and each partition's
records are handed on as the view of the broker's answer they came in;
codec.encode_response joins header and pieces once.

The layout is Kafka's FetchResponse.json for these versions: error_code and
session_id from v7, log_start_offset from v5, preferred_read_replica from
v11; v12 is flexible (compact strings, arrays and bytes, a tagged-field
section closing every struct) and carries current_leader as the
partition's tag 1 when it names a leader (as Kafka's serializer, a tagged
field at its default is left out). tests/kafka_protocol/test_fetch_response.py
checks every version byte for byte against kio's encoding of the same answer,
for arbitrary answers (hypothesis).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Optional, Sequence

from kio.schema.errors import ErrorCode

from ..varint import unsigned_varint_bytes
from .framing import BytesLike

FIRST_VERSION, LAST_VERSION = 4, 12
FLEXIBLE_FROM = 12
CURRENT_LEADER_TAG = 1
NO_LEADER = (-1, -1)

_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")
_PARTITION_HEAD = struct.Struct(">ihqq")  # partition_index, error_code, high_watermark, last_stable_offset
_I64 = struct.Struct(">q")
_ABORTED = struct.Struct(">qq")  # producer_id, first_offset
_LEADER = struct.Struct(">ii")  # leader_id, leader_epoch
_TOP_V7 = struct.Struct(">ihi")  # throttle_time_ms, error_code, session_id
_NO_TAGS = b"\x00"
# Kafka's code for an error its clients cannot name (kio's table has every other).
_KNOWN_CODES = frozenset(int(code.value) for code in ErrorCode)
_UNKNOWN_SERVER_ERROR = -1


@dataclass(frozen=True, slots=True)
class FetchedPartitionAnswer:
    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: Optional[Sequence[tuple[int, int]]]  # (producer_id, first_offset); None: null
    preferred_read_replica: int
    records: Optional[BytesLike]
    current_leader: Optional[tuple[int, int]] = None  # (leader_id, leader_epoch), v12's tag 1


def encode_fetch_body(version: int, throttle_time_ms: int, error_code: int, session_id: int,
                      topics: Sequence[tuple[str, Sequence[FetchedPartitionAnswer]]]) -> list[BytesLike]:
    """The body (no header, no size) of FetchResponse `version`, in pieces to be joined."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        raise ValueError(f"Fetch v{version} is not framed here")  # our bug: versions.py serves 4-12
    flexible = version >= FLEXIBLE_FROM
    parts: list[BytesLike] = [_TOP_V7.pack(throttle_time_ms, _code(error_code), session_id) if version >= 7
                              else _I32.pack(throttle_time_ms), _array_size(len(topics), flexible)]
    for name, partitions in topics:
        parts.append(_string(name, flexible))
        parts.append(_array_size(len(partitions), flexible))
        for p in partitions:
            _partition(parts, p, version, flexible)
        if flexible:
            parts.append(_NO_TAGS)
    if flexible:
        parts.append(_NO_TAGS)
    return parts


def _partition(parts: list[BytesLike], p: FetchedPartitionAnswer, version: int, flexible: bool) -> None:
    head = [_PARTITION_HEAD.pack(p.partition_index, _code(p.error_code), p.high_watermark, p.last_stable_offset)]
    if version >= 5:
        head.append(_I64.pack(p.log_start_offset))
    aborted = p.aborted_transactions
    if aborted is None:
        head.append(_array_size(None, flexible))
    else:
        head.append(_array_size(len(aborted), flexible))
        for producer_id, first_offset in aborted:
            head.append(_ABORTED.pack(producer_id, first_offset))
            if flexible:
                head.append(_NO_TAGS)
    if version >= 11:
        head.append(_I32.pack(p.preferred_read_replica))
    records = p.records
    if records is None:
        head.append(unsigned_varint_bytes(0) if flexible else _I32.pack(-1))
    else:
        head.append(unsigned_varint_bytes(len(records) + 1) if flexible else _I32.pack(len(records)))
    parts.append(b"".join(head))
    if records:
        parts.append(records)
    if flexible:
        leader = p.current_leader
        if leader is None or tuple(leader) == NO_LEADER:
            parts.append(_NO_TAGS)
        else:  # one tagged field: tag, size, then LeaderIdAndEpoch with its own (empty) tag section
            value = _LEADER.pack(*leader) + _NO_TAGS
            parts.append(b"\x01" + unsigned_varint_bytes(CURRENT_LEADER_TAG) + unsigned_varint_bytes(len(value))
                         + value)


def _code(error_code: int) -> int:
    return error_code if error_code in _KNOWN_CODES else _UNKNOWN_SERVER_ERROR


def _array_size(size: Optional[int], flexible: bool) -> bytes:
    if flexible:
        return unsigned_varint_bytes(0 if size is None else size + 1)
    return _I32.pack(-1 if size is None else size)


def _string(value: str, flexible: bool) -> bytes:
    data = value.encode()
    return (unsigned_varint_bytes(len(data) + 1) if flexible else _I16.pack(len(data))) + data
