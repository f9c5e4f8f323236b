"""The hand-framed FetchResponse (broker/fetch_response.py) against protobuf:
whatever the answers, it parses to the message protobuf would have built,
and records given as memoryviews come out as the same bytes."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.fetch_response import encode_fetch_response
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
