"""Who is at the other end of one Kafka connection: SaslHandshake and
SaslAuthenticate, and which requests a connection may send in its state.

A SASL_PLAINTEXT or SASL_SSL connection starts unauthenticated. Then, as
Kafka's SaslServerAuthenticator:
- only ApiVersions and SaslHandshake are served; any other request closes
  the connection unanswered (SaslAuthenticate before a handshake is answered
  ILLEGAL_SASL_STATE first, so a client learns why);
- SaslHandshake names a mechanism of `sasl.enabled.mechanisms` (PLAIN only
  over TLS); another one is answered UNSUPPORTED_SASL_MECHANISM with those
  enabled, and the connection closes;
- after a v1 handshake the mechanism's messages come in SaslAuthenticate
  requests, and nothing else may come until the login ends; after a v0
  handshake (kafka-python 2 style) they come as raw length-prefixed tokens
  and are answered the same way (`expects_raw_token`);
- the mechanisms are security/sasl_server.py's (SCRAM-SHA-256/512, PLAIN
  against the SCRAM credentials): the same code a gRPC SASL listener runs;
- a failed login is answered SASL_AUTHENTICATION_FAILED with Kafka's one
  text (v1) or not at all (v0), and the connection closes.
Once authenticated, the connection is the session: every later request runs
as its principal. SaslHandshake and SaslAuthenticate are then answered
ILLEGAL_SASL_STATE, as on a PLAINTEXT or SSL listener - except that with
`connections.max.reauth.ms` > 0 (KIP-368) a v1 handshake starts a
re-authentication, which must use the same mechanism and log in as the
same principal; the lifetime is
sent in SaslAuthenticate v1+, and a request other than SaslHandshake on a
connection whose session has expired closes it.

Pure state: the listener does the I/O, and reads `close` from each Outcome.
"""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from kafka_protocol.errors import Errors
from kafka_protocol.wire import versions
from kafka_protocol.wire.codec import Request, response_type
from kafka_protocol.wire.entities import build
from security.principal import KafkaPrincipal
from security.sasl_protocol import SaslAuthenticationError, UnsupportedSaslMechanismError
from security.sasl_server import SaslLogin, SaslServer

# Kafka's sasl.server.max.receive.size: the largest frame read before a
# connection has authenticated (socket.request.max.bytes applies after).
MAX_RECEIVE_BEFORE_AUTH = 524_288

SASL_APIS = frozenset({versions.SASL_HANDSHAKE, versions.SASL_AUTHENTICATE})


class State(enum.Enum):
    HANDSHAKE = "awaiting SaslHandshake"
    AUTHENTICATE = "awaiting SaslAuthenticate"
    RAW_TOKENS = "awaiting raw SASL tokens"
    AUTHENTICATED = "authenticated"


@dataclass(frozen=True)
class Outcome:
    """What to answer (a kio response, or raw token bytes after a v0
    handshake; None for nothing) and, when `close` is set, why the
    connection closes once the answer is written."""

    response: Any = None
    close: Optional[str] = None
    failed_login: bool = False  # the answer reports a refused login (Kafka delays it)


class ConnectionAuth:
    """The SASL state of one connection of a listener with SASL (`sasl`), or
    of one without (None: authenticated from the start, as `principal`)."""

    def __init__(self, sasl: Optional[SaslServer], peer: str, *, principal: Optional[KafkaPrincipal] = None,
                 max_reauth_ms: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        self._sasl = sasl
        self._peer = peer
        self._max_reauth_s = max_reauth_ms / 1000
        self._clock = clock
        self.principal = principal if sasl is None else None
        self.state = State.AUTHENTICATED if sasl is None else State.HANDSHAKE
        self._login: Optional[SaslLogin] = None
        self._expires_at: Optional[float] = None
        self._mechanism = ""  # the one logged in with: a re-authentication must use it again

    @property
    def expects_raw_token(self) -> bool:
        return self.state is State.RAW_TOKENS

    @property
    def max_frame_bytes(self) -> Optional[int]:
        """The frame limit of the connection's state (None: the listener's own)."""
        return None if self.principal is not None else MAX_RECEIVE_BEFORE_AUTH

    def refusal(self, api_key: int) -> Optional[str]:
        """Why a request of `api_key` closes the connection unanswered, or None when it is served."""
        if self.state is State.AUTHENTICATE and api_key != versions.SASL_AUTHENTICATE:
            return f"{_api_name(api_key)} during SASL authentication (only SaslAuthenticate may come)"
        if self.principal is None:
            if api_key in (versions.API_VERSIONS, *SASL_APIS):
                return None
            return f"{_api_name(api_key)} before SASL authentication"
        if self._expires_at is not None and api_key != versions.SASL_HANDSHAKE and self._clock() >= self._expires_at:
            return "the SASL session expired (connections.max.reauth.ms) and was not re-authenticated"
        return None

    async def serve(self, request: Request) -> Outcome:
        """The answer to a SaslHandshake or SaslAuthenticate request."""
        if request.header.api_key == versions.SASL_HANDSHAKE:
            return self._handshake(request)
        return await self._authenticate(request)

    def _handshake(self, request: Request) -> Outcome:
        version = request.header.api_version
        reauthenticating = self.state is State.AUTHENTICATED and self._max_reauth_s > 0 and version >= 1
        if self._sasl is None or (self.state is not State.HANDSHAKE and not reauthenticating):
            return Outcome(_answer(request, error_code=Errors.ILLEGAL_SASL_STATE, mechanisms=()))
        mechanisms = self._sasl.mechanisms
        if reauthenticating and request.body.mechanism != self._mechanism:
            return Outcome(_answer(request, error_code=Errors.UNSUPPORTED_SASL_MECHANISM, mechanisms=(self._mechanism,)),
                           close=f"re-authentication with {request.body.mechanism[:64]!r} after {self._mechanism}")
        try:
            self._login = self._sasl.begin(request.body.mechanism, self._peer)
        except UnsupportedSaslMechanismError:
            return Outcome(_answer(request, error_code=Errors.UNSUPPORTED_SASL_MECHANISM, mechanisms=mechanisms),
                           close=f"SASL mechanism {request.body.mechanism[:64]!r} is not enabled")
        self.state = State.AUTHENTICATE if version >= 1 else State.RAW_TOKENS
        return Outcome(_answer(request, error_code=0, mechanisms=mechanisms))

    async def _authenticate(self, request: Request) -> Outcome:
        if self.state is State.AUTHENTICATED:
            return Outcome(_answer(request, error_code=Errors.ILLEGAL_SASL_STATE, auth_bytes=b"",
                                   error_message="SaslAuthenticate request received after successful authentication"))
        if self.state is not State.AUTHENTICATE:
            text = "SaslAuthenticate request received before SaslHandshake"
            return Outcome(_answer(request, error_code=Errors.ILLEGAL_SASL_STATE, error_message=text, auth_bytes=b""),
                           close=text)
        try:
            answer, done = await self._step(request.body.auth_bytes)
        except SaslAuthenticationError as failed:
            return Outcome(_answer(request, error_code=Errors.SASL_AUTHENTICATION_FAILED,
                                   error_message=failed.args[0], auth_bytes=b""),
                           close="SASL authentication failed", failed_login=True)
        lifetime_ms = round(self._max_reauth_s * 1000) if done else 0
        return Outcome(_answer(request, error_code=0, error_message=None, auth_bytes=answer,
                               session_lifetime=lifetime_ms))

    async def raw_token(self, token: bytes) -> Outcome:
        """After a v0 handshake: the mechanism's answer to a raw token, as raw bytes."""
        try:
            answer, _ = await self._step(token)
        except SaslAuthenticationError:
            return Outcome(close="SASL authentication failed (v0 tokens: no answer)", failed_login=True)
        return Outcome(answer)

    async def _step(self, token: bytes) -> tuple[bytes, bool]:
        """The login's answer to `token` and whether it succeeded; SaslAuthenticationError ends it."""
        assert self._sasl is not None and self._login is not None
        answer, principal = await self._sasl.step(self._login, token)
        if principal is None:
            return answer, False
        if self.principal is not None and principal != self.principal:
            raise SaslAuthenticationError(f"Cannot change principals during re-authentication from "
                                          f"{self.principal}: {principal}")
        self.principal, self._mechanism = principal, self._login.mechanism
        self._login, self.state = None, State.AUTHENTICATED
        self._expires_at = self._clock() + self._max_reauth_s if self._max_reauth_s > 0 else None
        return answer, True


def _answer(request: Request, **values: Any) -> Any:
    return build(response_type(request.body), values)


def _api_name(api_key: int) -> str:
    served = versions.ADVERTISED.get(api_key)
    return served.name if served is not None else f"API {api_key}"
