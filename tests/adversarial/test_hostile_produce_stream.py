"""ProduceStream (KafkaBroker's Produce carried in order on one stream, up to
five requests worked on at once) against the adversarial cluster: requests
written before any answer is read are appended in the order they were
written and answered in that order; a hostile request gets on the stream
what it gets as a unary call; bytes that are no request end the stream with
a clear status after the answers before them, and what those answers
acknowledged is written. Every node still serves afterwards."""
from __future__ import annotations

from typing import Iterator, Union

import grpc
import pytest

from kafka_protocol.errors import Errors as K
from kafka_protocol.records import iter_batches
from kraftlog_api import broker_pb2 as bpb

from . import batches
from .cases import CLUSTER_METADATA
from .harness import call
from .world import PAIR, World

STREAM = f"/{bpb.DESCRIPTOR.services_by_name['ProduceStream'].full_name}/Produce"
TIMEOUT_S = 30.0


@pytest.fixture(scope="module", autouse=True)
def reference(world: World) -> Iterator[None]:
    yield
    world.retake_reference()  # PAIR was written to here, as a producer would
    world.probe()


def produce(topic: str, partition: int, records: bytes) -> bpb.ProduceRequest:
    return bpb.ProduceRequest(acks=-1, timeout_ms=10_000, topics=[bpb.ProduceRequest.TopicData(
        name=topic, partitions=[bpb.ProduceRequest.PartitionData(index=partition, records=records)])])


def open_stream(world: World, broker: int):  # type: ignore[no-untyped-def]
    return world.broker_channel(broker).stream_stream(
        STREAM, request_serializer=lambda r: r if isinstance(r, bytes) else r.SerializeToString(),
        response_deserializer=bpb.ProduceResponse.FromString)


def streamed(world: World, broker: int, requests: list[Union[bpb.ProduceRequest, bytes]]) -> list:
    """The partition answers to `requests` written on one stream (all of them before reading any)."""
    return [a.responses[0].partitions[0] for a in open_stream(world, broker)(iter(requests), timeout=TIMEOUT_S)]


def test_requests_written_at_once_are_appended_and_answered_in_the_order_written(world: World) -> None:
    """Twenty produce requests of two records each to one partition, all written
    before the first answer is read: twenty answers, in order, whose base
    offsets step by two; the partition reads back the values in that order."""
    values = [(f"s{n}a".encode(), f"s{n}b".encode()) for n in range(20)]
    answers = streamed(world, world.A, [produce(PAIR, 0, batches.good(v)) for v in values])
    assert [a.error_code for a in answers] == [K.NONE] * 20, answers
    first = answers[0].base_offset
    assert [a.base_offset for a in answers] == list(range(first, first + 40, 2))
    read = world.fetch(PAIR, 0, first)
    assert read.error_code == K.NONE
    got = [r.value for batch in iter_batches(read.records) for r in batch.records
           if batch.header.base_offset >= first]
    assert got[:40] == [v for pair in values for v in pair]


@pytest.mark.parametrize("request_", [
    produce(CLUSTER_METADATA, 0, batches.good()),
    produce("adv-no-such-topic", 0, batches.good()),
    produce(PAIR, 7, batches.good()),
    produce(PAIR, 0, batches.garbage_body()),
    produce(PAIR, 0, batches.attributes(0x7)),
], ids=["reserved-topic", "unknown-topic", "partition-out-of-range", "garbage-records", "unknown-codec"])
def test_a_hostile_request_on_the_stream_gets_the_unary_answer(world: World, request_: bpb.ProduceRequest) -> None:
    [answer] = streamed(world, world.A, [request_])
    unary = call(world.broker_channel(world.A), "KafkaBroker/Produce", request_)
    assert not isinstance(unary, grpc.RpcError), unary
    assert answer.error_code == unary.responses[0].partitions[0].error_code != K.NONE


@pytest.mark.parametrize("junk", [b"\x12\x40only a few bytes", b"\x80", b"\x08" + b"\xff" * 10 + b"\x01"],
                         ids=["length-past-the-end", "truncated-tag", "varint-11-bytes"])
def test_bytes_that_are_no_request_end_the_stream_after_the_answers_before_them(world: World, junk: bytes) -> None:
    """Two good requests, then junk, then a good one: the stream ends
    INVALID_ARGUMENT naming the request type after answering the first two,
    whose records are written; the one after the junk is not read."""
    received = []
    with pytest.raises(grpc.RpcError) as failed:
        for answer in open_stream(world, world.A)(iter([produce(PAIR, 0, batches.good((b"before-1",))),
                                                        produce(PAIR, 0, batches.good((b"before-2",))), junk,
                                                        produce(PAIR, 0, batches.good((b"after",)))]),
                                                  timeout=TIMEOUT_S):
            received.append(answer.responses[0].partitions[0])
    assert failed.value.code() == grpc.StatusCode.INVALID_ARGUMENT, failed.value
    assert "ProduceRequest" in failed.value.details()
    assert [a.error_code for a in received] == [K.NONE, K.NONE]
    assert received[1].base_offset == received[0].base_offset + 1
    next_offset = world.fetch(PAIR, 0, 0).high_watermark
    assert next_offset == received[1].base_offset + 1  # "after" was not appended


def test_a_stream_with_too_large_a_request_is_refused(world: World) -> None:
    with pytest.raises(grpc.RpcError) as failed:
        streamed(world, world.B, [produce(PAIR, 0, b"\0" * (9 << 20))])
    assert failed.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, failed.value


def test_an_empty_stream_ends_cleanly(world: World) -> None:
    assert streamed(world, world.B, []) == []
