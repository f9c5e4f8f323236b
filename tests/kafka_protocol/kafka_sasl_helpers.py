"""Raw Kafka connections over TLS with SASL, frame by frame, for the tests
of secured Kafka listeners (tests/kafka_protocol/test_kafka_sasl.py on a
cluster, tests/adversarial/test_hostile_kafka_sasl.py in process)."""
from __future__ import annotations

import socket
import ssl
import struct
from typing import Optional

from kafka_protocol.wire import versions
from security.scram import ScramClientExchange, plain_message
from security.scram_credentials import ScramMechanism
from tests.adversarial.kafka_wire import IO_TIMEOUT_S, RawKafka, api_versions, request

__all__ = ["RawKafka", "TlsKafka", "api_versions", "authenticate", "handshake", "login", "raw_login_v0", "request"]


class TlsKafka(RawKafka):
    """A RawKafka connection over TLS, trusting `cafile` (and presenting
    `certfile`, key and chain in one PEM, when given)."""

    def __init__(self, address: str, cafile: str, certfile: Optional[str] = None) -> None:
        host, port = address.rsplit(":", 1)
        context = ssl.create_default_context(cafile=cafile)
        if certfile is not None:
            context.load_cert_chain(certfile)
        plain = socket.create_connection((host, int(port)), timeout=IO_TIMEOUT_S)
        try:
            self.sock = context.wrap_socket(plain, server_hostname=host)
        except BaseException:
            plain.close()
            raise

    def closed_by_broker(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, ssl.SSLError):
            return True

    def send_raw_token(self, token: bytes) -> None:
        self.send(struct.pack(">i", len(token)) + token)


def handshake(conn: RawKafka, mechanism: str, version: int = 1):
    return conn.call(request(versions.SASL_HANDSHAKE, version, {"mechanism": mechanism}))


def authenticate(conn: RawKafka, token: bytes, version: int = 2, correlation_id: int = 1):
    return conn.call(request(versions.SASL_AUTHENTICATE, version, {"auth_bytes": token}), correlation_id)


def login(conn: RawKafka, mechanism: str, user: str, password: str, version: int = 2):
    """A whole v1-handshake login; the last SaslAuthenticate answer (its error code tells how it went)."""
    answer = handshake(conn, mechanism)
    assert answer.error_code == 0, answer
    if mechanism == "PLAIN":
        return authenticate(conn, plain_message(user, password), version)
    scram = ScramClientExchange(ScramMechanism.from_name(mechanism), user, password)
    first = authenticate(conn, scram.client_first(), version)
    if first.error_code != 0:
        return first
    scram.receive_server_first(first.auth_bytes)
    final = authenticate(conn, scram.client_final(), version, correlation_id=2)
    if final.error_code == 0:
        scram.receive_server_final(final.auth_bytes)   # the server proved it knows the credential
    return final


def raw_login_v0(conn: TlsKafka, mechanism: str, user: str, password: str) -> None:
    """A SaslHandshake v0 login: the tokens go unframed by Kafka headers
    (kafka-python 2's way); raises ConnectionError when the broker closes."""
    answer = handshake(conn, mechanism, version=0)
    assert answer.error_code == 0, answer
    if mechanism == "PLAIN":
        conn.send_raw_token(plain_message(user, password))
        assert conn.receive() == b""
        return
    scram = ScramClientExchange(ScramMechanism.from_name(mechanism), user, password)
    conn.send_raw_token(scram.client_first())
    scram.receive_server_first(conn.receive())
    conn.send_raw_token(scram.client_final())
    scram.receive_server_final(conn.receive())
