"""The transaction.* broker settings are described like every other one."""
from __future__ import annotations

from broker.admin_info import static_broker_settings
from broker.config import BrokerConfig


def test_every_transaction_setting_is_a_broker_config_field() -> None:
    """DescribeConfigs reads each Kafka-named setting from the BrokerConfig
    field of the same name ('.' as '_'): a field named otherwise failed every
    DescribeConfigs with an AttributeError."""
    settings = static_broker_settings(BrokerConfig.from_properties(
        {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}))
    assert settings["transaction.abort.timed.out.transaction.cleanup.interval.ms"] == ("500", False)
    assert settings["transaction.max.timeout.ms"] == ("900000", True)
