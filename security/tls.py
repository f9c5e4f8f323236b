"""gRPC TLS credentials from an SslConfig, with certificate reload.

Server side. `server_credentials` uses grpc.dynamic_ssl_server_credentials:
before each TLS handshake, gRPC calls our fetcher on one of its core threads
(synchronously: no asyncio there, and it must be quick). The fetcher compares
the keystore and truststore files' modification time, size and inode with
what it loaded last; only when they changed does it read and check the files
again and hand gRPC the new configuration. A file that does not read or check
(half written, garbled, a key that is not the certificate's) keeps the old
configuration, is logged once (the file name, never its content) and is
tried again only when it changes again. Connections already open keep the
session they negotiated; new handshakes get the new certificate: rotation
without a restart, as Kafka's dynamic `ssl.keystore.location` update.

ssl.client.auth: `required` is gRPC's require_client_auth (the client must
present a certificate the truststore verifies, or the handshake fails).
grpcio's Python API has no middle setting: with require_client_auth off the
server does not ask for a client certificate at all (gRPC core's
GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE), so `requested` behaves as `none`
here: every peer is User:ANONYMOUS (tests/security/test_tls.py shows it).
The server logs a warning when a listener is set to `requested`.

Client side. `channel_credentials` gives the truststore as the root
certificates and, when a keystore is set, the client certificate (mTLS).
gRPC always checks the server's host name against its certificate (DNS or IP
SAN); it has no switch to turn that off. So `ssl.endpoint.identification.
algorithm=""` (Kafka's "no host name check") is refused with a clear error
rather than pretended: issue certificates that name the host (`kraftlog certs
issue --host`). Clients rotate by rebuilding their channel.

The peer's identity is read from the TLS session (`auth_context()`'s
x509_pem_cert), never from call metadata.
"""
from __future__ import annotations

import logging
import os
import stat
import threading
from typing import Callable, Generic, Optional, Sequence, TypeVar

import grpc

from kafka_protocol.errors import InvalidConfigError

from .principal import ANONYMOUS, KafkaPrincipal
from .principal_mapping import PrincipalMapper, principal_from_certificate
from .ssl_config import (ENDPOINT_IDENTIFICATION_ALGORITHM, KEYSTORE_KEY, KEYSTORE_LOCATION, TRUSTSTORE_CERTIFICATES,
                         TRUSTSTORE_LOCATION, KeyMaterial, SslConfig, keystore_material, truststore_material)

log = logging.getLogger(__name__)
T = TypeVar("T")

PEER_CERTIFICATE = "x509_pem_cert"
# A PEM key store or trust store is a few KiB; anything over this (or not a
# regular file: a FIFO, /dev/zero) is refused rather than read, so a swapped
# file cannot stall the handshake thread or fill memory.
MAX_STORE_BYTES = 1 << 20


def read_keystore(ssl: SslConfig) -> KeyMaterial:
    """The key and chain of the keystore file or the inline settings."""
    if ssl.keystore_location is not None:
        return keystore_material(_read(ssl.keystore_location, KEYSTORE_LOCATION), ssl.key_password)
    if ssl.keystore_key is not None and ssl.keystore_certificate_chain is not None:
        pem = (ssl.keystore_key.strip() + "\n" + ssl.keystore_certificate_chain.strip() + "\n").encode()
        return keystore_material(pem, ssl.key_password, KEYSTORE_KEY)
    raise InvalidConfigError(f"{KEYSTORE_LOCATION}: is required (a PEM file with the key and certificate chain)")


def read_truststore(ssl: SslConfig) -> Optional[bytes]:
    """The CA certificates, or None when no truststore is set."""
    if ssl.truststore_location is not None:
        return truststore_material(_read(ssl.truststore_location, TRUSTSTORE_LOCATION))
    if ssl.truststore_certificates is not None:
        return truststore_material(ssl.truststore_certificates.encode(), TRUSTSTORE_CERTIFICATES)
    return None


def _read(path: str, key: str) -> bytes:
    try:
        with open(path, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise InvalidConfigError(f"{key}: {path} is not a regular file")
            data = f.read(MAX_STORE_BYTES + 1)
    except OSError as exc:
        raise InvalidConfigError(f"{key}: cannot read {path} ({exc.strerror or exc})") from None
    if len(data) > MAX_STORE_BYTES:
        raise InvalidConfigError(f"{key}: {path} is over {MAX_STORE_BYTES} bytes (not a PEM store)")
    return data


def grpc_certificate_configuration(ssl: SslConfig) -> grpc.ServerCertificateConfiguration:
    """What gRPC's server credentials take: the keystore and the truststore."""
    key = read_keystore(ssl)
    return grpc.ssl_server_certificate_configuration(
        [(key.private_key, key.certificate_chain)], root_certificates=read_truststore(ssl))


class CertificateReloader(Generic[T]):
    """The fetcher gRPC calls before each handshake (see the module doc):
    None while the store files are unchanged, else `build(ssl)` afresh. The
    Kafka listener's TLS (security/ssl_context.py) calls it the same way,
    with a `build` that makes an ssl.SSLContext."""

    def __init__(self, ssl: SslConfig,
                 build: Callable[[SslConfig], T] = grpc_certificate_configuration) -> None:  # type: ignore[assignment]
        self._ssl = ssl
        self._build = build
        self._lock = threading.Lock()
        self._stamp = self._file_stamp()
        self._tried = self._stamp
        self.initial = self._configuration()  # a bad store at start is the caller's InvalidConfigError
        self.reloads = 0

    def _files(self) -> tuple[str, ...]:
        return tuple(p for p in (self._ssl.keystore_location, self._ssl.truststore_location) if p is not None)

    def _file_stamp(self) -> tuple:
        stamps = []
        for path in self._files():
            try:
                st = os.stat(path)
                stamps.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                stamps.append(None)
        return tuple(stamps)

    def _configuration(self) -> T:
        return self._build(self._ssl)

    def __call__(self) -> Optional[T]:
        # Never raise into gRPC core: a failure keeps the configuration in use.
        try:
            with self._lock:
                stamp = self._file_stamp()
                if stamp == self._stamp or stamp == self._tried:
                    return None
                self._tried = stamp
                try:
                    configuration = self._configuration()
                except InvalidConfigError as exc:
                    log.warning("TLS certificates not reloaded, the ones in use stay: %s", exc)
                    return None
                self._stamp = stamp
                self.reloads += 1
                log.info("TLS certificates reloaded from %s", ", ".join(self._files()))
                return configuration
        except Exception:  # noqa: BLE001 - the fetcher must not fail a handshake
            log.warning("TLS certificate reload check failed; the certificates in use stay", exc_info=False)
            return None


def check_server_stores(ssl: SslConfig, listener: str) -> None:
    """What a TLS listener cannot start without, gRPC or Kafka protocol alike."""
    if not ssl.has_keystore:
        raise InvalidConfigError(f"{KEYSTORE_LOCATION}: is required on the {listener or 'TLS'} listener "
                                 "(a PEM file with the key and certificate chain)")
    if ssl.client_auth == "required" and not ssl.has_truststore:
        raise InvalidConfigError(f"{TRUSTSTORE_LOCATION}: is required with ssl.client.auth=required on the "
                                 f"{listener or 'TLS'} listener (the CAs that sign client certificates)")


def server_credentials(ssl: SslConfig, listener: str = "") -> grpc.ServerCredentials:
    """Credentials for an SSL/SASL_SSL listener, reloading changed files."""
    check_server_stores(ssl, listener)
    if ssl.client_auth == "requested":
        log.warning("%s: ssl.client.auth=requested acts as none with gRPC (no client certificate is asked for)",
                    listener or "TLS listener")
    reloader = CertificateReloader(ssl)
    return grpc.dynamic_ssl_server_credentials(reloader.initial, reloader,
                                               require_client_authentication=ssl.client_auth == "required")


def channel_credentials(ssl: SslConfig) -> grpc.ChannelCredentials:
    """Credentials for a channel to a TLS listener: trust the truststore (or
    the system's CAs when none is set), present the keystore when set."""
    if not ssl.endpoint_identification:
        raise InvalidConfigError(
            f"{ENDPOINT_IDENTIFICATION_ALGORITHM}: an empty value (no host name check) is not supported: gRPC "
            "always checks the server's host name against its certificate; use certificates naming the host "
            "(kraftlog certs issue --host) and keep the default https")
    key = read_keystore(ssl) if ssl.has_keystore else None
    return grpc.ssl_channel_credentials(
        root_certificates=read_truststore(ssl),
        private_key=key.private_key if key else None,
        certificate_chain=key.certificate_chain if key else None)


def peer_principal(context, mapper: PrincipalMapper) -> KafkaPrincipal:
    """The principal of the peer of a call: its certificate's subject through
    the mapping rules, or User:ANONYMOUS without one (a plaintext listener,
    or TLS without a client certificate). NoMatchingRule when no rule applies."""
    certificates = context.auth_context().get(PEER_CERTIFICATE) or ()
    if not certificates:
        return ANONYMOUS
    return principal_from_certificate(certificates[0], mapper)


def open_aio_channel(address: str, options, ssl: Optional[SslConfig],
                     interceptors: Sequence[grpc.aio.ClientInterceptor] = ()) -> grpc.aio.Channel:
    """A grpc.aio channel to HOST:PORT: TLS (and mTLS with a keystore) when
    `ssl` is given, plaintext when it is None."""
    chain = list(interceptors) or None
    if ssl is None:
        return grpc.aio.insecure_channel(address, options=options, interceptors=chain)
    return grpc.aio.secure_channel(address, channel_credentials(ssl), options=options, interceptors=chain)


def open_sync_channel(address: str, options, ssl: Optional[SslConfig]) -> grpc.Channel:
    """The blocking-API twin of open_aio_channel."""
    if ssl is None:
        return grpc.insecure_channel(address, options=options)
    return grpc.secure_channel(address, channel_credentials(ssl), options=options)
