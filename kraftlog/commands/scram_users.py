"""The SCRAM credentials of the `users` entity of `kraftlog configs`
(kafka-configs' --entity-type users; its quotas are in quota_configs.py),
added with `--add-config 'SCRAM-SHA-512=[iterations=8192,password=...]'`,
removed with `--delete-config SCRAM-SHA-512`, described by mechanism and iterations.

The password is salted and hashed here (client/security_admin.py); it is
never printed, and no error message quotes the text it came in. The
describing and printing is quota_configs.py's, with the user's quotas.
"""
from __future__ import annotations

from typing import Optional

from client.cluster import Cluster
from client.security_admin import (
    ScramUpsertion, alter_user_scram_credentials, describe_user_scram_credentials,
)
from kafka_protocol.errors import InvalidConfigError
from security.scram_credentials import DEFAULT_ITERATIONS, MAX_ITERATIONS, MIN_ITERATIONS, ScramMechanism

from .common import parse_config_list


def is_scram_key(key: str) -> bool:
    """Whether a user config names a SCRAM mechanism (the other user configs are quotas)."""
    try:
        ScramMechanism.from_name(key)
    except ValueError:
        return False
    return True


def user_config_pairs(texts: list[str]) -> list[tuple[str, str]]:
    """The KEY=VALUE pairs of a user's --add-config texts; an error never
    repeats the text, which may hold a password."""
    try:
        return [pair for text in texts for pair in parse_config_list(text, "--add-config")]
    except InvalidConfigError:
        raise InvalidConfigError(
            "--add-config: expected SCRAM-SHA-256=[iterations=N,password=...] or quota settings such as "
            "producer_byte_rate=1024 (the text is not repeated: it may hold a password)") from None


def _upsertion(user: str, mechanism: ScramMechanism, value: str) -> ScramUpsertion:
    settings: dict[str, str] = {}
    for item in value.split(","):
        key, sep, setting = item.partition("=")
        key = key.strip()
        if not sep or key not in ("iterations", "password"):
            raise InvalidConfigError(f"{mechanism.mechanism_name}: expected iterations=N and password=..., "
                                     f"got an item {'named ' + repr(key[:32]) if sep else 'without ='}")
        settings[key] = setting
    if "password" not in settings or not settings["password"]:
        raise InvalidConfigError(f"{mechanism.mechanism_name}: a password=... is required")
    iterations_text = settings.get("iterations", str(DEFAULT_ITERATIONS)).strip()
    if not iterations_text.isdigit() or not MIN_ITERATIONS <= int(iterations_text) <= MAX_ITERATIONS:
        raise InvalidConfigError(f"{mechanism.mechanism_name}: iterations must be a number from {MIN_ITERATIONS} "
                                 f"to {MAX_ITERATIONS}, got {iterations_text[:32]!r}")
    return ScramUpsertion(user, mechanism, settings["password"], int(iterations_text))


def alter_credentials(cluster: Cluster, user: str, add: list[tuple[str, str]], delete: list[str]) -> None:
    """Set (SCRAM-SHA-*=[iterations=N,password=...] pairs) and remove (mechanism names) a user's credentials."""
    upsertions = [_upsertion(user, ScramMechanism.from_name(key), value) for key, value in add]
    deletions = [(user, ScramMechanism.from_name(name)) for name in delete]
    if not upsertions and not deletions:
        return
    error = alter_user_scram_credentials(cluster, upsertions, deletions).get(user)
    if error is not None:
        raise error


def describe_credentials(cluster: Cluster, user: Optional[str]) -> dict[str, list[dict[str, object]]]:
    """User -> [{"mechanism", "iterations"}]: the named user's (RESOURCE_NOT_FOUND when it has none), or everyone's."""
    described = describe_user_scram_credentials(cluster, [user] if user else [])
    return {name: [{"mechanism": m.mechanism_name, "iterations": i} for m, i in infos]
            for name, infos in described.items()}
