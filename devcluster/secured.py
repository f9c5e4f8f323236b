"""A secured LocalCluster's pieces, shared by `chaos run --secure`, `demo
--secure` and the security bench: what the nodes are given, and one SCRAM
user a workload logs in as, with exactly the ACLs it needs.

The cluster (LocalCluster(tls=True, client_listener="SASL_SSL", properties=
secured_properties(...))): mTLS between nodes and on the controller
listeners (the launcher's certificates, each node's subject its principal,
`User:node-<id>`, a super user), a SASL_SSL listener CLIENTS on each broker
where users log in with SCRAM, and the StandardAuthorizer with no ACL
meaning no access. The launcher's admin certificate (`User:admin`, a super
user) creates the user and its ACLs.

The user's password is made here at random for the run and kept only in
memory (ScramUser's repr hides it): no file, log line or command line holds
it. The credentials are sent as salted hashes (AlterUserScramCredentials),
so they pass through the metadata log as a real deployment's would.
"""
from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

import grpc

from client.channels import open_channel
from client.cluster import Cluster
from client.security_admin import ScramUpsertion, alter_user_scram_credentials, create_acls
from kafka_protocol.errors import Errors
from kafka_protocol.fetch_framing import broker_stub
from kraftlog_api import broker_pb2 as bpb
from security import certs
from security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from security.client_security import ClientSecurity
from security.scram_credentials import DEFAULT_ITERATIONS, ScramMechanism

from kraftlog_server.server_config import format_address, parse_listeners, parse_roles

from . import launcher
from .launcher import SCRAM_USERS, TLS
from .local_cluster import LocalCluster

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CLIENT_LISTENER = "SASL_SSL"
MECHANISM = ScramMechanism.SCRAM_SHA_512
# A certificate's CN is its principal's name (node-1, admin, and a user's own certificate).
PRINCIPAL_MAPPING = "RULE:^CN=([^,]+),.*$/$1/,DEFAULT"
ENFORCED_TIMEOUT_S = 60.0
CLIENTS = "CLIENTS"  # the listener name of the SASL_SSL client listener
CLIENTS_PORT_OFFSET = 200  # a secured cluster file's CLIENTS port: the broker's port + this
_AUTHORIZATION_ERRORS = {Errors.TOPIC_AUTHORIZATION_FAILED, Errors.CLUSTER_AUTHORIZATION_FAILED}


def secured_properties(node_ids: Iterable[int]) -> dict[str, Any]:
    """What every node of a secured cluster is given, beside the launcher's TLS settings."""
    return {"authorizer.class.name": AUTHORIZER,
            "super.users": ";".join(["User:admin"] + [f"User:node-{n}" for n in node_ids]),
            "sasl.enabled.mechanisms": ",".join(m.mechanism_name for m in ScramMechanism),
            "ssl.principal.mapping.rules": PRINCIPAL_MAPPING}


def secure_cluster_spec(spec: Mapping[str, Any], admin_password: str) -> dict[str, Any]:
    """A plaintext cluster file's content, secured: `tls: true`, every
    PLAINTEXT listener SSL (mTLS between nodes), each broker a CLIENTS
    listener (SASL_SSL, its port + 200) on the same host, the authorizer,
    and the SCRAM super user `admin` bootstrapped at format (`scram_users`)."""
    nodes = []
    for node in spec["nodes"]:
        endpoints = [e._replace(name="SSL") if e.name == "PLAINTEXT" else e for e in parse_listeners(node)]
        if "broker" in parse_roles(node):
            first = endpoints[0]
            endpoints.append(first._replace(name=CLIENTS, port=first.port + CLIENTS_PORT_OFFSET))
        nodes.append({**node, "listeners": ",".join(f"{e.name}://{format_address(e.host, e.port)}"
                                                    for e in endpoints)})
    defaults = {**spec.get("defaults", {}), **secured_properties(n["node.id"] for n in nodes),
                "inter.broker.listener.name": "SSL",
                "listener.security.protocol.map": f"SSL:SSL,CONTROLLER:SSL,{CLIENTS}:{CLIENT_LISTENER}",
                # Clients prove who they are by SASL there, not by a certificate.
                f"listener.name.{CLIENTS.lower()}.ssl.client.auth": "none"}
    return {**spec, TLS: True, SCRAM_USERS: {"admin": admin_password}, "defaults": defaults, "nodes": nodes}


def client_addresses(plans: Iterable[launcher.NodePlan]) -> list[str]:
    """HOST:PORT of every broker's CLIENTS listener."""
    return [format_address(e.host, e.port) for plan in plans for e in plan.config.listeners if e.name == CLIENTS]


def allow(principal: str, operation: AclOperation, resource_type: ResourceType, name: str,
          pattern: PatternType = PatternType.LITERAL) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, "*", operation, AclPermissionType.ALLOW)


@dataclass(frozen=True)
class ScramUser:
    """A SCRAM user of a secured cluster, as its clients log in."""

    name: str
    password: str = field(repr=False)
    truststore: str  # the cluster's CA
    keystore: Optional[str] = None  # its own client certificate (CN=name), where it has one

    @property
    def principal(self) -> str:
        return f"User:{self.name}"

    def client_config(self) -> dict[str, str]:
        """Producer/Consumer settings for the SASL_SSL listener (security.protocol, sasl.*, ssl.*)."""
        return {"security.protocol": CLIENT_LISTENER, "sasl.mechanism": MECHANISM.mechanism_name,
                "sasl.username": self.name, "sasl.password": self.password,
                "ssl.truststore.location": self.truststore}

    def client_security(self) -> ClientSecurity:
        return ClientSecurity.from_config(self.client_config())

    def certificate_security(self) -> ClientSecurity:
        """mTLS with its own certificate: for the controller listeners, which take no SASL."""
        if self.keystore is None:
            raise ValueError(f"user {self.name} has no certificate")
        return ClientSecurity.from_config({"security.protocol": "SSL", "ssl.keystore.location": self.keystore,
                                           "ssl.truststore.location": self.truststore})


def add_user(admin: Cluster, client_addresses: Iterable[str], truststore: str, name: str,
             acls: Iterable[AclBinding], *, probe_topic: str, certificate: bool = False) -> ScramUser:
    """Create the user (both SCRAM mechanisms, a fresh random password) and
    its ACLs through `admin` (a super user's client), then wait until each
    broker's client listener lets it describe `probe_topic` (a topic its
    ACLs cover): credentials and ACLs reach each broker's image a moment
    after they commit. `certificate`: also issue it a client certificate
    of the cluster's CA (the CA's key beside `truststore`)."""
    keystore = None
    if certificate:
        keystore = str(certs.issue(Path(truststore).parent, name, client=True).keystore)
    user = ScramUser(name, secrets.token_urlsafe(24), truststore, keystore)
    refused = alter_user_scram_credentials(admin, [ScramUpsertion(name, m, user.password, DEFAULT_ITERATIONS)
                                                   for m in ScramMechanism])
    problems = [str(e) for e in refused.values() if e is not None]
    problems += [str(e) for e in create_acls(admin, list(acls)) if e is not None]
    if problems:
        raise RuntimeError(f"user {name}: {'; '.join(problems)}")
    for address in client_addresses:
        wait_enforced(address, user.client_security(), probe_topic, user.principal)
    return user


def add_cluster_user(cluster: LocalCluster, name: str, acls: Iterable[AclBinding], *, probe_topic: str,
                     certificate: bool = False) -> ScramUser:
    """add_user on a LocalCluster, as the launcher's admin certificate."""
    with Cluster(cluster.bootstrap, cluster.security) as admin:
        return add_user(admin, cluster.client_addresses.values(), str(cluster.security.ssl.truststore_location),
                        name, acls, probe_topic=probe_topic, certificate=certificate)


def wait_enforced(address: str, security: ClientSecurity, topic: str, who: str) -> None:
    """Wait until the broker at `address` lets `who` (logging in with
    `security`) describe `topic`: its credentials and ACLs have reached that
    broker's image. TimeoutError after ENFORCED_TIMEOUT_S."""
    deadline = time.monotonic() + ENFORCED_TIMEOUT_S
    last: object = None
    with open_channel(address, security) as channel:
        stub = broker_stub(channel)
        while True:
            try:
                answer = stub.Metadata(bpb.MetadataRequest(topics=[topic]), timeout=10)
                last = {t.error_code for t in answer.topics}
                if not last & _AUTHORIZATION_ERRORS:
                    return
            except grpc.RpcError as exc:  # not yet a known user there: UNAUTHENTICATED
                last = exc.code().name
            if time.monotonic() > deadline:
                raise TimeoutError(f"{address} did not let {who} describe {topic} "
                                   f"within {ENFORCED_TIMEOUT_S:g}s (last: {last})")
            time.sleep(0.2)
