"""KIP-73's replication throttle configs through IncrementalAlterConfigs: the
rates per broker or cluster-wide, the throttled-replicas lists per topic,
Kafka's checks and INVALID_CONFIG, and hostile values."""
from __future__ import annotations

import pytest

from kafka_protocol.errors import InvalidConfigError
from kafka_protocol.replication_throttles import (
    FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS, format_replicas, parse_replicas,
    throttled_partitions,
)
from metadata_quorum.controller import Error
from metadata_quorum.controller.dynamic_configs import APPEND, DELETE, SUBTRACT

from .test_controller_dynamic_configs import BROKER, TOPIC, alter, h, op  # noqa: F401 - h is a fixture
from .test_controller_harness import Harness


def test_rates_per_broker_and_cluster_wide(h: Harness) -> None:  # noqa: F811
    [one, default] = alter(h, (BROKER, "1", [op(LEADER_RATE, "1000"), op(FOLLOWER_RATE, "0")]),
                           (BROKER, "", [op(LEADER_RATE, "5000")])).results
    assert (one.error_code, default.error_code) == (Error.NONE, Error.NONE)
    assert h.image.broker_config(1) == {LEADER_RATE: "1000", FOLLOWER_RATE: "0"}
    assert h.image.cluster_config() == {LEADER_RATE: "5000"}
    assert h.image.broker_config(2) == {}
    alter(h, (BROKER, "1", [op(LEADER_RATE, kind=DELETE)]))
    assert h.image.broker_config(1) == {FOLLOWER_RATE: "0"}


def test_a_broker_not_registered_yet_may_hold_rates(h: Harness) -> None:  # noqa: F811
    [result] = alter(h, (BROKER, "42", [op(FOLLOWER_RATE, "10")])).results
    assert result.error_code == Error.NONE  # as Kafka: the broker may join later
    assert h.image.broker_config(42) == {FOLLOWER_RATE: "10"}


def test_throttled_replicas_on_a_topic(h: Harness) -> None:  # noqa: F811
    [result] = alter(h, (TOPIC, "orders", [op(LEADER_REPLICAS, "0:1,1:2"), op(FOLLOWER_REPLICAS, "*")])).results
    assert result.error_code == Error.NONE
    assert h.image.topic_config("orders") == {"retention.ms": "1000", LEADER_REPLICAS: "0:1,1:2",
                                             FOLLOWER_REPLICAS: "*"}
    # Kafka's type for them is LIST: APPEND and SUBTRACT work from the value in effect.
    alter(h, (TOPIC, "orders", [op(LEADER_REPLICAS, "1:3", APPEND)]))
    assert h.image.topic_config("orders")[LEADER_REPLICAS] == "0:1,1:2,1:3"
    alter(h, (TOPIC, "orders", [op(LEADER_REPLICAS, "0:1", SUBTRACT)]))
    assert h.image.topic_config("orders")[LEADER_REPLICAS] == "1:2,1:3"


@pytest.mark.parametrize("resource, configs, error, words", [
    ((BROKER, "1"), [op(LEADER_RATE, "-1")], Error.INVALID_CONFIG, "at least 0"),
    ((BROKER, ""), [op(FOLLOWER_RATE, "-5")], Error.INVALID_CONFIG, "at least 0"),
    ((BROKER, "1"), [op(LEADER_RATE, "fast")], Error.INVALID_CONFIG, "integer"),
    ((BROKER, "1"), [op(LEADER_RATE, str(2**63))], Error.INVALID_CONFIG, "64-bit"),
    ((BROKER, "1"), [op("log.retention.ms", "1")], Error.INVALID_REQUEST, "per broker only"),
    ((BROKER, "-1"), [op(LEADER_RATE, "1")], Error.INVALID_REQUEST, "not a broker id"),
    ((BROKER, str(2**31)), [op(LEADER_RATE, "1")], Error.INVALID_REQUEST, "not a broker id"),
    ((BROKER, "1"), [op(LEADER_RATE, "1", APPEND)], Error.INVALID_CONFIG, "list-valued"),
    ((TOPIC, "orders"), [op(LEADER_RATE, "1")], Error.INVALID_CONFIG, "unknown topic config"),
    ((BROKER, ""), [op(LEADER_REPLICAS, "*")], Error.INVALID_CONFIG, "cluster-wide"),
    ((TOPIC, "orders"), [op(LEADER_REPLICAS, "0-1")], Error.INVALID_CONFIG, "literal '*'"),
    ((TOPIC, "orders"), [op(LEADER_REPLICAS, "0:1,*")], Error.INVALID_CONFIG, "literal '*'"),
    ((TOPIC, "orders"), [op(FOLLOWER_REPLICAS, "-1:2")], Error.INVALID_CONFIG, "literal '*'"),
    ((TOPIC, "orders"), [op(FOLLOWER_REPLICAS, "0:2:3")], Error.INVALID_CONFIG, "literal '*'"),
    ((TOPIC, "orders"), [op(FOLLOWER_REPLICAS, f"0:{2**31}")], Error.INVALID_CONFIG, "literal '*'"),
    ((TOPIC, "orders"), [op(FOLLOWER_REPLICAS, "*", APPEND)], Error.NONE, ""),  # "" then "*": still valid
    ((TOPIC, "__cluster_metadata"), [op(LEADER_REPLICAS, "*")], Error.UNKNOWN_TOPIC_OR_PARTITION, "no such topic"),
])
def test_hostile_values_are_refused_with_kafkas_errors(h: Harness, resource, configs, error,  # noqa: F811
                                                         words) -> None:
    [result] = alter(h, (*resource, configs)).results
    assert result.error_code == error and words in result.error_message, result
    if error != Error.NONE:
        assert not h.last.records  # type: ignore[union-attr]


def test_parse_replicas_follows_kafkas_rule() -> None:
    assert parse_replicas(LEADER_REPLICAS, "") == []
    assert parse_replicas(LEADER_REPLICAS, " * ") is None
    assert parse_replicas(LEADER_REPLICAS, "0:1, 2:3 ,") == [(0, 1), (2, 3)]
    for bad in ("a:1", "0:", ":1", "0;1", "**", "0:1 2:3"):
        with pytest.raises(InvalidConfigError):
            parse_replicas(LEADER_REPLICAS, bad)


def test_a_broker_reads_only_the_pairs_naming_it() -> None:
    assert throttled_partitions("0:1,1:2,3:1", 1) == frozenset({0, 3})
    assert throttled_partitions("0:1,1:2", 7) == frozenset()
    assert throttled_partitions("*", 7) is None
    assert throttled_partitions(None, 1) == frozenset()
    assert throttled_partitions("garbage", 1) == frozenset()  # never validated: throttles nothing
    assert format_replicas([(1, 2), (0, 3), (1, 2)]) == "0:3,1:2"


def test_describe_configs_shows_them_with_their_sources(h: Harness) -> None:  # noqa: F811
    from broker.admin_info import describe_configs
    from broker.config import BrokerConfig
    from kraftlog_api import broker_pb2 as bpb

    alter(h, (BROKER, "1", [op(LEADER_RATE, "1000")]), (BROKER, "", [op(LEADER_RATE, "5"), op(FOLLOWER_RATE, "7")]),
          (TOPIC, "orders", [op(LEADER_REPLICAS, "0:1")]))

    def described(kind: int, name: str, broker_id: int) -> dict[str, tuple[str, int, bool]]:
        request = bpb.DescribeConfigsRequest(resources=[bpb.DescribeConfigsRequest.Resource(
            resource_type=kind, resource_name=name)])
        [result] = describe_configs(h.image, request, broker_id=broker_id, config=BrokerConfig()).results
        assert result.error_code == Error.NONE
        return {c.name: (c.value, c.config_source, c.read_only) for c in result.configs}

    # Kafka's sources: 2 DYNAMIC_BROKER_CONFIG, 3 DYNAMIC_DEFAULT_BROKER_CONFIG, 1 DYNAMIC_TOPIC_CONFIG, 5 DEFAULT_CONFIG
    one = described(BROKER, "1", 1)
    assert one[LEADER_RATE] == ("1000", 2, False) and one[FOLLOWER_RATE] == ("7", 3, False)
    two = described(BROKER, "2", 2)
    assert two[LEADER_RATE] == ("5", 3, False)
    default = described(BROKER, "", 1)
    assert default[LEADER_RATE] == ("5", 3, False) and LEADER_RATE in default
    topic = described(TOPIC, "orders", 1)
    assert topic[LEADER_REPLICAS] == ("0:1", 1, False) and topic[FOLLOWER_REPLICAS] == ("", 5, False)
    alter(h, (BROKER, "", [op(LEADER_RATE, kind=DELETE)]))
    assert described(BROKER, "2", 2)[LEADER_RATE] == (str(2**63 - 1), 5, False)
