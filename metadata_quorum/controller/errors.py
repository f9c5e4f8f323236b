"""The Kafka error codes the controller answers with.

Names and numbers are Kafka's protocol errors, so a broker or a client can
put them straight into a response and a Kafka user recognises them.
"""

from __future__ import annotations

from enum import IntEnum


class Error(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    INVALID_TOPIC_EXCEPTION = 17
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    POLICY_VIOLATION = 44
    FENCED_LEADER_EPOCH = 74
    STALE_BROKER_EPOCH = 77
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    INVALID_UPDATE_VERSION = 95
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_CLUSTER_ID = 104
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108


class ControllerError(Exception):
    """A request (or one item of it) is refused: an error code and why.

    Raised by validation helpers and caught by the handler that fills in
    the item's `error_code` and `error_message`.
    """

    def __init__(self, error: Error, message: str = "") -> None:
        super().__init__(message)
        self.error = error
        self.message = message

    def __str__(self) -> str:
        return f"{self.error.name}: {self.message}" if self.message else self.error.name
