"""Reading a client's Kafka-style settings (a mapping of dotted names to
values or strings): unknown keys refused, integers with their minimums,
booleans, strings, and the required bootstrap.servers. Each client's config
module lists its own keys and defaults and checks its own choices."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from kafka_protocol.config_values import parse_bool, parse_int
from security.client_security import CLIENT_SECURITY_KEYS, ClientSecurity

from .admin import parse_bootstrap
from .errors import InvalidConfigError


@dataclass(frozen=True)
class Settings:
    ints: dict[str, Optional[int]]
    strings: dict[str, Optional[str]]
    bools: dict[str, bool]
    bootstrap: tuple[str, ...]
    security: ClientSecurity  # security.protocol, ssl.*, sasl.*


def read_settings(raw: Mapping[str, Any], kind: str, *, ints: Mapping[str, tuple[Optional[int], int]],
                  strings: Mapping[str, Optional[str]], bools: Mapping[str, bool] = {}) -> Settings:
    """`ints`: key -> (default, minimum); `strings` and `bools`: key -> default.
    InvalidConfigError naming the key for an unknown key or a bad value."""
    unknown = sorted(set(raw) - set(ints) - set(strings) - set(bools) - CLIENT_SECURITY_KEYS)
    if unknown:
        raise InvalidConfigError(f"{unknown[0]}: not a {kind} setting")
    int_values = {k: parse_int(k, raw[k], minimum) if k in raw else default for k, (default, minimum) in ints.items()}
    string_values = {k: (str(raw[k]).strip() if raw.get(k) is not None else default) for k, default in strings.items()}
    bool_values = {k: parse_bool(k, raw[k]) if k in raw else default for k, default in bools.items()}
    servers = string_values.get("bootstrap.servers")
    if not servers:
        raise InvalidConfigError("bootstrap.servers: required (HOST:PORT,...)")
    try:
        bootstrap = tuple(parse_bootstrap(servers))
    except InvalidConfigError as exc:
        raise InvalidConfigError(f"bootstrap.servers={servers!r}: {exc}") from None
    return Settings(int_values, string_values, bool_values, bootstrap, ClientSecurity.from_config(raw))
