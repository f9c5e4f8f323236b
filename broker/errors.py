"""The Kafka error codes the broker answers with, per partition.

`Error` is Kafka's one table of codes (`kafka_protocol.errors.Errors`) under
the name the broker's modules use. Storage errors raised by `partition_log`
carry their own Kafka code (`KafkaError.code`) and go into responses unchanged.
"""
from __future__ import annotations

from kafka_protocol.errors import Errors, KafkaError, error_name

Error = Errors


class BrokerError(Exception):
    """A partition-level refusal: a Kafka error code and why."""

    def __init__(self, error: int, message: str = "") -> None:
        super().__init__(message)
        self.error = int(error)
        self.message = message

    def __str__(self) -> str:
        return f"{error_name(self.error)}: {self.message}" if self.message else error_name(self.error)


def as_broker_error(exc: Exception) -> BrokerError:
    """Any exception as the error a client should see: storage errors keep
    their Kafka code, anything else is UNKNOWN_SERVER_ERROR."""
    if isinstance(exc, BrokerError):
        return exc
    if isinstance(exc, KafkaError):
        return BrokerError(exc.code, Exception.__str__(exc))
    return BrokerError(Error.UNKNOWN_SERVER_ERROR, f"{type(exc).__name__}: {exc}")


__all__ = ["BrokerError", "Error", "as_broker_error", "error_name"]
