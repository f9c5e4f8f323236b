"""ControllerConfig (Kafka's names and defaults), topic config validation, and the error codes."""

from __future__ import annotations

import pytest

from metadata_quorum.controller import ControllerConfig, Error, validate_topic_config, validate_topic_configs
from kafka_protocol.errors import InvalidConfigError


def test_defaults_are_kafkas() -> None:
    config = ControllerConfig.from_properties({})
    assert config.num_partitions == 1
    assert config.default_replication_factor == 1
    assert config.min_insync_replicas == 1
    assert config.unclean_leader_election_enable is False
    assert config.broker_session_timeout_ms == 9000
    assert config.broker_heartbeat_interval_ms == 2000
    assert config.auto_leader_rebalance_enable is True
    assert config.leader_imbalance_check_interval_seconds == 300
    assert config.leader_imbalance_per_broker_percentage == 10
    assert config.replica_lag_time_max_ms == 30000


def test_properties_are_read_by_kafka_name_and_others_left_alone() -> None:
    config = ControllerConfig.from_properties({
        "num.partitions": "6", "default.replication.factor": 3, "unclean.leader.election.enable": "TRUE",
        "auto.leader.rebalance.enable": False, "node.id": 1, "log.dirs": "/tmp/x",
    })
    assert (config.num_partitions, config.default_replication_factor) == (6, 3)
    assert config.unclean_leader_election_enable is True
    assert config.auto_leader_rebalance_enable is False
    assert config.leader_imbalance_check_interval_ms == 300_000


@pytest.mark.parametrize(("props", "key"), [
    ({"num.partitions": "0"}, "num.partitions"),
    ({"num.partitions": "many"}, "num.partitions"),
    ({"default.replication.factor": True}, "default.replication.factor"),
    ({"unclean.leader.election.enable": "yes"}, "unclean.leader.election.enable"),
    ({"leader.imbalance.per.broker.percentage": "101"}, "leader.imbalance.per.broker.percentage"),
    ({"broker.session.timeout.ms": "1000"}, "broker.heartbeat.interval.ms"),
    ({"replica.lag.time.max.ms": "-5"}, "replica.lag.time.max.ms"),
])
def test_bad_settings_are_refused_with_the_key(props: dict, key: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        ControllerConfig.from_properties(props)
    assert str(info.value).startswith(f"INVALID_CONFIG: {key}")
    assert info.value.code == Error.INVALID_CONFIG


def test_unclean_election_setting_topic_over_cluster_over_static() -> None:
    off, on = ControllerConfig(), ControllerConfig(unclean_leader_election_enable=True)
    key = "unclean.leader.election.enable"
    assert not off.unclean_election_enabled({}, {})
    assert on.unclean_election_enabled({}, {})
    assert off.unclean_election_enabled({key: "true"}, {})
    assert not on.unclean_election_enabled({key: "false"}, {})
    assert not off.unclean_election_enabled({key: "true"}, {key: "false"})
    assert on.unclean_election_enabled({key: "false"}, {key: "true"})


@pytest.mark.parametrize(("key", "value"), [
    ("cleanup.policy", "compact,delete"), ("retention.ms", "-1"), ("retention.bytes", "1048576"),
    ("segment.bytes", "1048576"), ("min.insync.replicas", "2"), ("unclean.leader.election.enable", "true"),
    ("max.message.bytes", "1000000"), ("compression.type", "zstd"), ("message.timestamp.type", "LogAppendTime"),
])
def test_known_topic_configs_are_accepted(key: str, value: str) -> None:
    validate_topic_config(key, value)


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("no.such.config", "1", "unknown topic config"),
    ("log.retention.ms", "1", "unknown topic config"),  # the broker's spelling is not a topic config
    ("cleanup.policy", "forever", "expected delete, compact"),
    ("retention.ms", "soon", "expected an integer"),
    ("segment.bytes", "10", "at least 14"),
    ("min.insync.replicas", "0", "at least 1"),
    ("unclean.leader.election.enable", "maybe", "true or false"),
    ("compression.type", "brotli", "expected one of"),
    ("message.timestamp.type", "Now", "expected one of"),
])
def test_bad_topic_configs_name_the_key_and_the_reason(key: str, value: str, reason: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        validate_topic_configs({"retention.ms": "1000", key: value})
    assert key in str(info.value) and reason in str(info.value)


def test_error_codes_are_kafkas() -> None:
    expected = {
        "UNKNOWN_SERVER_ERROR": -1, "NONE": 0, "UNKNOWN_TOPIC_OR_PARTITION": 3, "LEADER_NOT_AVAILABLE": 5,
        "NOT_LEADER_OR_FOLLOWER": 6, "INVALID_TOPIC_EXCEPTION": 17, "TOPIC_ALREADY_EXISTS": 36,
        "INVALID_PARTITIONS": 37, "INVALID_REPLICATION_FACTOR": 38, "INVALID_REPLICA_ASSIGNMENT": 39,
        "INVALID_CONFIG": 40, "NOT_CONTROLLER": 41, "INVALID_REQUEST": 42, "POLICY_VIOLATION": 44,
        "FENCED_LEADER_EPOCH": 74,
        "STALE_BROKER_EPOCH": 77, "PREFERRED_LEADER_NOT_AVAILABLE": 80, "ELIGIBLE_LEADERS_NOT_AVAILABLE": 83,
        "ELECTION_NOT_NEEDED": 84, "INVALID_UPDATE_VERSION": 95, "DUPLICATE_BROKER_REGISTRATION": 101,
        "BROKER_ID_NOT_REGISTERED": 102, "INCONSISTENT_CLUSTER_ID": 104, "INELIGIBLE_REPLICA": 107,
        "NEW_LEADER_ELECTED": 108,
    }
    # Error is Kafka's whole table now: the codes the controller answers with are in it, by these numbers.
    assert {name: Error[name].value for name in expected} == expected
