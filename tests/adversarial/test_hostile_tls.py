"""Hostile peers and hostile files against a TLS listener (issue 17,
transport): garbage and stalled handshakes, a certificate subject crafted to
look like another principal, a key store swapped for something that is not
one. Each gets a clean refusal; the server keeps serving a good mTLS client."""
from __future__ import annotations

import asyncio
import datetime
import os
import socket

import grpc
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from security.ssl_config import SslConfig
from security.tls import channel_credentials, server_credentials
from tests.security.tls_helpers import echo_server, whoami

RULES = "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT"


def _stores(tmp_path, ca, cert, name):
    path = tmp_path / f"{name}.pem"
    path.write_bytes(cert.private_key_and_cert_chain_pem.bytes())
    (tmp_path / "ca.pem").write_bytes(ca.cert_pem.bytes())
    return str(path), str(tmp_path / "ca.pem")


def _server_ssl(tmp_path, ca):
    keystore, truststore = _stores(tmp_path, ca, ca.issue_cert("127.0.0.1"), "server")
    return SslConfig.from_properties({"ssl.keystore.location": keystore, "ssl.truststore.location": truststore,
                                      "ssl.client.auth": "required", "ssl.principal.mapping.rules": RULES})


def _client(tmp_path, ca, cert, name) -> grpc.ChannelCredentials:
    keystore, truststore = _stores(tmp_path, ca, cert, name)
    return channel_credentials(SslConfig.from_properties({"ssl.keystore.location": keystore,
                                                          "ssl.truststore.location": truststore}))


def test_garbage_and_stalled_handshakes_do_not_stop_the_listener(tmp_path):
    ca = trustme.CA()
    good = _client(tmp_path, ca, ca.issue_cert("ok.example", common_name="svc", organization_unit_name="ServiceUsers"),
                   "good")

    async def main():
        async with echo_server(server_credentials(_server_ssl(tmp_path, ca)), RULES) as address:
            host, port = address.rsplit(":", 1)
            stalled = []
            for payload in (b"GET / HTTP/1.1\r\n\r\n", os.urandom(4096), b"\x16\x03\x01\x02\x00\x01",  # a cut hello
                            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", b""):
                sock = socket.create_connection((host, int(port)))
                sock.sendall(payload)
                stalled.append(sock)  # kept open, handshake never finished
            async with grpc.aio.secure_channel(address, good) as ch:
                assert await whoami(ch) == "User:svc"
            for sock in stalled:
                sock.close()
    asyncio.run(main())


def _certificate_with_subject(ca: trustme.CA, subject: x509.Name) -> trustme.LeafCert:
    """A leaf signed by `ca` whose subject is exactly `subject` (trustme adds its own OU)."""
    ca_key = serialization.load_pem_private_key(ca.private_key_pem.bytes(), None)
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return trustme.LeafCert(key_pem, cert.public_bytes(serialization.Encoding.PEM), [])


def test_a_subject_crafted_to_look_like_a_service_user_does_not_map_to_it(tmp_path):
    # CN "admin,OU=ServiceUsers" is escaped in RFC 2253 form (admin\,OU=...),
    # so the rule's "CN=(.*?),OU=ServiceUsers" cannot read it as CN=admin.
    ca = trustme.CA()
    forged = _certificate_with_subject(ca, x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "evil"),
        x509.NameAttribute(NameOID.COMMON_NAME, "admin,OU=ServiceUsers")]))

    async def main():
        async with echo_server(server_credentials(_server_ssl(tmp_path, ca)), RULES) as address:
            async with grpc.aio.secure_channel(address, _client(tmp_path, ca, forged, "forged")) as ch:
                principal = await whoami(ch)
        assert principal != "User:admin"
        assert principal == "User:admin\\"  # what Kafka's mapper makes of the same string
    asyncio.run(main())


def test_a_keystore_swapped_for_dev_zero_or_a_huge_file_keeps_the_old_certificate(tmp_path):
    ca = trustme.CA()
    ssl = _server_ssl(tmp_path, ca)
    good = ca.issue_cert("ok.example", common_name="svc", organization_unit_name="ServiceUsers")

    async def main():
        async with echo_server(server_credentials(ssl), RULES) as address:
            keystore = ssl.keystore_location
            for swap in ("dev-zero", "huge"):
                os.unlink(keystore)
                if swap == "dev-zero":
                    os.symlink("/dev/zero", keystore)
                else:
                    with open(keystore, "wb") as f:
                        f.write(b"-----BEGIN CERTIFICATE-----\n" + b"A" * (2 << 20))
                async with grpc.aio.secure_channel(address, _client(tmp_path, ca, good, swap)) as ch:
                    assert await whoami(ch) == "User:svc", swap
    asyncio.run(main())
