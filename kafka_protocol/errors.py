"""Errors of the partition log, named and numbered as Kafka's protocol errors.

Brokers put `error.name`/`error.code` straight into responses, so a client sees
the same names a Kafka user knows (CORRUPT_MESSAGE, OFFSET_OUT_OF_RANGE, ...).
"""
from __future__ import annotations


class KafkaError(Exception):
    """An error with a Kafka protocol name and code."""

    name = "UNKNOWN_SERVER_ERROR"
    code = -1
    retriable = False

    def __str__(self) -> str:
        detail = super().__str__()
        return f"{self.name}: {detail}" if detail else self.name


class OffsetOutOfRangeError(KafkaError):
    name, code = "OFFSET_OUT_OF_RANGE", 1


class CorruptRecordError(KafkaError):
    """A batch failed its CRC, length, magic or structure checks."""

    name, code = "CORRUPT_MESSAGE", 2


class MessageTooLargeError(KafkaError):
    name, code = "MESSAGE_TOO_LARGE", 10


class RecordListTooLargeError(KafkaError):
    name, code = "RECORD_LIST_TOO_LARGE", 18


class InvalidTimestampError(KafkaError):
    name, code = "INVALID_TIMESTAMP", 32


class UnsupportedForMessageFormatError(KafkaError):
    name, code = "UNSUPPORTED_FOR_MESSAGE_FORMAT", 43


class KafkaStorageError(KafkaError):
    """The log directory cannot be read or written (missing, unreadable, disk full)."""

    name, code = "KAFKA_STORAGE_ERROR", 56


class UnsupportedCompressionTypeError(KafkaError):
    name, code = "UNSUPPORTED_COMPRESSION_TYPE", 76


class InvalidRecordError(KafkaError):
    name, code = "INVALID_RECORD", 87


class InvalidConfigError(KafkaError):
    name, code = "INVALID_CONFIG", 40


class InvalidTxnStateError(KafkaError):
    name, code = "INVALID_TXN_STATE", 48
