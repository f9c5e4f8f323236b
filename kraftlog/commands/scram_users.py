"""The SCRAM credentials of the `users` entity of `kraftlog configs`
(kafka-configs' --entity-type users; its quotas are in quota_configs.py),
added with `--add-config 'SCRAM-SHA-512=[iterations=8192,password=...]'`,
removed with `--delete-config SCRAM-SHA-512`, described by mechanism and
iterations; and the parser of those values, shared with `kraftlog storage
format --add-scram`.

The password is salted and hashed here (client/security_admin.py); it is
never printed, and no error message quotes the text it came in. The
describing and printing is quota_configs.py's, with the user's quotas.
"""
from __future__ import annotations

from typing import Collection, Optional

from client.cluster import Cluster
from client.security_admin import (
    ScramUpsertion, alter_user_scram_credentials, describe_user_scram_credentials,
)
from kafka_protocol.errors import InvalidConfigError
from security.scram_config import CONFIG_KEYS, ScramSetting, parse_mechanism, parse_scram_setting

from .common import parse_config_list


def is_scram_key(key: str) -> bool:
    """Whether a user config names a SCRAM mechanism (the other user configs are quotas)."""
    try:
        parse_mechanism(key)
    except InvalidConfigError:
        return False
    return True


def user_config_pairs(texts: list[str], option: str = "--add-config") -> list[tuple[str, str]]:
    """The KEY=VALUE pairs of a user's --add-config texts; an error never
    repeats the text, which may hold a password."""
    try:
        return [pair for text in texts for pair in parse_config_list(text, option)]
    except InvalidConfigError:
        raise InvalidConfigError(
            f"{option}: expected SCRAM-SHA-256=[iterations=N,password=...] or quota settings such as "
            "producer_byte_rate=1024 (the text is not repeated: it may hold a password)") from None


def parse_scram_options(texts: list[str], option: str, keys: Collection[str]) -> list[ScramSetting]:
    """Every `SCRAM-SHA-nnn=[...]` of the option's values (kafka-configs' --add-config,
    kafka-storage's --add-scram): one parser, `security.scram_config`, for both."""
    return [parse_scram_setting(key, value, keys) for key, value in user_config_pairs(texts, option)]


def alter_credentials(cluster: Cluster, user: str, add: list[tuple[str, str]], delete: list[str]) -> None:
    """Set (SCRAM-SHA-*=[iterations=N,password=...] pairs) and remove (mechanism names) a user's credentials."""
    settings = [parse_scram_setting(key, value, CONFIG_KEYS) for key, value in add]
    upsertions = [ScramUpsertion(user, s.mechanism, s.password, s.iterations)  # type: ignore[arg-type]
                  for s in settings]
    deletions = [(user, parse_mechanism(name)) for name in delete]
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
