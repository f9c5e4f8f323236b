"""Per-log configuration under Kafka's names, with Kafka's defaults.

A topic config (`segment.bytes`) overrides the broker default it derives from
(`log.segment.bytes`); `LogConfig.from_mapping` accepts either spelling.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from kafka_protocol.config_values import LONG_MAX, parse_int
from kafka_protocol.errors import InvalidConfigError

# topic key -> (broker key, attribute, default, minimum)
_KEYS: dict[str, tuple[str, str, Any, int | None]] = {
    "segment.bytes": ("log.segment.bytes", "segment_bytes", 1024**3, 14),
    "segment.ms": ("log.roll.ms", "segment_ms", 7 * 24 * 3600 * 1000, 1),
    "segment.index.bytes": ("log.index.size.max.bytes", "segment_index_bytes", 10 * 1024 * 1024, 4),
    "index.interval.bytes": ("log.index.interval.bytes", "index_interval_bytes", 4096, 0),
    "retention.ms": ("log.retention.ms", "retention_ms", 7 * 24 * 3600 * 1000, -1),
    "retention.bytes": ("log.retention.bytes", "retention_bytes", -1, -1),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms", "delete_retention_ms", 24 * 3600 * 1000, 0),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms", "min_compaction_lag_ms", 0, 0),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio", "min_cleanable_dirty_ratio", 0.5, None),
    "flush.messages": ("log.flush.interval.messages", "flush_messages", LONG_MAX, 1),
    "flush.ms": ("log.flush.interval.ms", "flush_ms", LONG_MAX, 0),
    "max.message.bytes": ("message.max.bytes", "max_message_bytes", 1048588, 0),
    "cleanup.policy": ("log.cleanup.policy", "cleanup_policy", "delete", None),
    # How far a record's CreateTime may lie before/after the leader's clock
    # (partition_log.validator); difference.max.ms is the older single bound.
    "message.timestamp.difference.max.ms": ("log.message.timestamp.difference.max.ms",
                                            "message_timestamp_difference_max_ms", LONG_MAX, 0),
    "message.timestamp.before.max.ms": ("log.message.timestamp.before.max.ms",
                                        "message_timestamp_before_max_ms", LONG_MAX, 0),
    "message.timestamp.after.max.ms": ("log.message.timestamp.after.max.ms",
                                       "message_timestamp_after_max_ms", LONG_MAX, 0),
}
_CLEANUP_POLICIES = {"delete", "compact"}


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1024**3
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    delete_retention_ms: int = 24 * 3600 * 1000
    min_compaction_lag_ms: int = 0
    min_cleanable_dirty_ratio: float = 0.5
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    max_message_bytes: int = 1048588
    cleanup_policy: str = "delete"
    message_timestamp_difference_max_ms: int = LONG_MAX
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX

    @property
    def timestamp_before_max_ms(self) -> int:
        """As Kafka (KIP-937): before.max.ms when set, else difference.max.ms."""
        if self.message_timestamp_before_max_ms != LONG_MAX:
            return self.message_timestamp_before_max_ms
        return self.message_timestamp_difference_max_ms

    @property
    def timestamp_after_max_ms(self) -> int:
        if self.message_timestamp_after_max_ms != LONG_MAX:
            return self.message_timestamp_after_max_ms
        return self.message_timestamp_difference_max_ms

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], base: "LogConfig | None" = None) -> "LogConfig":
        """Build from topic-level or broker-level keys; unknown keys are left to the caller."""
        changes: dict[str, Any] = {}
        by_broker_key = {v[0]: k for k, v in _KEYS.items()}
        for key, raw in values.items():
            topic_key = key if key in _KEYS else by_broker_key.get(key)
            if topic_key is None:
                continue
            _, attr, default, minimum = _KEYS[topic_key]
            changes[attr] = _parse(key, raw, default, minimum)
        if base is not None and not changes:
            return base  # frozen: shared by every topic without overrides (one per topic was ~400 B a replica)
        return dataclasses.replace(base or cls(), **changes)

    def to_mapping(self) -> dict[str, Any]:
        return {k: getattr(self, v[1]) for k, v in _KEYS.items()}


def broker_key(topic_key: str) -> str:
    """The broker-wide setting a topic's log config defaults to (`retention.ms` -> `log.retention.ms`)."""
    return _KEYS[topic_key][0]


def is_log_config_key(key: str) -> bool:
    return key in _KEYS or any(v[0] == key for v in _KEYS.values())


def _parse(key: str, raw: Any, default: Any, minimum: int | None) -> Any:
    if isinstance(default, str):
        policies = [p.strip() for p in str(raw).split(",") if p.strip()]
        if not policies or any(p not in _CLEANUP_POLICIES for p in policies):
            raise InvalidConfigError(f"{key}={raw!r}: expected delete, compact or compact,delete")
        return ",".join(policies)
    if isinstance(default, float):
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise InvalidConfigError(f"{key}={raw!r}: expected a number") from None
        if not 0.0 <= value <= 1.0:
            raise InvalidConfigError(f"{key}={raw!r}: expected a ratio between 0 and 1")
        return value
    value = parse_int(key, raw, minimum)
    if key.endswith("segment.bytes") and value > 2**31 - 1:
        raise InvalidConfigError(f"{key}={value}: positions are int32, at most {2**31 - 1}")
    return value
