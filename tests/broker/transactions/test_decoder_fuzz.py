"""The transaction decoders of bytes from disks and peers, fed random and
damaged input from outside: each decodes or raises its documented error,
never another exception, never a hang.

    broker/transactions/records.py     decode_key, decode_value, decode_record -> SchemaError
    kafka_protocol/control_records.py  decode_txn_marker                        -> CorruptRecordError
    partition_log/txn_index.py         decode_entries, TxnIndex reads/check     -> CorruptIndexError
    partition_log/producer_snapshot.py decode_snapshot, read_snapshot           -> CorruptSnapshotError

Inputs: random bytes; valid encodings truncated, extended or with a byte
changed; and, where a checksum guards the format (snapshots, record
batches), damaged contents sealed with a correct checksum, so the parser
behind the check is reached too.
"""
from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.transactions.records import TxnState, TxnValue, decode_key, decode_record, decode_value, encode_key, \
    encode_value
from kafka_protocol.control_records import ControlType, control_key, decode_txn_marker, encode_txn_marker
from kafka_protocol.batch import ATTRIBUTES_OFFSET, CRC_OFFSET
from kafka_protocol.errors import CorruptRecordError
from kafka_protocol.records import Record, encode_batch
from kafka_protocol.schema_types import SchemaError
from partition_log.producer_snapshot import CorruptSnapshotError, SnapshotEntry, decode_snapshot, encode_snapshot, \
    read_snapshot
from partition_log.txn_index import ENTRY_SIZE, AbortedTxn, CorruptIndexError, TxnIndex, decode_entries

FUZZ = settings(max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
I16, I32, I64 = (-2**15, 2**15 - 1), (-2**31, 2**31 - 1), (-2**63, 2**63 - 1)


def ints(bounds: tuple[int, int]) -> st.SearchStrategy[int]:
    return st.integers(*bounds)


@st.composite
def damaged(draw, valid: bytes) -> bytes:
    """`valid` truncated, extended, or with one byte changed."""
    how = draw(st.sampled_from(["truncate", "extend", "change"]))
    if how == "truncate":
        return valid[:draw(st.integers(0, max(len(valid) - 1, 0)))]
    if how == "extend":
        return valid + draw(st.binary(min_size=1, max_size=40))
    if not valid:
        return b"\x00"
    at = draw(st.integers(0, len(valid) - 1))
    return valid[:at] + bytes([draw(st.integers(0, 255))]) + valid[at + 1:]


# -- __transaction_state records --------------------------------------------------------------

txn_values = st.builds(
    TxnValue, ints(I64), ints(I16), ints(I32), st.sampled_from(list(TxnState)),
    st.frozensets(st.tuples(st.text(max_size=8), ints(I32)), max_size=4), ints(I64), ints(I64),
    previous_producer_id=ints(I64), next_producer_id=ints(I64), client_transaction_version=ints(I16))


def decode_or_schema_error(decode, data: bytes) -> None:
    try:
        decode(data)
    except SchemaError:
        pass


@FUZZ
@given(st.binary(max_size=200))
def test_transaction_log_random_bytes_raise_only_schema_error(data: bytes) -> None:
    decode_or_schema_error(decode_key, data)
    decode_or_schema_error(decode_value, data)
    decode_or_schema_error(lambda d: decode_record(d, d), data)


@FUZZ
@given(st.data(), txn_values, st.text(max_size=20))
def test_transaction_log_damaged_records_raise_only_schema_error(data, value: TxnValue, tid: str) -> None:
    encoded = encode_value(value)
    if value.state != TxnState.EMPTY:  # Empty is written without its partitions (null), as Kafka writes it
        assert decode_value(encoded) == value  # the premise: the valid encoding reads back
    decode_or_schema_error(decode_value, data.draw(damaged(encoded)))
    decode_or_schema_error(decode_key, data.draw(damaged(encode_key(tid))))


@FUZZ
@given(st.binary(max_size=60), st.integers(0, 1), ints(I32), ints(I32))
def test_transaction_log_value_counts_that_lie_raise_only_schema_error(tail: bytes, version: int, topics: int,
                                                                       partitions: int) -> None:
    """Topic and partition counts far past the bytes there (the v0 int32 counts)."""
    head = struct.pack(">hqhib", version, 1, 0, 60000, 1)
    body = struct.pack(">i", topics) + struct.pack(">h", 1) + b"t" + struct.pack(">i", partitions) + tail
    decode_or_schema_error(decode_value, head + body)


# -- COMMIT/ABORT markers ---------------------------------------------------------------------
# decode_txn_marker raises CorruptRecordError for any damage, the batch reader's other
# KafkaErrors (another magic, a codec id that does not exist) included.

def marker_or(errors, data: bytes) -> None:
    try:
        decode_txn_marker(data)
    except errors:
        pass


@FUZZ
@given(st.binary(max_size=200))
def test_txn_marker_random_bytes_raise_only_corrupt_record(data: bytes) -> None:
    marker_or(CorruptRecordError, data)


@FUZZ
@given(st.data(), st.booleans(), ints(I32))
def test_txn_marker_damaged_raise_only_corrupt_record(data, committed: bool, coordinator_epoch: int) -> None:
    valid = encode_txn_marker(5, 1, committed, coordinator_epoch, 1_700_000_000_000)
    assert decode_txn_marker(valid).committed is committed
    marker_or(CorruptRecordError, data.draw(damaged(valid)))


@FUZZ
@given(st.data(), st.booleans())
def test_txn_marker_damaged_behind_a_good_crc_raise_only_corrupt_record(data, committed: bool) -> None:
    """Attributes..end changed and the CRC-32C recomputed: the marker parser behind
    the check reached (a codec id changed included)."""
    valid = bytearray(encode_txn_marker(5, 1, committed, 3, 1_700_000_000_000))
    at = data.draw(st.integers(ATTRIBUTES_OFFSET, len(valid) - 1))
    valid[at] = data.draw(st.integers(0, 255))
    struct.pack_into(">I", valid, CRC_OFFSET, crc32c.crc32c(bytes(valid[ATTRIBUTES_OFFSET:])))
    marker_or(CorruptRecordError, bytes(valid))


@FUZZ
@given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=6), st.sampled_from(
    [control_key(ControlType.COMMIT), control_key(ControlType.ABORT), control_key(99)])),
    st.one_of(st.none(), st.binary(max_size=10))), min_size=1, max_size=3), st.booleans())
def test_txn_marker_control_batches_of_any_records_raise_only_corrupt_record(records, control: bool) -> None:
    """Batches with a correct CRC whose records are anything: the marker parser itself is reached."""
    batch = encode_batch([Record(k, v) for k, v in records], producer_id=5, producer_epoch=1, control=control,
                         transactional=True)
    marker_or(CorruptRecordError, batch)


# -- .txnindex ----------------------------------------------------------------------------------

aborted = st.builds(AbortedTxn, ints(I64), ints(I64), ints(I64), ints(I64))


def index_or_corrupt(data: bytes) -> None:
    try:
        decode_entries(data)
    except CorruptIndexError:
        pass
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "00000000000000000000.txnindex"
        path.write_bytes(data)
        index = TxnIndex(path)
        try:
            index.sanity_check()
            index.collect(0, 2**62)
        except CorruptIndexError:
            pass
        finally:
            index.close()


@FUZZ
@given(st.one_of(st.binary(max_size=3 * ENTRY_SIZE + 5),
                 st.lists(aborted, max_size=4).map(lambda es: b"".join(e.encode() for e in es))))
def test_txn_index_any_bytes_raise_only_corrupt_index(data: bytes) -> None:
    index_or_corrupt(data)


@FUZZ
@given(st.data(), st.lists(aborted, min_size=1, max_size=4))
def test_txn_index_damaged_raise_only_corrupt_index(data, entries: list[AbortedTxn]) -> None:
    valid = b"".join(e.encode() for e in entries)
    assert decode_entries(valid) == entries
    index_or_corrupt(data.draw(damaged(valid)))


# -- producer state snapshots -------------------------------------------------------------------

snapshot_entries = st.lists(st.builds(SnapshotEntry, ints(I64), ints(I16), ints(I32), ints(I64), ints(I32),
                                      ints(I64), ints(I32), ints(I64)), max_size=3)


def snapshot_or_corrupt(data: bytes) -> None:
    try:
        decode_snapshot(data)
    except CorruptSnapshotError:
        pass
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "00000000000000000000.snapshot"
        path.write_bytes(data)
        try:
            read_snapshot(path)
        except CorruptSnapshotError:
            pass


def sealed(body: bytes) -> bytes:
    """Version 1 and a correct CRC-32C over `body` (count and entries)."""
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


@FUZZ
@given(st.binary(max_size=120))
def test_snapshot_random_bytes_raise_only_corrupt_snapshot(data: bytes) -> None:
    snapshot_or_corrupt(data)
    snapshot_or_corrupt(sealed(data))  # past the CRC check: the count and sizes must still hold


@FUZZ
@given(st.data(), snapshot_entries)
def test_snapshot_damaged_raise_only_corrupt_snapshot(data, entries: list[SnapshotEntry]) -> None:
    valid = encode_snapshot(entries)
    assert decode_snapshot(valid) == entries
    broken = data.draw(damaged(valid))
    snapshot_or_corrupt(broken)
    snapshot_or_corrupt(sealed(broken[6:]))
