"""security.protocol, ssl.* and sasl.* of a client, secrets kept out of sight."""
import pytest

from kafka_protocol.errors import InvalidConfigError
from security.client_security import ClientSecurity
from security.listeners import SecurityProtocol

SECRET = "pa\"ss w0rd"
SCRAM = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="pa\\"ss w0rd";'


def test_plaintext_by_default_and_ssl_settings_with_ssl():
    assert ClientSecurity.from_config({}) == ClientSecurity()
    s = ClientSecurity.from_config({"security.protocol": "ssl", "ssl.truststore.location": "/ca.pem"})
    assert s.protocol is SecurityProtocol.SSL and s.ssl.truststore_location == "/ca.pem"


def test_sasl_from_jaas_or_confluent_names_with_the_password_hidden():
    a = ClientSecurity.from_config({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                    "sasl.jaas.config": SCRAM})
    b = ClientSecurity.from_config({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                    "sasl.username": "alice", "sasl.password": SECRET})
    assert a == b and (a.sasl.username, a.sasl.password) == ("alice", SECRET)
    assert SECRET not in repr(a) and "w0rd" not in repr(a)


@pytest.mark.parametrize("raw, words", [
    ({"security.protocol": "TLS"}, "unknown security protocol"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI", "sasl.username": "a", "sasl.password": SECRET},
     "not supported"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "a",
      "sasl.password": SECRET}, "only with security.protocol=SASL_SSL"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": SCRAM}, "needs .*PlainLogin"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": SCRAM[:-1]},
     "must be one `LoginModule"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "a"}, "sasl.password"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256", "sasl.password": SECRET,
      "sasl.jaas.config": SCRAM}, "not both"),
])
def test_bad_client_security_is_invalid_config_without_the_password(raw, words):
    with pytest.raises(InvalidConfigError, match=words) as err:
        ClientSecurity.from_config(raw)
    assert "w0rd" not in str(err.value)
