"""`kraftlog certs init|issue` through the real console entry: the files it
writes carry a working CA, node and client certificates for gRPC mTLS."""
from __future__ import annotations

import asyncio
import os
import stat
import subprocess

import grpc
from cryptography import x509

from security.ssl_config import SslConfig
from security.tls import channel_credentials, server_credentials
from tests.security.tls_helpers import echo_server, whoami
from tests.cli_process import run_cli



def kraftlog(*args: str) -> subprocess.CompletedProcess:
    return run_cli(args, os.environ, timeout=60)


def test_init_and_issue_make_files_that_grpc_mtls_accepts(tmp_path):
    d = tmp_path / "ca"
    assert kraftlog("certs", "init", "--dir", str(d), "--days", "30").returncode == 0
    node = kraftlog("certs", "issue", "--dir", str(d), "--name", "node-1", "--host", "127.0.0.1",
                    "--host", "Node1.Example")
    assert node.returncode == 0, node.stderr
    assert f"ssl.keystore.location: {d / 'node-1.pem'}" in node.stdout
    assert kraftlog("certs", "issue", "--dir", str(d), "--name", "app", "--client").returncode == 0
    for key_file in ("ca.key", "node-1.pem", "app.pem"):
        assert stat.S_IMODE((d / key_file).stat().st_mode) == 0o600, key_file
    cert = x509.load_pem_x509_certificate((d / "node-1.pem").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert sans.get_values_for_type(x509.DNSName) == ["node1.example"]

    server = SslConfig.from_properties({"ssl.keystore.location": str(d / "node-1.pem"),
                                        "ssl.truststore.location": str(d / "ca.pem"), "ssl.client.auth": "required"})
    client = SslConfig.from_properties({"ssl.keystore.location": str(d / "app.pem"),
                                        "ssl.truststore.location": str(d / "ca.pem")})

    async def main():
        async with echo_server(server_credentials(server)) as address:
            async with grpc.aio.secure_channel(address, channel_credentials(client)) as ch:
                assert await whoami(ch) == "User:CN=app,O=kraftlog"
    asyncio.run(main())


def test_certs_refuses_overwrites_bad_names_hosts_and_a_missing_ca(tmp_path):
    d = tmp_path / "ca"
    missing = kraftlog("certs", "issue", "--dir", str(d), "--name", "n", "--host", "h")
    assert missing.returncode == 1 and "no CA here" in missing.stderr and "Traceback" not in missing.stderr
    assert kraftlog("certs", "init", "--dir", str(d)).returncode == 0
    key = (d / "ca.key").read_bytes()
    again = kraftlog("certs", "init", "--dir", str(d))
    assert again.returncode == 1 and "not replaced" in again.stderr
    assert (d / "ca.key").read_bytes() == key
    for args, words in ((["--name", "../evil", "--host", "h"], "not a certificate name"),
                        (["--name", "ca", "--host", "h"], "not a certificate name"),
                        (["--name", "n"], "needs the host names"),
                        (["--name", "n", "--host", "bad host!"], "not a host name"),
                        (["--name", "n", "--host", "h", "--days", "0"], "--days")):
        result = kraftlog("certs", "issue", "--dir", str(d), *args)
        assert result.returncode == 1 and words in result.stderr, (args, result.stderr)
        assert "PRIVATE KEY" not in result.stderr
    assert sorted(p.name for p in d.iterdir()) == ["ca.key", "ca.pem"]
