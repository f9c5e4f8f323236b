"""TLS for a listener served by an asyncio server (the Kafka-protocol
listener): an ssl.SSLContext from the same SslConfig, stores and checks a
gRPC listener of that name would use, and the peer's principal.

- The keystore and truststore are read by security/tls.py (PEM, an encrypted
  key decrypted with `ssl.key.password`, at most 1 MiB, a regular file). The
  decrypted key reaches OpenSSL through a file only this process can read,
  in a private temporary directory removed at once: Python's ssl module
  loads a key from a file only.
- `ssl.client.auth`: `required` is CERT_REQUIRED, `requested` CERT_OPTIONAL
  (a client certificate is asked for and, when given, must verify; unlike
  gRPC, Python's ssl has this middle setting), `none` asks for none.
- Reload: OpenSSL calls the context's server-name callback at every
  ClientHello (with or without SNI); it asks the same CertificateReloader as
  gRPC's fetcher whether the store files changed and, when they did and
  read, hands the handshake a context built from them. Open connections
  keep their session; a file that does not read keeps the old certificate.
- TLS 1.2 at least, as Kafka's default `ssl.enabled.protocols` (TLSv1.2,TLSv1.3).

The principal is the peer certificate's subject through
`ssl.principal.mapping.rules`, User:ANONYMOUS without a certificate, as on
a gRPC SSL listener (security/tls.py `peer_principal`).
"""
from __future__ import annotations

import os
import ssl
import tempfile
from typing import Optional

from .principal import ANONYMOUS, KafkaPrincipal
from .principal_mapping import PrincipalMapper, principal_from_certificate
from .ssl_config import SslConfig
from .tls import CertificateReloader, check_server_stores, read_keystore, read_truststore

_VERIFY_MODES = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def build_server_context(config: SslConfig) -> ssl.SSLContext:
    """A server context with `config`'s key, chain and trusted CAs (raises
    InvalidConfigError for a store that does not read or check)."""
    key = read_keystore(config)
    trusted = read_truststore(config)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    with tempfile.TemporaryDirectory(prefix="kraftlog-tls-") as directory:
        path = os.path.join(directory, "keystore.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key.private_key + key.certificate_chain)
        context.load_cert_chain(path)
    if trusted is not None:
        context.load_verify_locations(cadata=trusted.decode("ascii"))
        context.verify_mode = _VERIFY_MODES[config.client_auth]
    # Without a truststore no client certificate could verify: `requested` then asks for none.
    return context


def server_ssl_context(config: SslConfig, listener: str) -> ssl.SSLContext:
    """The context an SSL or SASL_SSL asyncio listener serves with,
    following changes of its store files (see the module doc)."""
    check_server_stores(config, listener)
    reloader: CertificateReloader[ssl.SSLContext] = CertificateReloader(config, build_server_context)
    serving = reloader.initial
    current = [serving]

    def on_client_hello(connection: ssl.SSLObject, server_name: Optional[str], _: ssl.SSLContext) -> None:
        fresh = reloader()
        if fresh is not None:
            current[0] = fresh
        if current[0] is not serving:
            connection.context = current[0]

    serving.sni_callback = on_client_hello
    return serving


def connection_principal(connection: Optional[ssl.SSLObject], mapper: PrincipalMapper) -> KafkaPrincipal:
    """The principal of a TLS connection's peer: its certificate's mapped
    subject, User:ANONYMOUS without one (NoMatchingRule when no rule applies)."""
    der = connection.getpeercert(binary_form=True) if connection is not None else None
    if not der:
        return ANONYMOUS
    return principal_from_certificate(ssl.DER_cert_to_PEM_cert(der).encode("ascii"), mapper)
