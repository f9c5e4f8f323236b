"""SASL over gRPC end to end: a real grpc.aio server on 127.0.0.1 (TLS from
a trustme CA) serving SaslAuthentication and a `Whoami` service guarded by
the session check, driven by our blocking and asyncio clients and by raw
hostile requests."""
from __future__ import annotations

import asyncio
import base64
import logging
import queue
from types import SimpleNamespace
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafka_protocol import grpc_serving
from kafka_protocol.errors import Errors
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import security_pb2 as spb
from kraftlog_api import security_pb2_grpc as spb_grpc
from security import sasl_server as sasl_server_module
from security.listener_guard import listener_guard
from security.listeners import SecurityProtocol
from security.request_context import current_session
from security.sasl_client import (
    SaslSettings, authenticate, authenticate_async, sasl_aio_channel, sasl_channel,
)
from security.sasl_protocol import (
    SESSION_METADATA_KEY, SaslAuthenticationError, UnsupportedSaslMechanismError, invalid_credentials_message,
    refusal_reason,
)
from security.sasl_server import EXCHANGE_TIMEOUT_MS, MAX_AUTH_BYTES, SaslServer
from security.scram import ScramClientExchange
from security.scram_credentials import ScramMechanism

from .sasl_harness import CLIENT_TLS, OWN_CONNECTION, Clock, ServerThread, Users, sasl_services, whoami, whoami_async

PASSWORDS = {"alice": "alice-pw-Zq81", "bob": "bob-pw-Xr42"}
LIFETIME_MS = 60_000
SCRAM_256, SCRAM_512, PLAIN = "SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"


class Node:
    """The module's server and what a test needs to look at."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.outcomes: list[tuple[str, bool]] = []
        self.sasl = SaslServer(Users(PASSWORDS), (SCRAM_256, SCRAM_512, PLAIN), tls=True,
                               max_reauth_ms=LIFETIME_MS, clock=self.clock,
                               on_outcome=lambda mechanism, ok: self.outcomes.append((mechanism, ok)))
        self.server = ServerThread(sasl_services(self.sasl))


@pytest.fixture(scope="module")
def node():
    node = Node()
    with node.server:
        yield node


def login(mechanism: str, user: str = "alice", password: str = "") -> SaslSettings:
    return SaslSettings(mechanism, user, password or PASSWORDS[user])


def stub(channel: grpc.Channel) -> spb_grpc.SaslAuthenticationStub:
    return spb_grpc.SaslAuthenticationStub(channel)


def open_exchange(sasl_stub, mechanism: str = SCRAM_256) -> bytes:
    answer = sasl_stub.SaslHandshake(spb.SaslHandshakeRequest(mechanism=mechanism), timeout=10)
    assert answer.error_code == 0
    return answer.exchange_id


def step(sasl_stub, exchange_id: bytes, auth_bytes: bytes) -> spb.SaslAuthenticateResponse:
    return sasl_stub.SaslAuthenticate(spb.SaslAuthenticateRequest(exchange_id=exchange_id, auth_bytes=auth_bytes),
                                      timeout=10)


def assert_serves_a_good_client(node: Node) -> None:
    with sasl_channel(node.server.channel(), login(SCRAM_512, "bob")) as channel:
        assert whoami(channel) == "User:bob"


# --- logins that work ---------------------------------------------------------

@pytest.mark.parametrize("mechanism", [SCRAM_256, SCRAM_512, PLAIN])
def test_blocking_and_asyncio_clients_log_in_and_calls_run_as_the_user(node, mechanism):
    with sasl_channel(node.server.channel(), login(mechanism)) as channel:
        assert whoami(channel) == "User:alice"
        assert whoami(channel) == "User:alice"

    async def run() -> str:
        async with sasl_aio_channel(node.server.target, login(mechanism, "bob"), credentials=CLIENT_TLS,
                                    options=OWN_CONNECTION) as channel:
            return await whoami_async(channel)
    assert asyncio.run(run()) == "User:bob"


def test_a_call_without_a_session_is_unauthenticated_with_the_shared_reason(node):
    with node.server.channel() as channel:
        with pytest.raises(grpc.RpcError) as caught:
            whoami(channel)
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert refusal_reason(caught.value.details()) == "missing"
        with pytest.raises(grpc.RpcError) as caught:
            whoami(channel, metadata=((SESSION_METADATA_KEY, b"\0" * 32),))
        assert refusal_reason(caught.value.details()) == "unknown"


def test_plain_is_refused_on_a_listener_without_tls():
    with pytest.raises(ValueError, match="SASL_SSL"):
        SaslServer(Users({}), (PLAIN,), tls=False)


# --- logins that fail ---------------------------------------------------------

def test_wrong_password_and_unknown_user_get_the_same_error_and_message(node):
    texts = []
    with node.server.channel() as channel:
        for settings_ in (login(SCRAM_256, "alice", "not-the-password"), login(SCRAM_256, "mallory", "whatever")):
            with pytest.raises(SaslAuthenticationError) as caught:
                authenticate(channel, settings_)
            texts.append((caught.value.code, str(caught.value)))
    assert texts[0] == texts[1]
    assert texts[0] == (Errors.SASL_AUTHENTICATION_FAILED,
                        f"SASL_AUTHENTICATION_FAILED: {invalid_credentials_message(SCRAM_256)}")


def test_a_mechanism_the_listener_does_not_enable_is_unsupported_with_the_enabled_list(node):
    with node.server.channel() as channel:
        answer = stub(channel).SaslHandshake(spb.SaslHandshakeRequest(mechanism="GSSAPI"), timeout=10)
    assert answer.error_code == Errors.UNSUPPORTED_SASL_MECHANISM
    assert list(answer.mechanisms) == [SCRAM_256, SCRAM_512, PLAIN]
    only_scram = SaslServer(Users(PASSWORDS), (SCRAM_512,), tls=False)
    with ServerThread(sasl_services(only_scram)) as server, server.channel() as channel:
        with pytest.raises(UnsupportedSaslMechanismError, match="it enables SCRAM-SHA-512"):
            authenticate(channel, login(SCRAM_256))


def test_client_final_with_a_wrong_nonce_fails_and_closes_the_exchange(node):
    with node.server.channel() as channel:
        sasl_stub = stub(channel)
        exchange_id = open_exchange(sasl_stub)
        client = ScramClientExchange(ScramMechanism.SCRAM_SHA_256, "alice", PASSWORDS["alice"],
                                     client_nonce="clientnonce")
        server_first = step(sasl_stub, exchange_id, client.client_first()).auth_bytes
        rest = server_first[server_first.index(b","):]
        client.receive_server_first(b"r=clientnonce" + b"attackerchosen" + rest)
        answer = step(sasl_stub, exchange_id, client.client_final())
        assert (answer.error_code, answer.error_message) == (
            Errors.SASL_AUTHENTICATION_FAILED, invalid_credentials_message(SCRAM_256))
        assert not answer.session_credential
        assert step(sasl_stub, exchange_id, b"c=biws").error_code == Errors.ILLEGAL_SASL_STATE


def test_replayed_client_final_is_refused_on_the_same_and_on_a_new_exchange(node):
    with node.server.channel() as channel:
        sasl_stub = stub(channel)
        exchange_id = open_exchange(sasl_stub)
        client = ScramClientExchange(ScramMechanism.SCRAM_SHA_256, "alice", PASSWORDS["alice"])
        client_first = client.client_first()
        client.receive_server_first(step(sasl_stub, exchange_id, client_first).auth_bytes)
        client_final = client.client_final()
        assert step(sasl_stub, exchange_id, client_final).session_credential
        assert step(sasl_stub, exchange_id, client_final).error_code == Errors.ILLEGAL_SASL_STATE
        fresh = open_exchange(sasl_stub)
        assert step(sasl_stub, fresh, client_first).error_code == 0
        assert step(sasl_stub, fresh, client_final).error_code == Errors.SASL_AUTHENTICATION_FAILED


@pytest.mark.parametrize("auth_bytes", [b"", b"\xff\xfe\x00", b"n,,", b"n,,n=,r=", b"p=tls-unique,,n=alice,r=x",
                                        b"n,,n=alice,r=x,m=ext", b"x" * (MAX_AUTH_BYTES + 1), b"n,,n=" + b"a" * 4000000],
                         ids=["empty", "binary", "header-only", "empty-name", "channel-binding", "extension",
                              "over-limit", "huge"])
def test_garbled_client_first_fails_cleanly_and_the_server_keeps_serving(node, auth_bytes):
    options = (("grpc.max_send_message_length", 8 << 20),)
    with grpc.secure_channel(node.server.target, CLIENT_TLS, options=OWN_CONNECTION + options) as channel:
        sasl_stub = stub(channel)
        answer = step(sasl_stub, open_exchange(sasl_stub), auth_bytes)
    assert answer.error_code == Errors.SASL_AUTHENTICATION_FAILED
    assert answer.error_message == invalid_credentials_message(SCRAM_256)
    assert_serves_a_good_client(node)


def test_unknown_exchange_and_undecodable_requests(node):
    with node.server.channel() as channel:
        sasl_stub = stub(channel)
        assert step(sasl_stub, b"", b"n,,n=alice,r=x").error_code == Errors.ILLEGAL_SASL_STATE
        assert step(sasl_stub, b"\x00" * 16, b"n,,n=alice,r=x").error_code == Errors.ILLEGAL_SASL_STATE
        raw = channel.unary_unary("/kraftlog.security.v1.SaslAuthentication/SaslAuthenticate")
        with pytest.raises(grpc.RpcError) as caught:
            raw(b"\xff\xff\xff", timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert_serves_a_good_client(node)


def test_an_exchange_belongs_to_the_connection_that_opened_it(node):
    with node.server.channel() as first, node.server.channel() as second:
        exchange_id = open_exchange(stub(first))
        assert step(stub(second), exchange_id, b"n,,n=alice,r=x").error_code == Errors.ILLEGAL_SASL_STATE
        assert step(stub(first), exchange_id, b"n,,n=alice,r=x").error_code == 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.binary(max_size=300), final=st.binary(max_size=300))
def test_fuzzed_authenticate_bytes_always_get_a_kafka_error_code(node, first, final):
    with node.server.channel() as channel:
        sasl_stub = stub(channel)
        exchange_id = open_exchange(sasl_stub, SCRAM_512)
        answer = step(sasl_stub, exchange_id, first)
        assert answer.error_code in (0, Errors.SASL_AUTHENTICATION_FAILED)
        if answer.error_code == 0:
            answer = step(sasl_stub, exchange_id, final)
        assert answer.error_code == Errors.SASL_AUTHENTICATION_FAILED
        assert not answer.session_credential


def test_the_server_keeps_serving_after_the_fuzzing(node):
    assert_serves_a_good_client(node)
    assert node.sasl.exchanges_in_progress <= 1   # failed exchanges were closed


# --- a hostile server -----------------------------------------------------------

class HostileSaslServer:
    """Offers SCRAM with 2^31 iterations and records what it was sent."""

    def __init__(self) -> None:
        self.authenticate_calls = 0

    async def SaslHandshake(self, request, context):
        return spb.SaslHandshakeResponse(mechanisms=[SCRAM_256], exchange_id=b"x")

    async def SaslAuthenticate(self, request, context):
        self.authenticate_calls += 1
        client_nonce = request.auth_bytes.decode().rsplit("r=", 1)[1]
        salt = base64.b64encode(b"s" * 16).decode()
        return spb.SaslAuthenticateResponse(auth_bytes=f"r={client_nonce}evil,s={salt},i=2147483648".encode())


def test_a_hostile_iteration_count_is_refused_before_any_client_final(node):
    from security.sasl_server import add_to_server
    hostile = HostileSaslServer()
    with ServerThread(lambda server: add_to_server(server, hostile)) as server:
        async def run() -> None:
            async with grpc.aio.secure_channel(server.target, CLIENT_TLS, options=OWN_CONNECTION) as channel:
                await authenticate_async(channel, login(SCRAM_256))
        with pytest.raises(SaslAuthenticationError, match="4096..16384"):
            asyncio.run(run())
    assert hostile.authenticate_calls == 1   # the client-first only: no PBKDF2, no client-final


# --- sessions -------------------------------------------------------------------

def test_a_session_credential_replayed_on_another_connection_is_refused(node):
    with node.server.channel() as first, node.server.channel() as second:
        session = authenticate(first, login(SCRAM_256))
        metadata = ((SESSION_METADATA_KEY, session.credential),)
        assert whoami(first, metadata) == "User:alice"
        with pytest.raises(grpc.RpcError) as caught:
            whoami(second, metadata)
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert refusal_reason(caught.value.details()) == "other-connection"
        assert whoami(first, metadata) == "User:alice"


def test_an_expired_credential_is_refused_and_the_interceptor_logs_in_again(node):
    with node.server.channel() as raw:
        session = authenticate(raw, login(SCRAM_256))
        assert session.lifetime_ms == LIFETIME_MS
        node.clock.advance(LIFETIME_MS / 1000)
        with pytest.raises(grpc.RpcError) as caught:
            whoami(raw, ((SESSION_METADATA_KEY, session.credential),))
        assert refusal_reason(caught.value.details()) == "expired"

    async def run() -> list[str]:
        async with sasl_aio_channel(node.server.target, login(SCRAM_512, "bob"), credentials=CLIENT_TLS,
                                    options=OWN_CONNECTION) as channel:
            answers = [await whoami_async(channel)]
            node.clock.advance(LIFETIME_MS / 1000)   # the server's clock only: the client thinks it fresh
            answers.append(await whoami_async(channel))
            return answers
    before = len(node.outcomes)
    assert asyncio.run(run()) == ["User:bob", "User:bob"]
    assert node.outcomes[before:] == [(SCRAM_512, True), (SCRAM_512, True)]


def test_a_stream_of_in_order_calls_ends_when_its_session_expires(node):
    """An in-order stream (grpc_serving: FetchStream) on a SASL_SSL listener's
    guard: opened with a session, its requests are answered while the
    session lives; the first one after it expired ends the stream
    UNAUTHENTICATED ("expired"), as the same unary call is refused."""

    answered: list[str] = []

    def current_principal():  # type: ignore[no-untyped-def]
        session = current_session()
        return session.principal if session is not None else None

    async def fetch(request: bpb.FetchRequest, context: grpc.aio.ServicerContext) -> bytes:
        answered.append(str(current_principal()))
        return bpb.FetchResponse(session_id=request.session_id).SerializeToString()

    def add(server: grpc.aio.Server) -> None:
        grpc_serving.guard_server(server, listener_guard("SASL_SSL", SecurityProtocol.SASL_SSL, sasl=node.sasl))
        sasl_server_module.add_to_server(server, node.sasl)
        grpc_serving.add_service(server, bpb.DESCRIPTOR.services_by_name["FetchStream"],
                                 SimpleNamespace(Fetch=fetch))

    with ServerThread(add) as server, server.channel() as raw:
        session = authenticate(raw, login(SCRAM_256))
        requests: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        open_stream = raw.stream_stream(f"/{bpb.DESCRIPTOR.services_by_name['FetchStream'].full_name}/Fetch",
                                        request_serializer=bpb.FetchRequest.SerializeToString,
                                        response_deserializer=bpb.FetchResponse.FromString)
        answers = open_stream(iter(requests.get, None), metadata=((SESSION_METADATA_KEY, session.credential),),
                              timeout=30)
        requests.put(bpb.FetchRequest(session_id=1))
        assert next(answers).session_id == 1
        requests.put(bpb.FetchRequest(session_id=2))
        assert next(answers).session_id == 2
        node.clock.advance(LIFETIME_MS / 1000)
        requests.put(bpb.FetchRequest(session_id=3))
        with pytest.raises(grpc.RpcError) as caught:
            next(answers)
        requests.put(None)
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert refusal_reason(caught.value.details()) == "expired"
        assert answered == ["User:alice", "User:alice"]


def test_the_interceptor_renews_its_session_before_it_expires(node):
    client_clock = Clock()
    with sasl_channel(node.server.channel(), login(SCRAM_256), clock=client_clock) as channel:
        before = len(node.outcomes)
        assert whoami(channel) == "User:alice"
        assert whoami(channel) == "User:alice"
        assert len(node.outcomes) == before + 1
        client_clock.advance(0.86 * LIFETIME_MS / 1000)
        assert whoami(channel) == "User:alice"
        assert len(node.outcomes) == before + 2


def test_handshakes_are_capped_per_host_and_expire():
    clock = Clock()
    capped = SaslServer(Users(PASSWORDS), (SCRAM_256,), tls=False, clock=clock, max_exchanges_per_host=3)
    with ServerThread(sasl_services(capped)) as server, server.channel() as channel:
        for _ in range(3):
            open_exchange(stub(channel))
        with pytest.raises(grpc.RpcError) as caught:
            open_exchange(stub(channel))
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert capped.exchanges_in_progress == 3
        clock.advance(EXCHANGE_TIMEOUT_MS / 1000)
        with sasl_channel(server.channel(), login(SCRAM_256)) as good:
            assert whoami(good) == "User:alice"
        assert capped.exchanges_in_progress == 0


# --- secrets --------------------------------------------------------------------

def test_no_password_or_credential_reaches_a_log_line_or_an_exception(node, caplog):
    caplog.set_level(logging.DEBUG)
    texts = []
    with node.server.channel() as channel:
        session = authenticate(channel, login(SCRAM_256))
        for wrong in (login(SCRAM_256, "alice", "alice-pw-WRONG"), login(PLAIN, "alice", "alice-pw-WRONG")):
            with pytest.raises(SaslAuthenticationError) as caught:
                authenticate(channel, wrong)
            texts += [str(caught.value), repr(caught.value)]
        with pytest.raises(grpc.RpcError) as refused:
            whoami(node.server.channel(), ((SESSION_METADATA_KEY, session.credential),))
        texts.append(str(refused.value))
    texts += [repr(login(PLAIN)), repr(session), caplog.text]
    assert "succeeded" in caplog.text and "failed" in caplog.text   # the log did record the logins
    secrets = [*PASSWORDS.values(), "alice-pw-WRONG", session.credential.hex(), repr(session.credential)[2:-1],
               base64.b64encode(session.credential).decode()]
    for text in texts:
        for secret in secrets:
            assert secret not in text
