"""security/scram.py: one SCRAM or PLAIN login, both sides, without a network.

RFC 7677's example exchange byte for byte; SHA-512 round trip; Kafka's
iteration bounds on both sides (a hostile 2^31 refused before PBKDF2);
Kafka's user-name escaping; authzid; nonce and replay; unknown users failing
exactly like wrong passwords; PLAIN against the SCRAM credential.
"""
from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from security.sasl_protocol import IllegalSaslStateError, SaslAuthenticationError
from security.scram import (
    AuthenticationFailure, ScramClientExchange, ScramServerExchange, UnknownUserCredentials, check_plain,
    plain_message, unescape_username,
)
from security.scram_credentials import ScramCredential, ScramMechanism, make_credential

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


class Store:
    """A credential lookup over a dict, recording the names it was asked for."""

    def __init__(self, *credentials: tuple[str, ScramCredential]) -> None:
        self.credentials = {(name, cred.mechanism): cred for name, cred in credentials}
        self.asked: list[str] = []

    def __call__(self, username: str, mechanism: ScramMechanism):
        self.asked.append(username)
        return self.credentials.get((username, mechanism))


def server(store: Store, mechanism: ScramMechanism = SHA256, **kwargs) -> ScramServerExchange:
    return ScramServerExchange(mechanism, store, UnknownUserCredentials(), **kwargs)


def login(store: Store, username: str, password: str, mechanism: ScramMechanism = SHA256) -> ScramServerExchange:
    client, srv = ScramClientExchange(mechanism, username, password), server(store, mechanism)
    client.receive_server_first(srv.step(client.client_first()))
    client.receive_server_final(srv.step(client.client_final()))
    return srv


def failure(store: Store, username: str, password: str, mechanism: ScramMechanism = SHA256) -> str:
    with pytest.raises(AuthenticationFailure) as caught:
        login(store, username, password, mechanism)
    return caught.value.reason


def test_rfc7677_example_exchange_byte_for_byte():
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    store = Store(("user", make_credential(SHA256, "pencil", 4096, salt)))
    client = ScramClientExchange(SHA256, "user", "pencil", client_nonce="rOprNGfwEbeRWgbNEkqO")
    srv = server(store, server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")

    assert client.client_first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = srv.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert server_first == (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                            b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    client.receive_server_first(server_first)
    client_final = client.client_final()
    assert client_final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                            b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    server_final = srv.step(client_final)
    assert server_final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    client.receive_server_final(server_final)
    assert srv.complete and srv.username == "user"


def test_sha512_round_trip_and_wrong_password():
    store = Store(("alice", make_credential(SHA512, "s3cret-512", 8192)))
    srv = login(store, "alice", "s3cret-512", SHA512)
    assert srv.complete and srv.username == "alice"
    assert failure(store, "alice", "wrong", SHA512) == "proof"
    # a SHA-512 credential does not answer a SHA-256 login
    assert failure(store, "alice", "s3cret-512", SHA256) == "proof"


def test_client_refuses_a_hostile_iteration_count_before_any_pbkdf2():
    for count in ("2147483648", "10000000", "16385", "4095", "9" * 5000, "4096x", "-4096"):
        client = ScramClientExchange(SHA256, "user", "pencil", client_nonce="abc")
        hostile = f"r=abcSERVER,s={base64.b64encode(b'x' * 16).decode()},i={count}".encode()
        with pytest.raises(SaslAuthenticationError) as caught:
            client.receive_server_first(hostile)
        assert "4096..16384" in str(caught.value)
        # the exchange never reached the step that runs PBKDF2
        with pytest.raises(SaslAuthenticationError):
            client.client_final()


def test_iteration_bounds_are_inclusive_and_server_never_offers_a_stored_count_outside_them():
    store = Store(("edge", make_credential(SHA256, "pw-edge", 16384)))
    assert login(store, "edge", "pw-edge").complete
    out_of_bounds = make_credential(SHA256, "pw-big", 16384)
    store = Store(("big", ScramCredential(SHA256, out_of_bounds.salt, out_of_bounds.stored_key,
                                          out_of_bounds.server_key, 1 << 20)))
    srv = server(store)
    server_first = srv.step(b"n,,n=big,r=nonce1")
    assert server_first.endswith(b",i=4096")   # the fake credential's count, not 2^20


def test_user_names_are_unescaped_kafkas_way():
    assert unescape_username("a=2Cb=3Dc") == "a,b=c"
    for bad in ("a=", "a=2", "a=41", "=3d"):
        with pytest.raises(AuthenticationFailure):
            unescape_username(bad)
    store = Store(("a,b=c", make_credential(SHA256, "pw-esc")))
    srv = login(store, "a,b=c", "pw-esc")
    assert srv.username == "a,b=c" and store.asked == ["a,b=c"]
    with pytest.raises(AuthenticationFailure) as caught:
        server(store).step(b"n,,n=a=41b,r=nonce1")
    assert caught.value.reason == "malformed"


def _client_final_by_hand(password: str, credential_salt: bytes, iterations: int, gs2_header: str,
                          client_first_bare: str, server_first: str, nonce: str) -> bytes:
    """RFC 5802's client proof written out with hashlib, for a gs2 header
    scramp's client cannot send (an authzid)."""
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), credential_salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    without_proof = f"c={base64.b64encode(gs2_header.encode()).decode()},r={nonce}"
    auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message, "sha256").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


def _login_with_authzid(authzid: str) -> ScramServerExchange:
    credential = make_credential(SHA256, "pw-authz")
    srv = server(Store(("bob", credential)))
    header, bare = f"n,a={authzid},", "n=bob,r=clientnonce"
    server_first = srv.step((header + bare).encode()).decode()
    nonce = server_first.split(",")[0][2:]
    srv.step(_client_final_by_hand("pw-authz", credential.salt, credential.iterations, header, bare,
                                   server_first, nonce))
    return srv


def test_authzid_equal_to_the_user_is_accepted_any_other_refused():
    assert _login_with_authzid("bob").complete
    with pytest.raises(AuthenticationFailure) as caught:
        _login_with_authzid("admin")
    assert caught.value.reason == "authzid"


def test_client_final_with_a_foreign_nonce_is_refused():
    store = Store(("user", make_credential(SHA256, "pencil")))
    client, srv = ScramClientExchange(SHA256, "user", "pencil", client_nonce="cnonce"), server(store)
    server_first = srv.step(client.client_first())
    # the attacker keeps the client's part but not the server's
    forged = server_first.replace(b"r=cnonce", b"r=cnonceFORGED", 1)
    forged = b"r=cnonce" + b"attacker" + forged[forged.index(b","):]
    client.receive_server_first(forged)
    with pytest.raises(AuthenticationFailure) as caught:
        srv.step(client.client_final())
    assert caught.value.reason == "nonce"
    with pytest.raises(IllegalSaslStateError):   # a failed exchange stays closed
        srv.step(b"anything")


def test_replayed_client_final_is_refused_in_the_same_and_in_a_new_exchange():
    store = Store(("user", make_credential(SHA256, "pencil")))
    client, srv = ScramClientExchange(SHA256, "user", "pencil"), server(store)
    first = client.client_first()
    client.receive_server_first(srv.step(first))
    final = client.client_final()
    srv.step(final)
    with pytest.raises(IllegalSaslStateError):
        srv.step(final)
    fresh = server(store)
    fresh.step(first)
    with pytest.raises(AuthenticationFailure) as caught:
        fresh.step(final)
    assert caught.value.reason == "nonce"


def test_unknown_user_fails_like_a_wrong_password_with_a_stable_salt():
    store = Store(("user", make_credential(SHA256, "pencil")))
    assert failure(store, "nobody", "pencil") == failure(store, "user", "wrong") == "proof"
    unknown_users = UnknownUserCredentials()
    first_tries = [ScramServerExchange(SHA256, store, unknown_users).step(b"n,,n=nobody,r=abc").decode()
                   for _ in range(2)]
    salts = [dict(part.split("=", 1) for part in text.split(","))["s"] for text in first_tries]
    assert salts[0] == salts[1]
    assert len(base64.b64decode(salts[0])) == 32   # scramp's salts are 32 bytes too
    assert first_tries[0].endswith(",i=4096")


def test_plain_is_checked_against_the_scram_credential():
    store = Store(("carol", make_credential(SHA512, "pw-plain")), ("dave", make_credential(SHA256, "pw-dave")))
    unknown_users = UnknownUserCredentials()
    assert check_plain(plain_message("carol", "pw-plain"), store, unknown_users) == "carol"
    assert check_plain(plain_message("dave", "pw-dave"), store, unknown_users) == "dave"
    assert check_plain(plain_message("carol", "pw-plain", authzid="carol"), store, unknown_users) == "carol"
    reasons = {}
    for label, message in {"wrong": plain_message("carol", "nope"), "unknown": plain_message("zed", "pw-plain"),
                           "authzid": plain_message("carol", "pw-plain", authzid="root"),
                           "two-parts": b"carol\0pw-plain", "empty-password": b"\0carol\0",
                           "not-utf8": b"\0carol\0\xff\xfe"}.items():
        with pytest.raises(AuthenticationFailure) as caught:
            check_plain(message, store, unknown_users)
        reasons[label] = caught.value.reason
    assert reasons == {"wrong": "password", "unknown": "password", "authzid": "authzid",
                       "two-parts": "malformed", "empty-password": "malformed", "not-utf8": "malformed"}
