"""SaslSettings.from_config: Kafka's sasl.* client properties (sasl.jaas.config
and confluent-kafka's sasl.username/sasl.password); no password in a repr or
an error."""
from __future__ import annotations

import pytest

from kafka_protocol.errors import InvalidConfigError
from security.sasl_client import PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, SaslSettings

SECRET = "pa;ss=w\"o rd"
QUOTED = SECRET.replace('"', '\\"')   # as written inside a JAAS "..." value


def test_jaas_config_for_scram_and_plain():
    scram = SaslSettings.from_config({"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config":
                                      f'{SCRAM_LOGIN_MODULE} required username="alice" password="{QUOTED}";'})
    assert (scram.mechanism, scram.username, scram.password) == ("SCRAM-SHA-512", "alice", SECRET)
    plain = SaslSettings.from_config({"sasl.mechanism": "PLAIN", "sasl.jaas.config":
                                      f"  {PLAIN_LOGIN_MODULE}  required\n username=bob password=\"x\" ; "})
    assert (plain.username, plain.password) == ("bob", "x")
    assert SECRET not in repr(scram) and "password" not in repr(scram)


def test_confluent_username_and_password():
    settings = SaslSettings.from_config({"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "carol",
                                         "sasl.password": SECRET})
    assert (settings.username, settings.password) == ("carol", SECRET)


@pytest.mark.parametrize("config, message", [
    ({"sasl.username": "u", "sasl.password": SECRET}, "GSSAPI is not supported"),
    ({"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "u"}, "needs sasl.jaas.config"),
    ({"sasl.mechanism": "PLAIN", "sasl.jaas.config": f'{SCRAM_LOGIN_MODULE} required username="u" '
                                                     f'password="{QUOTED}";'}, "needs " + PLAIN_LOGIN_MODULE),
    ({"sasl.mechanism": "PLAIN", "sasl.jaas.config": f'{PLAIN_LOGIN_MODULE} required username="u" '
                                                     f'password="{QUOTED}"'}, "must be one"),
    ({"sasl.mechanism": "PLAIN", "sasl.jaas.config": f'{PLAIN_LOGIN_MODULE} maybe username="u" password="x";'},
     "must be one"),
    ({"sasl.mechanism": "PLAIN", "sasl.jaas.config": f'{PLAIN_LOGIN_MODULE} required username="u" '
                                                     f'password="{QUOTED};'}, "unclosed quote"),
    ({"sasl.mechanism": "PLAIN", "sasl.jaas.config": f'{PLAIN_LOGIN_MODULE} required username="u";'},
     "must set username"),
    ({"sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": SECRET,
      "sasl.jaas.config": f'{PLAIN_LOGIN_MODULE} required username="u" password="x";'}, "not both"),
])
def test_bad_settings_name_the_key_never_the_password(config, message):
    with pytest.raises(InvalidConfigError, match=message) as caught:
        SaslSettings.from_config(config)
    assert SECRET not in str(caught.value)
