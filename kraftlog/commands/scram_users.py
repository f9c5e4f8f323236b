"""The `users` entity of `kraftlog configs` (kafka-configs' --entity-type users):
SCRAM credentials, added with `--add-config 'SCRAM-SHA-512=[iterations=8192,password=...]'`,
removed with `--delete-config SCRAM-SHA-512`, described by mechanism and iterations.

The password is salted and hashed here (client/security_admin.py); it is
never printed, and no error message quotes the text it came in.
"""
from __future__ import annotations

from typing import Optional

import typer

from client.security_admin import (
    ScramUpsertion, alter_user_scram_credentials, describe_user_scram_credentials,
)
from kafka_protocol.errors import InvalidConfigError
from security.scram_credentials import DEFAULT_ITERATIONS, MAX_ITERATIONS, MIN_ITERATIONS, ScramMechanism

from .common import connect, parse_config_list, parse_names, print_json

USERS = "users"


def _mechanism(name: str) -> ScramMechanism:
    try:
        return ScramMechanism.from_name(name)
    except ValueError:
        # Only SCRAM credentials are user configs here (quotas are not yet); the key is no secret.
        raise InvalidConfigError(f"unknown user config {name[:64]!r}: expected SCRAM-SHA-256 or SCRAM-SHA-512") from None


def _upsertions(user: str, texts: list[str]) -> list[ScramUpsertion]:
    upsertions = []
    for text in texts:
        try:
            pairs = parse_config_list(text, "--add-config")
        except InvalidConfigError:
            raise InvalidConfigError(
                "--add-config: expected SCRAM-SHA-256=[iterations=N,password=...] (the text is not repeated: "
                "it may hold a password)") from None
        for key, value in pairs:
            upsertions.append(_upsertion(user, _mechanism(key), value))
    return upsertions


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


def alter_user(user: Optional[str], add: list[str], delete: list[str], bootstrap: Optional[str]) -> None:
    if not user:
        raise typer.BadParameter("--entity-type users needs --entity-name USER")
    upsertions = _upsertions(user, add)
    deletions = [(user, _mechanism(name)) for name in parse_names(delete)]
    if not upsertions and not deletions:
        raise typer.BadParameter("give --add-config or --delete-config")
    with connect(bootstrap) as cluster:
        outcome = alter_user_scram_credentials(cluster, upsertions, deletions)
    error = outcome.get(user)
    if error is not None:
        raise error
    print(f"Completed updating config for user {user}.")


def describe_users(user: Optional[str], as_json: bool, bootstrap: Optional[str]) -> None:
    with connect(bootstrap) as cluster:
        described = describe_user_scram_credentials(cluster, [user] if user else [])
    if as_json:
        print_json({name: [{"mechanism": m.mechanism_name, "iterations": i} for m, i in infos]
                    for name, infos in described.items()})
        return
    for name, infos in described.items():
        configs = ", ".join(f"{m.mechanism_name}=iterations={i}" for m, i in infos)
        print(f"SCRAM credential configs for user-principal '{name}' are {configs}")
