"""What the SASL server and its clients agree on beyond security.proto.

- the call-metadata key that carries a session credential, and its size;
- Kafka's SASL errors as exceptions (SASL_AUTHENTICATION_FAILED,
  UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE) and Kafka's generic text
  for a failed login, the same for a wrong password and an unknown user;
- how a call without a valid session is refused: gRPC status UNAUTHENTICATED
  with details `sasl-session/<reason>: <text>`. The reason is one of
  REFUSAL_REASONS; a client that sees one knows the server does not (or no
  longer) hold its session, authenticates again and retries the call once.
  The call was refused before any handler ran, so the retry is safe even for
  a non-idempotent RPC.

No message built here carries a password, proof, nonce or credential.
"""
from __future__ import annotations

from typing import Optional

from kafka_protocol.errors import Errors, KafkaError

SESSION_METADATA_KEY = "kraftlog-session-bin"   # '-bin': gRPC carries the value as bytes
SESSION_CREDENTIAL_BYTES = 32
SASL_SERVICE = "kraftlog.security.v1.SaslAuthentication"

MECHANISM_PLAIN = "PLAIN"
MECHANISM_SCRAM_SHA_256 = "SCRAM-SHA-256"
MECHANISM_SCRAM_SHA_512 = "SCRAM-SHA-512"
MECHANISMS = (MECHANISM_SCRAM_SHA_256, MECHANISM_SCRAM_SHA_512, MECHANISM_PLAIN)


def invalid_credentials_message(mechanism: str) -> str:
    """Kafka's one text for every failed login (SaslServerAuthenticator):
    nothing in it tells a wrong password from an unknown user."""
    return f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"


class SaslAuthenticationError(KafkaError):
    error = Errors.SASL_AUTHENTICATION_FAILED


class UnsupportedSaslMechanismError(KafkaError):
    error = Errors.UNSUPPORTED_SASL_MECHANISM


class IllegalSaslStateError(KafkaError):
    error = Errors.ILLEGAL_SASL_STATE


# --- calls refused for want of a session ------------------------------------

_DETAILS_PREFIX = "sasl-session/"


class SessionRefusedError(SaslAuthenticationError):
    """A call whose session credential the server does not accept. `reason`
    is the short code put in the UNAUTHENTICATED details."""

    reason = "refused"
    text = "the call carries no valid SASL session"

    def __init__(self) -> None:
        super().__init__(self.text)


class SessionMissingError(SessionRefusedError):
    reason = "missing"
    text = f"the call carries no session credential ({SESSION_METADATA_KEY}); authenticate first"


class SessionUnknownError(SessionRefusedError):
    reason = "unknown"
    text = "the session credential is not one this server issued or still holds; authenticate again"


class SessionOtherConnectionError(SessionRefusedError):
    reason = "other-connection"
    text = "the session credential was issued on another connection; authenticate on this one"


class SessionExpiredError(SessionRefusedError):
    reason = "expired"
    text = "the session credential has expired (connections.max.reauth.ms); authenticate again"


REFUSAL_REASONS = frozenset(cls.reason for cls in
                            (SessionMissingError, SessionUnknownError, SessionOtherConnectionError,
                             SessionExpiredError))


def unauthenticated_details(error: SessionRefusedError) -> str:
    """The details of the UNAUTHENTICATED status that refuses a call."""
    return f"{_DETAILS_PREFIX}{error.reason}: {error.text}"


def refusal_reason(details: Optional[str]) -> Optional[str]:
    """The reason of an UNAUTHENTICATED status written by
    `unauthenticated_details`, None for any other details."""
    if not details or not details.startswith(_DETAILS_PREFIX):
        return None
    reason = details[len(_DETAILS_PREFIX):].partition(":")[0]
    return reason if reason in REFUSAL_REASONS else None
