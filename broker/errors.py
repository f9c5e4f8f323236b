"""The Kafka error codes the broker answers with, per partition.

Names and numbers are Kafka's protocol errors. Storage errors raised by
`partition_log` carry their own Kafka code (`KafkaError.code`) and go into
responses unchanged.
"""
from __future__ import annotations

from enum import IntEnum

from kafka_protocol.errors import KafkaError


class Error(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    MESSAGE_TOO_LARGE = 10
    OFFSET_METADATA_TOO_LARGE = 12
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    UNSUPPORTED_VERSION = 35
    INVALID_REQUEST = 42
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_PRODUCER_ID_MAPPING = 49
    KAFKA_STORAGE_ERROR = 56
    UNKNOWN_PRODUCER_ID = 59
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    INVALID_RECORD = 87
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113


class BrokerError(Exception):
    """A partition-level refusal: a Kafka error code and why."""

    def __init__(self, error: int, message: str = "") -> None:
        super().__init__(message)
        self.error = int(error)
        self.message = message

    def __str__(self) -> str:
        return f"{error_name(self.error)}: {self.message}" if self.message else error_name(self.error)


def error_name(code: int) -> str:
    try:
        return Error(code).name
    except ValueError:
        return f"ERROR_{code}"


def as_broker_error(exc: Exception) -> BrokerError:
    """Any exception as the error a client should see: storage errors keep
    their Kafka code, anything else is UNKNOWN_SERVER_ERROR."""
    if isinstance(exc, BrokerError):
        return exc
    if isinstance(exc, KafkaError):
        return BrokerError(exc.code, Exception.__str__(exc))
    return BrokerError(Error.UNKNOWN_SERVER_ERROR, f"{type(exc).__name__}: {exc}")
