"""FetchResponse on the wire with its record batches neither copied nor parsed.

A Fetch answer is megabytes of record batches in a few bytes of protobuf.
Protobuf would copy the batches three times building the answer (assigning
`records`, appending the partition to its topic, serializing) and twice
reading it (parsing, then every read of the `records` attribute). Here
protobuf still encodes and decodes every field but `records`; only the
length-delimited framing around the batches is done by hand:

- `encode_fetch_response` writes each PartitionData's `records` after its
  other fields (parsers accept fields in any order) and frames the nesting,
  so the batches, memoryviews of segment reads, are copied once, by the
  final join. `throttle_time_field` is the encoding of the answer's
  throttle_time_ms, appended to it once a quota says how long it was held
  (concatenated encodings merge; the last value of a scalar wins).
- `decode_fetch_response` walks that framing and hands back each partition's
  records as a memoryview of the received bytes. Anything it does not expect
  (groups, a damaged frame) is parsed by protobuf instead, which accepts
  exactly what protobuf accepts and raises its DecodeError otherwise.

tests/proto/test_fetch_framing.py checks both against protobuf's own encoding,
and the decoder against arbitrary and damaged bytes.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Union

from google.protobuf.message import DecodeError

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import broker_pb2_grpc as bpb_grpc

from .errors import CorruptRecordError
from .varint import read_unsigned_varint, unsigned_varint_bytes

BytesLike = Union[bytes, memoryview]
FetchResponse = bpb.FetchResponse
PartitionData = FetchResponse.PartitionData
TopicResponse = FetchResponse.FetchableTopicResponse

_VARINT, _FIXED64, _LENGTH_DELIMITED, _FIXED32 = 0, 1, 2, 5
_RECORDS = PartitionData.DESCRIPTOR.fields_by_name["records"].number
_PARTITIONS = TopicResponse.DESCRIPTOR.fields_by_name["partitions"].number
_RESPONSES = FetchResponse.DESCRIPTOR.fields_by_name["responses"].number


def broker_stub(channel: Any) -> bpb_grpc.KafkaBrokerStub:
    """A KafkaBroker stub (sync or asyncio channel) whose Fetch answers a
    FetchedResponse, records left in the received bytes, and with
    `ProduceEncoded`: Produce taking a request already serialized
    (kafka_protocol.produce_framing)."""
    stub = bpb_grpc.KafkaBrokerStub(channel)
    service = bpb.DESCRIPTOR.services_by_name["KafkaBroker"]
    stub.Fetch = channel.unary_unary(f"/{service.full_name}/{service.methods_by_name['Fetch'].name}",
                                     request_serializer=bpb.FetchRequest.SerializeToString,
                                     response_deserializer=decode_fetch_response)
    stub.ProduceEncoded = channel.unary_unary(
        f"/{service.full_name}/{service.methods_by_name['Produce'].name}",
        request_serializer=None, response_deserializer=bpb.ProduceResponse.FromString)
    return stub


def fetch_stream(channel: Any) -> Callable[[], Any]:
    """Opens a FetchStream on an asyncio channel (kafka_protocol.in_order_calls
    calls on it): FetchRequests out, FetchedResponses in, as broker_stub's Fetch."""
    method = bpb.DESCRIPTOR.services_by_name["FetchStream"].methods_by_name["Fetch"]
    return channel.stream_stream(f"/{method.containing_service.full_name}/{method.name}",
                                 request_serializer=bpb.FetchRequest.SerializeToString,
                                 response_deserializer=decode_fetch_response)


def produce_stream(channel: Any) -> Callable[[], Any]:
    """Opens a ProduceStream on an asyncio channel: ProduceRequests already
    serialized out (as broker_stub's ProduceEncoded takes them), ProduceResponses in."""
    method = bpb.DESCRIPTOR.services_by_name["ProduceStream"].methods_by_name["Produce"]
    return channel.stream_stream(f"/{method.containing_service.full_name}/{method.name}",
                                 request_serializer=None, response_deserializer=bpb.ProduceResponse.FromString)


# -- encoding ----------------------------------------------------------------

def encode_fetch_response(answers: Iterable[tuple[str, PartitionData, BytesLike]], trailer: bytes = b"") -> bytes:
    """The serialized FetchResponse of (topic, partition answer without its
    records, records) triples, grouped into topics in the order given
    (consecutive answers of one topic share a FetchableTopicResponse), then
    `trailer` (top-level fields already encoded, as session_id: framed in the
    same join, where appending them after would copy the whole answer again)."""
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
        topic_size += append_message(parts, _PARTITIONS, answer.SerializeToString(), _RECORDS, records)
    _close_topic(parts, topic_start, topic_size)
    parts.append(trailer)
    return b"".join(parts)


def throttle_time_field(throttle_time_ms: int) -> bytes:
    """FetchResponse.throttle_time_ms alone, encoded: appended to an encoded
    answer, it sets that answer's field (b"" for 0, protobuf's default)."""
    return FetchResponse(throttle_time_ms=throttle_time_ms).SerializeToString()


def _close_topic(parts: list[BytesLike], start: int, size: int) -> None:
    if start >= 0:
        parts[start] = field_header(_RESPONSES, size)


def append_message(parts: list[BytesLike], number: int, fields: bytes, records_number: int,
                   records: BytesLike) -> int:
    """Append to `parts` the message field `number` made of the encoded
    `fields` and then, unless empty, `records` as its bytes field
    `records_number` (parsers accept fields in any order); the size appended."""
    size = len(fields)
    if len(records):
        records_header = field_header(records_number, len(records))
        size += len(records_header) + len(records)
    header = field_header(number, size)
    parts.append(header)
    parts.append(fields)
    if len(records):
        parts.append(records_header)
        parts.append(records)
    return len(header) + size


def field_header(number: int, size: int) -> bytes:
    """A length-delimited field's tag and length."""
    return unsigned_varint_bytes((number << 3) | _LENGTH_DELIMITED) + unsigned_varint_bytes(size)


# -- decoding ----------------------------------------------------------------

class FetchedPartition:
    """A PartitionData whose `records` is a view of the received bytes; every
    other field is read from the protobuf message `fields`."""

    __slots__ = ("fields", "records")

    def __init__(self, fields: PartitionData, records: BytesLike) -> None:
        self.fields = fields
        self.records = records

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fields, name)


class FetchedTopic:
    __slots__ = ("topic", "partitions")

    def __init__(self, topic: str, partitions: list[FetchedPartition]) -> None:
        self.topic = topic
        self.partitions = partitions


class FetchedResponse:
    """What a client reads of a FetchResponse: `error_code`, `responses`,
    `throttle_time_ms` and `session_id`, shaped as the protobuf message is."""

    __slots__ = ("error_code", "responses", "throttle_time_ms", "session_id")

    def __init__(self, error_code: int, responses: list[FetchedTopic], throttle_time_ms: int = 0,
                 session_id: int = 0) -> None:
        self.error_code = error_code
        self.responses = responses
        self.throttle_time_ms = throttle_time_ms
        self.session_id = session_id


def decode_fetch_response(raw: bytes) -> FetchedResponse:
    """Decodes a serialized FetchResponse (gRPC's response_deserializer for
    Fetch); raises protobuf's DecodeError for bytes protobuf would refuse."""
    try:
        return _decode_framed(memoryview(raw))
    except (_Unexpected, IndexError):
        return _from_message(FetchResponse.FromString(raw))


class _Unexpected(Exception):
    """Framing this decoder leaves to protobuf."""


def _decode_framed(view: memoryview) -> FetchedResponse:
    others, nested = _split(view, _RESPONSES)
    top = FetchResponse.FromString(others) if others else FetchResponse()
    topics = []
    for topic_view in nested:
        others, partitions = _split(topic_view, _PARTITIONS)
        name = TopicResponse.FromString(others).topic if others else ""
        topics.append(FetchedTopic(name, [_partition(p) for p in partitions]))
    return FetchedResponse(top.error_code, topics, top.throttle_time_ms, top.session_id)


def _partition(view: memoryview) -> FetchedPartition:
    others, records = _split(view, _RECORDS)
    fields = PartitionData.FromString(others) if others else PartitionData()
    return FetchedPartition(fields, records[-1] if records else b"")  # a repeated scalar field: the last wins


def _split(view: memoryview, number: int) -> tuple[bytes, list[memoryview]]:
    """The message's fields other than length-delimited field `number` (as
    bytes, for protobuf to parse), and the payloads of field `number`."""
    others: list[memoryview] = []
    wanted: list[memoryview] = []
    pos, end = 0, len(view)
    while pos < end:
        start = pos
        key, pos = _read_varint(view, pos)
        wire_type = key & 7
        if wire_type == _VARINT:
            _, pos = _read_varint(view, pos)
        elif wire_type == _FIXED64:
            pos += 8
        elif wire_type == _FIXED32:
            pos += 4
        elif wire_type == _LENGTH_DELIMITED:
            size, pos = _read_varint(view, pos)
            if key >> 3 == number:
                if pos + size > end:
                    raise _Unexpected
                wanted.append(view[pos:pos + size])
                pos += size
                continue
            pos += size
        else:
            raise _Unexpected  # groups, or not protobuf at all
        if pos > end:
            raise _Unexpected
        others.append(view[start:pos])
    return b"".join(others), wanted


def _read_varint(view: memoryview, pos: int) -> tuple[int, int]:
    try:
        return read_unsigned_varint(view, pos)
    except CorruptRecordError:
        raise _Unexpected from None  # protobuf's own parser says what is wrong


def _from_message(message: FetchResponse) -> FetchedResponse:
    return FetchedResponse(message.error_code, [
        FetchedTopic(t.topic, [FetchedPartition(p, p.records) for p in t.partitions]) for t in message.responses],
        message.throttle_time_ms, message.session_id)


__all__ = ["BytesLike", "DecodeError", "broker_stub", "FetchedPartition", "FetchedResponse", "FetchedTopic",
           "decode_fetch_response", "encode_fetch_response", "throttle_time_field"]
