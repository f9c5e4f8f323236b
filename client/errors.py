"""The errors a client raises, with Kafka's protocol names and codes.

They extend the one `KafkaError` of the project (its vocabulary of names and
codes, not the partition log itself), so the CLI reports every one of them
the same way: `NOT_LEADER_OR_FOLLOWER: ...` on one line.
"""
from __future__ import annotations

from kafka_protocol.errors import (Errors, InvalidConfigError, KafkaError, OffsetOutOfRangeError, error_name,
                                   is_retriable)

__all__ = ["IllegalStateError", "InvalidConfigError", "KafkaError", "KafkaErrorInfo", "KafkaException", "NetworkError",
           "NoOffsetForPartitionError",
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


class KafkaErrorInfo:
    """confluent-kafka's `KafkaError` object (what `KafkaException.args[0]` is):
    the code and its name, and what the application should do about it -
    `retriable()` (call again), `txn_requires_abort()` (abort_transaction(),
    then start over) or `fatal()` (the producer is unusable: close it). The
    project's `KafkaError` is an exception class, so confluent's object gets
    this name here; its methods are confluent's."""

    __slots__ = ("_code", "_name", "_detail", "_retriable", "_fatal", "_txn_requires_abort")

    def __init__(self, code: int, detail: str = "", *, name: str = "", retriable: bool = False,
                 fatal: bool = False, txn_requires_abort: bool = False) -> None:
        self._code, self._name, self._detail = int(code), name or error_name(code), detail
        self._retriable, self._fatal, self._txn_requires_abort = retriable, fatal, txn_requires_abort

    def code(self) -> int:
        return self._code

    def name(self) -> str:
        return self._name

    def str(self) -> str:
        return self._detail or self._name

    def retriable(self) -> bool:
        return self._retriable

    def fatal(self) -> bool:
        return self._fatal

    def txn_requires_abort(self) -> bool:
        return self._txn_requires_abort

    def __repr__(self) -> str:
        flags = [f for f, on in (("retriable", self._retriable), ("fatal", self._fatal),
                                 ("txn_requires_abort", self._txn_requires_abort)) if on]
        return f"KafkaError{{code={self._name},val={self._code},str=\"{self.str()}\"{''.join(',' + f for f in flags)}}}"


class KafkaException(KafkaError):
    """confluent-kafka's KafkaException: `exc.args[0]` is the KafkaErrorInfo.
    It is also one of the project's KafkaErrors (name, code, retriable), so
    the CLI reports it as every other: `PRODUCER_FENCED: ...`."""

    def __init__(self, info: KafkaErrorInfo) -> None:
        super().__init__(info)
        self.name, self.code, self.retriable = info.name(), info.code(), info.retriable()

    @property
    def info(self) -> KafkaErrorInfo:
        return self.args[0]

    def __str__(self) -> str:
        return f"{self.name}: {self.info.str()}"
