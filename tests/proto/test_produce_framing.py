"""The hand-framed ProduceRequest (kafka_protocol/produce_framing.py) is
protobuf's own encoding of the same request, byte for byte, whatever the
topics, partitions, batches and settings; protobuf parses it back to them."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_protocol.produce_framing import encode_produce_request
from kraftlog_api import broker_pb2 as bpb

int32 = st.integers(-(2 ** 31), 2 ** 31 - 1)
records = st.one_of(st.just(b""), st.binary(max_size=300), st.integers(128, 70_000).map(bytes))
topics = st.lists(st.tuples(st.sampled_from(["", "orders", "t" * 300, "événements"]),
                            st.lists(st.tuples(int32, records), max_size=4)), max_size=4)


def by_protobuf(acks: int, timeout_ms: int, topic_list, transactional_id: str) -> bpb.ProduceRequest:
    return bpb.ProduceRequest(acks=acks, timeout_ms=timeout_ms, transactional_id=transactional_id, topics=[
        bpb.ProduceRequest.TopicData(name=name, partitions=[
            bpb.ProduceRequest.PartitionData(index=index, records=data) for index, data in partitions])
        for name, partitions in topic_list])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([-1, 0, 1]) | int32, st.integers(0, 2 ** 31 - 1), topics, st.sampled_from(["", "txn-1", "é" * 80]))
def test_the_framing_is_protobufs_encoding(acks, timeout_ms, topic_list, transactional_id) -> None:
    expected = by_protobuf(acks, timeout_ms, topic_list, transactional_id)
    ours = encode_produce_request(acks, timeout_ms, topic_list, transactional_id)
    assert ours == expected.SerializeToString()
    assert bpb.ProduceRequest.FromString(ours) == expected


def test_batches_given_as_views_are_framed_by_their_length() -> None:
    data = b"head" + bytes(range(200)) + b"tail"
    view = memoryview(data)[4:-4]
    ours = encode_produce_request(-1, 30000, [("t", [(3, view), (0, b"")])])
    parsed = bpb.ProduceRequest.FromString(ours)
    assert [(p.index, p.records) for p in parsed.topics[0].partitions] == [(3, bytes(range(200))), (0, b"")]
