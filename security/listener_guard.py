"""The guard in front of every service of one listener: who is calling.

By the listener's security protocol (Kafka's meaning):
- PLAINTEXT: everyone is `User:ANONYMOUS`;
- SSL: the client certificate's subject through `ssl.principal.mapping.rules`
  (`User:ANONYMOUS` without one, when `ssl.client.auth` lets it in);
- SASL_PLAINTEXT, SASL_SSL: the principal of the call's session credential
  (security/sasl_server.py); only the SaslAuthentication service itself is
  reachable without one, every other call ends UNAUTHENTICATED.

The result becomes the call's RequestSession (security/request_context.py),
which the authorization checks read. The identity never comes from what a
caller writes in its metadata, only from the TLS session or a credential
this node issued.
"""
from __future__ import annotations

from typing import Optional

import grpc

from .listeners import SecurityProtocol
from .principal import ANONYMOUS
from .principal_mapping import NoMatchingRule, PrincipalMapper
from .sasl_protocol import SASL_SERVICE
from .request_context import RequestSession, peer_host, set_session
from .sasl_server import SaslServer, require_session
from .tls import peer_principal

SASL_SERVICE_PREFIX = f"/{SASL_SERVICE}/"


def listener_guard(listener: str, protocol: SecurityProtocol, *, sasl: Optional[SaslServer] = None,
                   mapper: Optional[PrincipalMapper] = None):
    """The grpc_serving guard of one listener."""
    if protocol.uses_sasl and sasl is None:
        raise ValueError(f"listener {listener} ({protocol.name}) needs a SASL server")
    if protocol is SecurityProtocol.SSL and mapper is None:
        raise ValueError(f"listener {listener} (SSL) needs the principal mapping rules")

    async def guard(path: str, context: grpc.aio.ServicerContext) -> None:
        if protocol.uses_sasl:
            principal = ANONYMOUS if path.startswith(SASL_SERVICE_PREFIX) else await require_session(sasl, context)
        elif protocol is SecurityProtocol.SSL:
            try:
                principal = peer_principal(context, mapper)
            except NoMatchingRule:
                await context.abort(grpc.StatusCode.UNAUTHENTICATED,
                                    "no ssl.principal.mapping.rules rule applies to the client certificate")
        else:
            principal = ANONYMOUS
        set_session(RequestSession(principal, peer_host(context.peer()), listener, protocol.name))

    return guard
