"""Kafka's ACL model and its authorizer's decisions, pure (no I/O).

An ACL binding says: principal P is ALLOWed or DENYed operation O from
host H on the resources matching a pattern (a resource type, a name, and
LITERAL or PREFIXED). The enums carry Kafka's wire codes (the same bytes
Kafka's AccessControlEntryRecord and CreateAcls carry), so records and
requests translate one to one.

`AclBindingFilter` is what DescribeAcls and DeleteAcls take: ANY (and a
missing name, principal or host) matches everything; the MATCH pattern type
matches every pattern that would apply to the named resource.

`Authorizer` decides as Kafka's StandardAuthorizer does:
- super users are always allowed;
- a matching DENY beats any ALLOW;
- an ALLOW of Read, Write, Delete or Alter also allows Describe, and an
  ALLOW of AlterConfigs also allows DescribeConfigs (a DENY implies nothing);
- ALL matches every operation; principal `User:*` and host `*` match every
  principal and host; a LITERAL `*` name matches every resource of its type;
  a PREFIXED name matches every resource whose name starts with it;
- when no ACL at all names the resource (whatever its principal, host or
  operation), `allow.everyone.if.no.acl.found` decides; otherwise: denied.

The bindings are indexed per resource type (literal names in a dict,
prefixes in a dict probed once per distinct prefix length), so a decision
looks only at the ACLs that could apply to the resource.
"""
from __future__ import annotations

import enum
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

from .principal import KafkaPrincipal, parse_principal

WILDCARD_RESOURCE = "*"
WILDCARD_HOST = "*"
WILDCARD_PRINCIPAL_TEXT = "User:*"
CLUSTER_NAME = "kafka-cluster"  # Kafka's one cluster resource name
# Kafka's protocol strings carry an int16 length: nothing longer reaches a Kafka broker.
MAX_STRING_LENGTH = 32767


class _KafkaEnum(enum.IntEnum):
    """Kafka's ACL enums: the code is the value; names parse as Kafka's tools
    take them (`Read`, `READ`, `DescribeConfigs`, `describe_configs`)."""

    @classmethod
    def parse(cls, text: str):
        wanted = str(text).replace("_", "").replace("-", "").lower()
        for member in cls:
            if member.name.replace("_", "").lower() == wanted:
                return member
        raise ValueError(f"unknown {cls.__name__} {text!r}; expected one of "
                         + ", ".join(m.display for m in cls if m.value > 1))

    @classmethod
    def from_code(cls, code: int):
        """The member with Kafka's `code`, UNKNOWN for any other (as Kafka's fromCode)."""
        try:
            return cls(code)
        except ValueError:
            return cls(0)

    @property
    def display(self) -> str:
        """Kafka's CamelCase name (`DescribeConfigs`), as kafka-acls prints and takes it."""
        return "".join(part.capitalize() for part in self.name.split("_"))


class ResourceType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class AclOperation(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class AclPermissionType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class PatternType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


# The operations Kafka's tools accept per resource type (kafka-acls refuses the others).
SUPPORTED_OPERATIONS: Mapping[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset({AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE,
                                   AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.ALTER,
                                   AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
                                   AclOperation.ALL}),
    ResourceType.GROUP: frozenset({AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE,
                                   AclOperation.ALL}),
    ResourceType.CLUSTER: frozenset({AclOperation.CREATE, AclOperation.CLUSTER_ACTION,
                                     AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
                                     AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                                     AclOperation.DESCRIBE, AclOperation.ALL}),
    ResourceType.TRANSACTIONAL_ID: frozenset({AclOperation.DESCRIBE, AclOperation.WRITE, AclOperation.ALL}),
}

# What an ALLOW of an operation also allows (never a DENY: Kafka's implication rule).
_IMPLIED_BY_ALLOW: Mapping[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset({AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                                      AclOperation.ALTER, AclOperation.DESCRIBE}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS, AclOperation.DESCRIBE_CONFIGS}),
}


class InvalidAclError(ValueError):
    """An ACL binding that Kafka's CreateAcls refuses (INVALID_REQUEST)."""


@dataclass(frozen=True, order=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def pattern_text(self) -> str:
        return (f"ResourcePattern(resourceType={self.resource_type.name}, name={self.resource_name}, "
                f"patternType={self.pattern_type.name})")

    def entry_text(self) -> str:
        return (f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
                f"permissionType={self.permission_type.name})")

    def __str__(self) -> str:
        return f"(pattern={self.pattern_text()}, entry={self.entry_text()})"


def validate_binding(binding: AclBinding) -> None:
    """Kafka's checks of a new ACL; InvalidAclError says which one failed."""
    if binding.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidAclError(f"Invalid resourceType {binding.resource_type.name}")
    if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAclError(f"Invalid patternType {binding.pattern_type.name}")
    if binding.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidAclError(f"Invalid operation {binding.operation.name}")
    if binding.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        raise InvalidAclError(f"Invalid permissionType {binding.permission_type.name}")
    if not binding.resource_name:
        raise InvalidAclError("Resource name should not be empty")
    if not binding.host:
        raise InvalidAclError("Host should not be empty (use * for every host)")
    for what, text in (("resource name", binding.resource_name), ("principal", binding.principal),
                       ("host", binding.host)):
        if len(text) > MAX_STRING_LENGTH:
            raise InvalidAclError(f"The {what} is {len(text)} characters long, at most {MAX_STRING_LENGTH} are allowed")
    try:
        parse_principal(binding.principal)
    except ValueError:
        raise InvalidAclError(
            f"Could not parse principal from `{binding.principal[:200]}` (expected TYPE:NAME, e.g. User:alice)") from None


@dataclass(frozen=True)
class AclBindingFilter:
    """DescribeAcls' and DeleteAcls' filter. None for a name, principal or
    host matches any; ANY for an enum matches any; MATCH (pattern type) with a
    name matches the patterns that apply to that resource."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: Optional[str] = None
    pattern_type: PatternType = PatternType.ANY
    principal: Optional[str] = None
    host: Optional[str] = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def unknown_field(self) -> Optional[str]:
        """The first field that is UNKNOWN (Kafka refuses such a filter), or None."""
        for name in ("resource_type", "pattern_type", "operation", "permission_type"):
            if getattr(self, name).value == 0:
                return name
        return None

    def matches(self, binding: AclBinding) -> bool:
        return self._matches_pattern(binding) and self._matches_entry(binding)

    def _matches_pattern(self, binding: AclBinding) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type != binding.resource_type:
            return False
        if (self.pattern_type not in (PatternType.ANY, PatternType.MATCH)
                and self.pattern_type != binding.pattern_type):
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type is not PatternType.MATCH:
            return self.resource_name == binding.resource_name
        if binding.pattern_type is PatternType.LITERAL:
            return binding.resource_name in (self.resource_name, WILDCARD_RESOURCE)
        return self.resource_name.startswith(binding.resource_name)

    def _matches_entry(self, binding: AclBinding) -> bool:
        return ((self.principal is None or self.principal == binding.principal)
                and (self.host is None or self.host == binding.host)
                and (self.operation is AclOperation.ANY or self.operation == binding.operation)
                and (self.permission_type is AclPermissionType.ANY
                     or self.permission_type == binding.permission_type))


MATCH_ALL = AclBindingFilter()


class _TypeIndex:
    """The ACLs of one resource type: literal names (with `*`) and prefixes."""

    __slots__ = ("literal", "prefixed", "prefix_lengths")

    def __init__(self) -> None:
        self.literal: dict[str, list[AclBinding]] = defaultdict(list)
        self.prefixed: dict[str, list[AclBinding]] = defaultdict(list)
        self.prefix_lengths: tuple[int, ...] = ()

    def applicable(self, name: str) -> Iterable[AclBinding]:
        """Every ACL whose pattern applies to the resource `name`."""
        literal = self.literal
        yield from literal.get(name, ())
        if name != WILDCARD_RESOURCE:
            yield from literal.get(WILDCARD_RESOURCE, ())
        prefixed = self.prefixed
        for length in self.prefix_lengths:
            if length > len(name):
                break
            yield from prefixed.get(name[:length], ())

    def all(self) -> Iterable[AclBinding]:
        for bindings in self.literal.values():
            yield from bindings
        for bindings in self.prefixed.values():
            yield from bindings


class AclIndex:
    """A set of ACL bindings, immutable, indexed for decisions. Build one per
    change of the ACLs (the metadata image caches it), not per request."""

    def __init__(self, bindings: Iterable[AclBinding] = ()) -> None:
        self._bindings = frozenset(bindings)
        self._by_type: dict[ResourceType, _TypeIndex] = {}
        for binding in self._bindings:
            index = self._by_type.get(binding.resource_type)
            if index is None:
                index = self._by_type[binding.resource_type] = _TypeIndex()
            if binding.pattern_type is PatternType.PREFIXED:
                index.prefixed[binding.resource_name].append(binding)
            else:
                index.literal[binding.resource_name].append(binding)
        for index in self._by_type.values():
            index.prefix_lengths = tuple(sorted({len(prefix) for prefix in index.prefixed}))

    def __len__(self) -> int:
        return len(self._bindings)

    def __iter__(self):
        return iter(self._bindings)

    def applicable(self, resource_type: ResourceType, name: str) -> Iterable[AclBinding]:
        index = self._by_type.get(resource_type)
        return index.applicable(name) if index is not None else ()

    def of_type(self, resource_type: ResourceType) -> bool:
        return resource_type in self._by_type

    def matching(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The bindings `acl_filter` matches, sorted (DescribeAcls, DeleteAcls)."""
        return sorted(b for b in self._bindings if acl_filter.matches(b))


EMPTY_INDEX = AclIndex()


@dataclass(frozen=True)
class Action:
    """One thing a request wants to do: an operation on a named resource."""

    operation: AclOperation
    resource_type: ResourceType
    resource_name: str


def _principal_matches(acl_principal: str, principal: str) -> bool:
    return acl_principal == principal or acl_principal == WILDCARD_PRINCIPAL_TEXT


def _host_matches(acl_host: str, host: str) -> bool:
    return acl_host == WILDCARD_HOST or acl_host == host


def _operation_matches(binding: AclBinding, operation: AclOperation) -> bool:
    if binding.operation is AclOperation.ALL or binding.operation == operation:
        return True
    if binding.permission_type is AclPermissionType.ALLOW:
        return binding.operation in _IMPLIED_BY_ALLOW.get(operation, ())
    return False


class Authorizer:
    """Kafka's StandardAuthorizer decision over an AclIndex (see the module docstring)."""

    def __init__(self, acls: AclIndex = EMPTY_INDEX, *, super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self.acls = acls
        self.super_users = frozenset(str(p) for p in super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found

    def with_acls(self, acls: AclIndex) -> "Authorizer":
        """The same settings over another set of ACLs (a new metadata image's)."""
        return Authorizer(acls, super_users=self.super_users,
                          allow_everyone_if_no_acl_found=self.allow_everyone_if_no_acl_found)

    def is_super_user(self, principal: KafkaPrincipal | str) -> bool:
        return str(principal) in self.super_users

    def authorize(self, principal: KafkaPrincipal | str, host: str, action: Action) -> bool:
        principal_text = str(principal)
        if principal_text in self.super_users:
            return True
        found_resource_acls = False
        allowed = False
        for binding in self.acls.applicable(action.resource_type, action.resource_name):
            found_resource_acls = True
            if not (_principal_matches(binding.principal, principal_text) and _host_matches(binding.host, host)
                    and _operation_matches(binding, action.operation)):
                continue
            if binding.permission_type is AclPermissionType.DENY:
                return False
            allowed = True
        if allowed:
            return True
        return not found_resource_acls and self.allow_everyone_if_no_acl_found

    def authorize_any_of_type(self, principal: KafkaPrincipal | str, host: str,
                              operation: AclOperation, resource_type: ResourceType) -> bool:
        """Whether `principal` may do `operation` on at least one resource of
        `resource_type`: Kafka's Authorizer.authorizeByResourceType, used for
        InitProducerId without a transactional id (see may_init_producer_id).

        As Kafka: first a decision on a made-up name (so super users and
        the no-ACL rule apply); then, among the ACLs of this principal, host
        and operation (or ALL; no implication here): a LITERAL `*` DENY
        refuses, a LITERAL `*` ALLOW allows, and otherwise some ALLOW must
        not be dominated by a DENY (the same literal name, or a PREFIXED
        DENY of a prefix of its name)."""
        if self.authorize(principal, host, Action(operation, resource_type, _UNNAMED_RESOURCE)):
            return True
        index = self.acls._by_type.get(resource_type)
        if index is None:
            return False
        principal_text = str(principal)
        literal_allows: set[str] = set()
        prefixed_allows: set[str] = set()
        literal_denies: set[str] = set()
        prefixed_denies: set[str] = set()
        wildcard_allow = False
        for binding in index.all():
            if not (_principal_matches(binding.principal, principal_text) and _host_matches(binding.host, host)
                    and binding.operation in (operation, AclOperation.ALL)):
                continue
            literal = binding.pattern_type is PatternType.LITERAL
            if binding.permission_type is AclPermissionType.DENY:
                if literal and binding.resource_name == WILDCARD_RESOURCE:
                    return False
                (literal_denies if literal else prefixed_denies).add(binding.resource_name)
            elif literal and binding.resource_name == WILDCARD_RESOURCE:
                wildcard_allow = True
            else:
                (literal_allows if literal else prefixed_allows).add(binding.resource_name)
        if wildcard_allow:
            return True
        for name, literal in [(n, True) for n in literal_allows] + [(n, False) for n in prefixed_allows]:
            if literal and name in literal_denies:
                continue
            if not any(name[:length] in prefixed_denies for length in range(1, len(name) + 1)):
                return True
        return False


# The resource name Kafka's authorizeByResourceType decides on first (any
# name no ACL is likely to carry does: only super users, `*` ACLs and the
# no-ACL rule can allow it).
_UNNAMED_RESOURCE = "hardcode"


def may_init_producer_id(authorizer: Authorizer, principal: KafkaPrincipal | str, host: str) -> bool:
    """Kafka's rule for InitProducerId without a transactional id (clients
    send it unprompted when idempotence is on): IdempotentWrite on the
    cluster, or Write on at least one topic."""
    if authorizer.authorize(principal, host, Action(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER,
                                                    CLUSTER_NAME)):
        return True
    return authorizer.authorize_any_of_type(principal, host, AclOperation.WRITE, ResourceType.TOPIC)
