"""ServerConfig for brokers and combined nodes: listeners, the controllers to
find, Kafka's broker settings, and every way they can be wrong."""
from __future__ import annotations

import socket

import pytest

from broker.config import BrokerConfig
from broker.log_jobs import LogJobIntervals
from kraftlog_server.server_config import Endpoint, ServerConfig
from partition_log.config import LogConfig
from kafka_protocol.errors import InvalidConfigError

BROKER = {
    "node.id": 4,
    "process.roles": "broker",
    "cluster.id": "MkU3OEVBNTcwNTJENDM2Qk",
    "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "log.dirs": "/data/broker-4",
}
COMBINED = {
    **BROKER,
    "node.id": 1,
    "process.roles": "broker,controller",
    "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
}


def broker(base: dict = BROKER, **changes: object) -> ServerConfig:
    props = {**base, **{key.replace("__", "."): value for key, value in changes.items()}}
    return ServerConfig.from_mapping({k: v for k, v in props.items() if v is not None})


def test_a_minimal_broker_gets_kafkas_defaults():
    c = broker()
    assert c.process_roles == ("broker",)
    assert c.is_broker and not c.is_controller
    assert c.broker_listeners() == (Endpoint("PLAINTEXT", "127.0.0.1", 9092),)
    assert c.advertised_listeners == c.broker_listeners()
    assert c.inter_broker_listener_name == "PLAINTEXT"
    assert c.rack is None
    assert c.broker == BrokerConfig()
    assert c.log_jobs == LogJobIntervals()
    assert c.metadata_log_dir == "/data/broker-4"
    assert c.controller.broker_heartbeat_interval_ms == 2000
    assert c.warnings == ()


def test_broker_settings_take_kafkas_names():
    c = broker(**{
        "min.insync.replicas": 2, "replica.lag.time.max.ms": "5000", "replica.fetch.wait.max.ms": 100,
        "log.segment.bytes": 1 << 20, "log.retention.ms": 60000, "log.cleanup.policy": "compact",
        "broker.heartbeat.interval.ms": 500, "broker.session.timeout.ms": 2000, "num.partitions": 6,
        "default.replication.factor": 3, "unclean.leader.election.enable": "true", "broker.rack": "rack-a",
        "log.retention.check.interval.ms": 1000, "log.cleaner.enable": False,
        "advertised.listeners": "PLAINTEXT://broker-4.example:19092",
    })
    assert c.broker.min_insync_replicas == 2 and c.broker.replica_lag_time_max_ms == 5000
    assert c.broker.replica_fetch_wait_max_ms == 100
    assert c.broker.log == LogConfig(segment_bytes=1 << 20, retention_ms=60000, cleanup_policy="compact")
    assert c.controller.broker_heartbeat_interval_ms == 500 and c.controller.broker_session_timeout_ms == 2000
    assert c.controller.num_partitions == 6 and c.controller.default_replication_factor == 3
    assert c.controller.unclean_leader_election_enable
    assert c.rack == "rack-a"
    assert c.log_jobs.retention_check_ms == 1000 and not c.log_jobs.cleaner_enable
    assert c.advertised_listeners == (Endpoint("PLAINTEXT", "broker-4.example", 19092),)
    assert c.warnings == ()


def test_topic_level_names_are_not_server_properties():
    c = broker(segment__bytes=100)
    assert c.broker.log.segment_bytes == LogConfig().segment_bytes
    assert c.warnings == ("unknown or unsupported property segment.bytes is ignored",)


def test_an_empty_host_is_advertised_as_this_machines_name():
    c = broker(listeners="PLAINTEXT://:9092")
    assert c.advertised_listeners == (Endpoint("PLAINTEXT", socket.getfqdn(), 9092),)


def test_a_broker_bound_to_every_interface_advertises_a_routable_host():
    c = broker(listeners="PLAINTEXT://0.0.0.0:9092", advertised__listeners="PLAINTEXT://10.0.0.4:9092")
    assert c.broker_listeners()[0].address == "0.0.0.0:9092"
    assert c.advertised_listeners == (Endpoint("PLAINTEXT", "10.0.0.4", 9092),)


def test_a_broker_serves_on_another_listener_name_when_told():
    c = broker(listeners="INTERNAL://127.0.0.1:9092,EXTERNAL://127.0.0.1:9192",
               listener__security__protocol__map="INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
               inter__broker__listener__name="internal")
    assert c.inter_broker_listener_name == "INTERNAL"
    assert [e.name for e in c.advertised_listeners] == ["INTERNAL", "EXTERNAL"]


def test_a_combined_node_has_a_controller_and_a_broker_listener():
    c = broker(COMBINED)
    assert c.is_broker and c.is_controller
    assert c.controller_endpoint() == Endpoint("CONTROLLER", "127.0.0.1", 9093)
    assert c.broker_listeners() == (Endpoint("PLAINTEXT", "127.0.0.1", 9092),)


def test_several_log_dirs_are_a_warning_for_a_broker():
    c = broker(log__dirs="/a,/b")
    assert c.warnings == ("log.dirs: partitions are kept in /a only (several log directories are not supported yet)",)


BAD = [
    # (base, property, value or None to remove it, words the message must hold)
    (BROKER, "controller.quorum.voters", None, "required on a broker too"),
    (BROKER, "controller.quorum.voters", "4@127.0.0.1:9093", "a voter must have the controller role"),
    (BROKER, "listeners", "CONTROLLER://127.0.0.1:9099", "controller listener (a broker-only node has none)"),
    (BROKER, "listeners", "PLAINTEXT://127.0.0.1:0", "needs a port"),
    (BROKER, "listeners", "PLAINTEXT://0.0.0.0:9092", "wildcard"),
    (BROKER, "inter.broker.listener.name", "INTERNAL", "not a broker listener"),
    (BROKER, "inter.broker.listener.name", 5, "listener name"),
    (BROKER, "advertised.listeners", "OTHER://h:1", "not a broker listener"),
    (BROKER, "advertised.listeners", "PLAINTEXT://0.0.0.0:9092", "wildcard"),
    (BROKER, "advertised.listeners", "PLAINTEXT://h:0", "needs a port"),
    (BROKER, "advertised.listeners", "PLAINTEXT:/h:1", "NAME://HOST:PORT"),
    (BROKER, "broker.rack", "", "expected a name"),
    (BROKER, "kraftlog.quorum.state.machine", "records", "a broker needs the metadata image"),
    (BROKER, "min.insync.replicas", 0, "at least 1"),
    (BROKER, "replica.lag.time.max.ms", "slow", "expected an integer"),
    (BROKER, "log.segment.bytes", 10, "at least 14"),
    (BROKER, "log.retention.ms", "week", "expected an integer"),
    (BROKER, "log.cleanup.policy", "shred", "delete"),
    (BROKER, "log.retention.check.interval.ms", 0, "at least 1"),
    (BROKER, "log.cleaner.enable", "maybe", "true or false"),
    (BROKER, "broker.heartbeat.interval.ms", 10000, "less than"),
    (BROKER, "num.partitions", 0, "at least 1"),
    (BROKER, "unclean.leader.election.enable", "perhaps", "true or false"),
    (COMBINED, "listeners", "CONTROLLER://127.0.0.1:9093", "a broker needs a listener besides CONTROLLER"),
    (COMBINED, "listeners", "PLAINTEXT://127.0.0.1:9092", "controller.listener.names: none of CONTROLLER"),
]


@pytest.mark.parametrize("base, key, value, words", BAD,
                         ids=[f"{b['process.roles']}:{k}={v!r}" for b, k, v, _ in BAD])
def test_each_bad_broker_property_is_named_in_one_line(base, key, value, words):
    props = {**base, key: value}
    with pytest.raises(InvalidConfigError) as caught:
        ServerConfig.from_mapping({k: v for k, v in props.items() if v is not None})
    message = str(caught.value)
    # The message starts with the property at fault, or with the one the value contradicts.
    assert message.startswith(f"INVALID_CONFIG: {key}") or words.startswith("controller.listener.names"), message
    assert words in message and "\n" not in message


# -- kraftlog.kafka.protocol.listeners -------------------------------------------------------

KAFKA_BROKER = {**BROKER, "listeners": "PLAINTEXT://127.0.0.1:9092,KAFKA://127.0.0.1:19092",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,KAFKA:PLAINTEXT",
                "kraftlog.kafka.protocol.listeners": "kafka"}


def test_kafka_protocol_listeners_name_broker_listeners():
    c = broker(KAFKA_BROKER)
    assert c.kafka_protocol_listeners == ("KAFKA",) and c.warnings == ()
    assert [c.is_kafka_protocol(e) for e in c.broker_listeners()] == [False, True]
    assert c.socket_request_max_bytes == 104857600 and c.connections_max_idle_ms == 600000
    assert broker(KAFKA_BROKER, socket__request__max__bytes="1024").socket_request_max_bytes == 1024
    assert broker().kafka_protocol_listeners == ()


@pytest.mark.parametrize("changes, problem", [
    ({"kraftlog.kafka.protocol.listeners": "NOPE"}, "NOPE is not a broker listener"),
    ({"kraftlog.kafka.protocol.listeners": "PLAINTEXT"}, "PLAINTEXT is inter.broker.listener.name"),
    ({"socket.request.max.bytes": 0}, "socket.request.max.bytes: expected an integer >= 1"),
])
def test_kafka_protocol_listeners_refused(changes, problem):
    with pytest.raises(InvalidConfigError) as caught:
        broker({**KAFKA_BROKER, **changes})
    message = str(caught.value)
    assert problem in message and "\n" not in message
    assert message.startswith(("INVALID_CONFIG: kraftlog.kafka.protocol.listeners: ",
                               "INVALID_CONFIG: socket.request.max.bytes: "))


@pytest.mark.parametrize("protocol", ["SSL", "SASL_PLAINTEXT", "SASL_SSL"])
def test_a_kafka_protocol_listener_may_be_secured(protocol, tmp_path):
    keystore = tmp_path / "k.pem"   # named, not read: the listener reads it when it binds
    c = broker({**KAFKA_BROKER, "listener.security.protocol.map":
                f"PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,KAFKA:{protocol}",
                "listener.name.kafka.ssl.keystore.location": str(keystore)})
    assert c.listener_protocol("KAFKA").value == protocol
    ssl = c.listener_ssl.get("KAFKA")
    assert (ssl.keystore_location if ssl else None) == (str(keystore) if protocol != "SASL_PLAINTEXT" else None)


def test_a_controller_listener_cannot_speak_kafkas_protocol():
    with pytest.raises(InvalidConfigError, match="kraftlog.kafka.protocol.listeners: CONTROLLER is a controller"):
        broker(COMBINED, kraftlog__kafka__protocol__listeners="CONTROLLER")


def test_a_controller_only_node_ignores_the_setting():
    controller = {**BROKER, "node.id": 1, "process.roles": "controller", "listeners": "CONTROLLER://127.0.0.1:9093",
                  "kraftlog.kafka.protocol.listeners": "KAFKA"}
    assert ServerConfig.from_mapping(controller).kafka_protocol_listeners == ("KAFKA",)
