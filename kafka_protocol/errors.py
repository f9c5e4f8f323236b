"""Kafka's protocol errors, for every layer of kraftlog: the `Errors` enum,
lookups by code, and the `KafkaError` exceptions.

The codes, names and retriable flags are the rows of `error_table.py`.
Brokers and controllers put `Errors.X` (an int) straight into responses, so a
client sees the names a Kafka user knows (CORRUPT_MESSAGE,
OFFSET_OUT_OF_RANGE, ...); clients turn a code back into a `KafkaError`.
"""
from __future__ import annotations

from enum import IntEnum

from .error_table import ROWS, ErrorRow

_BY_CODE: dict[int, ErrorRow] = {row.code: row for row in ROWS}


class _KafkaErrorCode(IntEnum):
    """The behaviour of `Errors` members: the code as a plain int, Kafka's flag and message."""

    @property
    def code(self) -> int:
        return self.value

    @property
    def retriable(self) -> bool:
        return _BY_CODE[self.value].retriable

    @property
    def message(self) -> str:
        return _BY_CODE[self.value].message


# Every Kafka error code by Kafka's name (Kafka's enum is `Errors` too):
# Errors.NOT_LEADER_OR_FOLLOWER == 6, Errors(6).name == "NOT_LEADER_OR_FOLLOWER".
Errors = _KafkaErrorCode("Errors", [(row.name, row.code) for row in ROWS], module=__name__,
                         qualname="Errors")


def error_name(code: int) -> str:
    """Kafka's name of a code ("NONE" for 0); `ERROR_CODE_{n}` for a code Kafka does not define."""
    row = _BY_CODE.get(int(code))
    return row.name if row is not None else f"ERROR_CODE_{int(code)}"


def is_retriable(code: int) -> bool:
    """Whether Kafka calls the error retriable (False for an unknown code)."""
    row = _BY_CODE.get(int(code))
    return row is not None and row.retriable


def error_message(code: int) -> str:
    """A one-line description of the code."""
    row = _BY_CODE.get(int(code))
    return row.message if row is not None else f"An error code Kafka does not define ({int(code)})."


class KafkaError(Exception):
    """An error with a Kafka protocol name and code.

    A subclass names its code with `error = Errors.X`; `name`, `code` and
    `retriable` then come from the table."""

    error = Errors.UNKNOWN_SERVER_ERROR
    name = error.name
    code = int(error)
    retriable = error.retriable

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "error" in cls.__dict__:
            cls.name, cls.code, cls.retriable = cls.error.name, int(cls.error), cls.error.retriable

    def __str__(self) -> str:
        detail = super().__str__()
        return f"{self.name}: {detail}" if detail else self.name


class OffsetOutOfRangeError(KafkaError):
    error = Errors.OFFSET_OUT_OF_RANGE


class CorruptRecordError(KafkaError):
    """A batch failed its CRC, length, magic or structure checks."""

    error = Errors.CORRUPT_MESSAGE


class MessageTooLargeError(KafkaError):
    error = Errors.MESSAGE_TOO_LARGE


class RecordListTooLargeError(KafkaError):
    error = Errors.RECORD_LIST_TOO_LARGE


class InvalidTimestampError(KafkaError):
    error = Errors.INVALID_TIMESTAMP


class UnsupportedForMessageFormatError(KafkaError):
    error = Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT


class KafkaStorageError(KafkaError):
    """The log directory cannot be read or written (missing, unreadable, disk full)."""

    error = Errors.KAFKA_STORAGE_ERROR


class UnsupportedCompressionTypeError(KafkaError):
    error = Errors.UNSUPPORTED_COMPRESSION_TYPE


class InvalidRecordError(KafkaError):
    error = Errors.INVALID_RECORD


class InvalidConfigError(KafkaError):
    error = Errors.INVALID_CONFIG


class InvalidTxnStateError(KafkaError):
    error = Errors.INVALID_TXN_STATE
