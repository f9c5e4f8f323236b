"""Kafka's text for a SCRAM credential, as two tools take it:

    kafka-configs  --add-config 'SCRAM-SHA-512=[iterations=8192,password=alice-secret]'
    kafka-storage  --add-scram  'SCRAM-SHA-512=[name=admin,password=admin-secret]'
                   --add-scram  'SCRAM-SHA-256=[name=alice,salt="c2FsdHNhbHRzYWx0",saltedpassword="...",iterations=8192]'

One parser for both (`parse_scram_setting`), told which keys its tool takes.
A value may be quoted with double quotes (then it may hold commas);
`salt` and `saltedpassword` are base64. Iterations default to 4096 and must
lie within Kafka's 4096..16384.

The text holds a password (or what stands for one): no error message
quotes a value, only key names and the iteration count; the password and
salted password are kept out of reprs.
"""
from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass, field
from typing import Collection, Optional

from kafka_protocol.errors import InvalidConfigError

from .scram_credentials import (
    DEFAULT_ITERATIONS, MAX_ITERATIONS, MIN_ITERATIONS, SALT_BYTES, ScramMechanism, salted_password,
)

NAME, PASSWORD, SALT, SALTED_PASSWORD, ITERATIONS = "name", "password", "salt", "saltedpassword", "iterations"
CONFIG_KEYS = frozenset({ITERATIONS, PASSWORD})  # kafka-configs --add-config
STORAGE_KEYS = frozenset({NAME, PASSWORD, SALT, SALTED_PASSWORD, ITERATIONS})  # kafka-storage --add-scram


@dataclass(frozen=True)
class ScramSetting:
    """One parsed `SCRAM-SHA-nnn=[...]`: a password, or a salt with its salted password."""

    mechanism: ScramMechanism
    iterations: int
    name: Optional[str] = None  # --add-scram names the user; --add-config has --entity-name
    password: Optional[str] = field(default=None, repr=False)
    salt: Optional[bytes] = field(default=None, repr=False)
    salted_password: Optional[bytes] = field(default=None, repr=False)

    def salted(self) -> tuple[bytes, bytes]:
        """(salt, Hi(password, salt, iterations)): what Kafka's AlterUserScramCredentials
        carries and UserScramCredentialRecord is derived from. A password gets a
        fresh random salt; PBKDF2 with thousands of iterations: call it off an event loop."""
        if self.password is None:
            assert self.salt is not None and self.salted_password is not None
            return self.salt, self.salted_password
        salt = os.urandom(SALT_BYTES)
        return salt, salted_password(self.mechanism, self.password, salt, self.iterations)


def parse_mechanism(name: str) -> ScramMechanism:
    try:
        return ScramMechanism.from_name(name)
    except ValueError:
        # The key is no secret, but cut it short: it could be anything.
        raise InvalidConfigError(f"unknown SCRAM mechanism {name[:64]!r}: expected SCRAM-SHA-256 or SCRAM-SHA-512") \
            from None


def parse_scram_setting(mechanism_name: str, value: str, keys: Collection[str]) -> ScramSetting:
    """`value` is what stood between the brackets of `mechanism_name=[...]`."""
    mechanism = parse_mechanism(mechanism_name)
    where = mechanism.mechanism_name
    expected = ", ".join(sorted(keys))
    settings: dict[str, str] = {}
    for item in _items(value, where):
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or key not in keys:
            raise InvalidConfigError(f"{where}: expected only {expected}; got an item "
                                     f"{'named ' + repr(key[:32]) if sep else 'without ='}")
        if key in settings:
            raise InvalidConfigError(f"{where}: {key} is given twice")
        settings[key] = _unquote(text.strip())
    iterations = _iterations(where, settings.get(ITERATIONS))
    name = settings.get(NAME)
    if NAME in keys and not name:
        raise InvalidConfigError(f"{where}: a name=... is required")
    password = settings.get(PASSWORD)
    if password is not None:
        if not password:
            raise InvalidConfigError(f"{where}: the password is empty")
        if SALT in settings or SALTED_PASSWORD in settings:
            raise InvalidConfigError(f"{where}: give password=... or salt=... with saltedpassword=..., not both")
        return ScramSetting(mechanism, iterations, name, password=password)
    if SALT in settings and SALTED_PASSWORD in settings:
        return ScramSetting(mechanism, iterations, name, salt=_base64(where, SALT, settings[SALT]),
                            salted_password=_base64(where, SALTED_PASSWORD, settings[SALTED_PASSWORD]))
    wanted = "password=..." + (" or salt=... with saltedpassword=..." if SALT in keys else "")
    raise InvalidConfigError(f"{where}: {wanted} is required")


def _items(value: str, where: str) -> list[str]:
    """Split at commas outside double quotes."""
    items, start, quoted = [], 0, False
    for i, ch in enumerate(value):
        if ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            items.append(value[start:i])
            start = i + 1
    if quoted:
        raise InvalidConfigError(f"{where}: a double quote is not closed")
    items.append(value[start:])
    return [item for item in items if item.strip()]


def _unquote(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def _iterations(where: str, text: Optional[str]) -> int:
    if text is None:
        return DEFAULT_ITERATIONS
    text = text.strip()
    if not text.isdigit() or not MIN_ITERATIONS <= int(text) <= MAX_ITERATIONS:
        raise InvalidConfigError(f"{where}: iterations must be a number from {MIN_ITERATIONS} to {MAX_ITERATIONS}, "
                                 f"got {text[:32]!r}")
    return int(text)


def _base64(where: str, key: str, text: str) -> bytes:
    try:
        decoded = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidConfigError(f"{where}: {key} is not base64") from None
    if not decoded:
        raise InvalidConfigError(f"{where}: {key} is empty")
    return decoded
