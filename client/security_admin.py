"""Admin calls for ACLs and SCRAM users, like Kafka's Admin client
(describeAcls, createAcls, deleteAcls, describeUserScramCredentials,
alterUserScramCredentials). Descriptions are answered from any broker's
metadata image; changes are forwarded by the broker to the controller.

A SCRAM password never leaves this process: as Kafka's Admin client does,
the salt is drawn here and only Hi(password, salt, iterations) is sent.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Optional

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from security.acl import AclBinding, AclBindingFilter
from security.acl_proto import binding_from_proto, binding_to_proto, filter_to_proto
from security.scram_credentials import (
    DEFAULT_ITERATIONS, SALT_BYTES, ScramMechanism, check_iterations, salted_password,
)

from .admin import ask_any_broker
from .errors import KafkaError, error_for_code, error_name

if TYPE_CHECKING:
    from .cluster import Cluster



def describe_acls(cluster: "Cluster", acl_filter: AclBindingFilter) -> list[AclBinding]:
    response = ask_any_broker(cluster, "DescribeAcls", bpb.DescribeAclsRequest(filter=filter_to_proto(acl_filter)))
    return [binding_from_proto(b) for b in response.acls]


def create_acls(cluster: "Cluster", bindings: Iterable[AclBinding]) -> list[Optional[KafkaError]]:
    """Each binding's outcome, in order: None when created (or already there)."""
    request = cpb.CreateAclsRequest(creations=[binding_to_proto(b) for b in bindings])
    response = ask_any_broker(cluster, "CreateAcls", request)
    return [_error(r.error_code, r.error_message) for r in response.results]


def delete_acls(cluster: "Cluster", filters: Iterable[AclBindingFilter]) -> list[list[AclBinding]]:
    """Per filter, the ACLs it removed; a refused filter raises (nothing of the request is undone)."""
    request = cpb.DeleteAclsRequest(filters=[filter_to_proto(f) for f in filters])
    response = ask_any_broker(cluster, "DeleteAcls", request)
    removed = []
    for result in response.filter_results:
        error = _error(result.error_code, result.error_message)
        if error is not None:
            raise error
        removed.append([binding_from_proto(b) for b in result.matching_acls])
    return removed


def describe_user_scram_credentials(cluster: "Cluster", users: Iterable[str] = ()
                                    ) -> dict[str, list[tuple[ScramMechanism, int]]]:
    """User -> [(mechanism, iterations)]; every user with a credential when none is named. A named
    user without any raises RESOURCE_NOT_FOUND."""
    response = ask_any_broker(cluster, "DescribeUserScramCredentials",
                              bpb.DescribeUserScramCredentialsRequest(users=list(users)))
    described = {}
    for result in response.results:
        error = _error(result.error_code, f"user {result.user}: {result.error_message}")
        if error is not None:
            raise error
        described[result.user] = [(ScramMechanism(i.mechanism), i.iterations) for i in result.credential_infos]
    return described


@dataclass(frozen=True)
class ScramUpsertion:
    """A user's new credential for one mechanism; the password stays out of reprs."""

    user: str
    mechanism: ScramMechanism
    password: str = field(repr=False)
    iterations: int = DEFAULT_ITERATIONS


def alter_user_scram_credentials(cluster: "Cluster", upsertions: Iterable[ScramUpsertion] = (),
                                 deletions: Iterable[tuple[str, ScramMechanism]] = ()) -> dict[str, Optional[KafkaError]]:
    """User -> None when all its alterations were applied, else why none were.
    Iterations are checked here first (Kafka's 4096..16384), so a bad count
    costs no PBKDF2 and the controller's refusal is never needed for it."""
    request = cpb.AlterUserScramCredentialsRequest(
        deletions=[cpb.AlterUserScramCredentialsRequest.Deletion(name=user, mechanism=mechanism)
                   for user, mechanism in deletions])
    for upsertion in upsertions:
        check_iterations(upsertion.iterations)
        salt = os.urandom(SALT_BYTES)
        request.upsertions.add(
            name=upsertion.user, mechanism=upsertion.mechanism, iterations=upsertion.iterations, salt=salt,
            salted_password=salted_password(upsertion.mechanism, upsertion.password, salt, upsertion.iterations))
    response = ask_any_broker(cluster, "AlterUserScramCredentials", request)
    return {r.user: _error(r.error_code, f"user {r.user}: {r.error_message}") for r in response.results}


def _error(code: int, message: str) -> Optional[KafkaError]:
    return error_for_code(code, message or error_name(code)) if code else None
