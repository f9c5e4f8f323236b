"""Kafka's `ssl.principal.mapping.rules` (KIP-371) and the principal of a
client certificate.

The rules are a list of `RULE:pattern/replacement/[L|U]` and `DEFAULT`,
separated by commas (Kafka's splitter; a newline also separates here, where
Kafka would silently skip a rule that only a newline ends). For a certificate
subject in RFC 2253 form, the first rule whose pattern matches the *whole*
subject gives the name: the subject with every match of the pattern replaced
(Java's `String.replaceAll`), then lower- or upper-cased for `/L` or `/U`.
`DEFAULT` gives the subject unchanged. No rule matching is an error (Kafka's
NoMatchingRule), and the connection is refused. The default rules are
`DEFAULT`.

Patterns are Java regular expressions; Python's `re` reads the ones used for
subjects (groups, classes, `.*?`, anchors) the same way. The replacement is
Java's syntax (`$1`, `\\$` for a literal `$`), translated here, with Kafka's
rule that `$N` naming a group the pattern does not have is literal text.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

from kafka_protocol.errors import InvalidConfigError

from .principal import KafkaPrincipal

if TYPE_CHECKING:
    from cryptography import x509

SSL_PRINCIPAL_MAPPING_RULES = "ssl.principal.mapping.rules"
DEFAULT_RULES = "DEFAULT"

# Groups: 1 DEFAULT, 2 pattern, 4 replacement, 6 L/U, 7 anything else.
_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*([,\n]\s*|$)")
_PARSER = re.compile(_RULE)


class NoMatchingRule(ValueError):
    """No rule of ssl.principal.mapping.rules applies to a subject."""


@dataclass(frozen=True)
class MappingRule:
    pattern: Optional[re.Pattern]  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""
    text: str = "DEFAULT"

    def apply(self, subject: str) -> Optional[str]:
        if self.pattern is None:
            return subject
        if self.pattern.fullmatch(subject) is None:
            return None
        result = self.pattern.sub(_java_replacement(self.replacement, self.pattern.groups), subject)
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result


@dataclass(frozen=True)
class PrincipalMapper:
    rules: tuple[MappingRule, ...]

    def name(self, subject: str) -> str:
        for rule in self.rules:
            name = rule.apply(subject)
            if name is not None:
                return name
        raise NoMatchingRule(f"no rule of {SSL_PRINCIPAL_MAPPING_RULES} applies to the subject {subject!r}")

    def principal(self, subject: str) -> KafkaPrincipal:
        return KafkaPrincipal.user(self.name(subject))


def parse_rules(text: Optional[str], key: str = SSL_PRINCIPAL_MAPPING_RULES) -> PrincipalMapper:
    """The rules of `text` (None: DEFAULT); a bad rule or pattern is INVALID_CONFIG."""
    if text is None:
        text = DEFAULT_RULES
    if not isinstance(text, str):
        raise InvalidConfigError(f"{key}: expected rules as text (RULE:pattern/replacement/[LU],DEFAULT), got {text!r}")
    rules = []
    for item in (m.group(1) for m in _SPLITTER.finditer(text.strip())):
        match = _PARSER.match(item)
        if match is None or match.end() != len(item):
            rest = item[match.end():] if match is not None else item
            raise InvalidConfigError(f"{key}: invalid rule {item!r} (unmatched {rest!r})")
        if match.group(1) is not None:
            rules.append(MappingRule(None))
        elif match.group(2) is not None:
            try:
                pattern = re.compile(match.group(2))
                _java_replacement(match.group(4), pattern.groups)  # refuse a bad replacement now
            except (re.error, ValueError) as exc:
                raise InvalidConfigError(f"{key}: invalid rule {item!r}: {exc}") from None
            rules.append(MappingRule(pattern, match.group(4), match.group(6), item))
        # else: an empty item, ignored as in Kafka
    return PrincipalMapper(tuple(rules))


def _java_replacement(replacement: str, groups: int) -> Callable[[re.Match], str]:
    """A function for re.sub doing what Java's Matcher.appendReplacement does
    with `replacement`: `\\x` is x, `$N` a group (Java extends N digit by digit
    while it stays a group number), `${name}` a named group; and Kafka's rule
    that a `$N` whose first digit is past the group count is literal text."""
    parts: list[tuple[bool, str | int]] = []  # (is_group, literal or group)
    i, n = 0, len(replacement)
    while i < n:
        char = replacement[i]
        if char == "\\":
            if i + 1 >= n:
                raise ValueError("character to be escaped is missing at the end of the replacement")
            parts.append((False, replacement[i + 1]))
            i += 2
        elif char == "$":
            if i + 1 < n and replacement[i + 1] == "{":
                end = replacement.find("}", i + 2)
                if end < 0:
                    raise ValueError("named group reference is missing its '}'")
                parts.append((True, replacement[i + 2:end]))
                i = end + 1
                continue
            if i + 1 >= n or not replacement[i + 1].isdigit():
                raise ValueError("'$' in the replacement must be followed by a group number (\\$ for a '$')")
            number = int(replacement[i + 1])
            if number > groups:  # Kafka escapes it: literal text
                parts.append((False, "$"))
                i += 1
                continue
            i += 2
            while i < n and replacement[i].isdigit() and number * 10 + int(replacement[i]) <= groups:
                number = number * 10 + int(replacement[i])
                i += 1
            parts.append((True, number))
        else:
            parts.append((False, char))
            i += 1

    def expand(match: re.Match) -> str:
        return "".join((match.group(p) or "") if is_group else p for is_group, p in parts)  # type: ignore[arg-type]
    return expand


def certificate_subject(certificate: x509.Certificate) -> str:
    """The subject as Kafka sees it: Java's X500Principal.getName() (RFC 2253).

    cryptography's rfc4514_string() is the same text (RDNs last-first, no
    spaces, the same escapes, keywords CN, L, ST, O, OU, C, STREET, DC, UID)
    except for attributes without an RFC 2253 keyword: cryptography writes
    `1.2.840.113549.1.9.1=alice@example.com`, Java writes the OID with the
    value's DER encoding in hex (`1.2.840.113549.1.9.1=#1611616c...`). Rules
    written for Kafka match the Java form, so that form is produced here.
    Java upper-cases nothing and sorts nothing in RFC 2253 form; the order of
    a multi-valued RDN may still differ (rare in certificates)."""
    rdns = []
    for rdn in reversed(certificate.subject.rdns):
        rdns.append("+".join(_rfc2253_attribute(attribute) for attribute in rdn))
    return ",".join(rdns)


@functools.cache
def _rfc2253_keywords() -> frozenset:
    # cryptography is imported only where certificates are read: it costs every client process 30 ms.
    from cryptography import x509
    oid = x509.NameOID
    return frozenset({oid.COMMON_NAME, oid.LOCALITY_NAME, oid.STATE_OR_PROVINCE_NAME, oid.ORGANIZATION_NAME,
                      oid.ORGANIZATIONAL_UNIT_NAME, oid.COUNTRY_NAME, oid.STREET_ADDRESS, oid.DOMAIN_COMPONENT,
                      oid.USER_ID})


def _rfc2253_attribute(attribute: x509.NameAttribute) -> str:
    if attribute.oid in _rfc2253_keywords():
        return attribute.rfc4514_string()
    value = attribute.value if isinstance(attribute.value, bytes) else attribute.value.encode(_encoding(attribute))
    tag = attribute._type.value  # the ASN.1 string type's universal tag
    return f"{attribute.oid.dotted_string}=#{_der(tag, value).hex()}"


def _encoding(attribute: x509.NameAttribute) -> str:
    name = attribute._type.name
    return {"BMPString": "utf-16-be", "UniversalString": "utf-32-be"}.get(name, "utf-8")


def _der(tag: int, content: bytes) -> bytes:
    length = len(content)
    if length < 0x80:
        return bytes([tag, length]) + content
    size = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + content


@functools.lru_cache(maxsize=1024)
def principal_from_certificate(pem: bytes, mapper: PrincipalMapper) -> KafkaPrincipal:
    """The principal of a peer's PEM certificate through the mapping rules
    (NoMatchingRule when none applies; ValueError for a certificate that is
    not PEM). Cached: the listener guard asks on every call of an mTLS
    connection (each follower fetch), and the peers' certificates are few;
    a refusal is not cached, it raises."""
    from cryptography import x509
    return mapper.principal(certificate_subject(x509.load_pem_x509_certificate(pem)))
