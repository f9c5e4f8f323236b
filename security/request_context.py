"""Who is making the request being served: set once per gRPC call, before its
handler runs, by the listener's authentication guard, and read by the
authorization checks deep in the handlers without passing it through every
signature. A contextvar follows the call's asyncio task, so concurrent calls
never see each other's session.
"""
from __future__ import annotations

import contextvars
from dataclasses import dataclass

from .principal import ANONYMOUS, KafkaPrincipal


@dataclass(frozen=True)
class RequestSession:
    """Kafka's RequestContext, the parts authorization needs."""

    principal: KafkaPrincipal
    host: str  # the client's IP address, as ACLs name hosts
    listener: str  # the listener name the call came in on
    security_protocol: str = "PLAINTEXT"


# Outside any served call (the broker's own writers, tests of pure handlers)
# there is no session: checks treat that as the node itself, which is why a
# handler reached without the guard must never be exposed on a listener.
_current: contextvars.ContextVar[RequestSession | None] = contextvars.ContextVar("kraftlog_request_session",
                                                                                 default=None)


def current_session() -> RequestSession | None:
    return _current.get()


def set_session(session: RequestSession) -> contextvars.Token:
    return _current.set(session)


def reset_session(token: contextvars.Token) -> None:
    _current.reset(token)


def peer_host(peer: str | None) -> str:
    """The IP address of a gRPC peer string: `ipv4:127.0.0.1:5000` -> 127.0.0.1,
    `ipv6:[::1]:5000` -> ::1, anything else (unix sockets) -> the string itself."""
    text = peer or ""
    kind, _, rest = text.partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0] or rest
    if kind == "ipv6":
        address = rest.rpartition(":")[0] or rest
        return address.strip("[]").split("%")[0]
    return text


def anonymous_session(listener: str, host: str = "") -> RequestSession:
    return RequestSession(ANONYMOUS, host, listener)
