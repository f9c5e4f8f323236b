"""A consumer's settings, with Kafka's names and defaults, checked once.

A wrong value or an unknown key is an InvalidConfigError naming the key
(as confluent-kafka refuses unknown properties), so a typo never turns into
a silently ignored setting.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from security.client_security import ClientSecurity
from .errors import InvalidConfigError
from .settings import read_settings

AUTO_OFFSET_RESETS = ("earliest", "latest", "none")
ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}
ASSIGNORS = ("uniform", "range")

# key -> (default, minimum); a default of None means "no value" (optional).
_INTS: dict[str, tuple[Optional[int], int]] = {
    "auto.commit.interval.ms": (5000, 0),
    "max.poll.records": (500, 1),
    "fetch.min.bytes": (1, 0),
    "fetch.max.wait.ms": (500, 0),
    "fetch.max.bytes": (52428800, 0),
    "max.partition.fetch.bytes": (1048576, 0),
    "session.timeout.ms": (45000, 1),
    "heartbeat.interval.ms": (5000, 1),
    "max.poll.interval.ms": (300000, 1),
    "request.timeout.ms": (30000, 1),
    "default.api.timeout.ms": (60000, 1),
    "retry.backoff.ms": (100, 0),
}
_STRINGS: dict[str, Optional[str]] = {
    "bootstrap.servers": None,
    "group.id": None,
    "client.id": "",
    "group.instance.id": None,
    "client.rack": "",
    "auto.offset.reset": "latest",
    "isolation.level": "read_uncommitted",
    "group.remote.assignor": "uniform",
    "group.protocol": "consumer",
}
_BOOLS = {"enable.auto.commit": True}


@dataclass(frozen=True)
class ConsumerConfig:
    """The checked settings.

    - `session.timeout.ms`: accepted for compatibility; with KIP-848's protocol
      the coordinator owns the session timeout (its heartbeat request has none).
    - `heartbeat.interval.ms`: used until the coordinator names its own
      interval in a heartbeat response, which then wins (as in KIP-848).
    - `isolation.level=read_committed`: fetches and ListOffsets(latest) read up
      to the last stable offset, and aborted transactions' records are dropped.
    - `group.protocol`: only `consumer` (KIP-848) exists here.
    """

    bootstrap_servers: tuple[str, ...]
    security: ClientSecurity  # security.protocol, ssl.*, sasl.* (repr hides secrets)
    group_id: Optional[str]
    client_id: str
    group_instance_id: Optional[str]
    client_rack: str
    auto_offset_reset: str
    enable_auto_commit: bool
    auto_commit_interval_ms: int
    isolation_level: int
    max_poll_records: int
    fetch_min_bytes: int
    fetch_max_wait_ms: int
    fetch_max_bytes: int
    max_partition_fetch_bytes: int
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    request_timeout_ms: int
    default_api_timeout_ms: int
    retry_backoff_ms: int
    group_remote_assignor: str

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> "ConsumerConfig":
        settings = read_settings(raw, "consumer", ints=_INTS, strings=_STRINGS, bools=_BOOLS)
        ints, strings, bools = settings.ints, settings.strings, settings.bools
        _one_of("auto.offset.reset", strings["auto.offset.reset"], AUTO_OFFSET_RESETS)
        _one_of("isolation.level", strings["isolation.level"], tuple(ISOLATION_LEVELS))
        _one_of("group.remote.assignor", strings["group.remote.assignor"], ASSIGNORS)
        _one_of("group.protocol", strings["group.protocol"], ("consumer",))
        group_id = strings["group.id"] or None
        if group_id is None and "enable.auto.commit" in raw and bools["enable.auto.commit"]:
            raise InvalidConfigError("enable.auto.commit=true: needs a group.id to commit to")
        return cls(
            bootstrap_servers=settings.bootstrap,
            security=settings.security,
            group_id=group_id,
            client_id=strings["client.id"] or "",
            group_instance_id=strings["group.instance.id"] or None,
            client_rack=strings["client.rack"] or "",
            auto_offset_reset=strings["auto.offset.reset"],
            enable_auto_commit=bools["enable.auto.commit"] and group_id is not None,
            auto_commit_interval_ms=ints["auto.commit.interval.ms"],
            isolation_level=ISOLATION_LEVELS[strings["isolation.level"]],
            max_poll_records=ints["max.poll.records"],
            fetch_min_bytes=ints["fetch.min.bytes"],
            fetch_max_wait_ms=ints["fetch.max.wait.ms"],
            fetch_max_bytes=ints["fetch.max.bytes"],
            max_partition_fetch_bytes=ints["max.partition.fetch.bytes"],
            session_timeout_ms=ints["session.timeout.ms"],
            heartbeat_interval_ms=ints["heartbeat.interval.ms"],
            max_poll_interval_ms=ints["max.poll.interval.ms"],
            request_timeout_ms=ints["request.timeout.ms"],
            default_api_timeout_ms=ints["default.api.timeout.ms"],
            retry_backoff_ms=ints["retry.backoff.ms"],
            group_remote_assignor=strings["group.remote.assignor"],
        )


def _one_of(key: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InvalidConfigError(f"{key}={value!r}: expected one of {', '.join(allowed)}")
