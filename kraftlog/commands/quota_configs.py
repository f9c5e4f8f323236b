"""The client-quota entities of `kraftlog configs`, like kafka-configs:
`--entity-type users|clients` with `--entity-name NAME` or `--entity-default`,
or Kafka's shortcuts `--user NAME`, `--user-defaults`, `--client NAME`,
`--client-defaults`, which combine (a user's quota for one client id:
`--user alice --client app`).

Their configs are Kafka's quotas (`producer_byte_rate`, `consumer_byte_rate`,
`request_percentage`); a user alone also has its SCRAM credentials
(scram_users.py), so one --add-config may set both, as kafka-configs
allows. The values are checked by the controller, the one judge of them;
here only the keys are, so a typo is named before anything is sent.
"""
from __future__ import annotations

from typing import Any, Optional

import typer

from client.cluster import Cluster
from client.quota_admin import alter_client_quotas, describe_client_quotas
from kafka_protocol.errors import Errors, InvalidConfigError, KafkaError
from security.client_quotas import CLIENT_ID, QUOTA_KEYS, USER, QuotaEntity

from .common import ClusterTarget, parse_names, print_json
from .scram_users import alter_credentials, describe_credentials, is_scram_key, user_config_pairs

ENTITY_TYPES = {"users": USER, "clients": CLIENT_ID}  # kafka-configs' entity types -> Kafka's quota entity types
WORDS = {USER: "user-principal", CLIENT_ID: "client-id"}


def quota_entity_of(entity_type: Optional[str], entity_name: Optional[str], entity_default: bool,
                    user: Optional[str], user_defaults: bool, client: Optional[str],
                    client_defaults: bool) -> Optional[QuotaEntity]:
    """The entity the options name, None when they name no quota entity. A
    name-less --entity-type (describe: every entity of the type) gives the
    type with name "" (never a real name: Kafka refuses empty ones)."""
    parts: dict[str, Optional[str]] = {}
    if entity_type is not None:
        if entity_type not in ENTITY_TYPES:
            raise typer.BadParameter(f"--entity-type {entity_type!r}: users or clients (use --topic or --broker "
                                     "otherwise)")
        if entity_name is not None and entity_default:
            raise typer.BadParameter("--entity-name and --entity-default exclude each other")
        parts[ENTITY_TYPES[entity_type]] = None if entity_default else (entity_name or "")
    elif entity_name is not None or entity_default:
        raise typer.BadParameter("--entity-name and --entity-default go with --entity-type")
    for kind, name, default in ((USER, user, user_defaults), (CLIENT_ID, client, client_defaults)):
        if name is None and not default:
            continue
        if kind in parts or (name is not None and default):
            raise typer.BadParameter(f"name the {WORDS[kind]} once")
        parts[kind] = None if default else name
    return tuple(sorted(parts.items())) if parts else None


def _words(entity: QuotaEntity) -> str:
    return ", ".join(f"{WORDS[kind]} {'<default>' if name is None else repr(name)}" for kind, name in entity)


def _quota_value(key: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InvalidConfigError(f"{key}: {text[:32]!r} is not a number") from None


def _check_keys(entity: QuotaEntity, keys: list[str]) -> None:
    user_alone = entity == ((USER, dict(entity).get(USER)),)
    for key in keys:
        if key not in QUOTA_KEYS and not (user_alone and is_scram_key(key)):
            kind = "user" if user_alone else "quota"
            expected = ", ".join([*(["SCRAM-SHA-256", "SCRAM-SHA-512"] if user_alone else []), *QUOTA_KEYS])
            raise InvalidConfigError(f"unknown {kind} config {key[:64]!r}: expected one of {expected}")


def alter_quota_entity(entity: QuotaEntity, add: list[str], delete: list[str], target: ClusterTarget) -> None:
    if any(name == "" for _, name in entity):
        raise typer.BadParameter("name the entity: --entity-name NAME or --entity-default")
    pairs = user_config_pairs(add)  # never echoes the text: it may hold a password
    deletions = parse_names(delete)
    if not pairs and not deletions:
        raise typer.BadParameter("give --add-config or --delete-config")
    _check_keys(entity, [k for k, _ in pairs] + deletions)
    quotas: dict[str, Optional[float]] = {k: _quota_value(k, v) for k, v in pairs if k in QUOTA_KEYS}
    quotas.update((k, None) for k in deletions if k in QUOTA_KEYS)
    with target.connect() as cluster:
        user = dict(entity).get(USER)
        if user is not None and len(entity) == 1:
            alter_credentials(cluster, user, [(k, v) for k, v in pairs if k not in QUOTA_KEYS],
                              [k for k in deletions if k not in QUOTA_KEYS])
        if quotas:
            error = alter_client_quotas(cluster, [(entity, quotas)])[0]
            if error is not None:
                raise error
    named = {USER: "user", CLIENT_ID: "client"}
    print("Completed updating config for " + " and ".join(
        f"the default {named[kind]}" if name is None else f"{named[kind]} {name}" for kind, name in entity) + ".")


def _matching(described: dict[QuotaEntity, dict[str, float]], entity: QuotaEntity
              ) -> dict[QuotaEntity, dict[str, float]]:
    """The described entities with exactly the entity's types, and its names where given ("" : any)."""
    wanted = dict(entity)
    return {e: q for e, q in described.items()
            if dict(e).keys() == wanted.keys() and all(n == "" or dict(e)[k] == n for k, n in wanted.items())}


def describe_quota_entity(entity: QuotaEntity, as_json: bool, target: ClusterTarget) -> None:
    """Quotas of the entity (every entity of its types when unnamed), and for users alone their SCRAM
    credentials (mechanism and iterations, never a salt or a key)."""
    users_alone = [kind for kind, _ in entity] == [USER]
    with target.connect() as cluster:
        quotas = _matching(describe_client_quotas(cluster), entity)
        credentials = _credentials(cluster, entity[0][1], bool(quotas)) if users_alone else {}
    if as_json:
        print_json(_users_json(quotas, credentials) if users_alone else
                   [{"entity": dict(entity), "quotas": values} for entity, values in quotas.items()])
        return
    for described, values in quotas.items():
        configs = ", ".join(f"{k}={v}" for k, v in sorted(values.items()))
        print(f"Quota configs for {_words(described)} are {configs}")
    for name, infos in credentials.items():
        configs = ", ".join(f"{i['mechanism']}=iterations={i['iterations']}" for i in infos)
        print(f"SCRAM credential configs for user-principal '{name}' are {configs}")


def _credentials(cluster: Cluster, user: Optional[str], has_quotas: bool) -> dict[str, list[dict[str, Any]]]:
    if user is None:
        return {}  # the default user has quotas only
    try:
        return describe_credentials(cluster, user or None)
    except KafkaError as exc:
        if exc.code == Errors.RESOURCE_NOT_FOUND and has_quotas:
            return {}  # a user with quotas and no credential
        raise


def _users_json(quotas: dict[QuotaEntity, dict[str, float]], credentials: dict[str, list[dict[str, Any]]]
                ) -> dict[str, dict[str, Any]]:
    """{name: {"credentials": [...], "quotas": {...}}}, the default user as "<default>" (other
    entities: [{"entity": {type: name or null}, "quotas": {...}}])."""
    users: dict[str, dict[str, Any]] = {name: {"credentials": infos, "quotas": {}}
                                       for name, infos in credentials.items()}
    for entity, values in quotas.items():
        name = entity[0][1]
        users.setdefault("<default>" if name is None else name, {"credentials": [], "quotas": {}})["quotas"] = values
    return users
