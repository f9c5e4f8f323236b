"""Kafka's security protocols and the listener name -> protocol map.

A listener is NAME://HOST:PORT; its security protocol comes from
`listener.security.protocol.map` (NAME:PROTOCOL,...). Kafka's default map
names each protocol after itself (a listener called SSL speaks SSL), and in
KRaft, when the operator has not set the map and no listener or controller
listener name is SSL or SASL_*, Kafka adds CONTROLLER-style names (those in
`controller.listener.names`) as PLAINTEXT, so the usual
`PLAINTEXT://...,CONTROLLER://...` needs no map. Any other unmapped name is a
configuration error, as in Kafka ("No security protocol defined for listener").
"""
from __future__ import annotations

import enum
from typing import Any, Iterable, Mapping, Optional

from kafka_protocol.errors import InvalidConfigError

LISTENER_SECURITY_PROTOCOL_MAP = "listener.security.protocol.map"


class SecurityProtocol(enum.Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)

    @classmethod
    def parse(cls, key: str, text: Any) -> "SecurityProtocol":
        """A protocol name, any case (Kafka upper-cases it too)."""
        name = str(text).strip().upper() if isinstance(text, str) else None
        try:
            return cls(name)
        except ValueError:
            raise InvalidConfigError(f"{key}: unknown security protocol {text!r} "
                                     f"(one of {', '.join(p.value for p in cls)})") from None


DEFAULT_PROTOCOL_MAP: dict[str, SecurityProtocol] = {p.value: p for p in SecurityProtocol}


def parse_security_protocol_map(text: Any, key: str = LISTENER_SECURITY_PROTOCOL_MAP) -> dict[str, SecurityProtocol]:
    """`INTERNAL:SSL,EXTERNAL:SASL_SSL` (or a YAML list of NAME:PROTOCOL) ->
    {"INTERNAL": SSL, ...}; listener names upper-cased as `listeners` has them."""
    items = text.split(",") if isinstance(text, str) else text
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise InvalidConfigError(f"{key}: expected NAME:PROTOCOL,... got {text!r}")
    mapping: dict[str, SecurityProtocol] = {}
    for item in (i.strip() for i in items):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        name = name.strip().upper()
        if not sep or not name:
            raise InvalidConfigError(f"{key}: {item!r} is not NAME:PROTOCOL")
        if name in mapping:
            raise InvalidConfigError(f"{key}: the listener name {name} is mapped twice")
        mapping[name] = SecurityProtocol.parse(key, protocol)
    return mapping


def effective_protocol_map(props: Mapping[str, Any], listener_names: Iterable[str],
                           controller_listener_names: Iterable[str]) -> dict[str, SecurityProtocol]:
    """The map a node uses: the operator's, or Kafka's default plus (in
    KRaft, when nothing is SSL or SASL_*) the controller names as PLAINTEXT."""
    given = props.get(LISTENER_SECURITY_PROTOCOL_MAP)
    if given is not None:
        return parse_security_protocol_map(given)
    controller_names = [n.upper() for n in controller_listener_names]
    names = {n.upper() for n in listener_names} | set(controller_names)
    if any(n in DEFAULT_PROTOCOL_MAP and DEFAULT_PROTOCOL_MAP[n] != SecurityProtocol.PLAINTEXT for n in names):
        return dict(DEFAULT_PROTOCOL_MAP)
    return {**DEFAULT_PROTOCOL_MAP,
            **{n: SecurityProtocol.PLAINTEXT for n in controller_names if n not in DEFAULT_PROTOCOL_MAP}}


def listener_protocol(name: str, protocol_map: Mapping[str, SecurityProtocol]) -> SecurityProtocol:
    """The protocol of listener `name`; an unmapped name is Kafka's config error."""
    protocol: Optional[SecurityProtocol] = protocol_map.get(name.upper())
    if protocol is None:
        raise InvalidConfigError(f"{LISTENER_SECURITY_PROTOCOL_MAP}: no security protocol is defined for "
                                 f"listener {name.upper()} (add {name.upper()}:PLAINTEXT, :SSL, ...)")
    return protocol
