"""security/ssl_context.py on a real asyncio TLS server: the peer's mapped
principal under each ssl.client.auth, an encrypted key, and certificate
rotation by replacing the keystore file (a bad replacement keeps the old)."""
from __future__ import annotations

import asyncio
import ssl
from contextlib import asynccontextmanager

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from kafka_protocol.errors import InvalidConfigError
from security.ssl_config import SslConfig
from security.ssl_context import connection_principal, server_ssl_context

from .test_tls import write

RULES = "RULE:^CN=([^,]+),.*$/$1/,DEFAULT"
TIMEOUT_S = 10.0


@pytest.fixture(scope="module")
def ca():
    return trustme.CA()


def server_config(tmp_path, ca, cert, client_auth: str, **extra) -> SslConfig:
    return SslConfig.from_properties({
        "ssl.keystore.location": write(tmp_path / "server.pem", cert.private_key_and_cert_chain_pem.bytes()),
        "ssl.truststore.location": write(tmp_path / "ca.pem", ca.cert_pem.bytes()),
        "ssl.client.auth": client_auth, "ssl.principal.mapping.rules": RULES, **extra})


@asynccontextmanager
async def tls_server(config: SslConfig):
    """A server that answers each connection with its peer's principal, then closes it."""
    async def answer(reader, writer):
        writer.write(str(connection_principal(writer.get_extra_info("ssl_object"), config.principal_mapper)).encode())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server_ssl_context(config, "TEST"))
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


async def ask(port: int, ca, client_cert=None) -> tuple[str, str]:
    """(the principal the server saw, the CN of the certificate it showed)."""
    context = ssl.create_default_context()
    ca.configure_trust(context)
    if client_cert is not None:
        client_cert.configure_cert(context)
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port, ssl=context), TIMEOUT_S)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        cn = x509.load_der_x509_certificate(der).subject.rfc4514_string()
        return (await asyncio.wait_for(reader.read(), TIMEOUT_S)).decode(), cn
    finally:
        writer.close()


@pytest.mark.parametrize("client_auth, with_certificate, expected", [
    ("required", True, "User:alice"),
    ("requested", True, "User:alice"),        # asked for, given: it counts (gRPC cannot do this one)
    ("requested", False, "User:ANONYMOUS"),
    ("none", True, "User:ANONYMOUS"),         # not asked for
])
def test_the_principal_under_each_client_auth(tmp_path, ca, client_auth, with_certificate, expected):
    config = server_config(tmp_path, ca, ca.issue_cert("127.0.0.1"), client_auth)
    client = ca.issue_cert("alice.example", common_name="alice") if with_certificate else None

    async def main():
        async with tls_server(config) as port:
            return (await ask(port, ca, client))[0]

    assert asyncio.run(main()) == expected


def test_required_refuses_a_client_without_a_certificate(tmp_path, ca):
    config = server_config(tmp_path, ca, ca.issue_cert("127.0.0.1"), "required")

    async def main():
        async with tls_server(config) as port:
            try:
                return (await ask(port, ca))[0]   # TLS 1.3: the client's handshake ends before the server's check
            except (ssl.SSLError, ConnectionError):
                return ""

    assert asyncio.run(main()) == ""   # no principal: the server hung up


def test_an_encrypted_key_is_read_with_ssl_key_password(tmp_path, ca):
    cert = ca.issue_cert("127.0.0.1", common_name="secret-node")
    key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), None)
    encrypted = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(b"k3y-pass"))
    keystore = write(tmp_path / "encrypted.pem", encrypted + b"".join(b.bytes() for b in cert.cert_chain_pems))
    config = SslConfig.from_properties({"ssl.keystore.location": keystore, "ssl.key.password": "k3y-pass"})

    async def main():
        async with tls_server(config) as port:
            return (await ask(port, ca))[1]

    assert asyncio.run(main()).startswith("CN=secret-node")
    with pytest.raises(InvalidConfigError) as caught:
        server_ssl_context(SslConfig.from_properties({"ssl.keystore.location": keystore,
                                                      "ssl.key.password": "n0t-it"}), "TEST")
    assert "n0t-it" not in str(caught.value) and "k3y-pass" not in str(caught.value)


def test_a_replaced_keystore_serves_new_connections_and_a_bad_one_keeps_the_old(tmp_path, ca):
    config = server_config(tmp_path, ca, ca.issue_cert("127.0.0.1", common_name="first"), "none")

    async def main():
        async with tls_server(config) as port:
            seen = [(await ask(port, ca))[1]]
            write(tmp_path / "server.pem", ca.issue_cert("127.0.0.1", common_name="second")
                  .private_key_and_cert_chain_pem.bytes())
            seen.append((await ask(port, ca))[1])
            write(tmp_path / "server.pem", b"-----BEGIN CERTIFICATE-----\nnot one\n")   # half written
            seen.append((await ask(port, ca))[1])
            return seen

    assert [cn.split(",")[0] for cn in asyncio.run(main())] == ["CN=first", "CN=second", "CN=second"]


def test_a_listener_without_a_keystore_does_not_start():
    with pytest.raises(InvalidConfigError, match="ssl.keystore.location: is required on the TEST listener"):
        server_ssl_context(SslConfig(), "TEST")
