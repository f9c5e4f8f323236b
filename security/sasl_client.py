"""The client side of SASL over gRPC: settings under Kafka's names, the
exchange (blocking and asyncio), and channel interceptors that keep a
session.

Settings: `sasl.mechanism` (Kafka's default GSSAPI is refused with a clear
error: SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN are served), and the login
either as Kafka's `sasl.jaas.config`
(`org.apache.kafka.common.security.scram.ScramLoginModule required
username="alice" password="...";`, PlainLoginModule for PLAIN) or as
confluent-kafka's `sasl.username` / `sasl.password`. `SaslSettings.from_config`
is the one parser of `sasl.*`: whatever reads a client's other security
settings hands it the raw mapping.

The interceptors authenticate on the channel they guard (the session is bound
to that connection), lazily before the first call and again when 85% of the
session's lifetime has passed (Kafka's clients re-authenticate at 85-95%), and
attach the credential as `kraftlog-session-bin`. When a call comes back
UNAUTHENTICATED with a session reason (sasl_protocol.py: the server lost the
session, e.g. the channel reconnected and the connection is a new one), they
authenticate once more and retry that call once; the server refused it before
any handler ran. A login that fails raises SaslAuthenticationError from the
call. The PBKDF2 of a SCRAM login runs in a thread in the asyncio client.
"""
from __future__ import annotations

import asyncio
import collections
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Generator, Mapping, Optional, Sequence, Union

import grpc

from kafka_protocol.errors import Errors, InvalidConfigError, error_name
from kraftlog_api import security_pb2 as spb
from kraftlog_api import security_pb2_grpc as spb_grpc

from .sasl_protocol import (
    MECHANISM_PLAIN, MECHANISMS, SASL_SERVICE, SESSION_METADATA_KEY, IllegalSaslStateError,
    SaslAuthenticationError, UnsupportedSaslMechanismError, refusal_reason,
)
from .scram_credentials import ScramMechanism

AUTHENTICATE_TIMEOUT_S = 30.0
RENEW_AT_FRACTION = 0.85
KAFKA_DEFAULT_MECHANISM = "GSSAPI"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_JAAS_FLAGS = ("required", "requisite", "sufficient", "optional")


# --- settings ---------------------------------------------------------------

@dataclass(frozen=True)
class SaslSettings:
    """A client's SASL login. The password is kept out of the repr."""

    mechanism: str
    username: str
    password: str = field(repr=False)

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise InvalidConfigError(f"sasl.mechanism {self.mechanism} is not supported; use one of "
                                     f"{', '.join(MECHANISMS)}")
        if not self.username or not self.password:
            raise InvalidConfigError("a SASL login needs a user name and a password")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "SaslSettings":
        """From Kafka's client properties: `sasl.mechanism` and either
        `sasl.jaas.config` or `sasl.username` + `sasl.password`. Errors name
        the keys, never the values."""
        mechanism = str(config.get("sasl.mechanism") or KAFKA_DEFAULT_MECHANISM).strip()
        jaas = config.get("sasl.jaas.config")
        username, password = config.get("sasl.username"), config.get("sasl.password")
        if jaas and (username or password):
            raise InvalidConfigError("set either sasl.jaas.config or sasl.username/sasl.password, not both")
        if jaas:
            options = parse_jaas_config(str(jaas), mechanism)
            username, password = options.get("username"), options.get("password")
            if not username or not password:
                raise InvalidConfigError("sasl.jaas.config must set username=\"...\" and password=\"...\"")
        elif not username or not password:
            raise InvalidConfigError(f"sasl.mechanism {mechanism} needs sasl.jaas.config, or sasl.username and "
                                     "sasl.password")
        return cls(mechanism, str(username), str(password))


_JAAS_TOKEN = re.compile(r'\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<punct>[=;])|(?P<word>[^\s=;"]+))', re.S)


def parse_jaas_config(text: str, mechanism: str) -> dict[str, str]:
    """The options of Kafka's one-module JAAS line
    `<LoginModule> <flag> key=value ... ;` (values quoted, with backslash
    escapes, or bare), checked against the mechanism's login module.
    Errors never quote the text: it holds the password."""
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(text.rstrip()):
        match = _JAAS_TOKEN.match(text, position)
        if match is None:
            raise InvalidConfigError("sasl.jaas.config is not a JAAS login module line (an unclosed quote?)")
        kind = match.lastgroup or "word"
        value = match.group(kind)
        tokens.append((kind, re.sub(r"\\(.)", r"\1", value) if kind == "quoted" else value))
        position = match.end()
    shape = "sasl.jaas.config must be one `LoginModule required key=\"value\" ...;` entry"
    if len(tokens) < 3 or tokens[-1] != ("punct", ";") or tokens[1][1].lower() not in _JAAS_FLAGS:
        raise InvalidConfigError(shape)
    module = tokens[0][1]
    expected = PLAIN_LOGIN_MODULE if mechanism == MECHANISM_PLAIN else SCRAM_LOGIN_MODULE
    if module != expected:
        raise InvalidConfigError(f"sasl.jaas.config names login module {module}; sasl.mechanism {mechanism} "
                                 f"needs {expected}")
    options, body = {}, tokens[2:-1]
    if len(body) % 3:
        raise InvalidConfigError(shape)
    for (key_kind, key), (eq_kind, _), (value_kind, value) in zip(body[0::3], body[1::3], body[2::3]):
        if key_kind != "word" or eq_kind != "punct" or value_kind == "punct":
            raise InvalidConfigError(shape)
        options[key] = value
    return options


# --- the exchange -----------------------------------------------------------

@dataclass(frozen=True)
class SaslSession:
    """What a successful login yields: the credential to send with every
    call on that channel, and how long the server keeps it."""

    credential: bytes = field(repr=False)
    lifetime_ms: int


@dataclass(frozen=True)
class _Rpc:
    method: str   # SaslHandshake or SaslAuthenticate
    request: Any


@dataclass(frozen=True)
class _Compute:
    run: Callable[[], bytes]   # PBKDF2: the asyncio driver runs it in a thread


_Conversation = Generator[Union[_Rpc, _Compute], Any, SaslSession]


def _conversation(settings: SaslSettings) -> _Conversation:
    """The login as a generator of steps, driven by `authenticate` (blocking)
    and `authenticate_async`: one conversation, two transports."""
    handshake = yield _Rpc("SaslHandshake", spb.SaslHandshakeRequest(mechanism=settings.mechanism))
    if handshake.error_code == Errors.UNSUPPORTED_SASL_MECHANISM:
        raise UnsupportedSaslMechanismError(f"the server does not enable {settings.mechanism}; it enables "
                                            f"{', '.join(handshake.mechanisms) or 'no mechanism'}")
    _raise_for(handshake.error_code, "")
    exchange_id = handshake.exchange_id

    def authenticate_request(auth_bytes: bytes) -> _Rpc:
        return _Rpc("SaslAuthenticate", spb.SaslAuthenticateRequest(exchange_id=exchange_id, auth_bytes=auth_bytes))

    # Imported here: scramp costs every client process 30 ms, and only SASL needs it.
    from .scram import ScramClientExchange, plain_message

    if settings.mechanism == MECHANISM_PLAIN:
        answer = yield authenticate_request(plain_message(settings.username, settings.password))
        _raise_for(answer.error_code, answer.error_message)
    else:
        scram = ScramClientExchange(ScramMechanism.from_name(settings.mechanism), settings.username,
                                    settings.password)
        server_first = yield authenticate_request(scram.client_first())
        _raise_for(server_first.error_code, server_first.error_message)
        scram.receive_server_first(server_first.auth_bytes)
        client_final = yield _Compute(scram.client_final)
        answer = yield authenticate_request(client_final)
        _raise_for(answer.error_code, answer.error_message)
        scram.receive_server_final(answer.auth_bytes)
    if not answer.session_credential or answer.session_lifetime_ms <= 0:
        raise SaslAuthenticationError("the server ended the exchange without a session credential")
    return SaslSession(answer.session_credential, answer.session_lifetime_ms)


def _raise_for(error_code: int, message: str) -> None:
    """The server's error, as Kafka's exception (its message is the server's
    generic text, which holds no secret)."""
    if error_code == Errors.NONE:
        return
    if error_code == Errors.ILLEGAL_SASL_STATE:
        raise IllegalSaslStateError(message)
    raise SaslAuthenticationError(message or error_name(error_code))


async def _drive(conversation: _Conversation, perform: Callable[[Union[_Rpc, _Compute]], Awaitable[Any]]
                 ) -> SaslSession:
    answer = None
    try:
        while True:
            answer = await perform(conversation.send(answer))
    except StopIteration as done:
        return done.value


def authenticate(channel: grpc.Channel, settings: SaslSettings,
                 timeout: float = AUTHENTICATE_TIMEOUT_S) -> SaslSession:
    """Log in on `channel` (blocking); the session holds on that channel's connection."""
    stub = spb_grpc.SaslAuthenticationStub(channel)

    async def perform(step: Union[_Rpc, _Compute]) -> Any:   # never suspends: every step blocks
        return step.run() if isinstance(step, _Compute) else getattr(stub, step.method)(step.request, timeout=timeout)

    # The one driver is a coroutine; with steps that never suspend it runs to
    # its end on the first send, without an event loop.
    driver = _drive(_conversation(settings), perform)
    try:
        driver.send(None)
    except StopIteration as done:
        return done.value
    driver.close()
    raise RuntimeError("a blocking SASL step suspended")


async def authenticate_async(channel: grpc.aio.Channel, settings: SaslSettings,
                             timeout: float = AUTHENTICATE_TIMEOUT_S) -> SaslSession:
    """Log in on an asyncio channel; PBKDF2 runs in a thread, off the loop."""
    stub = spb_grpc.SaslAuthenticationStub(channel)

    async def perform(step: Union[_Rpc, _Compute]) -> Any:
        if isinstance(step, _Compute):
            return await asyncio.to_thread(step.run)
        return await getattr(stub, step.method)(step.request, timeout=timeout)

    return await _drive(_conversation(settings), perform)


# --- interceptors -----------------------------------------------------------

_SASL_METHOD_PREFIX = f"/{SASL_SERVICE}/"


class _SessionCache:
    """A channel's current session and when to renew it."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._credential: Optional[bytes] = None
        self._renew_at = 0.0

    def current(self) -> Optional[bytes]:
        return self._credential if self._credential is not None and self._clock() < self._renew_at else None

    def store(self, session: SaslSession) -> bytes:
        self._credential = session.credential
        self._renew_at = self._clock() + RENEW_AT_FRACTION * session.lifetime_ms / 1000
        return session.credential

    def drop(self, credential: Optional[bytes]) -> None:
        """Forget a credential the server refused, unless another call has
        already replaced it."""
        if credential is not None and credential == self._credential:
            self._credential = None


def _metadata_with(metadata: Optional[Sequence[tuple[str, Any]]], credential: bytes) -> list[tuple[str, Any]]:
    pairs = [(key, value) for key, value in (metadata or ()) if key != SESSION_METADATA_KEY]
    pairs.append((SESSION_METADATA_KEY, credential))
    return pairs


def _refused_for_session(code: Optional[grpc.StatusCode], details: Optional[str]) -> bool:
    return code == grpc.StatusCode.UNAUTHENTICATED and refusal_reason(details) is not None


class _CallDetails(collections.namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials",
                                                           "wait_for_ready", "compression")),
                   grpc.ClientCallDetails):
    pass


class SaslClientInterceptor(grpc.UnaryUnaryClientInterceptor):
    """Keeps a session for a blocking channel. `channel` is the channel
    being intercepted (the login must run on the same connection)."""

    def __init__(self, channel: grpc.Channel, settings: SaslSettings, *,
                 clock: Callable[[], float] = time.monotonic, timeout: float = AUTHENTICATE_TIMEOUT_S) -> None:
        self._channel = channel
        self._settings = settings
        self._timeout = timeout
        self._cache = _SessionCache(clock)
        self._lock = threading.Lock()

    def _credential(self, refused: Optional[bytes] = None) -> bytes:
        with self._lock:
            self._cache.drop(refused)
            return self._cache.current() or self._cache.store(
                authenticate(self._channel, self._settings, self._timeout))

    def _details(self, details: grpc.ClientCallDetails, credential: bytes) -> grpc.ClientCallDetails:
        return _CallDetails(details.method, details.timeout, _metadata_with(details.metadata, credential),
                            details.credentials, getattr(details, "wait_for_ready", None),
                            getattr(details, "compression", None))

    def intercept_unary_unary(self, continuation, client_call_details, request):
        if client_call_details.method.startswith(_SASL_METHOD_PREFIX):
            return continuation(client_call_details, request)
        credential = self._credential()
        outcome = continuation(self._details(client_call_details, credential), request)
        if _refused_for_session(outcome.code(), outcome.details()):
            credential = self._credential(refused=credential)
            outcome = continuation(self._details(client_call_details, credential), request)
        return outcome


class SaslAioClientInterceptor(grpc.aio.UnaryUnaryClientInterceptor):
    """Keeps a session for an asyncio channel. An asyncio channel takes its
    interceptors when it is made, so this one is bound to it afterwards
    (`bind`); `sasl_aio_channel` does both. Its own login calls go through
    the channel and pass this interceptor untouched."""

    def __init__(self, settings: SaslSettings, *, clock: Callable[[], float] = time.monotonic,
                 timeout: float = AUTHENTICATE_TIMEOUT_S) -> None:
        self._settings = settings
        self._timeout = timeout
        self._cache = _SessionCache(clock)
        self._channel: Optional[grpc.aio.Channel] = None
        self._lock: Optional[asyncio.Lock] = None

    def bind(self, channel: grpc.aio.Channel) -> None:
        self._channel = channel

    async def _credential(self, refused: Optional[bytes] = None) -> bytes:
        if self._channel is None:
            raise RuntimeError("SaslAioClientInterceptor.bind(channel) was not called")
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            self._cache.drop(refused)
            return self._cache.current() or self._cache.store(
                await authenticate_async(self._channel, self._settings, self._timeout))

    @staticmethod
    def _details(details: grpc.aio.ClientCallDetails, credential: bytes) -> grpc.aio.ClientCallDetails:
        metadata = grpc.aio.Metadata(*_metadata_with(details.metadata, credential))
        return grpc.aio.ClientCallDetails(details.method, details.timeout, metadata, details.credentials,
                                          details.wait_for_ready)

    async def intercept_unary_unary(self, continuation, client_call_details, request):
        method = client_call_details.method
        if (method.decode() if isinstance(method, bytes) else method).startswith(_SASL_METHOD_PREFIX):
            return await continuation(client_call_details, request)
        credential = await self._credential()
        call = await continuation(self._details(client_call_details, credential), request)
        if _refused_for_session(await call.code(), await call.details()):
            credential = await self._credential(refused=credential)
            call = await continuation(self._details(client_call_details, credential), request)
        return call


def sasl_channel(channel: grpc.Channel, settings: SaslSettings, **kwargs: Any) -> grpc.Channel:
    """`channel` with a SASL session on every unary call (as grpc.secure_channel adds TLS)."""
    return grpc.intercept_channel(channel, SaslClientInterceptor(channel, settings, **kwargs))


def sasl_aio_channel(target: str, settings: SaslSettings, *,
                     credentials: Optional[grpc.ChannelCredentials] = None,
                     options: Optional[Sequence[tuple[str, Any]]] = None,
                     interceptors: Sequence[grpc.aio.ClientInterceptor] = (), **kwargs: Any) -> grpc.aio.Channel:
    """An asyncio channel to `target` (TLS when `credentials` are given) with a
    SASL session on every unary call."""
    sasl = SaslAioClientInterceptor(settings, **kwargs)
    chain = [*interceptors, sasl]
    if credentials is not None:
        channel = grpc.aio.secure_channel(target, credentials, options, interceptors=chain)
    else:
        channel = grpc.aio.insecure_channel(target, options, interceptors=chain)
    sasl.bind(channel)
    return channel
