"""FetchStream (KafkaBroker's Fetch carried in order on one stream) against
the adversarial cluster: a hostile stream gets what the same requests get
as unary calls, ends with a clear status on bytes that are no request, and
changes nothing the reference snapshot holds; every node still serves."""
from __future__ import annotations

from typing import Iterator, Union

import grpc
import pytest

from kafka_protocol.errors import Errors as K
from kraftlog_api import broker_pb2 as bpb

from . import batches
from .harness import call
from .world import DATA, PAIR, World

STREAM = f"/{bpb.DESCRIPTOR.services_by_name['FetchStream'].full_name}/Fetch"
TIMEOUT_S = 30.0


@pytest.fixture(scope="module", autouse=True)
def reference(world: World) -> Iterator[None]:
    world.retake_reference()
    yield
    world.assert_unchanged("fetch-stream")
    world.probe()


def streamed(world: World, broker: int, requests: list[Union[bpb.FetchRequest, bytes]]) -> list[bpb.FetchResponse]:
    """The answers to `requests` written on one stream (all of them before reading any)."""
    open_stream = world.broker_channel(broker).stream_stream(
        STREAM, request_serializer=lambda r: r if isinstance(r, bytes) else r.SerializeToString(),
        response_deserializer=bpb.FetchResponse.FromString)
    return list(open_stream(iter(requests), timeout=TIMEOUT_S))


def consumer_fetch(topic: str, partition: int, offset: int, replica_id: int = -1) -> bpb.FetchRequest:
    return bpb.FetchRequest(replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
        bpb.FetchRequest.FetchTopic(topic=topic, partitions=[bpb.FetchRequest.FetchPartition(
            partition=partition, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
            partition_max_bytes=1 << 20)])])


def test_requests_on_one_stream_are_answered_in_order_as_unary_calls_are(world: World) -> None:
    """Fifty fetches written before any answer is read: fifty answers, in
    order, each the unary call's (same records, same high watermark)."""
    leader = world.leader(DATA, 0)
    offsets = [0, 3, 6, 0, 9, 10_000] * 8 + [0, 3]
    answers = streamed(world, leader, [consumer_fetch(DATA, 0, o) for o in offsets])
    assert len(answers) == len(offsets)
    for offset, answer in zip(offsets, answers):
        unary = call(world.broker_channel(leader), "KafkaBroker/Fetch", consumer_fetch(DATA, 0, offset))
        assert not isinstance(unary, grpc.RpcError), unary
        got, want = answer.responses[0].partitions[0], unary.responses[0].partitions[0]
        assert (got.error_code, got.high_watermark, got.records) == (want.error_code, want.high_watermark,
                                                                     want.records), offset


@pytest.mark.parametrize("who", ["max-int32", "no-such-broker", "broker-without-a-replica"])
def test_a_follower_fetch_from_no_replica_of_the_partition_gets_the_unary_answer(world: World, who: str) -> None:
    """A "follower" that is no replica of PAIR-0 (the largest id, an id no
    broker has, broker C which holds no replica of it): the answer the
    unary Fetch gives, an error; the module's end checks that the high
    watermark and the ISR stayed."""
    replica_id = {"max-int32": 2**31 - 1, "no-such-broker": 99, "broker-without-a-replica": world.C}[who]
    request = consumer_fetch(PAIR, 0, 0, replica_id=replica_id)
    [answer] = streamed(world, world.A, [request])
    unary = call(world.broker_channel(world.A), "KafkaBroker/Fetch", request)
    assert not isinstance(unary, grpc.RpcError), unary
    assert answer.responses[0].partitions[0].error_code == unary.responses[0].partitions[0].error_code
    assert answer.responses[0].partitions[0].error_code != K.NONE


@pytest.mark.parametrize("junk", [b"\x1a\x40only a few bytes", b"\x80", b"\x08" + b"\xff" * 10 + b"\x01"],
                         ids=["length-past-the-end", "truncated-tag", "varint-11-bytes"])
def test_bytes_that_are_no_request_end_the_stream_with_invalid_argument(world: World, junk: bytes) -> None:
    """A good request answered, then junk: the stream ends INVALID_ARGUMENT
    naming the request type; the answer before it was sent."""
    received: list[bpb.FetchResponse] = []
    with pytest.raises(grpc.RpcError) as failed:
        open_stream = world.broker_channel(world.A).stream_stream(
            STREAM, request_serializer=lambda r: r if isinstance(r, bytes) else r.SerializeToString(),
            response_deserializer=bpb.FetchResponse.FromString)
        for answer in open_stream(iter([consumer_fetch(PAIR, 0, 0), junk, consumer_fetch(PAIR, 0, 0)]),
                                  timeout=TIMEOUT_S):
            received.append(answer)
    assert failed.value.code() == grpc.StatusCode.INVALID_ARGUMENT, failed.value
    assert "FetchRequest" in failed.value.details()
    assert len(received) == 1 and received[0].responses[0].partitions[0].error_code == K.NONE


def test_an_empty_stream_ends_cleanly(world: World) -> None:
    assert streamed(world, world.B, []) == []


def test_a_stream_with_too_large_a_request_is_refused(world: World) -> None:
    """A request over the 8 MiB request limit on the stream: RESOURCE_EXHAUSTED,
    as the unary call gets."""
    huge = consumer_fetch("t" * (9 << 20), 0, 0)
    with pytest.raises(grpc.RpcError) as failed:
        streamed(world, world.B, [huge])
    assert failed.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, failed.value


def test_produce_still_works_after_the_hostile_streams(world: World) -> None:
    """The partition the streams read is still written and read back whole."""
    answer = world.produce(PAIR, 0, batches.good((b"after-the-streams",)))
    assert answer.error_code == K.NONE, answer
    world.retake_reference()
