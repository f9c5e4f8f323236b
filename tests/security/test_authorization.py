"""security/authorization.py: a node's decisions for the call being served."""
from __future__ import annotations

import logging

import pytest

from kafka_protocol.errors import InvalidConfigError
from security.acl import AclBinding, AclIndex, AclOperation, AclPermissionType, PatternType, ResourceType
from security.authorization import STANDARD_AUTHORIZER, AuthorizerSettings, NodeAuthorizer
from security.principal import KafkaPrincipal
from security.request_context import RequestSession, reset_session, set_session

ALICE = KafkaPrincipal.user("alice")
ADMIN = KafkaPrincipal.user("admin")


def settings(**extra) -> AuthorizerSettings:
    return AuthorizerSettings.from_properties({"authorizer.class.name": STANDARD_AUTHORIZER,
                                               "super.users": "User:admin;User:broker-1", **extra})


def allow(principal: str, operation: AclOperation, topic: str) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, topic, PatternType.LITERAL, principal, "*", operation,
                      AclPermissionType.ALLOW)


class As:
    def __init__(self, principal: KafkaPrincipal, host: str = "10.0.0.1") -> None:
        self.session = RequestSession(principal, host, "SASL_SSL")

    def __enter__(self):
        self.token = set_session(self.session)

    def __exit__(self, *exc):
        reset_session(self.token)


def test_settings_follow_kafka_names_and_refuse_other_authorizers():
    s = settings()
    assert s.enabled and s.super_users == {ADMIN, KafkaPrincipal.user("broker-1")}
    assert not s.allow_everyone_if_no_acl_found
    assert not AuthorizerSettings.from_properties({}).enabled
    with pytest.raises(InvalidConfigError, match="authorizer.class.name"):
        AuthorizerSettings.from_properties({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    with pytest.raises(InvalidConfigError, match="super.users"):
        AuthorizerSettings.from_properties({"super.users": "admin"})


def test_without_an_authorizer_everything_is_allowed():
    node = NodeAuthorizer(AuthorizerSettings())
    with As(ALICE):
        assert node.allows(AclOperation.DELETE, ResourceType.TOPIC, "t")
        assert node.may_init_producer_id()


def test_before_the_acls_load_only_super_users_pass():
    node = NodeAuthorizer(settings())
    with As(ALICE):
        assert not node.allows(AclOperation.DESCRIBE, ResourceType.TOPIC, "t")
    with As(ADMIN):
        assert node.allows(AclOperation.DELETE, ResourceType.TOPIC, "t")
    assert node.allows(AclOperation.DELETE, ResourceType.TOPIC, "t")  # no session: the node itself


def test_decisions_follow_the_loaded_acls_and_are_counted():
    node = NodeAuthorizer(settings())
    node.load_acls(AclIndex([allow("User:alice", AclOperation.WRITE, "orders")]))
    with As(ALICE):
        assert node.allows(AclOperation.WRITE, ResourceType.TOPIC, "orders")
        assert node.allows(AclOperation.DESCRIBE, ResourceType.TOPIC, "orders")  # implied by Write
        assert node.denied(AclOperation.WRITE, ResourceType.TOPIC, ["orders", "audit"]) == {"audit"}
        assert node.may_init_producer_id()  # Write on some topic
    with As(KafkaPrincipal.user("bob")):
        assert not node.may_init_producer_id()
    assert node.decisions[("WRITE", "TOPIC", "allowed")] == 2
    assert node.decisions[("WRITE", "TOPIC", "denied")] == 1
    node.load_acls(AclIndex())
    with As(ALICE):
        assert not node.allows(AclOperation.WRITE, ResourceType.TOPIC, "orders")


def test_the_decision_log_names_who_what_and_the_result(caplog):
    node = NodeAuthorizer(settings(**{"kraftlog.authorizer.log": "true"}))
    node.load_acls(AclIndex())
    with caplog.at_level(logging.INFO, logger="kraftlog.authorizer"), As(ALICE, "10.1.2.3"):
        node.allows(AclOperation.READ, ResourceType.TOPIC, "payroll")
    (line,) = [r.getMessage() for r in caplog.records if r.name == "kraftlog.authorizer"]
    assert "User:alice" in line and "Denied" in line and "READ" in line and "TOPIC:payroll" in line
    assert "10.1.2.3" in line


def test_node_only_services_answer_refusals_without_running_the_handler():
    import asyncio
    from types import SimpleNamespace

    from kafka_protocol.errors import Errors
    from kraftlog_api import quorum_pb2 as qpb
    from security.authorization import require_cluster_operations

    ran = []

    async def vote(request, context):
        ran.append("Vote")
        return qpb.VoteResponse()

    async def describe(request, context):
        ran.append("DescribeQuorum")
        return qpb.DescribeQuorumResponse()

    node = NodeAuthorizer(settings())
    node.load_acls(AclIndex([AclBinding(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, "User:alice",
                                        "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW)]))
    guarded = require_cluster_operations(SimpleNamespace(Vote=vote, DescribeQuorum=describe),
                                         qpb.DESCRIPTOR.services_by_name["KRaftQuorum"], node,
                                         {"DescribeQuorum": AclOperation.DESCRIBE})
    with As(ALICE):
        refused = asyncio.run(guarded.Vote(qpb.VoteRequest(), None))
        answered = asyncio.run(guarded.DescribeQuorum(qpb.DescribeQuorumRequest(), None))
    assert refused.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert answered.error_code == Errors.NONE
    assert ran == ["DescribeQuorum"]
    with As(KafkaPrincipal.user("broker-1")):  # a super user: the nodes
        asyncio.run(guarded.Vote(qpb.VoteRequest(), None))
    assert ran == ["DescribeQuorum", "Vote"]
