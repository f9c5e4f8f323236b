"""__transaction_state records against bytes built by hand from Kafka's
TransactionLogKey / TransactionLogValue schemas."""
from __future__ import annotations

import struct

import pytest

from broker.transactions.records import (TxnState, TxnValue, decode_key, decode_record, decode_value, encode_key,
                                         encode_record, encode_value)
from kafka_protocol.schema_types import SchemaError

ONGOING = TxnValue(producer_id=7, producer_epoch=3, timeout_ms=60000, state=TxnState.ONGOING,
                   partitions=frozenset({("b", 1), ("a", 2), ("a", 0)}), last_update_ms=1000, start_ms=900)


def v1_bytes(*, status: int, topics, tags: bytes) -> bytes:
    out = struct.pack(">hqhib", 1, 7, 3, 60000, status)
    if topics is None:
        out += b"\x00"
    else:
        out += bytes([len(topics) + 1])
        for name, ids in topics:
            out += bytes([len(name) + 1]) + name.encode() + bytes([len(ids) + 1])
            out += b"".join(struct.pack(">i", i) for i in ids) + b"\x00"
    return out + struct.pack(">qq", 1000, 900) + tags


def test_the_key_is_version_0_and_an_int16_string() -> None:
    assert encode_key("tx-1") == b"\x00\x00\x00\x04tx-1"
    assert decode_key(b"\x00\x00\x00\x04tx-1") == "tx-1"
    with pytest.raises(SchemaError):
        decode_key(b"\x00\x01\x00\x04tx-1")


def test_v1_is_written_with_topics_sorted_and_only_non_default_tags() -> None:
    # ClientTransactionVersion 2 is the only tag differing from its default.
    tags = b"\x01" + b"\x02\x02" + struct.pack(">h", 2)
    assert encode_value(ONGOING) == v1_bytes(status=1, topics=[("a", [0, 2]), ("b", [1])], tags=tags)
    assert decode_value(encode_value(ONGOING)) == ONGOING


def test_previous_and_next_producer_ids_are_tags_0_and_1() -> None:
    value = ONGOING.replace(state=TxnState.PREPARE_COMMIT, previous_producer_id=5, next_producer_id=9,
                            client_transaction_version=0)
    tags = b"\x02" + b"\x00\x08" + struct.pack(">q", 5) + b"\x01\x08" + struct.pack(">q", 9)
    assert encode_value(value) == v1_bytes(status=2, topics=[("a", [0, 2]), ("b", [1])], tags=tags)
    assert decode_value(encode_value(value)) == value


def test_empty_writes_null_partitions() -> None:
    value = ONGOING.replace(state=TxnState.EMPTY, partitions=frozenset(), client_transaction_version=0)
    assert encode_value(value) == v1_bytes(status=0, topics=None, tags=b"\x00")
    assert decode_value(encode_value(value)) == value


def test_v0_is_read() -> None:
    data = struct.pack(">hqhib", 0, 7, 3, 60000, 4) + struct.pack(">i", 1) + struct.pack(">h", 1) + b"t"
    data += struct.pack(">i", 2) + struct.pack(">ii", 0, 5) + struct.pack(">qq", 1000, 900)
    assert decode_value(data) == TxnValue(7, 3, 60000, TxnState.COMPLETE_COMMIT, frozenset({("t", 0), ("t", 5)}),
                                          1000, 900, client_transaction_version=0)
    null_partitions = struct.pack(">hqhib", 0, 7, 3, 60000, 0) + struct.pack(">i", -1) + struct.pack(">qq", 1, 2)
    assert decode_value(null_partitions).partitions == frozenset()


def test_a_tombstone_and_unknown_tags() -> None:
    assert decode_record(encode_key("x"), None) == ("x", None)
    assert encode_record(("x", None)) == (encode_key("x"), None)
    assert decode_record(None, b"anything") is None
    # A tag this version does not know (a newer Kafka's) is skipped.
    data = v1_bytes(status=1, topics=[("a", [0])], tags=b"\x01" + b"\x09\x01" + b"\xff")
    assert decode_value(data).partitions == frozenset({("a", 0)})


@pytest.mark.parametrize("data", [
    b"", b"\x00\x02" + bytes(30),                                   # nothing; an unknown version
    struct.pack(">hqhib", 1, 7, 3, 6, 9) + b"\x00" + bytes(16) + b"\x00",  # status 9
    struct.pack(">hqhib", 1, 7, 3, 6, 1) + b"\x7f",                  # 126 topics in a few bytes
    v1_bytes(status=1, topics=[("a", [0])], tags=b"\x01\x00\x02\x00\x00"),  # PreviousProducerId of 2 bytes
    v1_bytes(status=1, topics=[("a", [0])], tags=b"\x00") + b"\x00",        # trailing bytes
    struct.pack(">hqhib", 0, 7, 3, 6, 1) + struct.pack(">i", 1) + struct.pack(">h", -1),  # null topic
])
def test_damaged_values_raise_schema_errors(data: bytes) -> None:
    with pytest.raises(SchemaError):
        decode_value(data)


def test_state_names_are_kafkas() -> None:
    assert [s.kafka_name for s in TxnState] == ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
                                                "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"]
