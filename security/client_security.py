"""A client's security settings, with Kafka's (and confluent-kafka's) names.

`security.protocol` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) picks the
transport; the ssl.* settings (truststore, keystore for mTLS, the host name
check) apply when it uses TLS. The sasl.* settings (`sasl.mechanism`, and
`sasl.jaas.config` or confluent-kafka's `sasl.username`/`sasl.password`) are
read by security/sasl_client.py's SaslSettings; PLAIN only with SASL_SSL.
The password never appears in a repr or an error message.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from kafka_protocol.errors import InvalidConfigError

from .listeners import SecurityProtocol
from .sasl_client import SaslSettings
from .sasl_protocol import MECHANISM_PLAIN
from .ssl_config import SSL_KEYS, SslConfig

SECURITY_PROTOCOL = "security.protocol"
SASL_MECHANISM = "sasl.mechanism"
SASL_USERNAME = "sasl.username"
SASL_PASSWORD = "sasl.password"
SASL_JAAS_CONFIG = "sasl.jaas.config"
SASL_KEYS = frozenset({SASL_MECHANISM, SASL_USERNAME, SASL_PASSWORD, SASL_JAAS_CONFIG})
# The server-side ssl.* settings a client has no use for.
_SERVER_ONLY = frozenset({"ssl.client.auth", "ssl.principal.mapping.rules"})
CLIENT_SECURITY_KEYS = frozenset({SECURITY_PROTOCOL, *SASL_KEYS, *(SSL_KEYS - _SERVER_ONLY)})


@dataclass(frozen=True)
class ClientSecurity:
    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    ssl: Optional[SslConfig] = None  # set when the protocol uses TLS
    sasl: Optional[SaslSettings] = None  # set when the protocol uses SASL (its repr hides the password)

    @classmethod
    def from_config(cls, raw: Mapping[str, Any]) -> "ClientSecurity":
        """From a client's config mapping (other keys are the caller's)."""
        protocol = SecurityProtocol.parse(SECURITY_PROTOCOL, raw.get(SECURITY_PROTOCOL, "PLAINTEXT"))
        ssl = SslConfig.from_properties({k: v for k, v in raw.items() if k in SSL_KEYS}) \
            if protocol.uses_tls else None
        if not protocol.uses_sasl:
            return cls(protocol, ssl)
        sasl = SaslSettings.from_config({k: v for k, v in raw.items() if k in SASL_KEYS})
        if sasl.mechanism == MECHANISM_PLAIN and not protocol.uses_tls:
            raise InvalidConfigError(f"{SASL_MECHANISM}: PLAIN sends the password as it is; "
                                     f"use it only with {SECURITY_PROTOCOL}=SASL_SSL")
        return cls(protocol, ssl, sasl)
