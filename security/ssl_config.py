"""The ssl.* settings of a listener or a client, with Kafka's names.

Only PEM key and trust stores exist here (gRPC reads PEM); `ssl.keystore.type`
and `ssl.truststore.type` default to PEM (Kafka's default is JKS, which a
Python process cannot read) and any other type is a configuration error.

A keystore is a PEM file (`ssl.keystore.location`) holding the private key
and the certificate chain, or the two inline (`ssl.keystore.key` and
`ssl.keystore.certificate.chain`). `ssl.key.password` decrypts an encrypted
(PKCS#8) key. A truststore is a PEM file of CA certificates
(`ssl.truststore.location`) or the certificates inline
(`ssl.truststore.certificates`).

On a node, `listener.name.<listener name, lower case>.ssl.X` overrides
`ssl.X` for that listener, as Kafka applies listener prefixes. Secrets (the
inline key, the key password) never appear in a repr or an error message.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from kafka_protocol.errors import InvalidConfigError

from .principal_mapping import SSL_PRINCIPAL_MAPPING_RULES, PrincipalMapper, parse_rules

KEYSTORE_TYPE = "ssl.keystore.type"
KEYSTORE_LOCATION = "ssl.keystore.location"
KEYSTORE_CERTIFICATE_CHAIN = "ssl.keystore.certificate.chain"
KEYSTORE_KEY = "ssl.keystore.key"
KEYSTORE_PASSWORD = "ssl.keystore.password"
KEY_PASSWORD = "ssl.key.password"
TRUSTSTORE_TYPE = "ssl.truststore.type"
TRUSTSTORE_LOCATION = "ssl.truststore.location"
TRUSTSTORE_CERTIFICATES = "ssl.truststore.certificates"
TRUSTSTORE_PASSWORD = "ssl.truststore.password"
CLIENT_AUTH = "ssl.client.auth"
ENDPOINT_IDENTIFICATION_ALGORITHM = "ssl.endpoint.identification.algorithm"

SSL_KEYS = frozenset({
    KEYSTORE_TYPE, KEYSTORE_LOCATION, KEYSTORE_CERTIFICATE_CHAIN, KEYSTORE_KEY, KEYSTORE_PASSWORD, KEY_PASSWORD,
    TRUSTSTORE_TYPE, TRUSTSTORE_LOCATION, TRUSTSTORE_CERTIFICATES, TRUSTSTORE_PASSWORD, CLIENT_AUTH,
    ENDPOINT_IDENTIFICATION_ALGORITHM, SSL_PRINCIPAL_MAPPING_RULES,
})
SECRET_KEYS = frozenset({KEYSTORE_KEY, KEY_PASSWORD, KEYSTORE_PASSWORD, TRUSTSTORE_PASSWORD})
CLIENT_AUTH_CHOICES = ("none", "requested", "required")
PEM = "PEM"
LISTENER_PREFIX = "listener.name."


def is_ssl_key(key: str) -> bool:
    """An ssl.* setting, plain or listener-prefixed (listener.name.x.ssl.*)."""
    if key.startswith(LISTENER_PREFIX):
        _, _, key = key[len(LISTENER_PREFIX):].partition(".")
    return key in SSL_KEYS


@dataclass(frozen=True)
class SslConfig:
    keystore_location: Optional[str] = None
    keystore_certificate_chain: Optional[str] = None
    keystore_key: Optional[str] = field(default=None, repr=False)
    key_password: Optional[str] = field(default=None, repr=False)
    truststore_location: Optional[str] = None
    truststore_certificates: Optional[str] = None
    client_auth: str = "none"
    endpoint_identification: bool = True  # ssl.endpoint.identification.algorithm=https
    principal_mapper: PrincipalMapper = field(default_factory=lambda: parse_rules(None), repr=False)

    @property
    def has_keystore(self) -> bool:
        return self.keystore_location is not None or self.keystore_key is not None

    @property
    def has_truststore(self) -> bool:
        return self.truststore_location is not None or self.truststore_certificates is not None

    @classmethod
    def from_properties(cls, props: Mapping[str, Any], listener_name: Optional[str] = None) -> "SslConfig":
        """From ssl.* keys; for a listener, its listener.name.<name>.ssl.* win."""
        values = {key: props[key] for key in SSL_KEYS if key in props}
        if listener_name is not None:
            prefix = f"{LISTENER_PREFIX}{listener_name.lower()}."
            values.update({key[len(prefix):]: value for key, value in props.items()
                           if key.startswith(prefix) and key[len(prefix):] in SSL_KEYS})
        name = (lambda key: f"{LISTENER_PREFIX}{listener_name.lower()}.{key}"
                if listener_name is not None and f"{LISTENER_PREFIX}{listener_name.lower()}.{key}" in props
                else key)
        for key in (KEYSTORE_TYPE, TRUSTSTORE_TYPE):
            store_type = _text(values, key, name) or PEM
            if store_type.upper() != PEM:
                raise InvalidConfigError(f"{name(key)}: only PEM stores are supported, got {store_type!r}")
        for key in (KEYSTORE_PASSWORD, TRUSTSTORE_PASSWORD):
            if values.get(key) not in (None, ""):
                raise InvalidConfigError(f"{name(key)}: cannot be used with PEM stores "
                                         f"(only {KEY_PASSWORD}, for an encrypted key)")
        config = cls(
            keystore_location=_text(values, KEYSTORE_LOCATION, name),
            keystore_certificate_chain=_text(values, KEYSTORE_CERTIFICATE_CHAIN, name),
            keystore_key=_text(values, KEYSTORE_KEY, name, secret=True),
            key_password=_text(values, KEY_PASSWORD, name, secret=True),
            truststore_location=_text(values, TRUSTSTORE_LOCATION, name),
            truststore_certificates=_text(values, TRUSTSTORE_CERTIFICATES, name),
            client_auth=_choice(values, CLIENT_AUTH, name, "none", CLIENT_AUTH_CHOICES),
            endpoint_identification=_choice(values, ENDPOINT_IDENTIFICATION_ALGORITHM, name, "https", ("https", "")) == "https",
            principal_mapper=parse_rules(values.get(SSL_PRINCIPAL_MAPPING_RULES), name(SSL_PRINCIPAL_MAPPING_RULES)),
        )
        if config.keystore_location is not None and (config.keystore_key or config.keystore_certificate_chain):
            raise InvalidConfigError(f"{name(KEYSTORE_LOCATION)}: give either a keystore file or "
                                     f"{KEYSTORE_KEY} with {KEYSTORE_CERTIFICATE_CHAIN}, not both")
        if (config.keystore_key is None) != (config.keystore_certificate_chain is None):
            raise InvalidConfigError(f"{name(KEYSTORE_KEY)}: needs {KEYSTORE_CERTIFICATE_CHAIN} too (and back)")
        if config.truststore_location is not None and config.truststore_certificates is not None:
            raise InvalidConfigError(f"{name(TRUSTSTORE_LOCATION)}: give either a truststore file or "
                                     f"{TRUSTSTORE_CERTIFICATES}, not both")
        return config


@dataclass(frozen=True)
class KeyMaterial:
    """A private key (unencrypted PKCS#8 PEM, as gRPC wants it) and its chain."""

    private_key: bytes = field(repr=False)
    certificate_chain: bytes


def keystore_material(pem: bytes, password: Optional[str], key: str = KEYSTORE_LOCATION) -> KeyMaterial:
    """The key and certificate chain of PEM text holding both (a keystore
    file, or the inline key followed by the chain). An encrypted key is
    decrypted with `password`. Errors name the setting, never the key."""
    # Imported here: cryptography costs every client process 30 ms, and only TLS needs it.
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    key_blocks = [block for block in _pem_blocks(pem) if b"PRIVATE KEY-----" in block.splitlines()[0]]
    certificates = [block for block in _pem_blocks(pem) if block.startswith(b"-----BEGIN CERTIFICATE-----")]
    if len(key_blocks) != 1:
        raise InvalidConfigError(f"{key}: expected exactly one PEM private key, found {len(key_blocks)}")
    if not certificates:
        raise InvalidConfigError(f"{key}: no PEM certificate (the chain, this node's certificate first)")
    try:
        private_key = serialization.load_pem_private_key(
            key_blocks[0], password=password.encode() if password else None)
    except TypeError:
        raise InvalidConfigError(f"{KEY_PASSWORD}: the private key in {key} is encrypted; "
                                 f"{KEY_PASSWORD} is required" if not password else
                                 f"{KEY_PASSWORD}: given, but the private key in {key} is not encrypted") from None
    except ValueError:
        raise InvalidConfigError(f"{key}: the private key cannot be read (wrong {KEY_PASSWORD} "
                                 "or not a PEM key)") from None
    try:
        leaf = x509.load_pem_x509_certificate(certificates[0])
        for block in certificates[1:]:
            x509.load_pem_x509_certificate(block)
    except ValueError:
        raise InvalidConfigError(f"{key}: a certificate is not valid PEM") from None
    if leaf.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo) \
            != private_key.public_key().public_bytes(serialization.Encoding.DER,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo):
        raise InvalidConfigError(f"{key}: the first certificate is not the private key's")
    clear = private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())
    return KeyMaterial(clear, b"".join(certificates))


def truststore_material(pem: bytes, key: str = TRUSTSTORE_LOCATION) -> bytes:
    """The CA certificates of PEM text (at least one, each readable)."""
    from cryptography import x509

    certificates = [block for block in _pem_blocks(pem) if block.startswith(b"-----BEGIN CERTIFICATE-----")]
    if not certificates:
        raise InvalidConfigError(f"{key}: no PEM certificate")
    try:
        for block in certificates:
            x509.load_pem_x509_certificate(block)
    except ValueError:
        raise InvalidConfigError(f"{key}: a certificate is not valid PEM") from None
    return b"".join(certificates)


def _pem_blocks(pem: bytes) -> list[bytes]:
    blocks, current = [], None
    for line in pem.splitlines():
        line = line.strip()
        if line.startswith(b"-----BEGIN "):
            current = [line]
        elif current is not None:
            current.append(line)
            if line.startswith(b"-----END "):
                blocks.append(b"\n".join(current) + b"\n")
                current = None
    return blocks


def _text(values: Mapping[str, Any], key: str, name, secret: bool = False) -> Optional[str]:
    """Text or None (absent or empty); a secret is kept as given and never shown."""
    value = values.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        shown = "value not shown" if secret else f"got {value!r}"
        raise InvalidConfigError(f"{name(key)}: expected text ({shown})")
    return value if secret else value.strip()


def _choice(values: Mapping[str, Any], key: str, name, default: str, choices: tuple[str, ...]) -> str:
    """One of `choices` (any case, spaces around ignored); '' may be one."""
    value = values.get(key, default)
    text = value.strip().lower() if isinstance(value, str) else None
    if text not in choices:
        raise InvalidConfigError(f"{name(key)}: expected one of {', '.join(repr(c) for c in choices)}, got {value!r}")
    return text
