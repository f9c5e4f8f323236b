"""One SASL login, both sides: SCRAM-SHA-256/512 (RFC 5802, RFC 7677, as
Kafka's KIP-554 keeps them) on `scramp`, and PLAIN (RFC 4616).

scramp does the arithmetic and the message grammar; this module closes what
it leaves open, as Kafka does:

- the user name is un-escaped Kafka's way (`=2C` -> `,`, `=3D` -> `=`, any
  other `=` refused) and looked up exactly so; an authzid (`a=`) is accepted
  only when it names the user itself;
- the client-final nonce must be the server's combined nonce, compared with
  hmac.compare_digest before scramp looks at it (Redpanda once accepted a
  foreign one);
- iteration counts are Kafka's 4096..16384 on both sides: the server never
  offers a stored count outside them, and the client refuses one (a hostile
  i=2147483648 froze kafka-python) before it does any PBKDF2;
- an exchange is a one-way state machine: a client-final replayed into it,
  or any message after it ended, is refused;
- an unknown user goes through the same exchange against a fake credential
  derived from a per-process secret (same salt every time for that name, so
  a second try reveals nothing) and fails with the same error, at the same
  point, as a wrong password: no user enumeration.

PLAIN (`authzid NUL user NUL password`) has no store of its own: the password
is salted and iterated with the user's SCRAM credential's salt and count and
the resulting keys compared with the stored ones. One credential store (the
metadata log's SCRAM credentials) serves both mechanisms; a user without a
SCRAM credential cannot log in with PLAIN. The listener offers PLAIN only
over TLS (sasl_server.py refuses it otherwise): the password crosses the wire.

Server-side failures are `AuthenticationFailure` with a short non-secret
reason for the server's own log; the server answers every one of them with
Kafka's one generic text. Nothing raised here carries a password, proof,
nonce, salt or key.
"""
from __future__ import annotations

import hmac
import secrets
from typing import Callable, Optional

import scramp
import scramp.core

from .sasl_protocol import IllegalSaslStateError, SaslAuthenticationError
from .scram_credentials import (
    DEFAULT_ITERATIONS, MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential, ScramMechanism,
    credential_from_salted_password, salted_password,
)

CredentialLookup = Callable[[str, ScramMechanism], Optional[ScramCredential]]


class AuthenticationFailure(Exception):
    """A login refused on the server. `reason` is a short category for the
    server's log (malformed, authzid, nonce, proof, ...), never sent to the
    client, never a secret."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --- the grammar scramp leaves to us ----------------------------------------

def unescape_username(saslname: str) -> str:
    """RFC 5802's saslname -> the user name, as Kafka's ScramFormatter does:
    `=2C` is ',' and `=3D` is '='; any other '=' is malformed."""
    i = saslname.find("=")
    while i != -1:
        if saslname[i:i + 3] not in ("=2C", "=3D"):
            raise AuthenticationFailure("malformed")
        i = saslname.find("=", i + 3)
    return saslname.replace("=2C", ",").replace("=3D", "=")


def _attribute(message: str, key: str) -> Optional[str]:
    """The value of the first `key=` attribute of a SCRAM message."""
    for part in message.split(","):
        if part.startswith(key + "="):
            return part[len(key) + 1:]
    return None


def _decode(message: bytes) -> str:
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError:
        raise AuthenticationFailure("malformed") from None


def _check_credential(credential: Optional[ScramCredential], mechanism: ScramMechanism) -> Optional[ScramCredential]:
    """A stored credential fit to offer: the mechanism asked for, a count in Kafka's bounds."""
    if credential is None or credential.mechanism is not mechanism:
        return None
    if not MIN_ITERATIONS <= credential.iterations <= MAX_ITERATIONS:
        return None
    return credential


class UnknownUserCredentials:
    """Fake credentials for names with none, so that an unknown user's
    exchange looks and fails like a wrong password. Derived from a secret
    drawn once per process: stable per name, unlinkable to any real one."""

    def __init__(self, iterations: int = DEFAULT_ITERATIONS, secret: Optional[bytes] = None) -> None:
        self._secret = secret or secrets.token_bytes(32)
        self.iterations = iterations

    def for_user(self, mechanism: ScramMechanism, username: str) -> ScramCredential:
        def derive(label: bytes) -> bytes:
            return hmac.new(self._secret, label + b"\0" + mechanism.mechanism_name.encode() + b"\0"
                            + username.encode("utf-8", "surrogatepass"), mechanism.hash_name).digest()
        return ScramCredential(mechanism, derive(b"salt")[:32], derive(b"stored"), derive(b"server"),
                               self.iterations)


# --- SCRAM, server side -----------------------------------------------------

class _Gs2HeaderWithAuthzid(scramp.core.Gs2Header):
    """scramp refuses any authzid; Kafka accepts one equal to the user name.
    The header is handed to scramp without it and this restores the original
    bytes for the channel-binding check (`c=` of the client-final)."""

    def __init__(self, original: str) -> None:
        super().__init__("n", None)
        self._original = original

    def __str__(self) -> str:
        return self._original


class ScramServerExchange:
    """The server's side of one SCRAM exchange: client-first in, server-first
    out; client-final in, server-final out. `username` is set after the
    client-first, `complete` after a verified client-final."""

    def __init__(self, mechanism: ScramMechanism, lookup: CredentialLookup,
                 unknown_users: UnknownUserCredentials, server_nonce: Optional[str] = None) -> None:
        self.mechanism = mechanism
        self._server_nonce = server_nonce  # random (scramp's) unless a test vector fixes it
        self._lookup = lookup
        self._unknown_users = unknown_users
        self._server: Optional[scramp.core.ScramServer] = None
        self._nonce = ""
        self._known = False
        self._stage = "client-first"
        self.username: Optional[str] = None

    @property
    def complete(self) -> bool:
        return self._stage == "complete"

    def step(self, message: bytes) -> bytes:
        """Take the client's next message, answer the next server message."""
        stage, self._stage = self._stage, "failed"   # any exception below ends the exchange
        if stage == "client-first":
            answer = self._client_first(_decode(message))
            self._stage = "client-final"
        elif stage == "client-final":
            answer = self._client_final(_decode(message))
            self._stage = "complete"
        else:
            self._stage = stage
            raise IllegalSaslStateError("the SCRAM exchange has ended")
        return answer

    def _client_first(self, text: str) -> bytes:
        flag, sep1, rest = text.partition(",")
        authz, sep2, bare = rest.partition(",")
        if not (sep1 and sep2) or flag not in ("n", "y"):
            # 'p=' asks for channel binding, which gRPC gives us no way to offer
            raise AuthenticationFailure("malformed")
        saslname = bare.partition(",")[0]
        if not saslname.startswith("n="):
            raise AuthenticationFailure("malformed")
        username = unescape_username(saslname[2:])
        if not username:
            raise AuthenticationFailure("malformed")
        if authz:
            if not authz.startswith("a=") or unescape_username(authz[2:]) != username:
                raise AuthenticationFailure("authzid")
        self.username = username

        credential = _check_credential(self._lookup(username, self.mechanism), self.mechanism)
        self._known = credential is not None
        if credential is None:
            credential = self._unknown_users.for_user(self.mechanism, username)
        auth_info = (credential.salt, credential.stored_key, credential.server_key, credential.iterations)
        server = self.mechanism.scramp().make_server(lambda _prepped_name: auth_info, s_nonce=self._server_nonce)
        try:
            server.set_client_first(f"{flag},,{bare}")
            if authz:
                server.gs2_header = _Gs2HeaderWithAuthzid(f"{flag},{authz},")
            server_first = server.get_server_first()
        except scramp.ScramException:
            raise AuthenticationFailure("malformed") from None
        self._server = server
        self._nonce = _attribute(server_first, "r") or ""
        return server_first.encode("utf-8")

    def _client_final(self, text: str) -> bytes:
        nonce = _attribute(text, "r")
        if nonce is None or not hmac.compare_digest(nonce.encode("utf-8"), self._nonce.encode("utf-8")):
            raise AuthenticationFailure("nonce")
        assert self._server is not None
        try:
            self._server.set_client_final(text)
        except scramp.ScramException as exc:
            invalid_proof = exc.server_error is scramp.core.ServerError.INVALID_PROOF
            raise AuthenticationFailure("proof" if invalid_proof else "malformed") from None
        if not self._known:  # a fake credential cannot verify; this is defence in depth
            raise AuthenticationFailure("proof")
        return self._server.get_server_final().encode("utf-8")


# --- SCRAM, client side -----------------------------------------------------

class ScramClientExchange:
    """The client's side: client_first(), receive_server_first(), then
    client_final() (the PBKDF2: run it off an event loop), then
    receive_server_final(), which proves the server knew the credential.
    Errors are SaslAuthenticationError; none names the password."""

    def __init__(self, mechanism: ScramMechanism, username: str, password: str,
                 client_nonce: Optional[str] = None) -> None:
        try:
            self._client = scramp.ScramClient([mechanism.mechanism_name], username, password,
                                              c_nonce=client_nonce)
        except scramp.ScramException as exc:
            raise SaslAuthenticationError(f"cannot use that user name or password with SCRAM: {exc}") from None

    def client_first(self) -> bytes:
        return self._client.get_client_first().encode("utf-8")

    def receive_server_first(self, message: bytes) -> None:
        """Check the server's salt, nonce and iteration count; no PBKDF2 yet."""
        text = message.decode("utf-8", "replace")
        iterations = _attribute(text, "i")
        # Checked on the text, before scramp parses it: a count of any length
        # is refused without converting it, and well before any PBKDF2.
        in_bounds = (iterations is not None and iterations.isascii() and iterations.isdigit()
                     and len(iterations) <= len(str(MAX_ITERATIONS))
                     and MIN_ITERATIONS <= int(iterations) <= MAX_ITERATIONS)
        if iterations is not None and not in_bounds:
            raise SaslAuthenticationError(
                f"the server asked for a SCRAM iteration count outside {MIN_ITERATIONS}..{MAX_ITERATIONS}; refused")
        self._scramp(self._client.set_server_first, text)

    def client_final(self) -> bytes:
        return self._scramp(self._client.get_client_final).encode("utf-8")

    def receive_server_final(self, message: bytes) -> None:
        self._scramp(self._client.set_server_final, message.decode("utf-8", "replace"))

    @staticmethod
    def _scramp(operation: Callable[..., Optional[str]], *args: str) -> Optional[str]:
        try:
            return operation(*args)
        except scramp.ScramException as exc:
            raise SaslAuthenticationError(f"SCRAM exchange refused: {exc}") from None


# --- PLAIN ------------------------------------------------------------------

def plain_message(username: str, password: str, authzid: str = "") -> bytes:
    """RFC 4616's one message: authzid NUL authcid NUL passwd."""
    return "\0".join((authzid, username, password)).encode("utf-8")


def check_plain(message: bytes, lookup: CredentialLookup, unknown_users: UnknownUserCredentials) -> str:
    """The user name a PLAIN message logs in as, checked against the user's
    SCRAM credential (SCRAM-SHA-512 if there is one, else SCRAM-SHA-256).
    Runs PBKDF2 (also for an unknown user, against a fake credential, so both
    take as long): call it off an event loop."""
    parts = _decode(message).split("\0")
    if len(parts) != 3:
        raise AuthenticationFailure("malformed")
    authzid, username, password = parts
    if not username or not password:
        raise AuthenticationFailure("malformed")
    if authzid and authzid != username:
        raise AuthenticationFailure("authzid")
    credential = None
    for mechanism in (ScramMechanism.SCRAM_SHA_512, ScramMechanism.SCRAM_SHA_256):
        credential = _check_credential(lookup(username, mechanism), mechanism)
        if credential is not None:
            break
    known = credential is not None
    if credential is None:
        credential = unknown_users.for_user(ScramMechanism.SCRAM_SHA_512, username)
    try:
        salted = salted_password(credential.mechanism, password, credential.salt, credential.iterations)
    except (scramp.ScramException, ValueError):
        raise AuthenticationFailure("malformed") from None
    computed = credential_from_salted_password(credential.mechanism, credential.salt, salted,
                                               credential.iterations)
    matches = (hmac.compare_digest(computed.stored_key, credential.stored_key)
               & hmac.compare_digest(computed.server_key, credential.server_key))
    if not (matches and known):
        raise AuthenticationFailure("password")
    return username
