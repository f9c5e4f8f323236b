"""The Kafka error codes the controller answers with.

`Error` is Kafka's one table of codes (`kafka_protocol.errors.Errors`) under
the name the controller's modules use, so a broker or a client can put them
straight into a response and a Kafka user recognises them.
"""

from __future__ import annotations

from kafka_protocol.errors import Errors

Error = Errors


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


__all__ = ["ControllerError", "Error"]
