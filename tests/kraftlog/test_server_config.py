"""ServerConfig: a node's YAML file of Kafka-named properties, and every way it can be wrong."""
from __future__ import annotations

import sys

import pytest

from kraftlog_server.server_config import Endpoint, ServerConfig
from metadata_quorum.raft.config import QuorumConfig
from kafka_protocol.errors import InvalidConfigError

VALID = {
    "node.id": 1,
    "process.roles": "controller",
    "cluster.id": "MkU3OEVBNTcwNTJENDM2Qk",
    "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "log.dirs": "/data/a,/data/b",
}


def changed(changes: dict[str, object]) -> dict[str, object]:
    """VALID with some properties changed; a value of None removes the property."""
    props = {**VALID, **changes}
    return {key: value for key, value in props.items() if value is not None}


def config(**changes: object) -> ServerConfig:
    """ServerConfig of VALID with changes, property names' dots spelled as __."""
    return ServerConfig.from_mapping(changed({key.replace("__", "."): value for key, value in changes.items()}))


def test_a_minimal_controller_gets_kafkas_defaults():
    c = config()
    assert c.node_id == 1
    assert c.process_roles == ("controller",)
    assert c.cluster_id == "MkU3OEVBNTcwNTJENDM2Qk"
    assert c.voters == {1: ("127.0.0.1", 9093), 2: ("127.0.0.1", 9094), 3: ("127.0.0.1", 9095)}
    assert c.listeners == (Endpoint("CONTROLLER", "127.0.0.1", 9093),)
    assert c.controller_listener_names == ("CONTROLLER",)
    assert c.controller_endpoint() == Endpoint("CONTROLLER", "127.0.0.1", 9093)
    assert c.log_dirs == ("/data/a", "/data/b")
    assert c.metadata_log_dir == "/data/a"
    assert c.quorum == QuorumConfig()
    assert c.max_bytes_between_snapshots == 20971520
    assert c.metadata_log_segment_bytes == 1073741824
    assert c.log_level == "INFO"
    assert c.properties == VALID
    assert c.warnings == ()
    assert c.voter_addresses() == {1: "127.0.0.1:9093", 2: "127.0.0.1:9094", 3: "127.0.0.1:9095"}


def test_every_setting_can_be_given():
    c = config(**{
        "metadata.log.dir": "/meta",
        "controller.quorum.election.timeout.ms": "500",
        "controller.quorum.fetch.timeout.ms": 900,
        "controller.quorum.election.backoff.max.ms": 300,
        "controller.quorum.request.timeout.ms": 700,
        "controller.quorum.append.linger.ms": 0,
        "controller.quorum.retry.backoff.ms": 5,
        "metadata.log.max.record.bytes.between.snapshots": 4096,
        "metadata.log.segment.bytes": 1 << 20,
        "kraftlog.log.level": "warn",
        "kraftlog.log.logger.levels": "broker.transactions=debug, broker.txn_markers=ERROR",
    })
    assert c.metadata_log_dir == "/meta"
    assert c.quorum == QuorumConfig(election_timeout_ms=500, fetch_timeout_ms=900, election_backoff_max_ms=300,
                                    request_timeout_ms=700, append_linger_ms=0, retry_backoff_ms=5)
    assert (c.max_bytes_between_snapshots, c.metadata_log_segment_bytes) == (4096, 1 << 20)
    assert c.log_level == "WARNING"
    assert c.logger_levels == (("broker.transactions", "DEBUG"), ("broker.txn_markers", "ERROR"))


def test_yaml_lists_and_texts_are_accepted_where_kafka_takes_comma_lists():
    c = config(node__id="2", process__roles=["controller"], log__dirs=["/x", "/y"],
               controller__quorum__voters=["1@127.0.0.1:9093", "2@127.0.0.1:9094"],
               listeners=["CONTROLLER://127.0.0.1:9094"])
    assert c.node_id == 2 and c.log_dirs == ("/x", "/y") and c.voters[2] == ("127.0.0.1", 9094)


def test_kafkas_single_log_dir_serves_when_log_dirs_is_absent():
    assert config(log__dirs=None, log__dir="/only").log_dirs == ("/only",)


def test_listener_names_are_case_insensitive_and_wildcards_match_by_port():
    c = config(listeners="controller://:9093")
    assert c.controller_endpoint() == Endpoint("CONTROLLER", "", 9093)
    assert c.controller_endpoint().address == "0.0.0.0:9093"
    assert config(listeners="CONTROLLER://0.0.0.0:9093").controller_endpoint().port == 9093


def test_ipv6_hosts_in_brackets():
    c = config(controller__quorum__voters="1@[::1]:9093,2@[::1]:9094", listeners="CONTROLLER://[::1]:9093")
    assert c.voters == {1: ("::1", 9093), 2: ("::1", 9094)}
    assert c.voter_addresses()[2] == "[::1]:9094"
    assert str(c.controller_endpoint()) == "CONTROLLER://[::1]:9093"


def test_the_first_defined_controller_listener_name_is_the_controller_endpoint():
    c = config(controller__listener__names="QUORUM,CONTROLLER",
               listeners="CONTROLLER://127.0.0.1:9093")
    assert c.controller_endpoint().name == "CONTROLLER"


def test_unknown_properties_are_warnings_not_errors():
    c = config(**{"listener.security.protocol.map": "CONTROLLER:PLAINTEXT", "ssl.client.auth": "none",
                  "controller.quorum.elektion.timeout.ms": 5, "sasl.kerberos.service.name": "kafka"})
    assert c.warnings == (
        "unknown or unsupported property controller.quorum.elektion.timeout.ms is ignored",
        "unknown or unsupported property sasl.kerberos.service.name is ignored",
    )


BAD = [
    # (property, value or None to remove it, a word the message must hold)
    ("node.id", None, "required"),
    ("node.id", -1, ">= 0"),
    ("node.id", "one", ">= 0"),
    ("node.id", True, ">= 0"),
    ("node.id", 1.5, ">= 0"),
    ("process.roles", None, "required"),
    ("process.roles", "controller,controller", "twice"),
    ("process.roles", "wizard", "unknown role"),
    ("process.roles", {"a": 1}, "comma-separated"),
    ("cluster.id", None, "required"),
    ("cluster.id", 12345, "quote it"),
    ("cluster.id", "", "letters"),
    ("cluster.id", "has space", "letters"),
    ("controller.quorum.voters", None, "required"),
    ("controller.quorum.voters", "1@127.0.0.1", "HOST:PORT"),
    ("controller.quorum.voters", "one@127.0.0.1:9093", "ID@HOST:PORT"),
    ("controller.quorum.voters", "1@127.0.0.1:port", "port"),
    ("controller.quorum.voters", "1@127.0.0.1:70000", "port"),
    ("controller.quorum.voters", "1@:9093", "host"),
    ("controller.quorum.voters", "1@127.0.0.1:9093,1@127.0.0.1:9094", "twice"),
    ("controller.quorum.voters", "2@127.0.0.1:9094,3@127.0.0.1:9095", "node.id 1"),
    ("listeners", None, "required"),
    ("listeners", "127.0.0.1:9093", "NAME://HOST:PORT"),
    ("listeners", "CONTROLLER://127.0.0.1:9094", "voter entry"),
    ("listeners", "CONTROLLER://127.0.0.2:9093", "voter entry"),
    ("listeners", "CONTROLLER://127.0.0.1:9093,CONTROLLER://127.0.0.1:9096", "twice"),
    ("listeners", "CONTROLLER://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9093", "twice"),
    ("listeners", "CONTROLLER://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092", "controller-only"),
    ("listeners", "CON TROLLER://127.0.0.1:9093", "listener name"),
    ("controller.listener.names", "QUORUM", "none of QUORUM"),
    ("controller.listener.names", "BAD-NAME", "listener name"),
    ("log.dirs", None, "required"),
    ("log.dirs", [], "required"),
    ("log.dirs", 5, "comma-separated"),
    ("metadata.log.dir", 5, "directory"),
    ("controller.quorum.election.timeout.ms", 0, ">= 1"),
    ("controller.quorum.fetch.timeout.ms", "soon", ">= 1"),
    ("controller.quorum.retry.backoff.ms", -1, ">= 0"),
    ("controller.quorum.append.linger.ms", "1.5", ">= 0"),
    ("metadata.log.max.record.bytes.between.snapshots", 0, ">= 1"),
    ("metadata.log.segment.bytes", "big", ">= 1"),
    ("kraftlog.log.level", "LOUD", "DEBUG"),
    ("kraftlog.log.level", 10, "DEBUG"),
    ("kraftlog.log.logger.levels", "broker.transactions", "NAME=LEVEL"),
    ("kraftlog.log.logger.levels", "broker..x=INFO", "NAME=LEVEL"),
    ("kraftlog.log.logger.levels", "broker=LOUD", "DEBUG"),
    ("kraftlog.log.logger.levels", 5, "NAME=LEVEL"),
    ("kraftlog.event.loop", "trio", "asyncio, uvloop"),
    ("kraftlog.event.loop", "", "asyncio, uvloop"),
    ("kraftlog.event.loop", ["uvloop"], "asyncio, uvloop"),
]


@pytest.mark.parametrize("key, value, words", BAD, ids=[f"{k}={v!r}" for k, v, _ in BAD])
def test_each_bad_property_is_named_in_one_line(key, value, words):
    with pytest.raises(InvalidConfigError) as caught:
        ServerConfig.from_mapping(changed({key: value}))
    message = str(caught.value)
    assert message.startswith(f"INVALID_CONFIG: {key}: "), message
    assert words in message and "\n" not in message


def test_the_event_loop_is_asyncio_unless_uvloop_is_asked_for(monkeypatch):
    from kraftlog_server.server import StartupError, loop_factory
    assert config().event_loop == "asyncio" and loop_factory(config()) is None
    uv = config(kraftlog__event__loop="uvloop")
    assert uv.event_loop == "uvloop"
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if not installed
    with pytest.raises(StartupError, match="uvloop, which is not installed"):
        loop_factory(uv)


def test_load_reads_yaml_and_names_the_file(tmp_path):
    path = tmp_path / "server.yaml"
    path.write_text("node.id: 1\nprocess.roles: [controller]\ncluster.id: abc\n"
                    "controller.quorum.voters: 1@127.0.0.1:9093\nlisteners: CONTROLLER://127.0.0.1:9093\n"
                    "log.dirs: /data\nsome.kafka.setting: x\n")
    loaded = ServerConfig.load(path)
    assert loaded.node_id == 1 and loaded.voters == {1: ("127.0.0.1", 9093)}
    assert loaded.warnings == ("unknown or unsupported property some.kafka.setting is ignored",)

    path.write_text(path.read_text().replace("node.id: 1", "node.id: x"))
    with pytest.raises(InvalidConfigError, match=f"^INVALID_CONFIG: {path}: node.id: "):
        ServerConfig.load(path)


@pytest.mark.parametrize("text, words", [
    ("node.id: [1\n", "line 2: not valid YAML"),
    ("- node.id: 1\n", "mapping"),
    ("", "node.id: is required"),
    ("1: x\nnode.id: 1\n", "property names are strings"),
])
def test_files_that_are_not_a_property_mapping(tmp_path, text, words):
    path = tmp_path / "server.yaml"
    path.write_text(text)
    with pytest.raises(InvalidConfigError) as caught:
        ServerConfig.load(path)
    assert words in str(caught.value) and str(path) in str(caught.value)
