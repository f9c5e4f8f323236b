"""The errors a client raises, with Kafka's protocol names and codes.

They extend the one `KafkaError` of the project (its vocabulary of names and
codes, not the partition log itself), so the CLI reports every one of them
the same way: `NOT_LEADER_OR_FOLLOWER: ...` on one line.
"""
from __future__ import annotations

from kafka_protocol.errors import (Errors, InvalidConfigError, KafkaError, OffsetOutOfRangeError, error_name,
                                   is_retriable)

__all__ = ["IllegalStateError", "InvalidConfigError", "KafkaError", "NetworkError", "NoOffsetForPartitionError",
           "NotLeaderOrFollowerError", "OffsetOutOfRangeError", "RequestTimedOutError",
           "error_for_code", "error_name"]


class NotLeaderOrFollowerError(KafkaError):
    """No node asked is the leader (the leader may be one that was not asked)."""

    error = Errors.NOT_LEADER_OR_FOLLOWER


class RequestTimedOutError(KafkaError):
    error = Errors.REQUEST_TIMED_OUT


class NetworkError(KafkaError):
    """No node could be reached: refused, unreachable or no answer in time."""

    error = Errors.NETWORK_EXCEPTION


class IllegalStateError(KafkaError):
    """A call the client's state does not allow (Kafka's IllegalStateException):
    poll() before assign()/subscribe(), seek() of a partition not assigned, ..."""

    name = "ILLEGAL_STATE"


class NoOffsetForPartitionError(OffsetOutOfRangeError):
    """A consumer has no committed offset for a partition and auto.offset.reset=none
    (Kafka's NoOffsetForPartitionException, reported with the OFFSET_OUT_OF_RANGE code)."""


def error_for_code(code: int, detail: str) -> KafkaError:
    """The error for a Kafka error code in a response (never 0, NONE): its
    name and Kafka's retriable flag from the table."""
    for cls in (NotLeaderOrFollowerError, RequestTimedOutError, NetworkError):
        if cls.code == code:
            return cls(detail)
    error = KafkaError(detail)
    error.name, error.code = error_name(code), int(code)
    error.retriable = is_retriable(code)
    return error
