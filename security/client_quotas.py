"""Kafka's client quotas: the entities they name, their keys, the values
Kafka accepts, and which quota applies to a client.

An entity is a user, a client id, or both, each by name or as the default
of its type (name None: Kafka's `<default>`), kept as a tuple of
(entity type, name) sorted by type, so one entity has one spelling
whatever order a request listed it in. The keys are Kafka's:
`producer_byte_rate` and `consumer_byte_rate` (bytes per second, whole
numbers as Kafka's LONG) and `request_percentage` (a share of one request
handler's time, Kafka's DOUBLE); every value is greater than 0 and finite.

The quota that applies to a request is Kafka's precedence over (user,
client id) pairs, most specific first (`precedence`): user and client id,
user and default client, user, default user and client id, default user
and default client, default user, client id, default client. The first
entity in that order that sets a key gives that key's quota.
"""
from __future__ import annotations

import math
from typing import Iterable, Iterator, Mapping, Optional

from kafka_protocol.errors import Errors

from .acl import MAX_STRING_LENGTH

USER = "user"
CLIENT_ID = "client-id"
ENTITY_TYPES = (CLIENT_ID, USER)  # sorted: the order of an entity's parts

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
# key -> whether its value must be a whole number (Kafka's LONG, not DOUBLE)
QUOTA_KEYS: Mapping[str, bool] = {PRODUCER_BYTE_RATE: True, CONSUMER_BYTE_RATE: True, REQUEST_PERCENTAGE: False}
MAX_LONG = 2**63 - 1

# (entity type, name or None for the default), sorted by entity type
QuotaEntity = tuple[tuple[str, Optional[str]], ...]


class InvalidQuotaError(ValueError):
    """A quota entity, key or value Kafka refuses, with Kafka's error code."""

    def __init__(self, error: Errors, message: str) -> None:
        super().__init__(message)
        self.error = error


def quota_entity(parts: Iterable[tuple[str, Optional[str]]]) -> QuotaEntity:
    """The entity of (type, name) parts, checked as Kafka's controller checks
    one: not empty, each type once, only `user` and `client-id`, no empty
    name (the default is None, not ""). Messages quote no more than a few
    characters of a name."""
    seen: dict[str, Optional[str]] = {}
    for entity_type, name in parts:
        if entity_type in seen:
            raise InvalidQuotaError(Errors.INVALID_REQUEST,
                                    f"Invalid client quota entity: duplicate entity entry {entity_type[:32]}")
        if entity_type not in ENTITY_TYPES:
            raise InvalidQuotaError(Errors.UNSUPPORTED_VERSION,
                                    f"Unhandled client quota entity type: {entity_type[:32]!r}")
        if name is not None and not name:
            raise InvalidQuotaError(Errors.INVALID_REQUEST, f"Empty {entity_type} not supported")
        if name is not None and len(name) > MAX_STRING_LENGTH:
            raise InvalidQuotaError(Errors.INVALID_REQUEST, f"The {entity_type} is {len(name)} characters long, "
                                    f"at most {MAX_STRING_LENGTH} are allowed")
        seen[entity_type] = name
    if not seen:
        raise InvalidQuotaError(Errors.INVALID_REQUEST, "Invalid empty client quota entity")
    return tuple(sorted(seen.items()))


def check_quota_value(key: str, value: float) -> None:
    """Kafka's check of one quota setting: a known key, a value > 0, whole
    for the byte rates and within a LONG; here also never NaN or infinite."""
    whole = QUOTA_KEYS.get(key)
    if whole is None:
        raise InvalidQuotaError(Errors.INVALID_REQUEST, f"Invalid configuration key {key[:64]!r}")
    if math.isnan(value) or math.isinf(value):
        raise InvalidQuotaError(Errors.INVALID_REQUEST, f"Quota {key} must be a finite number")
    if value <= 0.0:
        raise InvalidQuotaError(Errors.INVALID_REQUEST, f"Quota {key} must be greater than 0")
    if whole:
        if value >= MAX_LONG:
            raise InvalidQuotaError(Errors.INVALID_REQUEST, f"Proposed value for {key} is too large for a LONG.")
        if value - math.floor(value) > 1e-8:
            raise InvalidQuotaError(Errors.INVALID_REQUEST, f"{key} cannot be a fractional value.")


def entity_parts(entity: QuotaEntity) -> list[dict[str, str]]:
    """The entity as keyword arguments of the EntityData-shaped messages
    (kraftlog_api's ClientQuotaEntityData, ClientQuotaRecord.EntityData);
    no entity_name for a default."""
    return [{"entity_type": kind} if name is None else {"entity_type": kind, "entity_name": name}
            for kind, name in entity]


def entity_words(entity: QuotaEntity) -> str:
    """Kafka's spelling of an entity in messages and listings: `user 'alice', client-id <default>`."""
    return ", ".join(f"{kind} {'<default>' if name is None else repr(name)}" for kind, name in entity)


def precedence(user: Optional[str], client_id: str) -> Iterator[QuotaEntity]:
    """The entities whose quotas may apply to (user, client id), most specific
    first (Kafka's /config/users/<user>/clients/<client-id> down to
    /config/clients/<default>). No user (a call outside any session): only
    the client-id entities."""
    if user is not None:
        for user_name in (user, None):
            yield ((CLIENT_ID, client_id), (USER, user_name))
            yield ((CLIENT_ID, None), (USER, user_name))
            yield ((USER, user_name),)
    yield ((CLIENT_ID, client_id),)
    yield ((CLIENT_ID, None),)


def applicable_quota(quotas: Mapping[QuotaEntity, Mapping[str, float]], key: str, user: Optional[str],
                     client_id: str) -> Optional[tuple[QuotaEntity, float]]:
    """The entity whose `key` quota applies to (user, client id), and the
    quota; None when no entity sets it (no limit)."""
    for entity in precedence(user, client_id):
        value = quotas.get(entity, {}).get(key)
        if value is not None:
            return entity, value
    return None
