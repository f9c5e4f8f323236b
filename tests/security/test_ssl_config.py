"""ssl.* settings of a listener or client: Kafka's names, PEM only, secrets kept out of errors."""
import pytest
import trustme
from cryptography.hazmat.primitives import serialization

from kafka_protocol.errors import InvalidConfigError
from security.ssl_config import SslConfig, is_ssl_key, keystore_material, truststore_material

SECRET = "s3cret-Passw0rd"


@pytest.fixture(scope="module")
def ca():
    return trustme.CA()


@pytest.fixture(scope="module")
def leaf(ca):
    return ca.issue_cert("node1.example")


def test_defaults_are_pem_no_client_auth_and_host_name_checks():
    c = SslConfig.from_properties({})
    assert (c.client_auth, c.endpoint_identification, c.has_keystore, c.has_truststore) == ("none", True, False, False)


def test_listener_prefixed_settings_override_the_plain_ones():
    props = {"ssl.client.auth": "requested", "ssl.keystore.location": "/a.pem",
             "listener.name.controller.ssl.client.auth": "required",
             "listener.name.controller.ssl.keystore.location": "/c.pem",
             "listener.name.other.ssl.client.auth": "none"}
    c = SslConfig.from_properties(props, "CONTROLLER")
    assert (c.client_auth, c.keystore_location) == ("required", "/c.pem")
    assert SslConfig.from_properties(props, "BROKER").client_auth == "requested"
    assert is_ssl_key("listener.name.controller.ssl.client.auth") and not is_ssl_key("listener.name.x.y")


@pytest.mark.parametrize("props, words", [
    ({"ssl.keystore.type": "JKS"}, "ssl.keystore.type: only PEM"),
    ({"ssl.truststore.type": "PKCS12"}, "ssl.truststore.type: only PEM"),
    ({"ssl.client.auth": "sometimes"}, "ssl.client.auth: expected one of"),
    ({"ssl.endpoint.identification.algorithm": "ldap"}, "algorithm: expected one of"),
    ({"ssl.keystore.password": SECRET}, "cannot be used with PEM"),
    ({"ssl.keystore.key": SECRET}, "needs ssl.keystore.certificate.chain"),
    ({"ssl.keystore.location": "/a", "ssl.keystore.key": SECRET, "ssl.keystore.certificate.chain": "x"},
     "not both"),
    ({"ssl.truststore.location": "/a", "ssl.truststore.certificates": "x"}, "not both"),
    ({"listener.name.ssl.ssl.keystore.type": "JKS"}, "listener.name.ssl.ssl.keystore.type"),
])
def test_bad_settings_are_invalid_config_without_secrets(props, words):
    with pytest.raises(InvalidConfigError, match=words.replace(".", r"\.")) as err:
        SslConfig.from_properties(props, "SSL")
    assert SECRET not in str(err.value)


def test_repr_hides_the_key_and_password(leaf):
    key = leaf.private_key_pem.bytes().decode()
    c = SslConfig.from_properties({"ssl.keystore.key": key, "ssl.key.password": SECRET,
                                   "ssl.keystore.certificate.chain": leaf.cert_chain_pems[0].bytes().decode()})
    assert SECRET not in repr(c) and "PRIVATE KEY" not in repr(c)


def test_a_keystore_holds_a_key_and_its_chain(leaf, ca):
    pem = leaf.private_key_and_cert_chain_pem.bytes()
    material = keystore_material(pem, None)
    assert material.private_key.startswith(b"-----BEGIN PRIVATE KEY-----")
    assert material.certificate_chain.startswith(b"-----BEGIN CERTIFICATE-----")
    assert "PRIVATE" not in repr(material)
    assert truststore_material(ca.cert_pem.bytes()).count(b"BEGIN CERTIFICATE") == 1


def test_an_encrypted_key_needs_the_right_password(leaf):
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
    encrypted = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(SECRET.encode()))
    pem = encrypted + leaf.cert_chain_pems[0].bytes()
    assert keystore_material(pem, SECRET).private_key.startswith(b"-----BEGIN PRIVATE KEY-----")
    for password, words in ((None, "is required"), ("wrong-" + SECRET, "cannot be read")):
        with pytest.raises(InvalidConfigError, match=words) as err:
            keystore_material(pem, password)
        assert SECRET not in str(err.value)


def test_a_keystore_whose_certificate_is_not_the_keys_is_refused(ca, leaf):
    other = ca.issue_cert("other.example")
    pem = leaf.private_key_pem.bytes() + other.cert_chain_pems[0].bytes()
    with pytest.raises(InvalidConfigError, match="not the private key's"):
        keystore_material(pem, None)


@pytest.mark.parametrize("pem, words", [
    (b"", "exactly one PEM private key"),
    (b"-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n-----BEGIN CERTIFICATE-----\nx\n"
     b"-----END CERTIFICATE-----\n", "cannot be read"),
])
def test_garbled_keystores_are_invalid_config(pem, words):
    with pytest.raises(InvalidConfigError, match=words):
        keystore_material(pem, None)
    with pytest.raises(InvalidConfigError):
        truststore_material(pem)
