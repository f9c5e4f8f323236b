"""The unsigned varint (protobuf's framing, Kafka's UNSIGNED_VARINT) and the
zig-zag varint of Kafka's records, one implementation under both."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_protocol.errors import CorruptRecordError
from kafka_protocol.varint import read_unsigned_varint, read_zigzag, unsigned_varint_bytes, zigzag_bytes


@pytest.mark.parametrize("value, encoded", [(0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"),
                                            (300, b"\xac\x02"), (2**63 - 1, b"\xff" * 8 + b"\x7f")])
def test_unsigned_varint_known_encodings(value: int, encoded: bytes) -> None:
    assert unsigned_varint_bytes(value) == encoded
    assert read_unsigned_varint(encoded, 0) == (value, len(encoded))


@given(st.integers(min_value=0, max_value=2**64 - 1), st.binary(max_size=4))
def test_unsigned_varint_round_trips_and_stops_at_its_end(value: int, after: bytes) -> None:
    encoded = unsigned_varint_bytes(value)
    assert read_unsigned_varint(encoded + after, 0) == (value, len(encoded))


@given(st.integers(min_value=-2**63, max_value=2**63 - 1))
def test_zigzag_is_the_unsigned_varint_of_the_zigzag_mapping(value: int) -> None:
    assert zigzag_bytes(value) == unsigned_varint_bytes(((value << 1) ^ (value >> 63)) & (2**64 - 1))
    assert read_zigzag(zigzag_bytes(value), 0) == (value, len(zigzag_bytes(value)))


def test_truncated_and_overlong_varints_are_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="past the end"):
        read_unsigned_varint(b"\x80\x80", 0)
    with pytest.raises(CorruptRecordError, match="past the end"):
        read_unsigned_varint(b"\x80\x01", 0, end=1)
    with pytest.raises(CorruptRecordError, match="longer than 10 bytes"):
        read_unsigned_varint(b"\x80" * 11 + b"\x00", 0)
