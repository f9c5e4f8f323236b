"""CreateAcls, DeleteAcls and AlterUserScramCredentials as pure controller decisions."""
from __future__ import annotations

import pytest

from kraftlog_api import controller_pb2 as cpb
from metadata_quorum.controller import Error
from metadata_quorum.controller.result import MAX_RECORDS_PER_USER_OP
from security.acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourceType
from security.acl_proto import binding_from_proto, binding_to_proto, filter_to_proto
from security.scram_credentials import ScramMechanism, make_credential, salted_password

from .test_controller_harness import Harness, kinds

TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
Op = AclOperation
SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
SALT = b"0123456789abcdef"


def acl(name="orders", op=Op.READ, principal="User:alice", pattern=PatternType.LITERAL, rtype=TOPIC,
        permission=AclPermissionType.ALLOW, host="*") -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def create(h: Harness, *bindings: AclBinding | cpb.AclBinding) -> cpb.CreateAclsResponse:
    creations = [b if isinstance(b, cpb.AclBinding) else binding_to_proto(b) for b in bindings]
    return h.apply(h.controller.handle_create_acls(cpb.CreateAclsRequest(creations=creations)))


def delete(h: Harness, *filters: AclBindingFilter) -> cpb.DeleteAclsResponse:
    return h.apply(h.controller.handle_delete_acls(
        cpb.DeleteAclsRequest(filters=[filter_to_proto(f) for f in filters])))


def test_create_acls_writes_one_record_each_and_skips_existing():
    h = Harness()
    response = create(h, acl(), acl("pay", Op.WRITE, pattern=PatternType.PREFIXED), acl())
    assert [r.error_code for r in response.results] == [Error.NONE] * 3
    assert kinds(h.last) == ["access_control_entry"] * 2  # the repeat in one request is written once
    assert sorted(h.image.acls.values()) == sorted([acl(), acl("pay", Op.WRITE, pattern=PatternType.PREFIXED)])
    assert all(len(i) == 16 and any(i) for i in h.image.acls)
    response = create(h, acl())
    assert response.results[0].error_code == Error.NONE and h.last.records == []


def test_create_acls_refuses_each_bad_creation_on_its_own():
    h = Harness()
    unknown_op = binding_to_proto(acl())
    unknown_op.operation = 99
    unknown_type = binding_to_proto(acl())
    unknown_type.resource_type = 42
    bad = [acl(op=Op.ANY), acl(pattern=PatternType.MATCH), acl(pattern=PatternType.ANY), acl(rtype=ResourceType.ANY),
           acl(permission=AclPermissionType.ANY), acl(principal="alice"), acl(""), acl("x" * 40000),
           unknown_op, unknown_type]
    response = create(h, acl(), *bad)
    assert response.results[0].error_code == Error.NONE
    assert [r.error_code for r in response.results[1:]] == [Error.INVALID_REQUEST] * len(bad)
    messages = [r.error_message for r in response.results[1:]]
    assert messages[0] == "Invalid operation ANY" and "Invalid patternType MATCH" in messages[1]
    assert "parse principal" in messages[5] and messages[6] == "Resource name should not be empty"
    assert "Invalid operation UNKNOWN" in messages[8] and "Invalid resourceType UNKNOWN" in messages[9]
    assert len(h.image.acls) == 1


def test_delete_acls_removes_and_returns_what_each_filter_matches():
    h = Harness()
    create(h, acl(), acl("orders", Op.WRITE, "User:bob"), acl("ord", pattern=PatternType.PREFIXED),
           acl("orders", rtype=GROUP))
    response = delete(h, AclBindingFilter(TOPIC, "orders", PatternType.MATCH, principal="User:alice"),
                      AclBindingFilter(TOPIC, "orders"))
    first, second = response.filter_results
    assert sorted(binding_from_proto(b) for b in first.matching_acls) == sorted(
        [acl(), acl("ord", pattern=PatternType.PREFIXED)])
    assert sorted(binding_from_proto(b) for b in second.matching_acls) == sorted(
        [acl(), acl("orders", Op.WRITE, "User:bob")])
    assert kinds(h.last) == ["remove_access_control_entry"] * 3  # alice's literal ACL removed once
    assert list(h.image.acls.values()) == [acl("orders", rtype=GROUP)]
    empty = delete(h, AclBindingFilter(TOPIC))
    assert list(empty.filter_results[0].matching_acls) == [] and h.last.records == []


def test_delete_acls_refuses_a_filter_with_an_unknown_field():
    h = Harness()
    create(h, acl())
    response = delete(h, AclBindingFilter(operation=Op.UNKNOWN), AclBindingFilter(pattern_type=PatternType.UNKNOWN))
    assert [r.error_code for r in response.filter_results] == [Error.INVALID_REQUEST] * 2
    assert "operation" in response.filter_results[0].error_message and len(h.image.acls) == 1


def test_requests_over_the_record_cap_are_refused_whole():
    h = Harness()
    many = [acl(f"t{i}") for i in range(MAX_RECORDS_PER_USER_OP + 1)]
    response = create(h, *many)
    assert response.error_code == Error.POLICY_VIOLATION and not h.image.acls


# ---- SCRAM credentials ----

def upsertion(name="alice", mechanism=SHA512, iterations=8192, salt=SALT, password="alice-secret", salted=None):
    if salted is None:
        salted = salted_password(ScramMechanism(mechanism), password, salt, iterations)
    return cpb.AlterUserScramCredentialsRequest.Upsertion(
        name=name, mechanism=mechanism, iterations=iterations, salt=salt, salted_password=salted)


def deletion(name="alice", mechanism=SHA512):
    return cpb.AlterUserScramCredentialsRequest.Deletion(name=name, mechanism=mechanism)


def alter(h: Harness, upsertions=(), deletions=()) -> dict[str, tuple[int, str]]:
    response = h.apply(h.controller.handle_alter_user_scram_credentials(
        cpb.AlterUserScramCredentialsRequest(upsertions=list(upsertions), deletions=list(deletions))))
    return {r.user: (r.error_code, r.error_message) for r in response.results}


def test_upsert_derives_the_credential_a_password_login_would_use():
    h = Harness()
    assert alter(h, [upsertion(), upsertion(mechanism=SHA256, iterations=4096)]) == {"alice": (Error.NONE, "")}
    assert kinds(h.last) == ["user_scram_credential"] * 2
    assert h.image.scram_credential("alice", SHA512) == make_credential(SHA512, "alice-secret", 8192, salt=SALT)
    assert h.image.scram_credential("alice", SHA256).iterations == 4096
    assert alter(h, deletions=[deletion()]) == {"alice": (Error.NONE, "")}
    assert kinds(h.last) == ["remove_user_scram_credential"]
    assert h.image.scram_credential("alice", SHA512) is None and h.image.scram_credential("alice", SHA256)


@pytest.mark.parametrize("bad, error, words", [
    (upsertion(iterations=4095, salted=b"x" * 64), Error.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
    (upsertion(iterations=2**31 - 1, salted=b"x" * 64), Error.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
    (upsertion(iterations=-5, salted=b"x" * 64), Error.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
    (upsertion(name=""), Error.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
    (upsertion(name="u" * 40000), Error.UNACCEPTABLE_CREDENTIAL, "at most 32767"),
    (upsertion(salt=b"", salted=b"x" * 64), Error.UNACCEPTABLE_CREDENTIAL, "salt"),
    (upsertion(salt=b"short", salted=b"x" * 64), Error.UNACCEPTABLE_CREDENTIAL, "salt"),
    (upsertion(salted=b"x" * 32), Error.UNACCEPTABLE_CREDENTIAL, "64 bytes"),
    (upsertion(mechanism=3, salted=b"x" * 64), Error.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism 3"),
])
def test_bad_upsertions_are_refused_and_change_nothing(bad, error, words):
    h = Harness()
    [(code, message)] = alter(h, [bad]).values()
    assert code == error and words in message
    assert h.last.records == [] and not h.image.scram_credentials
    assert SALT.hex() not in message and "alice-secret" not in message


def test_delete_missing_duplicates_and_all_or_nothing_per_user():
    h = Harness()
    alter(h, [upsertion("bob")])
    results = alter(h, [upsertion("carol"), upsertion("carol"), upsertion("dave"), upsertion("erin")],
                    [deletion("alice"), deletion("bob"), deletion("erin", 0)])
    assert results["alice"][0] == Error.RESOURCE_NOT_FOUND
    assert results["bob"] == (Error.NONE, "")
    assert results["carol"][0] == Error.DUPLICATE_RESOURCE
    assert results["dave"] == (Error.NONE, "")
    assert results["erin"][0] == Error.UNSUPPORTED_SASL_MECHANISM  # and erin's good upsertion is not applied
    assert list(results) == ["alice", "bob", "erin", "carol", "dave"]  # deletions first, as the request lists them
    assert set(h.image.scram_credentials) == {("dave", SHA512)}
    # the same user and mechanism deleted and upserted in one request is a duplicate too
    assert alter(h, [upsertion("dave")], [deletion("dave")])["dave"][0] == Error.DUPLICATE_RESOURCE
