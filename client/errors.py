"""The errors a client raises, with Kafka's protocol names and codes.

They extend the one `KafkaError` of the project (its vocabulary of names and
codes, not the partition log itself), so the CLI reports every one of them
the same way: `NOT_LEADER_OR_FOLLOWER: ...` on one line.
"""
from __future__ import annotations

from kafka_protocol.errors import InvalidConfigError, KafkaError, OffsetOutOfRangeError

__all__ = ["IllegalStateError", "InvalidConfigError", "KafkaError", "NetworkError", "NoOffsetForPartitionError",
           "NotLeaderOrFollowerError", "OffsetOutOfRangeError", "RequestTimedOutError",
           "error_for_code", "error_name"]


class NotLeaderOrFollowerError(KafkaError):
    """No node asked is the leader (the leader may be one that was not asked)."""

    name, code, retriable = "NOT_LEADER_OR_FOLLOWER", 6, True


class RequestTimedOutError(KafkaError):
    name, code, retriable = "REQUEST_TIMED_OUT", 7, True


class NetworkError(KafkaError):
    """No node could be reached: refused, unreachable or no answer in time."""

    name, code, retriable = "NETWORK_EXCEPTION", 13, True


class IllegalStateError(KafkaError):
    """A call the client's state does not allow (Kafka's IllegalStateException):
    poll() before assign()/subscribe(), seek() of a partition not assigned, ..."""

    name = "ILLEGAL_STATE"


class NoOffsetForPartitionError(OffsetOutOfRangeError):
    """A consumer has no committed offset for a partition and auto.offset.reset=none
    (Kafka's NoOffsetForPartitionException, reported with the OFFSET_OUT_OF_RANGE code)."""


# Kafka's names of the codes a node may answer with, for one-line reports.
_CODE_NAMES = {
    1: "OFFSET_OUT_OF_RANGE",
    2: "CORRUPT_MESSAGE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    5: "LEADER_NOT_AVAILABLE",
    8: "BROKER_NOT_AVAILABLE",
    10: "MESSAGE_TOO_LARGE",
    12: "OFFSET_METADATA_TOO_LARGE",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    17: "INVALID_TOPIC_EXCEPTION",
    18: "RECORD_LIST_TOO_LARGE",
    19: "NOT_ENOUGH_REPLICAS",
    20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    22: "ILLEGAL_GENERATION",
    24: "INVALID_GROUP_ID",
    25: "UNKNOWN_MEMBER_ID",
    27: "REBALANCE_IN_PROGRESS",
    32: "INVALID_TIMESTAMP",
    35: "UNSUPPORTED_VERSION",
    36: "TOPIC_ALREADY_EXISTS",
    37: "INVALID_PARTITIONS",
    38: "INVALID_REPLICATION_FACTOR",
    39: "INVALID_REPLICA_ASSIGNMENT",
    40: "INVALID_CONFIG",
    41: "NOT_CONTROLLER",
    42: "INVALID_REQUEST",
    44: "POLICY_VIOLATION",
    45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    46: "DUPLICATE_SEQUENCE_NUMBER",
    47: "INVALID_PRODUCER_EPOCH",
    48: "INVALID_TXN_STATE",
    56: "KAFKA_STORAGE_ERROR",
    59: "UNKNOWN_PRODUCER_ID",
    68: "NON_EMPTY_GROUP",
    69: "GROUP_ID_NOT_FOUND",
    74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH",
    76: "UNSUPPORTED_COMPRESSION_TYPE",
    80: "PREFERRED_LEADER_NOT_AVAILABLE",
    83: "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    84: "ELECTION_NOT_NEEDED",
    87: "INVALID_RECORD",
    90: "PRODUCER_FENCED",
    94: "INCONSISTENT_VOTER_SET",
    104: "INCONSISTENT_CLUSTER_ID",
    110: "FENCED_MEMBER_EPOCH",
    111: "UNRELEASED_INSTANCE_ID",
    112: "UNSUPPORTED_ASSIGNOR",
    113: "STALE_MEMBER_EPOCH",
}


def error_name(code: int) -> str:
    return "NONE" if code == 0 else _CODE_NAMES.get(code, f"ERROR_CODE_{code}")


def error_for_code(code: int, detail: str) -> KafkaError:
    """The error for a Kafka error code in a response (never 0, NONE)."""
    for cls in (NotLeaderOrFollowerError, RequestTimedOutError, NetworkError):
        if cls.code == code:
            return cls(detail)
    error = KafkaError(detail)
    error.name = error_name(code)
    error.code = code
    return error
