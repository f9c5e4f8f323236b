"""The `users` entity of `kraftlog configs` (kafka-configs' --entity-type users):
SCRAM credentials, added with `--add-config 'SCRAM-SHA-512=[iterations=8192,password=...]'`,
removed with `--delete-config SCRAM-SHA-512`, described by mechanism and iterations.

The password is salted and hashed here (client/security_admin.py); it is
never printed, and no error message quotes the text it came in.
"""
from __future__ import annotations

from typing import Collection, Optional

import typer

from client.security_admin import (
    ScramUpsertion, alter_user_scram_credentials, describe_user_scram_credentials,
)
from kafka_protocol.errors import InvalidConfigError
from security.scram_config import CONFIG_KEYS, ScramSetting, parse_mechanism, parse_scram_setting

from .common import ClusterTarget, parse_config_list, parse_names, print_json

USERS = "users"


def parse_scram_options(texts: list[str], option: str, keys: Collection[str]) -> list[ScramSetting]:
    """Every `SCRAM-SHA-nnn=[...]` of the option's values (kafka-configs' --add-config,
    kafka-storage's --add-scram): one parser, `security.scram_config`, for both."""
    settings = []
    for text in texts:
        try:
            pairs = parse_config_list(text, option)
        except InvalidConfigError:
            raise InvalidConfigError(
                f"{option}: expected SCRAM-SHA-256=[...] or SCRAM-SHA-512=[...] (the text is not repeated: "
                "it may hold a password)") from None
        settings += [parse_scram_setting(key, value, keys) for key, value in pairs]
    return settings


def _upsertions(user: str, texts: list[str]) -> list[ScramUpsertion]:
    return [ScramUpsertion(user, s.mechanism, s.password, s.iterations)  # type: ignore[arg-type]
            for s in parse_scram_options(texts, "--add-config", CONFIG_KEYS)]


def alter_user(user: Optional[str], add: list[str], delete: list[str], target: ClusterTarget) -> None:
    if not user:
        raise typer.BadParameter("--entity-type users needs --entity-name USER")
    upsertions = _upsertions(user, add)
    deletions = [(user, parse_mechanism(name)) for name in parse_names(delete)]
    if not upsertions and not deletions:
        raise typer.BadParameter("give --add-config or --delete-config")
    with target.connect() as cluster:
        outcome = alter_user_scram_credentials(cluster, upsertions, deletions)
    error = outcome.get(user)
    if error is not None:
        raise error
    print(f"Completed updating config for user {user}.")


def describe_users(user: Optional[str], as_json: bool, target: ClusterTarget) -> None:
    with target.connect() as cluster:
        described = describe_user_scram_credentials(cluster, [user] if user else [])
    if as_json:
        print_json({name: [{"mechanism": m.mechanism_name, "iterations": i} for m, i in infos]
                    for name, infos in described.items()})
        return
    for name, infos in described.items():
        configs = ", ".join(f"{m.mechanism_name}=iterations={i}" for m, i in infos)
        print(f"SCRAM credential configs for user-principal '{name}' are {configs}")
