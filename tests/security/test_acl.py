"""The ACL model and Kafka's StandardAuthorizer rules (security/acl.py)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from security.acl import (
    CLUSTER_NAME, MAX_STRING_LENGTH, AclBinding, AclBindingFilter, AclIndex, AclOperation, AclPermissionType,
    Action, Authorizer, InvalidAclError, PatternType, ResourceType, may_init_producer_id, validate_binding,
)

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
Op = AclOperation


def acl(name="orders", op=Op.READ, permission=ALLOW, principal="User:alice", host="*",
        pattern=LITERAL, resource_type=TOPIC) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, op, permission)


def authorizer(*bindings, **kwargs) -> Authorizer:
    return Authorizer(AclIndex(bindings), **kwargs)


def can(auth, op, name="orders", principal="User:alice", host="10.0.0.1", resource_type=TOPIC) -> bool:
    return auth.authorize(principal, host, Action(op, resource_type, name))


def test_kafka_codes():
    assert [(m.name, m.value) for m in ResourceType] == [
        ("UNKNOWN", 0), ("ANY", 1), ("TOPIC", 2), ("GROUP", 3), ("CLUSTER", 4), ("TRANSACTIONAL_ID", 5),
        ("DELEGATION_TOKEN", 6), ("USER", 7)]
    assert [(m.name, m.value) for m in AclOperation] == [
        ("UNKNOWN", 0), ("ANY", 1), ("ALL", 2), ("READ", 3), ("WRITE", 4), ("CREATE", 5), ("DELETE", 6),
        ("ALTER", 7), ("DESCRIBE", 8), ("CLUSTER_ACTION", 9), ("DESCRIBE_CONFIGS", 10), ("ALTER_CONFIGS", 11),
        ("IDEMPOTENT_WRITE", 12)]
    assert [(m.name, m.value) for m in AclPermissionType] == [("UNKNOWN", 0), ("ANY", 1), ("DENY", 2), ("ALLOW", 3)]
    assert [(m.name, m.value) for m in PatternType] == [
        ("UNKNOWN", 0), ("ANY", 1), ("MATCH", 2), ("LITERAL", 3), ("PREFIXED", 4)]


def test_names_parse_as_kafka_tools_write_them():
    assert AclOperation.parse("DescribeConfigs") is Op.DESCRIBE_CONFIGS
    assert AclOperation.parse("IDEMPOTENT_WRITE") is Op.IDEMPOTENT_WRITE
    assert AclOperation.parse("read") is Op.READ
    assert PatternType.parse("prefixed") is PREFIXED
    assert ResourceType.parse("TransactionalId") is ResourceType.TRANSACTIONAL_ID
    assert Op.CLUSTER_ACTION.display == "ClusterAction"
    with pytest.raises(ValueError, match="unknown AclOperation 'Fly'"):
        AclOperation.parse("Fly")
    assert AclOperation.from_code(99) is Op.UNKNOWN and ResourceType.from_code(-1) is ResourceType.UNKNOWN


def test_literal_allow_and_default_deny():
    auth = authorizer(acl())
    assert can(auth, Op.READ)
    assert not can(auth, Op.WRITE)
    assert not can(auth, Op.READ, principal="User:bob")
    assert not can(auth, Op.READ, name="orders2")  # no ACL names it, no allow.everyone: denied


def test_deny_beats_allow_whatever_the_order_and_pattern():
    auth = authorizer(acl(op=Op.ALL), acl("ord", Op.READ, DENY, pattern=PREFIXED))
    assert not can(auth, Op.READ)
    assert can(auth, Op.WRITE)
    auth = authorizer(acl("*", Op.READ, principal="User:*"), acl(op=Op.READ, permission=DENY, host="10.0.0.1"))
    assert not can(auth, Op.READ)
    assert can(auth, Op.READ, host="10.0.0.2")
    assert can(auth, Op.READ, principal="User:bob")


@pytest.mark.parametrize("granted", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER])
def test_allow_implies_describe(granted):
    auth = authorizer(acl(op=granted))
    assert can(auth, Op.DESCRIBE)
    assert not can(auth, Op.DESCRIBE_CONFIGS)


def test_alter_configs_implies_describe_configs_and_nothing_else():
    auth = authorizer(acl(op=Op.ALTER_CONFIGS))
    assert can(auth, Op.DESCRIBE_CONFIGS)
    assert not can(auth, Op.DESCRIBE)
    assert not can(authorizer(acl(op=Op.CREATE)), Op.DESCRIBE)


def test_deny_implies_nothing():
    auth = authorizer(acl(op=Op.DESCRIBE), acl(op=Op.READ, permission=DENY))
    assert can(auth, Op.DESCRIBE)  # DENY Read does not deny Describe
    auth = authorizer(acl(op=Op.DESCRIBE_CONFIGS), acl(op=Op.ALTER_CONFIGS, permission=DENY))
    assert can(auth, Op.DESCRIBE_CONFIGS)


def test_all_matches_every_operation_both_ways():
    auth = authorizer(acl(op=Op.ALL))
    assert all(can(auth, op) for op in Op if op.value > 1)
    auth = authorizer(acl(op=Op.ALL), acl(op=Op.ALL, permission=DENY, principal="User:*", host="10.0.0.9"))
    assert not can(auth, Op.READ, host="10.0.0.9")
    assert can(auth, Op.READ, host="10.0.0.8")


def test_wildcards_principal_host_and_resource():
    auth = authorizer(acl("*", Op.WRITE, principal="User:*"))
    assert can(auth, Op.WRITE, name="anything", principal="User:zed", host="1.2.3.4")
    assert not can(auth, Op.WRITE, name="anything", resource_type=GROUP)  # only its own type
    host_bound = authorizer(acl(host="10.0.0.1"))
    assert can(host_bound, Op.READ, host="10.0.0.1") and not can(host_bound, Op.READ, host="10.0.0.2")


def test_prefixed():
    auth = authorizer(acl("pay", Op.READ, pattern=PREFIXED))
    assert can(auth, Op.READ, name="pay")
    assert can(auth, Op.READ, name="payments")
    assert not can(auth, Op.READ, name="pa")
    assert not can(auth, Op.READ, name="repay")


def test_allow_everyone_only_when_no_acl_names_the_resource():
    auth = authorizer(acl(principal="User:bob"), allow_everyone_if_no_acl_found=True)
    assert can(auth, Op.WRITE, name="other")  # nothing names it
    assert not can(auth, Op.READ)  # an ACL names it, though not for alice: denied
    prefixed = authorizer(acl("ord", Op.READ, principal="User:bob", pattern=PREFIXED),
                          allow_everyone_if_no_acl_found=True)
    assert not can(prefixed, Op.READ, name="orders")
    assert can(prefixed, Op.READ, name="other")


def test_super_users_are_always_allowed():
    auth = authorizer(acl(op=Op.ALL, permission=DENY, principal="User:*"), super_users=["User:admin"])
    assert can(auth, Op.DELETE, principal="User:admin")
    assert not can(auth, Op.DELETE, principal="User:alice")
    assert auth.is_super_user("User:admin") and not auth.is_super_user("User:alice")


def test_with_acls_keeps_settings():
    auth = Authorizer(super_users=["User:admin"], allow_everyone_if_no_acl_found=True)
    assert can(auth, Op.READ)
    newer = auth.with_acls(AclIndex([acl(principal="User:bob")]))
    assert not can(newer, Op.READ) and can(newer, Op.READ, principal="User:admin")


def test_init_producer_id_rule():
    nobody = authorizer(acl("orders", Op.READ))
    assert not may_init_producer_id(nobody, "User:alice", "h")
    assert may_init_producer_id(authorizer(acl(CLUSTER_NAME, Op.IDEMPOTENT_WRITE, resource_type=CLUSTER)),
                                "User:alice", "h")
    assert may_init_producer_id(authorizer(acl("orders", Op.WRITE)), "User:alice", "h")
    assert may_init_producer_id(authorizer(acl("ord", Op.WRITE, pattern=PREFIXED)), "User:alice", "h")
    # a literal write dominated by a prefixed deny of a prefix of it
    dominated = authorizer(acl("orders", Op.WRITE), acl("or", Op.WRITE, DENY, pattern=PREFIXED))
    assert not may_init_producer_id(dominated, "User:alice", "h")
    # a literal deny does not dominate a prefixed allow: other names stay writable
    assert may_init_producer_id(authorizer(acl("ord", Op.WRITE, pattern=PREFIXED), acl("ord", Op.WRITE, DENY)),
                                "User:alice", "h")
    assert not may_init_producer_id(authorizer(acl("orders", Op.WRITE), acl("*", Op.WRITE, DENY)),
                                    "User:alice", "h")
    assert may_init_producer_id(authorizer(acl("*", Op.WRITE, principal="User:*")), "User:zed", "h")
    assert may_init_producer_id(authorizer(super_users=["User:alice"]), "User:alice", "h")
    assert may_init_producer_id(authorizer(allow_everyone_if_no_acl_found=True), "User:alice", "h")


def test_validate_binding_refuses_what_kafka_refuses():
    validate_binding(acl())
    bad = {
        "Invalid resourceType ANY": acl(resource_type=ResourceType.ANY),
        "Invalid resourceType UNKNOWN": acl(resource_type=ResourceType.UNKNOWN),
        "Invalid patternType MATCH": acl(pattern=PatternType.MATCH),
        "Invalid patternType ANY": acl(pattern=PatternType.ANY),
        "Invalid operation ANY": acl(op=Op.ANY),
        "Invalid permissionType UNKNOWN": acl(permission=AclPermissionType.UNKNOWN),
        "Resource name should not be empty": acl(""),
        "Could not parse principal": acl(principal="alice"),
        "at most 32767": acl("x" * (MAX_STRING_LENGTH + 1)),
    }
    for message, binding in bad.items():
        with pytest.raises(InvalidAclError, match=message):
            validate_binding(binding)


def test_filters_any_and_match():
    literal, star, prefixed = acl("orders"), acl("*", Op.WRITE), acl("ord", pattern=PREFIXED, principal="User:bob")
    group = acl("orders", resource_type=GROUP)
    index = AclIndex([literal, star, prefixed, group])
    assert index.matching(AclBindingFilter()) == sorted([literal, star, prefixed, group])
    assert index.matching(AclBindingFilter(TOPIC, "orders")) == [literal]  # ANY: exact name
    assert set(index.matching(AclBindingFilter(TOPIC, "orders", PatternType.MATCH))) == {literal, star, prefixed}
    assert index.matching(AclBindingFilter(TOPIC, "ord", PREFIXED)) == [prefixed]
    assert index.matching(AclBindingFilter(TOPIC, "orders", PREFIXED)) == []
    assert index.matching(AclBindingFilter(principal="User:bob")) == [prefixed]
    assert index.matching(AclBindingFilter(operation=Op.WRITE)) == [star]
    assert index.matching(AclBindingFilter(permission_type=DENY)) == []
    assert AclBindingFilter(pattern_type=PatternType.UNKNOWN).unknown_field() == "pattern_type"
    assert AclBindingFilter().unknown_field() is None


def test_binding_text_is_kafkas():
    assert str(acl()) == ("(pattern=ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL), "
                          "entry=(principal=User:alice, host=*, operation=READ, permissionType=ALLOW))")


# ---- against a naive reference: every ACL scanned, Kafka's rules as written ----

def naive_authorize(bindings, super_users, allow_everyone, principal, host, op, rtype, name) -> bool:
    if principal in super_users:
        return True

    def pattern_applies(b):
        if b.resource_type != rtype:
            return False
        if b.pattern_type is LITERAL:
            return b.resource_name == name or b.resource_name == "*"
        return name.startswith(b.resource_name)

    applicable = [b for b in bindings if pattern_applies(b)]
    if not applicable:
        return allow_everyone
    mine = [b for b in applicable if b.principal in (principal, "User:*") and b.host in (host, "*")]
    if any(b.permission_type is DENY and b.operation in (op, Op.ALL) for b in mine):
        return False
    implied = {Op.DESCRIBE: {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}, Op.DESCRIBE_CONFIGS: {Op.ALTER_CONFIGS}}
    return any(b.permission_type is ALLOW and (b.operation in (op, Op.ALL) or b.operation in implied.get(op, ()))
               for b in mine)


NAMES = st.sampled_from(["a", "ab", "abc", "b", "*", "ba"])
PRINCIPALS = st.sampled_from(["User:alice", "User:bob", "User:*"])
HOSTS = st.sampled_from(["*", "h1", "h2"])
OPS = st.sampled_from([op for op in Op if op.value > 1])
BINDINGS = st.builds(AclBinding, st.sampled_from([TOPIC, GROUP]), NAMES, st.sampled_from([LITERAL, PREFIXED]),
                     PRINCIPALS, HOSTS, OPS, st.sampled_from([ALLOW, DENY]))


@settings(max_examples=400, deadline=None)
@given(bindings=st.lists(BINDINGS, max_size=8), allow_everyone=st.booleans(),
       principal=st.sampled_from(["User:alice", "User:bob", "User:root"]), host=st.sampled_from(["h1", "h2"]),
       op=OPS, rtype=st.sampled_from([TOPIC, GROUP]), name=st.sampled_from(["a", "ab", "abc", "b", "*", "c"]))
def test_authorizer_agrees_with_naive_reference(bindings, allow_everyone, principal, host, op, rtype, name):
    auth = Authorizer(AclIndex(bindings), super_users=["User:root"], allow_everyone_if_no_acl_found=allow_everyone)
    expected = naive_authorize(set(bindings), {"User:root"}, allow_everyone, principal, host, op, rtype, name)
    assert auth.authorize(principal, host, Action(op, rtype, name)) == expected
