"""ProduceRequest on the wire with its record batches copied once.

Protobuf copies a producer's batches twice on the way out (into each
PartitionData, then serializing the request), and the request's megabyte
of batches was most of the per-request work a producer did in Python. Here
protobuf encodes every field but the batches; their framing is written by
hand (as fetch_framing.py does for FetchResponse), so the batches are copied
once, by the final join. The fields come in field-number order, as protobuf
writes them: the bytes are what ProduceRequest.SerializeToString() gives
(tests/proto/test_produce_framing.py checks it), and the broker parses them
with protobuf as any request.
"""
from __future__ import annotations

from typing import Iterable, Sequence, Union

from kraftlog_api import broker_pb2 as bpb

from .fetch_framing import append_message, field_header

BytesLike = Union[bytes, bytearray, memoryview]
ProduceRequest = bpb.ProduceRequest
PartitionData = ProduceRequest.PartitionData
TopicData = ProduceRequest.TopicData

_RECORDS = PartitionData.DESCRIPTOR.fields_by_name["records"].number
_PARTITIONS = TopicData.DESCRIPTOR.fields_by_name["partitions"].number
_TOPICS = ProduceRequest.DESCRIPTOR.fields_by_name["topics"].number


def encode_produce_request(acks: int, timeout_ms: int, topics: Iterable[tuple[str, Sequence[tuple[int, BytesLike]]]],
                           transactional_id: str = "") -> bytes:
    """The serialized ProduceRequest of (topic, [(partition, records)]) in the order given."""
    parts: list[BytesLike] = [ProduceRequest(acks=acks, timeout_ms=timeout_ms).SerializeToString()]
    for name, partitions in topics:
        topic_at = len(parts)
        parts.append(b"")  # the topic's field header, known once its size is
        head = TopicData(name=name).SerializeToString()
        parts.append(head)
        topic_size = len(head)
        for index, records in partitions:
            topic_size += append_message(parts, _PARTITIONS, PartitionData(index=index).SerializeToString(),
                                         _RECORDS, records)
        parts[topic_at] = field_header(_TOPICS, topic_size)
    if transactional_id:
        parts.append(ProduceRequest(transactional_id=transactional_id).SerializeToString())
    return b"".join(parts)
