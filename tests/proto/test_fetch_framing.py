"""The hand-framed FetchResponse (kafka_protocol/fetch_framing.py) against protobuf:
whatever the answers, the encoding parses to the message protobuf would have
built, and the decoder reads what protobuf reads, or refuses what it refuses,
for any bytes at all."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from google.protobuf.message import DecodeError

from kafka_protocol.fetch_framing import decode_fetch_response, encode_fetch_response, throttle_time_field
from kraftlog_api import broker_pb2 as bpb

PartitionData = bpb.FetchResponse.PartitionData

int32 = st.integers(-(2 ** 31), 2 ** 31 - 1)
int64 = st.integers(-(2 ** 63), 2 ** 63 - 1)


@st.composite
def answers(draw):
    topic = draw(st.sampled_from(["orders", "a", "t" * 300, "événements"]))
    answer = PartitionData(partition_index=draw(int32), error_code=draw(st.integers(0, 120)),
                           high_watermark=draw(int64), last_stable_offset=draw(int64),
                           log_start_offset=draw(int64), current_leader_id=draw(int32),
                           current_leader_epoch=draw(int32))
    if draw(st.booleans()):
        answer.diverging_epoch.epoch, answer.diverging_epoch.end_offset = draw(int32), draw(int64)
    for _ in range(draw(st.integers(0, 3))):  # read_committed: a repeated message after the records' number
        answer.aborted_transactions.add(producer_id=draw(int64), first_offset=draw(int64))
    records = draw(st.one_of(st.just(b""), st.binary(max_size=300), st.integers(128, 70_000).map(bytes)))
    if draw(st.booleans()):  # a trimmed segment read: a view into a larger buffer
        records = memoryview(records + b"tail")[:len(records)]
    return topic, answer, records


def by_protobuf(triples) -> bpb.FetchResponse:
    response = bpb.FetchResponse()
    last = None
    for topic, answer, records in triples:
        if last is None or last.topic != topic:
            last = response.responses.add(topic=topic)
        added = last.partitions.add()
        added.CopyFrom(answer)
        added.records = bytes(records)
    return response


@settings(max_examples=300, deadline=None)
@given(st.lists(answers(), max_size=12))
def test_parses_to_what_protobuf_would_have_built(triples):
    encoded = encode_fetch_response(triples)
    assert bpb.FetchResponse.FromString(encoded) == by_protobuf(triples)


def test_an_empty_answer_is_the_empty_message():
    assert encode_fetch_response([]) == b""


def test_records_are_carried_whole_and_in_order():
    first, second = bytes(range(256)) * 600, b"\x00" * 5
    triples = [("orders", PartitionData(partition_index=0, high_watermark=7), memoryview(first)),
               ("orders", PartitionData(partition_index=1), second),
               ("other", PartitionData(partition_index=0, error_code=6), b"")]
    parsed = bpb.FetchResponse.FromString(encode_fetch_response(triples))
    assert [t.topic for t in parsed.responses] == ["orders", "other"]
    assert [p.records for p in parsed.responses[0].partitions] == [first, second]
    assert parsed.responses[1].partitions[0].error_code == 6


def as_protobuf(decoded) -> bpb.FetchResponse:
    """The decoder's answer rebuilt as a protobuf message, to compare."""
    response = bpb.FetchResponse(error_code=decoded.error_code, throttle_time_ms=decoded.throttle_time_ms,
                                 session_id=decoded.session_id)
    for topic in decoded.responses:
        added = response.responses.add(topic=topic.topic)
        for p in topic.partitions:
            partition = added.partitions.add()
            partition.CopyFrom(p.fields)
            partition.records = bytes(p.records)
    return response


def decoded_or_refused(raw: bytes):
    """Unknown fields set aside: the decoder keeps what the client reads."""
    try:
        message = as_protobuf(decode_fetch_response(raw))
    except DecodeError:
        return "refused"
    message.DiscardUnknownFields()
    return message


def parsed_or_refused(raw: bytes):
    try:
        message = bpb.FetchResponse.FromString(raw)
    except DecodeError:
        return "refused"
    message.DiscardUnknownFields()
    return message


@settings(max_examples=300, deadline=None)
@given(st.lists(answers(), max_size=12), st.integers(0, 300))
def test_decodes_what_it_encodes_records_as_views(triples, error_code):
    raw = bpb.FetchResponse(error_code=error_code).SerializeToString() + encode_fetch_response(triples)
    decoded = decode_fetch_response(raw)
    assert as_protobuf(decoded) == bpb.FetchResponse.FromString(raw)
    assert all(isinstance(p.records, (bytes, memoryview)) for t in decoded.responses for p in t.partitions)
    assert [p.partition_index for t in decoded.responses for p in t.partitions] == [a.partition_index
                                                                                  for _, a, _ in triples]


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_decode_as_protobuf_parses_them(raw):
    assert decoded_or_refused(raw) == parsed_or_refused(raw)


@settings(max_examples=500, deadline=None)
@given(st.lists(answers(), min_size=1, max_size=4), st.data())
def test_damaged_answers_decode_as_protobuf_parses_them(triples, data):
    raw = bytearray(encode_fetch_response(triples))
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        at = data.draw(st.integers(0, max(len(raw) - 1, 0)))
        if kind == "flip" and raw:
            raw[at] ^= data.draw(st.integers(1, 255))
        elif kind == "cut":
            del raw[at:]
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=8))
    assert decoded_or_refused(bytes(raw)) == parsed_or_refused(bytes(raw))


def test_an_appended_throttle_time_sets_the_field_of_an_encoded_answer():
    raw = encode_fetch_response([("t", PartitionData(partition_index=3), b"batch")]) + throttle_time_field(250)
    decoded = decode_fetch_response(raw)
    assert decoded.throttle_time_ms == 250 == bpb.FetchResponse.FromString(raw).throttle_time_ms
    assert bytes(decoded.responses[0].partitions[0].records) == b"batch"
    assert throttle_time_field(0) == b""


@settings(max_examples=200, deadline=None)
@given(st.lists(answers(), max_size=6), st.integers(-(2 ** 31), 2 ** 31 - 1), st.integers(0, 2 ** 31 - 1))
def test_a_trailer_is_framed_after_the_answers_as_if_appended(triples, session_id, throttle):
    trailer = bpb.FetchResponse(session_id=session_id, throttle_time_ms=throttle).SerializeToString()
    raw = encode_fetch_response(triples, trailer)
    assert raw == encode_fetch_response(triples) + trailer
    expected = by_protobuf(triples)
    expected.session_id, expected.throttle_time_ms = session_id, throttle
    assert bpb.FetchResponse.FromString(raw) == expected
    decoded = decode_fetch_response(raw)
    assert (decoded.session_id, decoded.throttle_time_ms) == (session_id, throttle)


def test_a_repeated_records_field_keeps_the_last_as_protobuf_does():
    first = encode_fetch_response([("t", PartitionData(partition_index=3), b"old")])
    # the same partition message with a second records field appended to it
    raw = bpb.FetchResponse.FromString(first)
    extra = encode_fetch_response([("t", PartitionData(partition_index=3), b"new")])
    merged = decode_fetch_response(first)
    assert bytes(merged.responses[0].partitions[0].records) == b"old"
    assert raw.responses[0].partitions[0].records == b"old"
    partition = PartitionData(partition_index=3).SerializeToString() + b"\x4a\x03old\x4a\x03new"
    topic = bpb.FetchResponse.FetchableTopicResponse(topic="t").SerializeToString() + bytes(
        [0x12, len(partition)]) + partition
    wire = bytes([0x12, len(topic)]) + topic
    assert bytes(decode_fetch_response(wire).responses[0].partitions[0].records) == b"new"
    assert bpb.FetchResponse.FromString(wire).responses[0].partitions[0].records == b"new"
    assert extra  # encodes on its own too


def test_garbage_is_refused_with_protobufs_error():
    with pytest.raises(DecodeError):
        decode_fetch_response(b"\x12\x05\x0a")
