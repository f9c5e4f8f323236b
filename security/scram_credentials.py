"""SCRAM credentials as Kafka stores them (KIP-554's UserScramCredentialRecord):
salt, stored key, server key and iteration count, never the password.

The stored key and server key are what RFC 5802 lets a server keep: enough
to check a client's proof and to prove itself, not enough to log in. The
arithmetic is scramp's; this module fixes Kafka's mechanisms, their wire
codes and its iteration bounds.
"""
from __future__ import annotations

import enum
import hashlib
import hmac
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import scramp

# Kafka's ScramMechanism bounds (ScramMechanism.minIterations/maxIterations):
# fewer is too cheap to guess, more lets a hostile peer make the other spin.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096
SALT_BYTES = 32  # fresh per credential made from a password (RFC 5802 asks only that it be random)


class ScramMechanism(enum.IntEnum):
    """Kafka's mechanism type codes (UserScramCredentialRecord.mechanism)."""

    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"

    @classmethod
    def from_name(cls, name: str) -> "ScramMechanism":
        """`SCRAM-SHA-256` -> SCRAM_SHA_256; ValueError for any other name."""
        for mechanism in cls:
            if mechanism.mechanism_name == name:
                return mechanism
        raise ValueError(f"unknown SCRAM mechanism {name!r} (expected SCRAM-SHA-256 or SCRAM-SHA-512)")

    def scramp(self) -> scramp.ScramMechanism:
        import scramp  # here: scramp costs every client process 30 ms, and only SCRAM needs it
        return scramp.ScramMechanism(self.mechanism_name)


@dataclass(frozen=True)
class ScramCredential:
    """What the metadata log keeps for one user and mechanism. The keys are
    not the password, but they are kept out of reprs all the same."""

    mechanism: ScramMechanism
    salt: bytes = field(repr=False)
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int


def check_iterations(iterations: int) -> None:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}, got {iterations}")


def make_credential(mechanism: ScramMechanism, password: str, iterations: int = DEFAULT_ITERATIONS,
                    salt: bytes | None = None) -> ScramCredential:
    """Salt (random unless given) and hash a password. PBKDF2 with thousands
    of iterations: call it off an event loop."""
    check_iterations(iterations)
    salt, stored_key, server_key, iterations = mechanism.scramp().make_auth_info(password, iterations, salt)
    return ScramCredential(mechanism, salt, stored_key, server_key, iterations)


def credential_from_salted_password(mechanism: ScramMechanism, salt: bytes, salted_password: bytes,
                                    iterations: int) -> ScramCredential:
    """The credential from what Kafka's AlterUserScramCredentials carries
    (salt and SaltedPassword = Hi(password, salt, i)): RFC 5802's
    ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey = H(ClientKey),
    ServerKey = HMAC(SaltedPassword, "Server Key")."""
    check_iterations(iterations)
    client_key = hmac.new(salted_password, b"Client Key", mechanism.hash_name).digest()
    stored_key = hashlib.new(mechanism.hash_name, client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", mechanism.hash_name).digest()
    return ScramCredential(mechanism, salt, stored_key, server_key, iterations)


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(Normalize(password), salt, i) of RFC 5802, PBKDF2-HMAC: what a client
    sends in AlterUserScramCredentials instead of the password."""
    check_iterations(iterations)
    import scramp.core
    normalized = scramp.core.saslprep(password).encode("utf-8")
    return hashlib.pbkdf2_hmac(mechanism.hash_name, normalized, salt, iterations)
