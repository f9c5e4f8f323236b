"""Per-item answers of the forwarded admin requests, in the order the Kafka
request named the items.

The controller answers one result per item; when the forward failed as a
whole (no controller in time: REQUEST_TIMED_OUT, or an authorization refusal
of the whole request) the gRPC answer carries only a request-level error.
Kafka's messages of these versions have no request-level error, so that
error becomes every item's (UNKNOWN_SERVER_ERROR if the answer has
neither: an item the answer left out must not read as done)."""
from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable, Optional

from kafka_protocol.errors import Errors


class ItemResults:
    def __init__(self, answer: Any, results: Iterable[Any], key: Callable[[Any], Hashable]) -> None:
        self._found = {key(r): r for r in results}
        self._error = answer.error_code or Errors.UNKNOWN_SERVER_ERROR
        self._message = getattr(answer, "error_message", "") or None

    def get(self, key: Hashable) -> Optional[Any]:
        return self._found.get(key)

    def error(self, key: Hashable) -> tuple[int, Optional[str]]:
        """(error code, message or None) of one item."""
        found = self._found.get(key)
        if found is None:
            return self._error, self._message
        return found.error_code, found.error_message or None
