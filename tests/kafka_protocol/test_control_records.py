"""Transaction markers: Kafka's control batch layout, and refusals of damaged ones."""
from __future__ import annotations

import pytest

from kafka_protocol import batch as b
from kafka_protocol.control_records import (ControlType, control_key, control_type, decode_txn_marker,
                                            encode_txn_marker)
from kafka_protocol.errors import CorruptRecordError
from kafka_protocol.records import Record, encode_batch, iter_batches


@pytest.mark.parametrize("committed", [True, False])
def test_marker_is_a_transactional_control_batch_with_kafkas_key_and_value(committed: bool) -> None:
    data = encode_txn_marker(4001, 7, committed, coordinator_epoch=12, timestamp=1_700_000_000_000)
    (batch,) = list(iter_batches(data))
    h = batch.header
    assert h.is_control and h.is_transactional
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (4001, 7, b.NO_SEQUENCE)
    (record,) = batch.records
    # ControlRecordType key: version 0, type 1 COMMIT / 0 ABORT; EndTransactionMarker value: version 0, epoch
    assert record.key == (b"\x00\x00\x00\x01" if committed else b"\x00\x00\x00\x00")
    assert record.value == b"\x00\x00" + (12).to_bytes(4, "big")
    marker = decode_txn_marker(data)
    assert marker is not None and marker.committed is committed and marker.coordinator_epoch == 12


def test_other_control_types_are_not_markers_and_keys_round_trip() -> None:
    data = encode_batch([Record(control_key(ControlType.LEADER_CHANGE), b"\x00\x00")], control=True)
    assert decode_txn_marker(data) is None
    assert control_type(control_key(ControlType.SNAPSHOT_FOOTER)) == ControlType.SNAPSHOT_FOOTER
    assert control_type(b"\x00\x01\x00\x01") is None  # unknown key version
    assert control_type(None) is None


def test_damaged_markers_are_refused() -> None:
    no_value = encode_batch([Record(control_key(ControlType.COMMIT), None)], control=True, transactional=True)
    with pytest.raises(CorruptRecordError):
        decode_txn_marker(no_value)
    two = encode_batch([Record(control_key(ControlType.ABORT), b"\x00\x00\x00\x00\x00\x01")] * 2, control=True)
    with pytest.raises(CorruptRecordError):
        decode_txn_marker(two)
    with pytest.raises(CorruptRecordError):
        decode_txn_marker(encode_batch([Record(b"k", b"v")]))
