"""IncrementalAlterConfigs as a pure controller decision, and the config definitions DescribeConfigs uses."""

from __future__ import annotations

from typing import Optional

import pytest

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import Error, validate_topic_config
from metadata_quorum.controller.dynamic_configs import (
    APPEND, DELETE, DYNAMIC_CLUSTER_CONFIGS, SET, SUBTRACT, TOPIC_CONFIG_DEFS,
)
from metadata_quorum.image import MetadataImage
from partition_log.config import LogConfig

from .test_controller_harness import Harness, kinds

TOPIC, BROKER = 2, 4


def op(name: str, value: Optional[str] = None, kind: int = SET) -> cpb.AlterableConfig:
    config = cpb.AlterableConfig(name=name, op=kind)
    if value is not None:
        config.value = value
    return config


def alter(h: Harness, *resources: tuple[int, str, list[cpb.AlterableConfig]],
          validate_only: bool = False) -> cpb.IncrementalAlterConfigsResponse:
    request = cpb.IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[
        cpb.IncrementalAlterConfigsRequest.Resource(resource_type=t, resource_name=n, configs=c)
        for t, n, c in resources])
    return h.apply(h.controller.handle_incremental_alter_configs(request))


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.brokers(3)
    assert harness.create("orders", partitions=2, rf=2, configs={"retention.ms": "1000"}).error_code == Error.NONE
    return harness


def test_set_and_delete_become_config_records(h: Harness) -> None:
    response = alter(h, (TOPIC, "orders", [op("retention.ms", "5000"), op("segment.bytes", "1048576"),
                                           op("compression.type", "zstd")]))
    [result] = response.results
    assert (result.error_code, result.resource_type, result.resource_name) == (Error.NONE, TOPIC, "orders")
    assert kinds(h.last) == ["config"] * 3
    assert h.image.topic_config("orders") == {
        "retention.ms": "5000", "segment.bytes": "1048576", "compression.type": "zstd"}

    alter(h, (TOPIC, "orders", [op("retention.ms", kind=DELETE)]))
    [record] = h.last.records  # type: ignore[union-attr]
    assert not record.config.HasField("value")  # an absent value removes the setting
    assert h.image.topic_config("orders") == {"segment.bytes": "1048576", "compression.type": "zstd"}


def test_append_and_subtract_start_from_the_value_in_effect(h: Harness) -> None:
    # No override: cleanup.policy is Kafka's default, delete.
    alter(h, (TOPIC, "orders", [op("cleanup.policy", "compact", APPEND)]))
    assert h.image.topic_config("orders")["cleanup.policy"] == "delete,compact"
    alter(h, (TOPIC, "orders", [op("cleanup.policy", "compact", APPEND)]))  # already there: unchanged
    assert h.image.topic_config("orders")["cleanup.policy"] == "delete,compact"
    alter(h, (TOPIC, "orders", [op("cleanup.policy", "delete", SUBTRACT)]))
    assert h.image.topic_config("orders")["cleanup.policy"] == "compact"
    # Subtracting the last policy leaves none, which is not a valid value.
    [result] = alter(h, (TOPIC, "orders", [op("cleanup.policy", "compact", SUBTRACT)])).results
    assert result.error_code == Error.INVALID_CONFIG and "cleanup.policy" in result.error_message
    assert h.image.topic_config("orders")["cleanup.policy"] == "compact"


def test_append_inherits_the_cluster_default(h: Harness) -> None:
    h.cluster_config("log.cleanup.policy", "compact")
    alter(h, (TOPIC, "orders", [op("cleanup.policy", "delete", APPEND)]))
    assert h.image.topic_config("orders")["cleanup.policy"] == "compact,delete"


@pytest.mark.parametrize("configs, error, words", [
    ([op("retention.ms", "soon")], Error.INVALID_CONFIG, "retention.ms"),
    ([op("retention.ms", "-2")], Error.INVALID_CONFIG, "at least -1"),
    ([op("no.such.config", "1")], Error.INVALID_CONFIG, "unknown topic config"),
    ([op("no.such.config", kind=DELETE)], Error.INVALID_CONFIG, "unknown topic config"),
    ([op("min.insync.replicas", "0")], Error.INVALID_CONFIG, "min.insync.replicas"),
    ([op("cleanup.policy", "forever")], Error.INVALID_CONFIG, "cleanup.policy"),
    ([op("retention.ms", "5", APPEND)], Error.INVALID_CONFIG, "list-valued"),
    ([op("retention.ms")], Error.INVALID_REQUEST, "needs a value"),
    ([op("retention.ms", "5", 7)], Error.INVALID_REQUEST, "unknown operation"),
    ([op("retention.ms", "5"), op("retention.ms", kind=DELETE)], Error.INVALID_REQUEST, "more than once"),
])
def test_a_bad_operation_changes_nothing_of_its_resource(h: Harness, configs, error, words) -> None:
    before = h.image.topic_config("orders")
    # A good operation listed first is not applied either.
    [result] = alter(h, (TOPIC, "orders", [op("segment.ms", "60000"), *configs])).results
    assert result.error_code == error and words in result.error_message, result
    assert not h.last.records  # type: ignore[union-attr]
    assert h.image.topic_config("orders") == before


def test_each_resource_answers_for_itself(h: Harness) -> None:
    h.create("payments")
    response = alter(h, (TOPIC, "nope", [op("retention.ms", "1")]),
                     (TOPIC, "payments", [op("retention.ms", "2")]),
                     (TOPIC, "orders", [op("retention.ms", "x")]))
    assert [(r.resource_name, r.error_code) for r in response.results] == [
        ("nope", Error.UNKNOWN_TOPIC_OR_PARTITION), ("payments", Error.NONE), ("orders", Error.INVALID_CONFIG)]
    assert h.image.topic_config("payments") == {"retention.ms": "2"}
    assert h.image.topic_config("orders") == {"retention.ms": "1000"}


def test_a_resource_listed_twice_is_refused_both_times(h: Harness) -> None:
    response = alter(h, (TOPIC, "orders", [op("retention.ms", "1")]), (TOPIC, "orders", [op("retention.ms", "2")]))
    assert [r.error_code for r in response.results] == [Error.INVALID_REQUEST] * 2
    assert h.image.topic_config("orders") == {"retention.ms": "1000"}


def test_validate_only_answers_without_records(h: Harness) -> None:
    [ok, bad] = alter(h, (TOPIC, "orders", [op("retention.ms", "1")]), (TOPIC, "orders2", [op("x", "1")]),
                      validate_only=True).results
    assert ok.error_code == Error.NONE and bad.error_code == Error.UNKNOWN_TOPIC_OR_PARTITION
    assert not h.last.records  # type: ignore[union-attr]
    assert h.image.topic_config("orders") == {"retention.ms": "1000"}


def test_cluster_wide_broker_defaults(h: Harness) -> None:
    [result] = alter(h, (BROKER, "", [op("log.retention.ms", "60000"), op("min.insync.replicas", "2"),
                                      op("unclean.leader.election.enable", "true")])).results
    assert result.error_code == Error.NONE
    assert h.image.cluster_config() == {
        "log.retention.ms": "60000", "min.insync.replicas": "2", "unclean.leader.election.enable": "true"}
    # The controller reads the cluster-wide unclean election setting from the image.
    assert h.config.unclean_election_enabled(h.image.cluster_config(), h.image.topic_config("orders"))
    alter(h, (BROKER, "", [op("unclean.leader.election.enable", kind=DELETE)]))
    assert "unclean.leader.election.enable" not in h.image.cluster_config()


@pytest.mark.parametrize("name, configs, error, words", [
    ("", [op("log.retention.ms", "x")], Error.INVALID_CONFIG, "log.retention.ms"),
    ("", [op("retention.ms", "1")], Error.INVALID_CONFIG, "cluster-wide"),  # a topic name, not a broker one
    ("", [op("num.network.threads", "8")], Error.INVALID_CONFIG, "cluster-wide"),
    ("1", [op("log.retention.ms", "1")], Error.INVALID_REQUEST, "per broker only"),  # only the throttle rates
    ("broker-one", [op("log.retention.ms", "1")], Error.INVALID_REQUEST, "not a broker id"),
])
def test_broker_resources_refused(h: Harness, name, configs, error, words) -> None:
    [result] = alter(h, (BROKER, name, configs)).results
    assert result.error_code == error and words in result.error_message, result
    assert not h.last.records  # type: ignore[union-attr]
    assert h.image.cluster_config() == {}


def test_unknown_resource_type_is_refused(h: Harness) -> None:
    [result] = alter(h, (3, "orders", [op("retention.ms", "1")])).results
    assert result.error_code == Error.INVALID_REQUEST and "resource type 3" in result.error_message


def test_definitions_cover_every_topic_config_with_a_valid_default() -> None:
    for name, definition in TOPIC_CONFIG_DEFS.items():
        validate_topic_config(name, definition.default)  # Kafka's default passes our own check
    log_defaults = LogConfig().to_mapping()
    assert TOPIC_CONFIG_DEFS["retention.ms"].broker_key == "log.retention.ms"
    assert TOPIC_CONFIG_DEFS["retention.ms"].default == str(log_defaults["retention.ms"])
    assert TOPIC_CONFIG_DEFS["max.message.bytes"].broker_key == "message.max.bytes"
    assert DYNAMIC_CLUSTER_CONFIGS["log.cleanup.policy"] == "cleanup.policy"
    assert "compression.type" not in DYNAMIC_CLUSTER_CONFIGS  # nothing reads it cluster-wide


def test_records_replay_on_a_fresh_image(h: Harness) -> None:
    """What a broker sees: the same records applied to another image give the same configs."""
    alter(h, (TOPIC, "orders", [op("retention.ms", "42"), op("cleanup.policy", "compact")]))
    other = MetadataImage()
    for offset, record in enumerate(h.last.records):  # type: ignore[union-attr]
        assert record.config.resource_type == mpb.TOPIC
        other.apply(record, offset)
    assert other.topic_config("orders") == {"retention.ms": "42", "cleanup.policy": "compact"}
