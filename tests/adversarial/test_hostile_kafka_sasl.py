"""Hostile clients of a SASL_SSL (and an mTLS SSL) Kafka-protocol listener,
in process: the real KafkaListener, TLS context and SaslServer on
127.0.0.1, without a broker behind them (nothing here gets past the login
to a broker API; tests/kafka_protocol/test_kafka_sasl.py does, on a cluster).

Requests in the wrong state, unknown mechanisms, oversized tokens, garbage
TLS, stalls mid-handshake and mid-login: each gets Kafka's answer or a
closed connection, nothing leaks a secret into the log, and the listener
keeps logging good clients in."""
from __future__ import annotations

import asyncio
import datetime
import logging
import socket
import ssl
import struct
import threading
import time
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Iterator

import grpc
import pytest

from broker.kafka_api.apis import KafkaApis
from broker.kafka_api.listener import KafkaListener, ListenerSecurity
from broker.kafka_api.sasl import MAX_RECEIVE_BEFORE_AUTH
from kafka_protocol.errors import Errors
from kafka_protocol.wire import codec, versions
from security import certs
from security.listeners import SecurityProtocol
from security.sasl_protocol import invalid_credentials_message
from security.sasl_server import MAX_AUTH_BYTES, SaslServer
from security.scram import plain_message
from security.scram_credentials import ScramMechanism, make_credential
from security.ssl_config import SslConfig
from tests.kafka_protocol.kafka_sasl_helpers import (
    RawKafka, TlsKafka, api_versions, authenticate, handshake, login, raw_login_v0, request,
)

IDLE_MS = 1500  # connections.max.idle.ms of these listeners: what ends a stalled client
WAIT_S = 15.0   # bounds every wait; never part of an assert
PASSWORD = "alice-secret-Pa55"
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    directory = tmp_path_factory.mktemp("kafka-sasl-pki")
    certs.init_ca(directory)
    node = certs.issue(directory, "node-1", ["127.0.0.1"])
    alice = certs.issue(directory, "alice", client=True)
    stranger_dir = directory / "stranger"
    certs.init_ca(stranger_dir, name="someone else's CA")
    stranger = certs.issue(stranger_dir, "alice", client=True)
    return {"ca": str(node.truststore), "node": str(node.keystore), "alice": str(alice.keystore),
            "stranger_ca": str(stranger.truststore), "stranger": str(stranger.keystore)}


async def _unavailable(request, context):
    await context.abort(grpc.StatusCode.UNAVAILABLE, "no broker behind this listener")


# Only the login is under test: no broker stands behind the listener. ApiVersions v3+
# asks the broker for its feature levels; unanswered, they are left out of the answer.
NO_BROKER = SimpleNamespace(broker=SimpleNamespace(DescribeFeatures=_unavailable))


@contextmanager
def serving(security: ListenerSecurity, idle_ms: int = IDLE_MS) -> Iterator[str]:
    """The listener on 127.0.0.1 (a free port), its loop in a thread; stopped on the way out."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="kafka-listener", daemon=True)
    thread.start()
    listener = KafkaListener("SECURE", KafkaApis(NO_BROKER), max_request_bytes=1 << 20, idle_timeout_ms=idle_ms,
                             security=security)

    def run(coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(WAIT_S)

    async def start() -> None:
        ready = asyncio.Event()
        ready.set()
        await listener.serve_when(ready)

    try:
        run(listener.bind("127.0.0.1", 0))
        run(start())
        yield f"127.0.0.1:{listener.bound_port}"
    finally:
        run(listener.close())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(WAIT_S)
        loop.close()


def sasl_ssl_security(pki, max_reauth_ms: int = 0) -> ListenerSecurity:
    """SASL_SSL with users alice and bob (same password), every mechanism."""
    credentials = {(mechanism, user): make_credential(mechanism, PASSWORD)
                   for mechanism in ScramMechanism for user in ("alice", "bob")}
    sasl = SaslServer(lambda user, mechanism: credentials.get((mechanism, user)), MECHANISMS, tls=True)
    return ListenerSecurity(SecurityProtocol.SASL_SSL, SslConfig(keystore_location=pki["node"]), sasl=sasl,
                            max_reauth_ms=max_reauth_ms)


@pytest.fixture(scope="module")
def sasl_ssl(pki) -> Iterator[str]:
    with serving(sasl_ssl_security(pki)) as address:
        yield address


def codec_frame(body) -> bytes:
    return codec.encode_request(body, 7, "hostile")


def connect(address: str, pki) -> TlsKafka:
    return TlsKafka(address, pki["ca"])


def still_serves(address: str, pki) -> None:
    """A good client logs in on a new connection and is answered."""
    with connect(address, pki) as conn:
        assert login(conn, "SCRAM-SHA-512", "alice", PASSWORD).error_code == 0
        assert conn.call(api_versions()).error_code == 0


def server_hung_up(sock: socket.socket) -> bool:
    """Whether the server ends a raw connection (an alert then EOF, or a reset) within WAIT_S."""
    sock.settimeout(WAIT_S)
    try:
        while sock.recv(4096):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def wait_closed(conn: TlsKafka) -> bool:
    conn.sock.settimeout(WAIT_S)
    return conn.closed_by_broker()


# -- requests in the wrong state -------------------------------------------------------------

def test_api_versions_is_served_before_login_and_lists_the_sasl_apis(sasl_ssl, pki):
    with connect(sasl_ssl, pki) as conn:
        keys = {k.api_key: (k.min_version, k.max_version) for k in conn.call(api_versions()).api_keys}
        assert keys[versions.SASL_HANDSHAKE] == (0, 1) and keys[versions.SASL_AUTHENTICATE] == (0, 2)


def test_a_request_before_login_closes_the_connection_unanswered(sasl_ssl, pki):
    with connect(sasl_ssl, pki) as conn:
        conn.send(codec_frame(request(versions.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                                               "include_topic_authorized_operations": False})))
        assert wait_closed(conn)
    still_serves(sasl_ssl, pki)


def test_an_unknown_mechanism_is_refused_with_the_enabled_ones_then_closed(sasl_ssl, pki):
    for mechanism in ("GSSAPI", "scram-sha-512", "X" * 300, ""):
        with connect(sasl_ssl, pki) as conn:
            answer = handshake(conn, mechanism)
            assert answer.error_code == Errors.UNSUPPORTED_SASL_MECHANISM
            assert tuple(answer.mechanisms) == MECHANISMS
            assert wait_closed(conn)
    still_serves(sasl_ssl, pki)


def test_sasl_authenticate_without_a_handshake_is_an_illegal_state_then_closed(sasl_ssl, pki):
    with connect(sasl_ssl, pki) as conn:
        answer = authenticate(conn, b"n,,n=alice,r=abc")
        assert answer.error_code == Errors.ILLEGAL_SASL_STATE
        assert wait_closed(conn)
    still_serves(sasl_ssl, pki)


def test_a_second_handshake_during_the_login_closes_the_connection(sasl_ssl, pki):
    with connect(sasl_ssl, pki) as conn:
        assert handshake(conn, "SCRAM-SHA-512").error_code == 0
        conn.send(codec_frame(request(versions.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})))
        assert wait_closed(conn)
    still_serves(sasl_ssl, pki)


def test_after_login_sasl_requests_are_illegal_but_the_connection_stays(sasl_ssl, pki):
    with connect(sasl_ssl, pki) as conn:
        assert login(conn, "PLAIN", "alice", PASSWORD).error_code == 0
        assert handshake(conn, "PLAIN").error_code == Errors.ILLEGAL_SASL_STATE   # no re-authentication configured
        assert authenticate(conn, plain_message("alice", PASSWORD)).error_code == Errors.ILLEGAL_SASL_STATE
        assert conn.call(api_versions()).error_code == 0


def test_re_authentication_kip_368(pki):
    """connections.max.reauth.ms: the lifetime is told in SaslAuthenticate v1+,
    a v1 handshake re-authenticates with the same mechanism as the same
    principal (not another), and
    a connection whose session ran out is closed at its next request."""
    reauth_ms = 1000
    with serving(sasl_ssl_security(pki, max_reauth_ms=reauth_ms), idle_ms=20_000) as address:
        with connect(address, pki) as conn:
            answer = login(conn, "SCRAM-SHA-512", "alice", PASSWORD)
            assert answer.error_code == 0 and answer.session_lifetime == datetime.timedelta(milliseconds=reauth_ms)
            assert login(conn, "SCRAM-SHA-512", "alice", PASSWORD).error_code == 0
            time.sleep(reauth_ms / 1000 + 0.3)   # the session ends without a re-authentication
            conn.send(codec_frame(api_versions()))
            assert wait_closed(conn)
        with connect(address, pki) as conn:
            assert login(conn, "SCRAM-SHA-512", "alice", PASSWORD).error_code == 0
            answer = login(conn, "SCRAM-SHA-512", "bob", PASSWORD)
            assert answer.error_code == Errors.SASL_AUTHENTICATION_FAILED
            assert answer.error_message == "Cannot change principals during re-authentication from User:alice: User:bob"
            assert wait_closed(conn)
        with connect(address, pki) as conn:
            assert login(conn, "SCRAM-SHA-512", "alice", PASSWORD).error_code == 0
            answer = handshake(conn, "PLAIN")   # the mechanism must stay the same
            assert (answer.error_code, tuple(answer.mechanisms)) == (Errors.UNSUPPORTED_SASL_MECHANISM,
                                                                     ("SCRAM-SHA-512",))
            assert wait_closed(conn)


# -- refused logins ------------------------------------------------------------------------

@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_wrong_password_and_an_unknown_user_get_kafkas_one_answer_then_close(sasl_ssl, pki, mechanism, caplog):
    caplog.set_level(logging.DEBUG)
    for user, password in (("alice", "not-her-Pa55word"), ("mallory", PASSWORD)):   # a wrong one, an unknown user
        with connect(sasl_ssl, pki) as conn:
            answer = login(conn, mechanism, user, password)
            assert answer.error_code == Errors.SASL_AUTHENTICATION_FAILED
            assert answer.error_message == invalid_credentials_message(mechanism)
            assert wait_closed(conn)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "authentication of" in logged and "failed" in logged
    assert PASSWORD not in logged and "not-her-Pa55word" not in logged
    still_serves(sasl_ssl, pki)


def test_an_oversized_token_fails_the_login_and_an_oversized_frame_is_not_read(sasl_ssl, pki):
    with connect(sasl_ssl, pki) as conn:
        assert handshake(conn, "SCRAM-SHA-256").error_code == 0
        answer = authenticate(conn, b"n,,n=alice,r=" + b"A" * MAX_AUTH_BYTES)
        assert answer.error_code == Errors.SASL_AUTHENTICATION_FAILED
        assert wait_closed(conn)
    with connect(sasl_ssl, pki) as conn:
        conn.send(struct.pack(">i", MAX_RECEIVE_BEFORE_AUTH + 1) + b"\x00" * 64)   # sasl.server.max.receive.size
        assert wait_closed(conn)
    still_serves(sasl_ssl, pki)


def test_handshake_v0_takes_raw_tokens(sasl_ssl, pki):
    for mechanism in ("SCRAM-SHA-256", "PLAIN"):
        with connect(sasl_ssl, pki) as conn:
            raw_login_v0(conn, mechanism, "alice", PASSWORD)
            assert conn.call(api_versions()).error_code == 0
    with connect(sasl_ssl, pki) as conn:
        with pytest.raises(ConnectionError):   # v0 has no way to say no: the connection closes
            raw_login_v0(conn, "PLAIN", "alice", "wrong-Pa55word")
    still_serves(sasl_ssl, pki)


def test_a_sasl_plaintext_listener_offers_no_plain(pki):
    """Without TLS the password would cross the wire: PLAIN is not enabled there."""
    credentials = {(ScramMechanism.SCRAM_SHA_256, "alice"): make_credential(ScramMechanism.SCRAM_SHA_256, PASSWORD)}
    sasl = SaslServer(lambda user, mechanism: credentials.get((mechanism, user)), ("SCRAM-SHA-256",), tls=False)
    with serving(ListenerSecurity(SecurityProtocol.SASL_PLAINTEXT, sasl=sasl)) as address:
        with RawKafka(address) as conn:
            answer = handshake(conn, "PLAIN")
            assert (answer.error_code, tuple(answer.mechanisms)) == (Errors.UNSUPPORTED_SASL_MECHANISM,
                                                                     ("SCRAM-SHA-256",))
        with RawKafka(address) as conn:
            assert login(conn, "SCRAM-SHA-256", "alice", PASSWORD).error_code == 0
            assert conn.call(api_versions()).error_code == 0


# -- hostile TLS and stalls ------------------------------------------------------------------

def test_garbage_tls_and_stalls_are_closed_and_others_still_served(sasl_ssl, pki):
    host, port = sasl_ssl.rsplit(":", 1)
    hostile = []
    try:
        for payload in (b"GET / HTTP/1.1\r\n\r\n", bytes(range(256)) * 8, b"\x16\x03\x01\x02\x00\x01", b""):
            sock = socket.create_connection((host, int(port)), timeout=WAIT_S)
            sock.sendall(payload)
            hostile.append(sock)   # kept open: a garbled or cut TLS handshake
        stalled_login = connect(sasl_ssl, pki)
        assert handshake(stalled_login, "SCRAM-SHA-512").error_code == 0   # ...and then nothing
        silent = connect(sasl_ssl, pki)   # TLS done, not a byte of Kafka
        still_serves(sasl_ssl, pki)
        for conn in (stalled_login, silent):
            with conn:
                assert wait_closed(conn)   # connections.max.idle.ms
        assert all(server_hung_up(sock) for sock in hostile)
    finally:
        for sock in hostile:
            sock.close()
    still_serves(sasl_ssl, pki)


def test_an_untrusted_server_certificate_is_refused_by_the_client(sasl_ssl, pki):
    with pytest.raises(ssl.SSLCertVerificationError):
        TlsKafka(sasl_ssl, pki["stranger_ca"])
    still_serves(sasl_ssl, pki)


# -- an mTLS SSL listener ----------------------------------------------------------------------

def test_an_mtls_listener_takes_only_certificates_its_ca_signed(pki):
    config = SslConfig.from_properties({"ssl.keystore.location": pki["node"], "ssl.truststore.location": pki["ca"],
                                        "ssl.client.auth": "required",
                                        "ssl.principal.mapping.rules": "RULE:^CN=(alice),.*$/$1/"})
    security = ListenerSecurity(SecurityProtocol.SSL, config)
    with serving(security) as address:
        with TlsKafka(address, pki["ca"], pki["alice"]) as conn:
            assert conn.call(api_versions()).error_code == 0
            assert handshake(conn, "PLAIN").error_code == Errors.ILLEGAL_SASL_STATE   # no SASL on an SSL listener
        for certificate in (None, pki["stranger"]):   # none, or one another CA signed
            with pytest.raises((ssl.SSLError, ConnectionError)):
                with TlsKafka(address, pki["ca"], certificate) as conn:
                    conn.call(api_versions())   # TLS 1.3 reports the refusal at the first read
        node_certificate = pki["node"]   # signed by the CA, but no mapping rule applies to CN=node-1
        with TlsKafka(address, pki["ca"], node_certificate) as conn:
            assert wait_closed(conn)
        with TlsKafka(address, pki["ca"], pki["alice"]) as conn:
            assert conn.call(api_versions()).error_code == 0
