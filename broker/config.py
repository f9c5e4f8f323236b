"""The broker's settings under Kafka's names, and the per-topic values the
metadata image decides (topic override > cluster default > broker file).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Mapping

from metadata_quorum.image import MetadataImage
from kafka_protocol.config_values import parse_int
from partition_log.config import LogConfig
from kafka_protocol.errors import InvalidConfigError

log = logging.getLogger(__name__)

MIN_INSYNC_REPLICAS = "min.insync.replicas"
REPLICA_LAG_TIME_MAX_MS = "replica.lag.time.max.ms"
REPLICA_FETCH_MAX_BYTES = "replica.fetch.max.bytes"
REPLICA_FETCH_WAIT_MAX_MS = "replica.fetch.wait.max.ms"
REPLICA_FETCH_MIN_BYTES = "replica.fetch.min.bytes"
REPLICA_FETCH_BACKOFF_MS = "replica.fetch.backoff.ms"
OFFSETS_TOPIC_REPLICATION_FACTOR = "offsets.topic.replication.factor"
OFFSETS_TOPIC_NUM_PARTITIONS = "offsets.topic.num.partitions"
OFFSETS_COMMIT_TIMEOUT_MS = "offsets.commit.timeout.ms"
OFFSET_METADATA_MAX_BYTES = "offset.metadata.max.bytes"
GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS = "group.consumer.heartbeat.interval.ms"
GROUP_CONSUMER_SESSION_TIMEOUT_MS = "group.consumer.session.timeout.ms"
GROUP_MIN_SESSION_TIMEOUT_MS = "group.min.session.timeout.ms"
GROUP_MAX_SESSION_TIMEOUT_MS = "group.max.session.timeout.ms"
GROUP_INITIAL_REBALANCE_DELAY_MS = "group.initial.rebalance.delay.ms"
GROUP_CONSUMER_MIGRATION_POLICY = "group.consumer.migration.policy"
# Whether a non-empty group changes kind (KIP-848's online migration, broker/groups/migration.py):
# "upgrade" classic -> consumer, "downgrade" consumer -> classic; Kafka 4's default is bidirectional.
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")
PRODUCER_ID_EXPIRATION_MS = "producer.id.expiration.ms"
PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = "producer.id.expiration.check.interval.ms"
TRANSACTION_STATE_LOG_NUM_PARTITIONS = "transaction.state.log.num.partitions"
TRANSACTION_STATE_LOG_REPLICATION_FACTOR = "transaction.state.log.replication.factor"
TRANSACTION_STATE_LOG_MIN_ISR = "transaction.state.log.min.isr"
TRANSACTION_STATE_LOG_SEGMENT_BYTES = "transaction.state.log.segment.bytes"
TRANSACTION_MAX_TIMEOUT_MS = "transaction.max.timeout.ms"
TRANSACTIONAL_ID_EXPIRATION_MS = "transactional.id.expiration.ms"
TRANSACTION_ABORT_TIMED_OUT_CLEANUP_INTERVAL_MS = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
# KIP-73: the windows the replication throttles' byte rates are measured over (broker/replication_quota.py).
REPLICATION_QUOTA_WINDOW_NUM = "replication.quota.window.num"
REPLICATION_QUOTA_WINDOW_SIZE_SECONDS = "replication.quota.window.size.seconds"
# KIP-227: how many incremental fetch sessions the broker keeps (0: none, every fetch is full).
MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS = "max.incremental.fetch.session.cache.slots"

# Kafka property name -> (field, default, minimum)
_PROPERTIES: dict[str, tuple[str, int, int]] = {
    MIN_INSYNC_REPLICAS: ("min_insync_replicas", 1, 1),
    REPLICA_LAG_TIME_MAX_MS: ("replica_lag_time_max_ms", 30000, 1),
    REPLICA_FETCH_MAX_BYTES: ("replica_fetch_max_bytes", 1048576, 0),
    REPLICA_FETCH_WAIT_MAX_MS: ("replica_fetch_wait_max_ms", 500, 0),
    REPLICA_FETCH_MIN_BYTES: ("replica_fetch_min_bytes", 1, 1),
    REPLICA_FETCH_BACKOFF_MS: ("replica_fetch_backoff_ms", 1000, 0),
    PRODUCER_ID_EXPIRATION_MS: ("producer_id_expiration_ms", 86_400_000, 1),
    PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS: ("producer_id_expiration_check_interval_ms", 600_000, 1),
    # The group coordinator (broker/groups).
    OFFSETS_TOPIC_REPLICATION_FACTOR: ("offsets_topic_replication_factor", 3, 1),
    OFFSETS_TOPIC_NUM_PARTITIONS: ("offsets_topic_num_partitions", 50, 1),
    OFFSETS_COMMIT_TIMEOUT_MS: ("offsets_commit_timeout_ms", 5000, 1),
    OFFSET_METADATA_MAX_BYTES: ("offset_metadata_max_bytes", 4096, 0),
    GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS: ("group_consumer_heartbeat_interval_ms", 5000, 1),
    GROUP_CONSUMER_SESSION_TIMEOUT_MS: ("group_consumer_session_timeout_ms", 45000, 1),
    # Classic groups (JoinGroup/SyncGroup): the session timeouts members may ask for, and how
    # long an empty group's first rebalance waits for more members.
    GROUP_MIN_SESSION_TIMEOUT_MS: ("group_min_session_timeout_ms", 6000, 1),
    GROUP_MAX_SESSION_TIMEOUT_MS: ("group_max_session_timeout_ms", 1800000, 1),
    GROUP_INITIAL_REBALANCE_DELAY_MS: ("group_initial_rebalance_delay_ms", 3000, 0),
    # The transaction coordinator (broker/transactions).
    TRANSACTION_STATE_LOG_NUM_PARTITIONS: ("transaction_state_log_num_partitions", 50, 1),
    TRANSACTION_STATE_LOG_REPLICATION_FACTOR: ("transaction_state_log_replication_factor", 3, 1),
    TRANSACTION_STATE_LOG_MIN_ISR: ("transaction_state_log_min_isr", 2, 1),
    TRANSACTION_STATE_LOG_SEGMENT_BYTES: ("transaction_state_log_segment_bytes", 104_857_600, 1),
    TRANSACTION_MAX_TIMEOUT_MS: ("transaction_max_timeout_ms", 900_000, 1),
    TRANSACTIONAL_ID_EXPIRATION_MS: ("transactional_id_expiration_ms", 604_800_000, 1),
    TRANSACTION_ABORT_TIMED_OUT_CLEANUP_INTERVAL_MS: ("transaction_abort_timed_out_transaction_cleanup_interval_ms",
                                                      10_000, 1),
    REPLICATION_QUOTA_WINDOW_NUM: ("replication_quota_window_num", 11, 1),
    REPLICATION_QUOTA_WINDOW_SIZE_SECONDS: ("replication_quota_window_size_seconds", 1, 1),
    MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS: ("max_incremental_fetch_session_cache_slots", 1000, 0),
}
KAFKA_PROPERTY_NAMES = frozenset(_PROPERTIES) | {GROUP_CONSUMER_MIGRATION_POLICY}


@dataclass(frozen=True)
class BrokerConfig:
    min_insync_replicas: int = 1
    replica_lag_time_max_ms: int = 30000
    replica_fetch_max_bytes: int = 1048576
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_backoff_ms: int = 1000
    producer_id_expiration_ms: int = 86_400_000
    producer_id_expiration_check_interval_ms: int = 600_000
    offsets_topic_replication_factor: int = 3
    offsets_topic_num_partitions: int = 50
    offsets_commit_timeout_ms: int = 5000  # how long an append to __consumer_offsets may wait for the ISR
    offset_metadata_max_bytes: int = 4096
    group_consumer_heartbeat_interval_ms: int = 5000
    group_consumer_session_timeout_ms: int = 45000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_consumer_migration_policy: str = "bidirectional"
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_replication_factor: int = 3
    transaction_state_log_min_isr: int = 2
    transaction_state_log_segment_bytes: int = 104_857_600
    transaction_max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 604_800_000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000  # how often the timer looks at timeouts
    replication_quota_window_num: int = 11
    replication_quota_window_size_seconds: int = 1
    max_incremental_fetch_session_cache_slots: int = 1000
    log: LogConfig = field(default_factory=LogConfig)

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> "BrokerConfig":
        """The broker's Kafka-named properties; unknown keys are the caller's business."""
        values: dict[str, Any] = {}
        for key, (attr, _default, minimum) in _PROPERTIES.items():
            if key in props:
                values[attr] = parse_int(key, props[key], minimum)
        if GROUP_CONSUMER_MIGRATION_POLICY in props:
            # Kafka's validator takes the names in any case.
            policy = str(props[GROUP_CONSUMER_MIGRATION_POLICY]).strip().lower()
            if policy not in MIGRATION_POLICIES:
                raise InvalidConfigError(f"{GROUP_CONSUMER_MIGRATION_POLICY}={props[GROUP_CONSUMER_MIGRATION_POLICY]!r}: "
                                  f"one of {', '.join(MIGRATION_POLICIES)}")
            values["group_consumer_migration_policy"] = policy
        return cls(**values, log=LogConfig.from_mapping(props))




def topic_log_config(image: MetadataImage, topic: str, base: LogConfig) -> LogConfig:
    """The log settings of `topic`: the broker's, then the cluster-wide
    defaults, then the topic's overrides. A value the image holds that does
    not parse is skipped with a warning (the controller validates them; an
    old image must not stop the broker)."""
    config = base
    for scope, values in (("cluster", image.cluster_config()), (f"topic {topic}", image.topic_config(topic))):
        try:
            config = LogConfig.from_mapping(values, config)
        except InvalidConfigError as exc:
            log.warning("ignoring the %s log config: %s", scope, exc)
    return config


def topic_min_insync_replicas(image: MetadataImage, topic: str, default: int) -> int:
    value = default
    for scope, values in (("cluster", image.cluster_config()), (f"topic {topic}", image.topic_config(topic))):
        if MIN_INSYNC_REPLICAS in values:
            try:
                value = parse_int(MIN_INSYNC_REPLICAS, values[MIN_INSYNC_REPLICAS], 1)
            except InvalidConfigError as exc:
                log.warning("ignoring the %s setting: %s", scope, exc)
    return value
