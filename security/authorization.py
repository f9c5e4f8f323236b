"""A node's authorization of the call being served.

`NodeAuthorizer` joins the three things a decision needs: the node's
settings (`authorizer.class.name`, `super.users`,
`allow.everyone.if.no.acl.found`), the ACLs of its current metadata image
(security/acl.py's Authorizer, replaced whole on each image change that
touches ACLs) and the session of the call (security/request_context.py).

Without `authorizer.class.name` every call is allowed, as in Kafka. With it,
and before the node's image has loaded the ACLs, only super users are
allowed (Kafka's authorizer is "not ready" then). Code running outside a
served call (the broker's own writers, the controller's timers) has no
session and is the node itself: allowed.

Decisions are counted by operation, resource type and result (metrics read
`decisions`), and with `kraftlog.authorizer.log=true` each one is written to
the `kraftlog.authorizer` logger (denials at INFO, grants at DEBUG, as
Kafka's kafka.authorizer.logger): principal, host, operation, resource and
result, nothing else.
"""
from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Awaitable, Callable, Iterable, Mapping, Optional

from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor

from kafka_protocol.config_values import parse_bool
from kafka_protocol.errors import Errors, InvalidConfigError

from .acl import CLUSTER_NAME, Action, AclIndex, AclOperation, Authorizer, ResourceType, may_init_producer_id
from .principal import InvalidPrincipalError, KafkaPrincipal, parse_principal
from .request_context import RequestSession, current_session

AUTHORIZER_CLASS_NAME = "authorizer.class.name"
SUPER_USERS = "super.users"
ALLOW_EVERYONE_IF_NO_ACL_FOUND = "allow.everyone.if.no.acl.found"
AUTHORIZER_LOG = "kraftlog.authorizer.log"

# Kafka's KRaft authorizer; the only one there is here. The short name is
# accepted for configs written by hand.
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
AUTHORIZER_NAMES = (STANDARD_AUTHORIZER, "StandardAuthorizer")

decision_log = logging.getLogger("kraftlog.authorizer")


@dataclass(frozen=True)
class AuthorizerSettings:
    enabled: bool = False
    super_users: frozenset[KafkaPrincipal] = frozenset()
    allow_everyone_if_no_acl_found: bool = False
    log_decisions: bool = False

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> "AuthorizerSettings":
        name = str(props.get(AUTHORIZER_CLASS_NAME) or "").strip()
        if name and name not in AUTHORIZER_NAMES:
            raise InvalidConfigError(f"{AUTHORIZER_CLASS_NAME}: {name!r} is not an authorizer kraftlog has "
                                     f"(use {STANDARD_AUTHORIZER}, or leave it unset for none)")
        return cls(
            enabled=bool(name),
            super_users=parse_super_users(props.get(SUPER_USERS)),
            allow_everyone_if_no_acl_found=(parse_bool(ALLOW_EVERYONE_IF_NO_ACL_FOUND,
                                                       props[ALLOW_EVERYONE_IF_NO_ACL_FOUND])
                                            if ALLOW_EVERYONE_IF_NO_ACL_FOUND in props else False),
            log_decisions=parse_bool(AUTHORIZER_LOG, props[AUTHORIZER_LOG]) if AUTHORIZER_LOG in props else False,
        )


def parse_super_users(value: Any) -> frozenset[KafkaPrincipal]:
    """Kafka's `super.users`: principals separated by ';' (`User:admin;User:broker-1`)."""
    if value is None:
        return frozenset()
    items = value if isinstance(value, (list, tuple)) else str(value).split(";")
    principals = set()
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        try:
            principals.add(parse_principal(text))
        except InvalidPrincipalError as exc:
            raise InvalidConfigError(f"{SUPER_USERS}: {exc}") from None
    return frozenset(principals)


class NodeAuthorizer:
    def __init__(self, settings: AuthorizerSettings) -> None:
        self.settings = settings
        self._authorizer: Optional[Authorizer] = None  # None until the image's ACLs are loaded
        self.decisions: Counter[tuple[str, str, str]] = Counter()  # (operation, resource type, result)

    @classmethod
    def allow_all(cls) -> "NodeAuthorizer":
        """No authorizer configured: every call allowed (Kafka's default)."""
        return cls(AuthorizerSettings())

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    @property
    def ready(self) -> bool:
        return self._authorizer is not None

    def load_acls(self, acls: AclIndex) -> None:
        """The ACLs of the node's metadata image, whole: at startup once the
        image has caught up, then after each change that touches ACLs."""
        self._authorizer = Authorizer(acls, super_users=self.settings.super_users,
                                      allow_everyone_if_no_acl_found=self.settings.allow_everyone_if_no_acl_found)

    def is_super_user(self, session: Optional[RequestSession] = None) -> bool:
        session = session or current_session()
        return session is None or session.principal in self.settings.super_users

    def allows(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """Whether the current call may do `operation` on the named resource."""
        if not self.settings.enabled:
            return True
        session = current_session()
        if session is None:
            return True
        action = Action(operation, resource_type, name)
        if self._authorizer is None:
            allowed = session.principal in self.settings.super_users
        else:
            allowed = self._authorizer.authorize(session.principal, session.host, action)
        self._record(session, operation, resource_type, name, allowed)
        return allowed

    def allows_cluster(self, operation: AclOperation) -> bool:
        return self.allows(operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def denied(self, operation: AclOperation, resource_type: ResourceType, names: Iterable[str]) -> set[str]:
        """The names among `names` the call may not `operation` (each decided once)."""
        return {name for name in set(names) if not self.allows(operation, resource_type, name)}

    def may_init_producer_id(self) -> bool:
        """InitProducerId without a transactional id: IdempotentWrite on the
        cluster, or Write on any topic (clients send it unprompted)."""
        if not self.settings.enabled:
            return True
        session = current_session()
        if session is None:
            return True
        if self._authorizer is None:
            allowed = session.principal in self.settings.super_users
        else:
            allowed = may_init_producer_id(self._authorizer, session.principal, session.host)
        self._record(session, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME, allowed)
        return allowed

    def _record(self, session: RequestSession, operation: AclOperation, resource_type: ResourceType, name: str,
                allowed: bool) -> None:
        result = "allowed" if allowed else "denied"
        self.decisions[(operation.name, resource_type.name, result)] += 1
        if self.settings.log_decisions:
            decision_log.log(logging.DEBUG if allowed else logging.INFO,
                             "Principal = %s is %s operation = %s from host = %s on resource = %s:%s",
                             session.principal, "Allowed" if allowed else "Denied", operation.name,
                             session.host, resource_type.name, name)


def require_cluster_operations(servicer: Any, service: ServiceDescriptor, access: NodeAuthorizer,
                               operations: Mapping[str, AclOperation] = {},
                               default: AclOperation = AclOperation.CLUSTER_ACTION) -> SimpleNamespace:
    """`servicer` with every RPC of `service` behind an operation on the
    cluster: `operations[name]`, else `default` (ClusterAction: the RPCs
    only nodes send). A refused call is answered with the RPC's own answer
    carrying CLUSTER_AUTHORIZATION_FAILED, and its handler never runs."""
    methods = {}
    for method in service.methods:
        implementation = getattr(servicer, method.name, None)
        if implementation is not None:
            methods[method.name] = _cluster_checked(implementation, method, access,
                                                    operations.get(method.name, default))
    return SimpleNamespace(**methods)


def _cluster_checked(implementation: Callable[..., Awaitable[Any]], method: MethodDescriptor,
                     access: NodeAuthorizer, operation: AclOperation) -> Callable[..., Awaitable[Any]]:
    response_class = message_factory.GetMessageClass(method.output_type)
    if "error_code" not in response_class.DESCRIPTOR.fields_by_name:
        raise ValueError(f"{method.full_name}: its answer has no error_code to refuse with")

    async def checked(request: Any, context: Any) -> Any:
        if not access.allows_cluster(operation):
            return response_class(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED)
        return await implementation(request, context)

    return checked
