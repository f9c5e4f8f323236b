"""A FetchResponse encoded with its record batches spliced in as they were read.

Built the protobuf way, each partition's batches (up to max.partition.fetch.bytes,
megabytes) would be copied three times before gRPC copies them once more:
into the PartitionData, again when that is appended to its topic (append
copies a message), and again by SerializeToString. Here every message but
the records is still built and serialized by protobuf; the `records` field
of each PartitionData is written by hand after the rest of it (protobuf
parsers accept fields in any order) and the length-delimited nesting around
it is framed here, so the batches, held as memoryviews of the segment reads,
are copied once, by the final join. The result parses as an ordinary
FetchResponse (tests/broker/test_fetch_response.py checks it against
protobuf's own encoding).
"""
from __future__ import annotations

from typing import Iterable, Union

from kraftlog_api import broker_pb2 as bpb
from partition_log.varint import uvarint_bytes

BytesLike = Union[bytes, memoryview]
PartitionData = bpb.FetchResponse.PartitionData
TopicResponse = bpb.FetchResponse.FetchableTopicResponse

_LENGTH_DELIMITED = 2
_RECORDS = PartitionData.DESCRIPTOR.fields_by_name["records"].number
_PARTITIONS = TopicResponse.DESCRIPTOR.fields_by_name["partitions"].number
_RESPONSES = bpb.FetchResponse.DESCRIPTOR.fields_by_name["responses"].number


def encode_fetch_response(answers: Iterable[tuple[str, PartitionData, BytesLike]]) -> bytes:
    """The serialized FetchResponse of (topic, partition answer without its
    records, records) triples, grouped into topics in the order given
    (consecutive answers of one topic share a FetchableTopicResponse)."""
    parts: list[BytesLike] = []
    topic_start = -1
    topic_size = 0
    topic = None
    for name, answer, records in answers:
        if name != topic:
            _close_topic(parts, topic_start, topic_size)
            topic, topic_start = name, len(parts)
            parts.append(b"")  # the topic's field header, known once its size is
            head = TopicResponse(topic=name).SerializeToString()
            parts.append(head)
            topic_size = len(head)
        head = answer.SerializeToString()
        size = len(head)
        if len(records):
            records_header = _field_header(_RECORDS, len(records))
            size += len(records_header) + len(records)
        partition_header = _field_header(_PARTITIONS, size)
        parts.append(partition_header)
        parts.append(head)
        if len(records):
            parts.append(records_header)
            parts.append(records)
        topic_size += len(partition_header) + size
    _close_topic(parts, topic_start, topic_size)
    return b"".join(parts)


def _close_topic(parts: list[BytesLike], start: int, size: int) -> None:
    if start >= 0:
        parts[start] = _field_header(_RESPONSES, size)


def _field_header(number: int, size: int) -> bytes:
    return uvarint_bytes((number << 3) | _LENGTH_DELIMITED) + uvarint_bytes(size)
