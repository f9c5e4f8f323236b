"""What a request to a broker may touch, by Kafka's rules (the authorize
calls of Kafka's KafkaApis), and the answers for what it may not.

A request naming topics is split: the topics the caller may act on go to
the handler as a smaller request, and the others are answered here, each
partition with TOPIC_AUTHORIZATION_FAILED, appended to the handler's answer
(clients match answers by topic and partition, not by position). A refused
part never reaches a handler, so it has no side effect.

Which operation each RPC needs is in docs/security.md; the matrix test
(tests/security/test_authorization_matrix.py) holds the code to it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Iterable, TypeVar

from google.protobuf.message import Message

from kraftlog_api import broker_pb2 as bpb
from security.acl import AclOperation, ResourceType
from security.authorization import NodeAuthorizer

from .errors import Error

RequestT = TypeVar("RequestT", bound=Message)
KeyT = TypeVar("KeyT", bound=Hashable)


@dataclass(frozen=True)
class TopicShape:
    """Where a request and its answer keep topics and their partitions."""

    response: type[Message]
    request_topics: str
    request_name: str
    request_index: str
    response_topics: str
    response_name: str
    response_index: str


PRODUCE = TopicShape(bpb.ProduceResponse, "topics", "name", "index", "responses", "name", "index")
FETCH = TopicShape(bpb.FetchResponse, "topics", "topic", "partition", "responses", "topic", "partition_index")
LIST_OFFSETS = TopicShape(bpb.ListOffsetsResponse, "topics", "name", "partition_index",
                          "topics", "name", "partition_index")
OFFSET_FOR_LEADER_EPOCH = TopicShape(bpb.OffsetForLeaderEpochResponse, "topics", "topic", "partition",
                                     "topics", "topic", "partition")


def topic_names(request: Message, shape: TopicShape) -> list[str]:
    return [getattr(t, shape.request_name) for t in getattr(request, shape.request_topics)]


def split_topics(request: RequestT, shape: TopicShape, denied: set[str],
                 error: int = Error.TOPIC_AUTHORIZATION_FAILED) -> tuple[RequestT, Message]:
    """(the request without the denied topics, the answer for those: `error`
    on each of their partitions)."""
    allowed = type(request)()
    allowed.CopyFrom(request)
    kept = [t for t in getattr(request, shape.request_topics) if getattr(t, shape.request_name) not in denied]
    allowed.ClearField(shape.request_topics)
    getattr(allowed, shape.request_topics).extend(kept)
    refused = shape.response()
    for topic in getattr(request, shape.request_topics):
        name = getattr(topic, shape.request_name)
        if name not in denied:
            continue
        answer = getattr(refused, shape.response_topics).add(**{shape.response_name: name})
        for partition in topic.partitions:
            answer.partitions.add(**{shape.response_index: getattr(partition, shape.request_index),
                                     "error_code": error})
    return allowed, refused


def refuse_all(request: Message, shape: TopicShape, error: int) -> Message:
    """The answer refusing every partition of `request` with `error`."""
    return split_topics(request, shape, set(topic_names(request, shape)), error)[1]


def denied_topics(access: NodeAuthorizer, operation: AclOperation, names: Iterable[str]) -> set[str]:
    return access.denied(operation, ResourceType.TOPIC, names)


def in_request_order(keys: Iterable[KeyT], denied: Iterable[KeyT], answers: dict[KeyT, Message],
                     refused: Callable[[KeyT], Message]) -> list[Message]:
    """The handler's answers and the refusals, merged in the order the request named them."""
    denied = set(denied)
    return [refused(key) if key in denied else answers[key] for key in keys if key in denied or key in answers]
