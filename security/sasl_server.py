"""The SaslAuthentication service (security.proto) and the check every later
call goes through.

SaslHandshake opens an exchange for one mechanism, bound to the caller's
connection (gRPC's `context.peer()`, address and port) under a random id;
SaslAuthenticate steps it. Exchanges in progress expire after
EXCHANGE_TIMEOUT_MS and are capped per client host and in total: a flood of
handshakes is refused (RESOURCE_EXHAUSTED), it cannot grow memory. A failed
exchange is closed at once; a message for an unknown, ended, expired or
other-connection exchange is ILLEGAL_SASL_STATE.

A successful exchange mints a session credential: 32 random bytes the client
sends in call metadata (`kraftlog-session-bin`). The server keeps only its
SHA-256 with the principal, the connection and the expiry, so neither memory
nor a log holds the credential. `authenticate_call` checks it for every later
call and refuses it (a typed SessionRefusedError, which `require_session`
turns into UNAUTHENTICATED, sasl_protocol.py) when missing, unknown, issued
on another connection (a credential replayed elsewhere) or expired.

Session lifetime: `connections.max.reauth.ms`. Kafka's default 0 means a
session lasts as long as its TCP connection; a gRPC server cannot see a
connection close, so with 0 a session lasts DEFAULT_SESSION_LIFETIME_MS (one
hour) instead and the client re-authenticates transparently before then.
The answer's `session_lifetime_ms` is always the lifetime enforced.

`begin` and `step` are one login without the RPCs around it: the Kafka
listener (broker/kafka_api/sasl.py) runs them on its own connection, where
the connection itself is the session and no credential is minted.

Log lines name the mechanism, the principal, the peer and the outcome, never
a password, proof, nonce, salt or credential.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence, Union

import grpc

from kafka_protocol.errors import Errors
from kafka_protocol.grpc_serving import add_service
from kraftlog_api import security_pb2 as spb

from .expiring_table import ExpiringTable
from .principal import KafkaPrincipal
from .request_context import peer_host
from .sasl_protocol import (
    MECHANISM_PLAIN, MECHANISMS, SESSION_CREDENTIAL_BYTES, SESSION_METADATA_KEY, SaslAuthenticationError,
    SessionExpiredError, SessionMissingError, SessionOtherConnectionError, SessionRefusedError, SessionUnknownError,
    UnsupportedSaslMechanismError, invalid_credentials_message, unauthenticated_details,
)
from .scram import (
    AuthenticationFailure, CredentialLookup, ScramServerExchange, UnknownUserCredentials, check_plain,
)
from .scram_credentials import ScramMechanism

log = logging.getLogger(__name__)

DEFAULT_SESSION_LIFETIME_MS = 3_600_000
EXCHANGE_TIMEOUT_MS = 10_000
# SCRAM and PLAIN messages are a few hundred bytes. Kafka's
# sasl.server.max.receive.size is 512 KiB, but here the message is parsed in
# Python on the event loop (SASLprep walks every character), so far less.
MAX_AUTH_BYTES = 8192
MAX_EXCHANGES_PER_HOST = 64
MAX_EXCHANGES = 10_000
MAX_SESSIONS_PER_HOST = 4096
MAX_SESSIONS = 100_000

OutcomeHook = Callable[[str, bool], None]   # (mechanism, succeeded): for metrics
Metadata = Optional[Sequence[tuple[str, Union[str, bytes]]]]


@dataclass(frozen=True)
class SaslLogin:
    """One login in progress: its mechanism, the client (for log lines and,
    over gRPC, the connection its exchange is bound to) and SCRAM's state."""

    mechanism: str
    peer: str
    scram: Optional[ScramServerExchange]   # None for PLAIN, which is one message


@dataclass(frozen=True)
class _Session:
    principal: KafkaPrincipal
    peer: str


class SaslServer:
    """One listener's SASL: its mechanisms, its exchanges and its sessions."""

    def __init__(self, lookup: CredentialLookup, mechanisms: Iterable[str], *, tls: bool,
                 max_reauth_ms: int = 0, clock: Callable[[], float] = time.monotonic,
                 on_outcome: Optional[OutcomeHook] = None,
                 unknown_users: Optional[UnknownUserCredentials] = None,
                 exchange_timeout_ms: int = EXCHANGE_TIMEOUT_MS,
                 max_exchanges_per_host: int = MAX_EXCHANGES_PER_HOST, max_exchanges: int = MAX_EXCHANGES,
                 max_sessions_per_host: int = MAX_SESSIONS_PER_HOST, max_sessions: int = MAX_SESSIONS) -> None:
        self.mechanisms = tuple(dict.fromkeys(mechanisms))
        unknown = [m for m in self.mechanisms if m not in MECHANISMS]
        if unknown or not self.mechanisms:
            raise ValueError(f"sasl.enabled.mechanisms must be among {', '.join(MECHANISMS)}, got "
                             f"{', '.join(self.mechanisms) or 'none'}")
        if MECHANISM_PLAIN in self.mechanisms and not tls:
            raise ValueError("PLAIN sends the password itself: enable it only on a SASL_SSL listener")
        if max_reauth_ms < 0:
            raise ValueError(f"connections.max.reauth.ms must be >= 0, got {max_reauth_ms}")
        self.session_lifetime_ms = max_reauth_ms or DEFAULT_SESSION_LIFETIME_MS
        self._lookup = lookup
        self._clock = clock
        self._on_outcome = on_outcome or (lambda mechanism, succeeded: None)
        self._unknown_users = unknown_users or UnknownUserCredentials()
        self._exchange_timeout_s = exchange_timeout_ms / 1000
        self._exchanges: ExpiringTable[SaslLogin] = ExpiringTable(
            per_owner=max_exchanges_per_host, total=max_exchanges, evict=False)
        self._sessions: ExpiringTable[_Session] = ExpiringTable(
            per_owner=max_sessions_per_host, total=max_sessions, evict=True)

    # --- SaslAuthentication ---------------------------------------------------

    async def SaslHandshake(self, request: spb.SaslHandshakeRequest,
                            context: grpc.aio.ServicerContext) -> spb.SaslHandshakeResponse:
        peer = context.peer()
        try:
            login = self.begin(request.mechanism, peer)
        except UnsupportedSaslMechanismError:
            return spb.SaslHandshakeResponse(error_code=Errors.UNSUPPORTED_SASL_MECHANISM,
                                             mechanisms=self.mechanisms)
        exchange_id = secrets.token_bytes(16)
        now = self._clock()
        if not self._exchanges.add(exchange_id, peer_host(peer), login, now + self._exchange_timeout_s, now):
            log.warning("SASL handshake from %s refused: too many exchanges in progress", peer)
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                "too many SASL exchanges in progress; try again later")
        return spb.SaslHandshakeResponse(mechanisms=self.mechanisms, exchange_id=exchange_id)

    async def SaslAuthenticate(self, request: spb.SaslAuthenticateRequest,
                               context: grpc.aio.ServicerContext) -> spb.SaslAuthenticateResponse:
        peer = context.peer()
        entry = self._exchanges.get(request.exchange_id)
        if entry is None or entry.value.peer != peer:
            return _illegal_state()
        if entry.expired(self._clock()):
            self._exchanges.pop(request.exchange_id)
            return _illegal_state()
        login = entry.value
        if login.scram is None:
            self._exchanges.pop(request.exchange_id)   # PLAIN is one message: closed before step's await
        try:
            answer, principal = await self.step(login, request.auth_bytes)
        except SaslAuthenticationError as failed:
            self._exchanges.pop(request.exchange_id)
            return spb.SaslAuthenticateResponse(error_code=Errors.SASL_AUTHENTICATION_FAILED,
                                                error_message=failed.args[0])
        if principal is None:
            return spb.SaslAuthenticateResponse(auth_bytes=answer)
        self._exchanges.pop(request.exchange_id)
        credential = self._open_session(principal, peer)
        return spb.SaslAuthenticateResponse(auth_bytes=answer, session_lifetime_ms=self.session_lifetime_ms,
                                            session_credential=credential)

    # --- one login, whatever carries it (these RPCs, or a Kafka connection) ---

    def begin(self, mechanism: str, peer: str) -> SaslLogin:
        """A login with `mechanism` for the client at `peer` (for log lines);
        UnsupportedSaslMechanismError when this listener does not offer it."""
        if mechanism not in self.mechanisms:
            raise UnsupportedSaslMechanismError(f"unsupported SASL mechanism {mechanism[:64]!r}")
        scram = None
        if mechanism != MECHANISM_PLAIN:
            scram = ScramServerExchange(ScramMechanism.from_name(mechanism), self._lookup, self._unknown_users)
        return SaslLogin(mechanism, peer, scram)

    async def step(self, login: SaslLogin, token: bytes) -> tuple[bytes, Optional[KafkaPrincipal]]:
        """The server's answer to the client's next message, and the
        principal once the login succeeded (None while it goes on). A refusal
        is logged, counted and raised as SaslAuthenticationError with Kafka's
        one text (nothing in it tells a wrong password from an unknown user);
        the login is then over."""
        try:
            if len(token) > MAX_AUTH_BYTES:
                raise AuthenticationFailure("oversized")
            if login.scram is None:
                username = await asyncio.to_thread(check_plain, token, self._lookup, self._unknown_users)
                answer = b""
            else:
                answer = login.scram.step(token)   # no await: steps cannot interleave
                if not login.scram.complete:
                    return answer, None
                username = login.scram.username or ""
        except Exception as exc:   # any refusal, and any surprise in parsing hostile bytes, fails the login
            self._failed(login, exc)
            raise SaslAuthenticationError(invalid_credentials_message(login.mechanism)) from None
        principal = KafkaPrincipal.user(username)
        log.info("SASL %s authentication of %s from %s succeeded", login.mechanism, principal, login.peer)
        self._on_outcome(login.mechanism, True)
        return answer, principal

    def _failed(self, login: SaslLogin, exc: Exception) -> None:
        reason = exc.reason if isinstance(exc, AuthenticationFailure) else f"unexpected {type(exc).__name__}"
        user = login.scram.username if login.scram is not None else None
        who = KafkaPrincipal.user(user) if user else "an unnamed user"
        log.info("SASL %s authentication of %s from %s failed (%s)", login.mechanism, who, login.peer, reason)
        self._on_outcome(login.mechanism, False)

    def _open_session(self, principal: KafkaPrincipal, peer: str) -> bytes:
        credential = secrets.token_bytes(SESSION_CREDENTIAL_BYTES)
        now = self._clock()
        self._sessions.add(_digest(credential), peer_host(peer), _Session(principal, peer),
                           now + self.session_lifetime_ms / 1000, now)
        return credential

    # --- every later call -----------------------------------------------------

    def authenticate_call(self, invocation_metadata: Metadata, peer: str) -> KafkaPrincipal:
        """The principal a call runs as, from its session credential; a
        SessionRefusedError subclass when there is none that holds."""
        credential = next((value for key, value in invocation_metadata or () if key == SESSION_METADATA_KEY), None)
        if credential is None:
            raise SessionMissingError()
        if not isinstance(credential, bytes) or len(credential) != SESSION_CREDENTIAL_BYTES:
            raise SessionUnknownError()
        key = _digest(credential)
        entry = self._sessions.get(key)
        if entry is None:
            raise SessionUnknownError()
        if not hmac.compare_digest(entry.value.peer.encode(), peer.encode()):
            raise SessionOtherConnectionError()
        if entry.expired(self._clock()):
            self._sessions.pop(key)
            raise SessionExpiredError()
        return entry.value.principal

    @property
    def exchanges_in_progress(self) -> int:
        return len(self._exchanges)

    @property
    def sessions(self) -> int:
        return len(self._sessions)


def _digest(credential: bytes) -> bytes:
    return hashlib.sha256(credential).digest()


def _illegal_state() -> spb.SaslAuthenticateResponse:
    return spb.SaslAuthenticateResponse(
        error_code=Errors.ILLEGAL_SASL_STATE,
        error_message="no SASL exchange with that id is in progress on this connection; start with SaslHandshake")


async def require_session(sasl_server: SaslServer, context: grpc.aio.ServicerContext) -> KafkaPrincipal:
    """For a handler's first line: the caller's principal, or the call ends
    UNAUTHENTICATED with the reason (sasl_protocol.unauthenticated_details)."""
    try:
        return sasl_server.authenticate_call(context.invocation_metadata(), context.peer())
    except SessionRefusedError as refused:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, unauthenticated_details(refused))
        raise  # abort raises; this line is for type checkers


def add_to_server(server: grpc.aio.Server, sasl_server: SaslServer) -> None:
    """Serve SaslAuthentication on `server` (malformed requests: INVALID_ARGUMENT)."""
    add_service(server, spb.DESCRIPTOR.services_by_name["SaslAuthentication"], sasl_server)
