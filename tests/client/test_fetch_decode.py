"""client.fetcher.decode_fetched on a fetch answer holding a batch that does
not decode: the records before it are delivered, and the fetch that starts at
it raises Kafka's error naming the topic, partition and offset."""
from __future__ import annotations

import pytest

from client.consumer_types import TopicPartition
from client.fetcher import decode_fetched
from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.errors import CorruptRecordError
from kafka_protocol.records import Record, encode_batch

TP = TopicPartition("orders", 3)


def answer(records: bytes, high_watermark: int) -> bpb.FetchResponse.PartitionData:
    return bpb.FetchResponse.PartitionData(records=records, high_watermark=high_watermark)


def damaged(base_offset: int) -> bytes:
    """A batch whose record bytes no longer match its CRC."""
    batch = bytearray(encode_batch([Record(b"k", b"damaged", 1)], base_offset=base_offset))
    batch[-2] ^= 0x40
    return bytes(batch)


def test_records_before_a_damaged_batch_are_delivered_and_the_next_fetch_names_it() -> None:
    good = encode_batch([Record(b"k", b"a", 1), Record(b"k", b"b", 1)], base_offset=10)
    fetched = decode_fetched(TP, 10, answer(good + damaged(12), 13))
    assert [r.value for r in fetched.records] == [b"a", b"b"] and fetched.next_offset == 12
    with pytest.raises(CorruptRecordError, match=r"orders-3 at offset 12: .*fails its CRC.*seek past it"):
        decode_fetched(TP, 12, answer(damaged(12), 13))


def test_a_damaged_batch_below_the_position_is_not_stepped_over() -> None:
    """Records the position already passed do not count as delivered: the error is raised."""
    good = encode_batch([Record(b"k", b"a", 1)], base_offset=10)
    with pytest.raises(CorruptRecordError, match="orders-3 at offset 11"):
        decode_fetched(TP, 11, answer(good + damaged(11), 12))


def test_a_header_too_short_to_name_an_offset() -> None:
    good = encode_batch([Record(b"k", b"a", 1)], base_offset=0)
    with pytest.raises(CorruptRecordError, match="orders-3 at offset unknown"):
        decode_fetched(TP, 0, answer(good[:30], 1))
