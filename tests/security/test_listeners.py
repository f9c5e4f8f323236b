"""listener.security.protocol.map and the protocol of a listener, as in Kafka."""
import pytest

from kafka_protocol.errors import InvalidConfigError
from security.listeners import (DEFAULT_PROTOCOL_MAP, SecurityProtocol, effective_protocol_map, listener_protocol,
                                parse_security_protocol_map)


def test_protocol_flags():
    assert [p.uses_tls for p in SecurityProtocol] == [False, True, False, True]
    assert [p.uses_sasl for p in SecurityProtocol] == [False, False, True, True]


def test_the_map_parses_names_case_insensitively():
    m = parse_security_protocol_map("internal:SSL, EXTERNAL:sasl_ssl,CONTROLLER:PLAINTEXT")
    assert m == {"INTERNAL": SecurityProtocol.SSL, "EXTERNAL": SecurityProtocol.SASL_SSL,
                 "CONTROLLER": SecurityProtocol.PLAINTEXT}
    assert parse_security_protocol_map(["A:SSL"]) == {"A": SecurityProtocol.SSL}


@pytest.mark.parametrize("text, words", [
    ("A:TLS", "unknown security protocol"), ("A", "not NAME:PROTOCOL"), (":SSL", "not NAME:PROTOCOL"),
    ("A:SSL,a:PLAINTEXT", "mapped twice"), (5, "expected NAME:PROTOCOL"),
])
def test_a_bad_map_is_invalid_config(text, words):
    with pytest.raises(InvalidConfigError, match=words):
        parse_security_protocol_map(text)


def test_kraft_maps_an_unmapped_controller_listener_to_plaintext_when_nothing_is_secure():
    m = effective_protocol_map({}, ["PLAINTEXT", "CONTROLLER"], ["CONTROLLER"])
    assert listener_protocol("CONTROLLER", m) == SecurityProtocol.PLAINTEXT
    assert listener_protocol("ssl", m) == SecurityProtocol.SSL


def test_no_controller_fallback_once_a_listener_is_ssl_or_an_explicit_map_is_given():
    m = effective_protocol_map({}, ["SSL", "CONTROLLER"], ["CONTROLLER"])
    with pytest.raises(InvalidConfigError, match="no security protocol is defined for listener CONTROLLER"):
        listener_protocol("CONTROLLER", m)
    m = effective_protocol_map({"listener.security.protocol.map": "CONTROLLER:SSL"}, ["CONTROLLER"], ["CONTROLLER"])
    assert m == {"CONTROLLER": SecurityProtocol.SSL}
    assert set(DEFAULT_PROTOCOL_MAP) == {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}
