"""ssl.principal.mapping.rules as Kafka reads and applies them (KIP-371)."""
import re

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import given, strategies as st

from kafka_protocol.errors import InvalidConfigError
from security.principal import KafkaPrincipal
from security.principal_mapping import (NoMatchingRule, certificate_subject, parse_rules,
                                        principal_from_certificate)

KIP_371_RULES = ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
                 "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
                 "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,"
                 "DEFAULT")


@pytest.mark.parametrize("subject, name", [
    ("CN=kafka1,OU=ServiceUsers,O=Org,C=US", "kafka1"),
    ("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Palo Alto,ST=CA,C=US", "duke@javasoft"),
    ("OU=JavaSoft,O=Sun Microsystems,cn=Duke.Earl,C=US", "duke.earl"),
    ("O=no common name", "O=no common name"),
])
def test_the_first_rule_matching_the_whole_subject_names_the_principal(subject, name):
    assert parse_rules(KIP_371_RULES).name(subject) == name


def test_default_rules_keep_the_subject_and_no_match_is_an_error():
    assert parse_rules(None).principal("CN=a,O=b") == KafkaPrincipal("User", "CN=a,O=b")
    with pytest.raises(NoMatchingRule):
        parse_rules("RULE:^CN=(.*)$/$1/").name("O=only")


def test_rules_split_on_commas_and_newlines_with_spaces_around():
    mapper = parse_rules("  RULE:^CN=([^,]*),.*$/$1/U ,\n RULE:^O=(.*)$/org-$1/\nDEFAULT  ")
    assert [r.text for r in mapper.rules][2] == "DEFAULT"
    assert mapper.name("CN=bob,O=x") == "BOB"
    assert mapper.name("O=acme") == "org-acme"


def test_java_replacement_syntax():
    # an escaped slash in the pattern and replacement, $0, a literal \$,
    # and Kafka's rule that $N past the group count is literal text
    assert parse_rules(r"RULE:^CN=(a\/b)$/x\/$1/").name("CN=a/b") == "x/a/b"
    assert parse_rules(r"RULE:^CN=(.*)$/[$0]/").name("CN=z") == "[CN=z]"
    assert parse_rules(r"RULE:^CN=(.*)$/\$$1/").name("CN=z") == "$z"
    assert parse_rules(r"RULE:^CN=(.*)$/$1$2/").name("CN=z") == "z$2"
    assert parse_rules(r"RULE:^CN=(.)(.)(.)(.)(.)(.)(.)(.)(.)(.)(.)$/$11-$10/").name("CN=abcdefghijk") == "k-j"


@pytest.mark.parametrize("rules", [
    "RULE:^CN=(.*)$/$1/Lx",        # trailing text after the case flag
    "DEFAULTS",
    "nonsense",
    "RULE:^CN=(.*$/$1/",           # a pattern that does not compile
    "RULE:^CN=(.*)$/$x/",          # '$' not followed by a group
    "RULE:^CN=(.*)$/a\\/",         # replacement ends in an escape
])
def test_bad_rules_are_invalid_config(rules):
    with pytest.raises(InvalidConfigError, match="ssl.principal.mapping.rules"):
        parse_rules(rules)


SUBJECT_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30)


@given(cn=SUBJECT_TEXT, ou=SUBJECT_TEXT)
def test_a_capturing_rule_extracts_exactly_the_common_name(cn, ou):
    # a CN without ',' so the lazy group ends at the first separator
    cn = cn.replace(",", "") or "x"
    subject = f"CN={cn},OU={ou}"
    assert parse_rules("RULE:^CN=([^,]*),OU=.*$/$1/").name(subject) == cn
    assert parse_rules("RULE:^CN=([^,]*),OU=.*$/$1/U").name(subject) == cn.upper()
    assert parse_rules("DEFAULT").name(subject) == subject


@given(st.text(max_size=40))
def test_any_text_either_parses_or_is_invalid_config(text):
    try:
        mapper = parse_rules(text)
    except InvalidConfigError as exc:
        assert str(exc).startswith("INVALID_CONFIG") or "ssl.principal.mapping.rules" in str(exc)
    else:
        for rule in mapper.rules:
            assert rule.pattern is None or isinstance(rule.pattern, re.Pattern)


def _self_signed(subject: x509.Name) -> bytes:
    from cryptography.hazmat.primitives import serialization
    import datetime
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM)


def test_the_subject_is_in_javas_rfc2253_form():
    name = x509.Name([
        x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Acme, Inc."),
        x509.NameAttribute(NameOID.EMAIL_ADDRESS, "a@b"),
        x509.NameAttribute(NameOID.COMMON_NAME, "alice"),
    ])
    subject = certificate_subject(x509.load_pem_x509_certificate(_self_signed(name)))
    # last RDN first, no spaces, ',' escaped, the e-mail (no RFC 2253 keyword) as OID=#DER-hex
    assert subject == "CN=alice,1.2.840.113549.1.9.1=#1603614062,O=Acme\\, Inc.,C=US"


def test_principal_from_a_trustme_client_certificate():
    ca = trustme.CA()
    cert = ca.issue_cert("client.example", common_name="svc-orders")
    principal = principal_from_certificate(cert.cert_chain_pems[0].bytes(),
                                           parse_rules("RULE:^CN=([^,]*),.*$/$1/L"))
    assert principal == KafkaPrincipal("User", "svc-orders")
