"""A producer's settings, with Kafka's names and defaults (Kafka 4), checked once.

A wrong value or an unknown key is an InvalidConfigError naming the key, so
a typo never becomes a silently ignored setting.

Idempotence follows Kafka 3+: on by default, which needs acks=all,
retries > 0 and max.in.flight.requests.per.connection <= 5. When the user did
not ask for idempotence and sets one of those otherwise, idempotence is
quietly off (as Kafka does); asking for it explicitly with a conflicting
setting is an error.

A transactional producer (`transactional.id` set) is idempotent whatever
else is said, as Kafka's: enable.idempotence=false, or acks, retries or
max.in.flight settings idempotence cannot live with, are refused naming the
key. `transaction.timeout.ms` (60000) is what the coordinator lets a
transaction stay open before it aborts it itself.
`transaction.two.phase.commit.enable` (KIP-939, false) asks the coordinator
never to abort the id's transactions by timeout, so that one may stay
prepared until another process completes it; it needs `transactional.id`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from kafka_protocol.compression import Codec
from kafka_protocol.config_values import parse_bool
from kafka_protocol.errors import UnsupportedCompressionTypeError

from security.client_security import ClientSecurity
from .errors import InvalidConfigError
from .settings import read_settings

MAX_IN_FLIGHT_WITH_IDEMPOTENCE = 5  # the broker remembers the last 5 batches per producer and partition
ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1}
INT32_MAX = 2**31 - 1

# key -> (default, minimum)
_INTS: dict[str, tuple[int, int]] = {
    "batch.size": (16384, 0),
    "linger.ms": (5, 0),
    "max.in.flight.requests.per.connection": (5, 1),
    "retries": (INT32_MAX, 0),
    "retry.backoff.ms": (100, 0),
    "retry.backoff.max.ms": (1000, 0),
    "delivery.timeout.ms": (120000, 1),
    "request.timeout.ms": (30000, 1),
    "max.request.size": (1048576, 1),
    "buffer.memory": (33554432, 1),
    "max.block.ms": (60000, 0),
    "metadata.max.age.ms": (300000, 0),
    "transaction.timeout.ms": (60000, 1),
}
_STRINGS: dict[str, Optional[str]] = {
    "bootstrap.servers": None,
    "client.id": "",
    "acks": "all",
    "compression.type": "none",
    "transactional.id": None,
}
_BOOLS = {"enable.idempotence": True, "transaction.two.phase.commit.enable": False}


@dataclass(frozen=True)
class ProducerConfig:
    bootstrap_servers: tuple[str, ...]
    security: ClientSecurity  # security.protocol, ssl.*, sasl.* (repr hides secrets)
    client_id: str
    acks: int
    compression: Codec
    enable_idempotence: bool
    batch_size: int
    linger_ms: int
    max_in_flight: int
    retries: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    delivery_timeout_ms: int
    request_timeout_ms: int
    max_request_size: int
    buffer_memory: int
    max_block_ms: int
    metadata_max_age_ms: int
    transactional_id: Optional[str] = None  # None: not a transactional producer
    transaction_timeout_ms: int = 60000
    two_phase_commit: bool = False  # transaction.two.phase.commit.enable (KIP-939)

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> "ProducerConfig":
        settings = read_settings(raw, "producer", ints=_INTS, strings=_STRINGS, bools=_BOOLS)
        ints, strings = settings.ints, settings.strings
        acks = ACKS.get(str(strings["acks"]).lower())
        if acks is None:
            raise InvalidConfigError(f"acks={raw['acks']!r}: expected all, -1, 0 or 1")
        try:
            codec = Codec.from_name(str(strings["compression.type"]))
        except UnsupportedCompressionTypeError:
            raise InvalidConfigError(
                f"compression.type={raw['compression.type']!r}: expected none, gzip, snappy, lz4 or zstd") from None
        transactional_id = strings["transactional.id"] or None
        idempotence = _idempotence(raw, acks, ints, transactional=transactional_id is not None)
        two_phase_commit = settings.bools["transaction.two.phase.commit.enable"]
        if two_phase_commit and transactional_id is None:
            raise InvalidConfigError("transaction.two.phase.commit.enable=true: needs transactional.id")
        delivery = ints["delivery.timeout.ms"]
        floor = ints["linger.ms"] + ints["request.timeout.ms"]
        if delivery < floor:
            if "delivery.timeout.ms" in raw:
                raise InvalidConfigError(f"delivery.timeout.ms={delivery}: must be at least linger.ms + "
                                         f"request.timeout.ms ({floor})")
            delivery = floor  # Kafka raises the default rather than refuse the user's other settings
        return cls(
            bootstrap_servers=settings.bootstrap,
            security=settings.security,
            client_id=strings["client.id"] or "",
            acks=acks,
            compression=codec,
            enable_idempotence=idempotence,
            batch_size=ints["batch.size"],
            linger_ms=ints["linger.ms"],
            max_in_flight=ints["max.in.flight.requests.per.connection"],
            retries=ints["retries"],
            retry_backoff_ms=ints["retry.backoff.ms"],
            retry_backoff_max_ms=max(ints["retry.backoff.max.ms"], ints["retry.backoff.ms"]),
            delivery_timeout_ms=delivery,
            request_timeout_ms=ints["request.timeout.ms"],
            max_request_size=ints["max.request.size"],
            buffer_memory=ints["buffer.memory"],
            max_block_ms=ints["max.block.ms"],
            metadata_max_age_ms=ints["metadata.max.age.ms"],
            transactional_id=transactional_id,
            transaction_timeout_ms=ints["transaction.timeout.ms"],
            two_phase_commit=two_phase_commit,
        )


def _idempotence(raw: Mapping[str, Any], acks: int, ints: Mapping[str, int], *, transactional: bool) -> bool:
    conflicts = []
    if acks != -1:
        conflicts.append(("acks", "must be all (-1)"))
    if ints["retries"] == 0:
        conflicts.append(("retries", "must be greater than 0"))
    if ints["max.in.flight.requests.per.connection"] > MAX_IN_FLIGHT_WITH_IDEMPOTENCE:
        conflicts.append(("max.in.flight.requests.per.connection",
                          f"must be at most {MAX_IN_FLIGHT_WITH_IDEMPOTENCE}"))
    wanted = parse_bool("enable.idempotence", raw["enable.idempotence"]) if "enable.idempotence" in raw else None
    if transactional:
        if wanted is False:
            raise InvalidConfigError("enable.idempotence=false: a transactional producer (transactional.id set) "
                                     "is idempotent; remove the setting or set it to true")
        if conflicts:
            key, why = conflicts[0]
            raise InvalidConfigError(f"{key}={raw.get(key, ints.get(key))!r}: {why} with transactional.id set")
        return True
    if wanted is None:
        return not conflicts
    if wanted and conflicts:
        key, why = conflicts[0]
        raise InvalidConfigError(f"{key}={raw.get(key, ints.get(key))!r}: {why} with enable.idempotence=true")
    return wanted
