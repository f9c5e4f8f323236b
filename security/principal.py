"""Kafka's principal: a type and a name, written `User:alice`.

Every authenticated request runs as one principal. A client certificate's
subject becomes one through `ssl.principal.mapping.rules`; a SASL login is
`User:<username>`; an unauthenticated caller on a PLAINTEXT listener is
`User:ANONYMOUS`, as in Kafka.
"""
from __future__ import annotations

from dataclasses import dataclass

USER_TYPE = "User"


@dataclass(frozen=True, order=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def user(cls, name: str) -> "KafkaPrincipal":
        return cls(USER_TYPE, name)


ANONYMOUS = KafkaPrincipal.user("ANONYMOUS")
WILDCARD_PRINCIPAL = KafkaPrincipal.user("*")


class InvalidPrincipalError(ValueError):
    """Not TYPE:NAME with both parts present."""


def parse_principal(text: str) -> KafkaPrincipal:
    """`User:alice` -> KafkaPrincipal("User", "alice"). The name may itself
    contain ':' (a certificate subject may); the type may not."""
    principal_type, sep, name = str(text).strip().partition(":")
    if not sep or not principal_type or not name:
        raise InvalidPrincipalError(f"expected a principal as TYPE:NAME (e.g. User:alice), got {text!r}")
    return KafkaPrincipal(principal_type, name)
