"""Kafka-style setting values: integers and booleans parsed the way Kafka's
ConfigDef parses them, refused with INVALID_CONFIG naming the key.

Shared by the broker's, the controller's, the log's and the clients' settings.
"""
from __future__ import annotations

from typing import Any

from .errors import InvalidConfigError

LONG_MAX = 2**63 - 1


def parse_int(key: str, raw: Any, minimum: int | None = None) -> int:
    """A Kafka-style integer setting (a bool is not one); INVALID_CONFIG naming the key otherwise."""
    if isinstance(raw, bool):
        raise InvalidConfigError(f"{key}={raw!r}: expected an integer")
    try:
        value = int(raw)  # int() itself allows surrounding whitespace in a string
    except (TypeError, ValueError):
        raise InvalidConfigError(f"{key}={raw!r}: expected an integer") from None
    if not -LONG_MAX - 1 <= value <= LONG_MAX:  # Kafka's widest setting is a Java long
        raise InvalidConfigError(f"{key}={raw!r}: out of the range of a 64-bit integer")
    if minimum is not None and value < minimum:
        raise InvalidConfigError(f"{key}={value}: must be at least {minimum}")
    return value


def parse_bool(key: str, raw: Any) -> bool:
    """A Kafka-style boolean setting: true or false, any case."""
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise InvalidConfigError(f"{key}={raw!r}: expected true or false")
