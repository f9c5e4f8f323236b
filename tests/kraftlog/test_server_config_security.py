"""listener.security.protocol.map and ssl.* in a node's configuration."""
import pytest

from kafka_protocol.errors import InvalidConfigError
from kraftlog_server.server_config import ServerConfig
from security.listeners import SecurityProtocol

SECURE = {
    "node.id": 1,
    "process.roles": "broker,controller",
    "cluster.id": "MkU3OEVBNTcwNTJENDM2Qk",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "listeners": "SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
    "listener.security.protocol.map": "SSL:SSL,CONTROLLER:SSL",
    "inter.broker.listener.name": "SSL",
    "log.dirs": "/data/n1",
    "ssl.keystore.location": "/certs/n1.pem",
    "ssl.truststore.location": "/certs/ca.pem",
    "ssl.client.auth": "required",
    "listener.name.controller.ssl.keystore.location": "/certs/n1-controller.pem",
}


def config(**changes) -> ServerConfig:
    props = {**SECURE, **{k.replace("__", "."): v for k, v in changes.items()}}
    return ServerConfig.from_mapping({k: v for k, v in props.items() if v is not None})


def test_each_listener_gets_its_protocol_and_ssl_settings():
    c = config()
    assert c.listener_protocol("SSL") is SecurityProtocol.SSL
    assert c.listener_protocol("CONTROLLER") is SecurityProtocol.SSL
    assert c.listener_ssl["CONTROLLER"].keystore_location == "/certs/n1-controller.pem"
    assert c.client_ssl("SSL").keystore_location == "/certs/n1.pem"
    assert c.controller_client_ssl is c.listener_ssl["CONTROLLER"]
    assert not c.warnings


def test_existing_plaintext_clusters_need_no_map():
    c = config(listeners="PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
               listener__security__protocol__map=None, inter__broker__listener__name=None)
    assert set(c.security_protocols.values()) == {SecurityProtocol.PLAINTEXT}
    assert c.listener_ssl == {} and c.controller_client_ssl is None


@pytest.mark.parametrize("changes, words", [
    ({"listener__security__protocol__map": "SSL:SSL"}, "no security protocol is defined for listener CONTROLLER"),
    ({"listener__security__protocol__map": "SSL:TLS,CONTROLLER:SSL"}, "unknown security protocol"),
    ({"ssl__keystore__location": None}, "ssl.keystore.location: is required for the SSL listener SSL"),
    ({"ssl__truststore__location": None}, "ssl.truststore.location: is required for listener"),
    ({"listener__name__ssl__ssl__keystore__type": "JKS"}, "listener.name.ssl.ssl.keystore.type"),
])
def test_bad_security_settings_are_named(changes, words):
    with pytest.raises(InvalidConfigError, match=words.replace(".", r"\.")):
        config(**changes)


def test_a_key_password_stays_out_of_the_configs_repr():
    c = config(ssl__key__password="hunter2-secret")
    assert c.listener_ssl["SSL"].key_password == "hunter2-secret"
    assert "hunter2-secret" not in repr(c)
