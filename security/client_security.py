"""A client's security settings, with Kafka's (and confluent-kafka's) names.

`security.protocol` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) picks the
transport; the ssl.* settings (truststore, keystore for mTLS, the host name
check) apply when it uses TLS. The SASL settings are parsed and kept here for
the SASL step of issue 17: `sasl.mechanism` (SCRAM-SHA-256, SCRAM-SHA-512,
PLAIN), `sasl.username` / `sasl.password` (confluent-kafka's spelling) or
Kafka's `sasl.jaas.config`:

    org.apache.kafka.common.security.scram.ScramLoginModule required
        username="alice" password="alice-secret";

The password never appears in a repr or an error message.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from kafka_protocol.errors import InvalidConfigError

from .listeners import SecurityProtocol
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
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
LOGIN_MODULES = {
    "org.apache.kafka.common.security.scram.ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
    "org.apache.kafka.common.security.plain.PlainLoginModule": ("PLAIN",),
}
# A JAAS entry: module, flag, options key=value (value quoted or bare), ';'.
_JAAS = re.compile(r"\s*(?P<module>[A-Za-z_$][\w.$]*)\s+(?P<flag>required|requisite|sufficient|optional)"
                   r"(?P<options>(?:\s+[\w.]+\s*=\s*(?:\"(?:[^\"\\]|\\.)*\"|[^\s;\"]+))*)\s*;\s*")
_OPTION = re.compile(r"([\w.]+)\s*=\s*(?:\"((?:[^\"\\]|\\.)*)\"|([^\s;\"]+))")


@dataclass(frozen=True)
class ClientSecurity:
    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    ssl: Optional[SslConfig] = None  # set when the protocol uses TLS
    sasl_mechanism: Optional[str] = None  # set when the protocol uses SASL
    sasl_username: Optional[str] = None
    sasl_password: Optional[str] = field(default=None, repr=False)

    @classmethod
    def from_config(cls, raw: Mapping[str, Any]) -> "ClientSecurity":
        """From a client's config mapping (other keys are the caller's)."""
        protocol = SecurityProtocol.parse(SECURITY_PROTOCOL, raw.get(SECURITY_PROTOCOL, "PLAINTEXT"))
        ssl = SslConfig.from_properties({k: v for k, v in raw.items() if k in SSL_KEYS}) \
            if protocol.uses_tls else None
        if not protocol.uses_sasl:
            return cls(protocol, ssl)
        mechanism = str(raw.get(SASL_MECHANISM, "GSSAPI")).strip().upper()
        if mechanism not in SASL_MECHANISMS:
            raise InvalidConfigError(f"{SASL_MECHANISM}: {mechanism!r} is not supported "
                                     f"(one of {', '.join(SASL_MECHANISMS)})")
        if mechanism == "PLAIN" and not protocol.uses_tls:
            raise InvalidConfigError(f"{SASL_MECHANISM}: PLAIN sends the password as it is; "
                                     f"use it only with {SECURITY_PROTOCOL}=SASL_SSL")
        username, password = _credentials(raw, mechanism)
        return cls(protocol, ssl, mechanism, username, password)


def _credentials(raw: Mapping[str, Any], mechanism: str) -> tuple[str, str]:
    username, password = raw.get(SASL_USERNAME), raw.get(SASL_PASSWORD)
    jaas = raw.get(SASL_JAAS_CONFIG)
    if jaas is not None:
        if username is not None or password is not None:
            raise InvalidConfigError(f"{SASL_JAAS_CONFIG}: give it or {SASL_USERNAME}/{SASL_PASSWORD}, not both")
        username, password = parse_jaas_config(jaas, mechanism)
    if not isinstance(username, str) or not username:
        raise InvalidConfigError(f"{SASL_USERNAME}: is required with {SASL_MECHANISM}={mechanism}")
    if not isinstance(password, str) or not password:
        raise InvalidConfigError(f"{SASL_PASSWORD}: is required with {SASL_MECHANISM}={mechanism} (value not shown)")
    return username, password


def parse_jaas_config(text: Any, mechanism: str) -> tuple[str, str]:
    """(username, password) of a ScramLoginModule or PlainLoginModule entry.
    Errors never quote the text (it holds the password)."""
    match = _JAAS.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidConfigError(f"{SASL_JAAS_CONFIG}: expected `<LoginModule> required username=\"...\" "
                                 "password=\"...\";` (value not shown)")
    mechanisms = LOGIN_MODULES.get(match["module"])
    if mechanisms is None or mechanism not in mechanisms:
        raise InvalidConfigError(f"{SASL_JAAS_CONFIG}: {match['module']} does not do {SASL_MECHANISM}={mechanism}")
    options = {}
    for key, quoted, bare in _OPTION.findall(match["options"]):
        options[key] = re.sub(r"\\(.)", r"\1", quoted) if quoted or not bare else bare
    if "username" not in options or "password" not in options:
        raise InvalidConfigError(f"{SASL_JAAS_CONFIG}: needs username=\"...\" and password=\"...\" (value not shown)")
    return options["username"], options["password"]
