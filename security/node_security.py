"""A node's authentication and authorization settings, under Kafka's names.

- `sasl.enabled.mechanisms`: what SASL listeners offer (Kafka's default,
  GSSAPI, is not served here; the default is SCRAM-SHA-256,SCRAM-SHA-512).
  PLAIN is offered only on SASL_SSL listeners: over SASL_PLAINTEXT it would
  send the password in clear.
- `connections.max.reauth.ms`: a SASL session's lifetime (security/sasl_server.py).
- `authorizer.class.name`, `super.users`, `allow.everyone.if.no.acl.found`,
  `kraftlog.authorizer.log`: security/authorization.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from kafka_protocol.config_values import parse_int
from kafka_protocol.errors import InvalidConfigError

from .authorization import (ALLOW_EVERYONE_IF_NO_ACL_FOUND, AUTHORIZER_CLASS_NAME, AUTHORIZER_LOG, SUPER_USERS,
                            AuthorizerSettings)
from .sasl_protocol import MECHANISM_PLAIN, MECHANISMS

SASL_ENABLED_MECHANISMS = "sasl.enabled.mechanisms"
CONNECTIONS_MAX_REAUTH_MS = "connections.max.reauth.ms"
DEFAULT_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")

PROPERTY_NAMES = frozenset({SASL_ENABLED_MECHANISMS, CONNECTIONS_MAX_REAUTH_MS, AUTHORIZER_CLASS_NAME, SUPER_USERS,
                            ALLOW_EVERYONE_IF_NO_ACL_FOUND, AUTHORIZER_LOG})


@dataclass(frozen=True)
class NodeSecuritySettings:
    authorizer: AuthorizerSettings = AuthorizerSettings()
    sasl_mechanisms: tuple[str, ...] = DEFAULT_MECHANISMS
    max_reauth_ms: int = 0

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> "NodeSecuritySettings":
        raw = props.get(SASL_ENABLED_MECHANISMS)
        if raw is None:
            mechanisms = DEFAULT_MECHANISMS
        else:
            items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
            mechanisms = tuple(dict.fromkeys(str(m).strip().upper() for m in items if str(m).strip()))
            unknown = [m for m in mechanisms if m not in MECHANISMS]
            if unknown or not mechanisms:
                raise InvalidConfigError(f"{SASL_ENABLED_MECHANISMS}: {','.join(unknown) or 'empty'} is not served "
                                         f"here (choose among {','.join(MECHANISMS)})")
        return cls(
            authorizer=AuthorizerSettings.from_properties(props),
            sasl_mechanisms=mechanisms,
            max_reauth_ms=(parse_int(CONNECTIONS_MAX_REAUTH_MS, props[CONNECTIONS_MAX_REAUTH_MS], 0)
                           if CONNECTIONS_MAX_REAUTH_MS in props else 0),
        )

    def mechanisms_for(self, tls: bool) -> tuple[str, ...]:
        """What a SASL listener offers: PLAIN only over TLS."""
        return tuple(m for m in self.sasl_mechanisms if tls or m != MECHANISM_PLAIN)
