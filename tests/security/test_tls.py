"""TLS and mTLS on real grpc.aio servers: who gets in, who does not, and rotation."""
from __future__ import annotations

import asyncio
import datetime
import os

import grpc
import pytest
import trustme

from kafka_protocol.errors import InvalidConfigError
from security.ssl_config import SslConfig
from security.tls import channel_credentials, server_credentials

from .tls_helpers import echo_server, refused, whoami

NOW = datetime.datetime.now(datetime.timezone.utc)


@pytest.fixture(scope="module")
def ca():
    return trustme.CA()


def write(path, data: bytes) -> str:
    """Replace a file at once (a new inode), as a deployment tool does."""
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return str(path)


def node_ssl(tmp_path, ca, cert, client_auth="required", name="server") -> SslConfig:
    return SslConfig.from_properties({
        "ssl.keystore.location": write(tmp_path / f"{name}.pem", cert.private_key_and_cert_chain_pem.bytes()),
        "ssl.truststore.location": write(tmp_path / f"{name}-ca.pem", ca.cert_pem.bytes()),
        "ssl.client.auth": client_auth})


def client_ssl(tmp_path, trusted_ca, cert=None, name="client") -> SslConfig:
    props = {"ssl.truststore.location": write(tmp_path / f"{name}-ca.pem", trusted_ca.cert_pem.bytes())}
    if cert is not None:
        props["ssl.keystore.location"] = write(tmp_path / f"{name}.pem", cert.private_key_and_cert_chain_pem.bytes())
    return SslConfig.from_properties(props)


def channel(address: str, ssl: SslConfig | None) -> grpc.aio.Channel:
    if ssl is None:
        return grpc.aio.insecure_channel(address)
    return grpc.aio.secure_channel(address, channel_credentials(ssl))


def test_mtls_required_admits_a_trusted_client_as_its_mapped_principal(tmp_path, ca):
    server_cert = ca.issue_cert("127.0.0.1")
    good = ca.issue_cert("alice.example", common_name="alice")

    async def main():
        async with echo_server(server_credentials(node_ssl(tmp_path, ca, server_cert)),
                               rules="RULE:^CN=([^,]*),.*$/$1/L") as address:
            async with channel(address, client_ssl(tmp_path, ca, good)) as ch:
                assert await whoami(ch) == "User:alice"
    asyncio.run(main())


def test_mtls_refuses_missing_untrusted_expired_and_not_yet_valid_client_certs(tmp_path, ca):
    server_cert = ca.issue_cert("127.0.0.1")
    other_ca = trustme.CA()
    clients = {
        "none": None,
        "wrong-ca": other_ca.issue_cert("x.example", common_name="mallory"),
        "expired": ca.issue_cert("x.example", not_before=NOW - datetime.timedelta(days=3),
                                 not_after=NOW - datetime.timedelta(days=1)),
        "not-yet-valid": ca.issue_cert("x.example", not_before=NOW + datetime.timedelta(days=1),
                                       not_after=NOW + datetime.timedelta(days=3)),
    }
    good = ca.issue_cert("bob.example", common_name="bob")

    async def main():
        async with echo_server(server_credentials(node_ssl(tmp_path, ca, server_cert))) as address:
            for name, cert in clients.items():
                async with channel(address, client_ssl(tmp_path, ca, cert, name)) as ch:
                    assert await refused(ch) == grpc.StatusCode.UNAVAILABLE, name
            # the server keeps serving everyone else
            async with channel(address, client_ssl(tmp_path, ca, good, "good")) as ch:
                assert (await whoami(ch)).startswith("User:CN=bob")
    asyncio.run(main())


def test_a_client_refuses_a_server_with_another_host_name_an_untrusted_ca_or_an_expired_cert(tmp_path, ca):
    servers = {
        "other-host": (ca, ca.issue_cert("other.example")),
        "untrusted": (None, trustme.CA().issue_cert("127.0.0.1")),
        "expired": (ca, ca.issue_cert("127.0.0.1", not_before=NOW - datetime.timedelta(days=3),
                                      not_after=NOW - datetime.timedelta(days=1))),
    }

    async def main():
        for name, (_, cert) in servers.items():
            async with echo_server(server_credentials(node_ssl(tmp_path, ca, cert, "none", name))) as address:
                async with channel(address, client_ssl(tmp_path, ca, None, name)) as ch:
                    assert await refused(ch) == grpc.StatusCode.UNAVAILABLE, name
    asyncio.run(main())


def test_plaintext_to_tls_and_tls_to_plaintext_fail_and_the_servers_keep_serving(tmp_path, ca):
    server_cert = ca.issue_cert("127.0.0.1")

    async def main():
        async with echo_server(server_credentials(node_ssl(tmp_path, ca, server_cert, "none"))) as tls_address, \
                echo_server(None) as plain_address:
            async with channel(tls_address, None) as ch:
                assert await refused(ch) == grpc.StatusCode.UNAVAILABLE
            async with channel(plain_address, client_ssl(tmp_path, ca)) as ch:
                assert await refused(ch) == grpc.StatusCode.UNAVAILABLE
            async with channel(tls_address, client_ssl(tmp_path, ca)) as ch:
                assert await whoami(ch) == "User:ANONYMOUS"
            async with channel(plain_address, None) as ch:
                assert await whoami(ch) == "User:ANONYMOUS"
    asyncio.run(main())


def test_requested_client_auth_does_not_ask_for_a_certificate_with_grpcio(tmp_path, ca):
    # What grpcio does: without require_client_auth no client certificate is
    # requested, so even a client holding one is anonymous.
    server_cert = ca.issue_cert("127.0.0.1")
    cert = ca.issue_cert("carol.example", common_name="carol")

    async def main():
        async with echo_server(server_credentials(node_ssl(tmp_path, ca, server_cert, "requested"))) as address:
            async with channel(address, client_ssl(tmp_path, ca, cert)) as ch:
                assert await whoami(ch) == "User:ANONYMOUS"
    asyncio.run(main())


def test_rotation_under_load_keeps_old_connections_and_gives_new_ones_the_new_certificate(tmp_path, ca):
    new_ca = trustme.CA()
    client_cert = ca.issue_cert("client.example", common_name="loader")
    ssl = SslConfig.from_properties({
        "ssl.keystore.location": write(tmp_path / "node.pem", ca.issue_cert("127.0.0.1")
                                       .private_key_and_cert_chain_pem.bytes()),
        "ssl.truststore.location": write(tmp_path / "trust.pem", ca.cert_pem.bytes()),
        "ssl.client.auth": "required"})
    old_trust = client_ssl(tmp_path, ca, client_cert, "old")
    new_trust = client_ssl(tmp_path, new_ca, client_cert, "new")

    async def main():
        async with echo_server(server_credentials(ssl)) as address:
            async with channel(address, old_trust) as loaded:
                assert (await whoami(loaded)).startswith("User:CN=loader,")
                calls, stop = [0], asyncio.Event()

                async def load():
                    while not stop.is_set():
                        await whoami(loaded)  # any failure fails the test
                        calls[0] += 1
                loader = asyncio.create_task(load())
                while calls[0] < 20:
                    await asyncio.sleep(0.01)
                # a half-written keystore is ignored: new connections still get the old certificate
                with open(tmp_path / "node.pem", "wb") as f:
                    f.write(b"-----BEGIN PRIVATE KEY-----\nMIG")
                async with channel(address, client_ssl(tmp_path, ca, client_cert, "half")) as ch:
                    assert (await whoami(ch)).startswith("User:CN=loader")
                # the new certificate (from another CA) replaces it while calls go on
                write(tmp_path / "node.pem", new_ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.bytes())
                before = calls[0]
                while calls[0] < before + 20:
                    await asyncio.sleep(0.01)
                async with channel(address, new_trust) as ch:
                    assert (await whoami(ch)).startswith("User:CN=loader")
                async with channel(address, client_ssl(tmp_path, ca, client_cert, "stale")) as ch:
                    assert await refused(ch) == grpc.StatusCode.UNAVAILABLE
                stop.set()
                await loader
                assert await whoami(loaded)  # the old connection still works
    asyncio.run(main())


def test_credentials_refuse_what_cannot_work(tmp_path, ca):
    with pytest.raises(InvalidConfigError, match="ssl.keystore.location: is required"):
        server_credentials(SslConfig.from_properties({}), "SSL")
    with pytest.raises(InvalidConfigError, match="ssl.truststore.location: is required"):
        server_credentials(SslConfig.from_properties({"ssl.keystore.location": "/x", "ssl.client.auth": "required"}))
    with pytest.raises(InvalidConfigError, match="cannot read /nonexistent"):
        server_credentials(SslConfig.from_properties({"ssl.keystore.location": "/nonexistent/k.pem"}))
    with pytest.raises(InvalidConfigError, match="not supported: gRPC always checks"):
        channel_credentials(SslConfig.from_properties({"ssl.endpoint.identification.algorithm": ""}))
