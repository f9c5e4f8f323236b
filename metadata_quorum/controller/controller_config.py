"""The controller's settings, and topic-level config validation, under Kafka's names.

`ControllerConfig.from_properties` reads the flat Kafka-named properties of a
node's config file; `validate_topic_configs` checks the `--config k=v` of a
CreateTopics request. Every problem is an `InvalidConfigError` (Kafka's
INVALID_CONFIG) whose message starts with the key and says why.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable, Mapping, TypeVar

from kafka_protocol.config_values import parse_bool, parse_int
from kafka_protocol.replication_throttles import REPLICA_LISTS, check_replicas
from partition_log.config import LogConfig
from kafka_protocol.errors import InvalidConfigError

NUM_PARTITIONS = "num.partitions"
DEFAULT_REPLICATION_FACTOR = "default.replication.factor"
MIN_INSYNC_REPLICAS = "min.insync.replicas"
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
BROKER_SESSION_TIMEOUT_MS = "broker.session.timeout.ms"
BROKER_HEARTBEAT_INTERVAL_MS = "broker.heartbeat.interval.ms"
AUTO_LEADER_REBALANCE_ENABLE = "auto.leader.rebalance.enable"
LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS = "leader.imbalance.check.interval.seconds"
LEADER_IMBALANCE_PER_BROKER_PERCENTAGE = "leader.imbalance.per.broker.percentage"
REPLICA_LAG_TIME_MAX_MS = "replica.lag.time.max.ms"

# Kafka property name -> field name.
KAFKA_PROPERTY_NAMES: dict[str, str] = {
    NUM_PARTITIONS: "num_partitions",
    DEFAULT_REPLICATION_FACTOR: "default_replication_factor",
    MIN_INSYNC_REPLICAS: "min_insync_replicas",
    UNCLEAN_LEADER_ELECTION_ENABLE: "unclean_leader_election_enable",
    BROKER_SESSION_TIMEOUT_MS: "broker_session_timeout_ms",
    BROKER_HEARTBEAT_INTERVAL_MS: "broker_heartbeat_interval_ms",
    AUTO_LEADER_REBALANCE_ENABLE: "auto_leader_rebalance_enable",
    LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS: "leader_imbalance_check_interval_seconds",
    LEADER_IMBALANCE_PER_BROKER_PERCENTAGE: "leader_imbalance_per_broker_percentage",
    REPLICA_LAG_TIME_MAX_MS: "replica_lag_time_max_ms",
}
_FIELD_TO_KEY = {v: k for k, v in KAFKA_PROPERTY_NAMES.items()}


@dataclass(frozen=True)
class ControllerConfig:
    num_partitions: int = 1
    default_replication_factor: int = 1
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    broker_session_timeout_ms: int = 9000
    broker_heartbeat_interval_ms: int = 2000
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10
    replica_lag_time_max_ms: int = 30000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            key = _FIELD_TO_KEY[f.name]
            if f.type in ("bool", bool):
                if not isinstance(value, bool):
                    raise InvalidConfigError(f"{key}={value!r}: expected true or false")
            elif isinstance(value, bool) or not isinstance(value, int):
                raise InvalidConfigError(f"{key}={value!r}: expected an integer")
        for name in ("num_partitions", "default_replication_factor", "min_insync_replicas",
                     "broker_session_timeout_ms", "broker_heartbeat_interval_ms",
                     "leader_imbalance_check_interval_seconds", "replica_lag_time_max_ms"):
            if getattr(self, name) < 1:
                raise InvalidConfigError(f"{_FIELD_TO_KEY[name]}={getattr(self, name)}: must be at least 1")
        if not 0 <= self.leader_imbalance_per_broker_percentage <= 100:
            raise InvalidConfigError(
                f"{LEADER_IMBALANCE_PER_BROKER_PERCENTAGE}={self.leader_imbalance_per_broker_percentage}: "
                "must be between 0 and 100")
        if self.broker_heartbeat_interval_ms >= self.broker_session_timeout_ms:
            raise InvalidConfigError(
                f"{BROKER_HEARTBEAT_INTERVAL_MS}={self.broker_heartbeat_interval_ms}: must be less than "
                f"{BROKER_SESSION_TIMEOUT_MS}={self.broker_session_timeout_ms}")

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> "ControllerConfig":
        """Build from Kafka-named properties; keys that are not the controller's are left to others."""
        kwargs: dict[str, Any] = {}
        for key, raw in props.items():
            name = KAFKA_PROPERTY_NAMES.get(key)
            if name is None:
                continue
            default = getattr(cls, name)
            kwargs[name] = parse_bool(key, raw) if isinstance(default, bool) else parse_int(key, raw)
        return cls(**kwargs)

    @property
    def leader_imbalance_check_interval_ms(self) -> int:
        return self.leader_imbalance_check_interval_seconds * 1000

    def unclean_election_enabled(self, cluster: Mapping[str, str], topic: Mapping[str, str]) -> bool:
        """`unclean.leader.election.enable` for one topic: the topic's setting, else the
        cluster-wide dynamic one, else this static default."""
        return _scoped(UNCLEAN_LEADER_ELECTION_ENABLE, (topic, cluster), parse_bool,
                       self.unclean_leader_election_enable)

    def min_insync_replicas_for(self, cluster: Mapping[str, str], topic: Mapping[str, str]) -> int:
        """`min.insync.replicas` for one topic, as unclean_election_enabled finds its setting."""
        return _scoped(MIN_INSYNC_REPLICAS, (topic, cluster), lambda key, raw: parse_int(key, raw, 1),
                       self.min_insync_replicas)


T = TypeVar("T")


def _scoped(key: str, scopes: tuple[Mapping[str, str], ...], parse: Callable[[str, str], T], default: T) -> T:
    """The first scope's valid setting of `key`, else `default`."""
    for scope in scopes:
        raw = scope.get(key)
        if raw is not None:
            try:
                return parse(key, raw)
            except InvalidConfigError:
                continue  # validated on the way in; never trust a log blindly
    return default


# --- topic-level configs --------------------------------------------------------------

COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


def _one_of(choices: tuple[str, ...]) -> Callable[[str, str], None]:
    def check(key: str, raw: str) -> None:
        if raw not in choices:
            raise InvalidConfigError(f"{key}={raw!r}: expected one of {', '.join(choices)}")
    return check


def _at_least(minimum: int) -> Callable[[str, str], None]:
    def check(key: str, raw: str) -> None:
        parse_int(key, raw, minimum)
    return check


def _boolean(key: str, raw: str) -> None:
    parse_bool(key, raw)


def _log_config(key: str, raw: str) -> None:
    LogConfig.from_mapping({key: raw})


# Topic config name -> check of its value. The partition log's own settings
# are checked by LogConfig, so a topic accepted here is a log it can open.
TOPIC_CONFIGS: dict[str, Callable[[str, str], None]] = {
    **{key: _log_config for key in LogConfig().to_mapping()},
    MIN_INSYNC_REPLICAS: _at_least(1),
    UNCLEAN_LEADER_ELECTION_ENABLE: _boolean,
    "compression.type": _one_of(COMPRESSION_TYPES),
    "message.timestamp.type": _one_of(TIMESTAMP_TYPES),
    "message.timestamp.difference.max.ms": _at_least(0),
    "message.timestamp.before.max.ms": _at_least(0),
    "message.timestamp.after.max.ms": _at_least(0),
    "message.downconversion.enable": _boolean,
    "preallocate": _boolean,
    "file.delete.delay.ms": _at_least(0),
    **{key: check_replicas for key in REPLICA_LISTS},  # KIP-73: which replicas are throttled
}


def validate_topic_config(key: str, value: str) -> None:
    """Raise InvalidConfigError("key=value: reason") unless `key` is a topic config and `value` fits it."""
    check = TOPIC_CONFIGS.get(key)
    if check is None:
        raise InvalidConfigError(f"{key}: unknown topic config")
    check(key, value)


def validate_topic_configs(configs: Mapping[str, str]) -> None:
    for key, value in configs.items():
        validate_topic_config(key, value)
