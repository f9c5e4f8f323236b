"""A small certificate authority for `kraftlog certs`: a CA, and node and
client certificates it signs, as PEM files the ssl.* settings read.

In a directory D:
  ca.key   the CA's private key (0600; keep it off the nodes)
  ca.pem   the CA certificate: every node's and client's ssl.truststore.location
  NAME.pem NAME's private key and certificate (0600): its ssl.keystore.location

A node certificate names its hosts (DNS names and IP addresses as SANs, which
gRPC checks) and may serve and connect (serverAuth, clientAuth: nodes connect
to each other with mTLS); a client certificate only connects. Keys are EC
P-256, unencrypted in files readable only by their owner. For a real
deployment, have your own CA sign the nodes' keys instead and point the same
settings at its files (docs/architecture.md, Security).
"""
from __future__ import annotations

import datetime
import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kafka_protocol.errors import InvalidConfigError

CA_KEY = "ca.key"
CA_CERT = "ca.pem"
ORGANIZATION = "kraftlog"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_HOST = re.compile(r"[A-Za-z0-9*]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*\.?")
BACKDATE = datetime.timedelta(minutes=5)  # tolerate clocks a little behind


class CertificateError(InvalidConfigError):
    """A `kraftlog certs` request that cannot be done (one clear line)."""


@dataclass(frozen=True)
class IssuedFiles:
    keystore: Path  # NAME.pem: key + certificate chain
    truststore: Path  # ca.pem


def init_ca(directory: str | Path, days: int = 3650, name: str = "kraftlog CA") -> Path:
    """Create ca.key and ca.pem in `directory`; an existing CA is never overwritten."""
    directory = Path(directory)
    _check_days(days)
    if (directory / CA_KEY).exists() or (directory / CA_CERT).exists():
        raise CertificateError(f"{directory}: already holds a CA ({CA_KEY}, {CA_CERT}); it is not replaced")
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
                         x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE).not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256()))
    _write_private(directory / CA_KEY, _key_pem(key))
    (directory / CA_CERT).write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return directory / CA_CERT


def issue(directory: str | Path, name: str, hosts: Sequence[str] = (), client: bool = False,
          days: int = 365) -> IssuedFiles:
    """A certificate for `name` (its subject's CN) signed by the CA in
    `directory`, written with its key to NAME.pem. A node certificate needs
    at least one host; NAME.pem is not overwritten."""
    directory = Path(directory)
    _check_days(days)
    if not _NAME.fullmatch(name) or name.lower() in ("ca",):
        raise CertificateError(f"--name: {name!r} is not a certificate name (letters, digits, '.', '_', '-'; "
                               "not 'ca')")
    if not hosts and not client:
        raise CertificateError("--host: a node certificate needs the host names or addresses it is reached at")
    sans = [_san(host) for host in hosts]
    keystore = directory / f"{name}.pem"
    if keystore.exists():
        raise CertificateError(f"{keystore}: already exists; it is not replaced")
    ca_key, ca_cert = _load_ca(directory)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH] if client else [ExtendedKeyUsageOID.SERVER_AUTH,
                                                               ExtendedKeyUsageOID.CLIENT_AUTH]
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
                                 x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(min(now + datetime.timedelta(days=days), ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    certificate = builder.sign(ca_key, hashes.SHA256())
    _write_private(keystore, _key_pem(key) + certificate.public_bytes(serialization.Encoding.PEM))
    return IssuedFiles(keystore, directory / CA_CERT)


def _load_ca(directory: Path):
    try:
        key = serialization.load_pem_private_key((directory / CA_KEY).read_bytes(), None)
        certificate = x509.load_pem_x509_certificate((directory / CA_CERT).read_bytes())
    except FileNotFoundError:
        raise CertificateError(f"{directory}: no CA here (run `kraftlog certs init --dir {directory}` first)") from None
    except (ValueError, TypeError):
        raise CertificateError(f"{directory}: {CA_KEY} or {CA_CERT} cannot be read") from None
    return key, certificate


def _san(host: str) -> x509.GeneralName:
    text = host.strip()
    try:
        return x509.IPAddress(ipaddress.ip_address(text.strip("[]")))
    except ValueError:
        pass
    if not _HOST.fullmatch(text) or len(text) > 253:
        raise CertificateError(f"--host: {host!r} is not a host name or IP address")
    return x509.DNSName(text.lower())


def _check_days(days: int) -> None:
    if not 1 <= days <= 36500:
        raise CertificateError(f"--days: expected 1 to 36500, got {days}")


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write_private(path: Path, data: bytes) -> None:
    """Create a file only its owner can read (never briefly world-readable)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
