"""`kraftlog demo --secure`: the cluster demo on a secured cluster.

deploy/local.yaml made secured (devcluster/secured.py's
secure_cluster_spec): the launcher makes a test CA and the nodes'
certificates (mTLS between nodes), each broker gets a SASL_SSL listener
CLIENTS (ports 19891-19893), the StandardAuthorizer is on, and the SCRAM
super user `admin` is bootstrapped when the controllers are formatted
(`scram_users`, as `kraftlog storage format --add-scram`). Its password is
made at random for the run; the cluster file holding it stays in the
demo's temporary directory, readable by its owner only, and is removed with it.

Once the cluster is up, `admin` logs in over SASL_SSL and creates the user
`demo` with just the ACLs the demo needs: Create, Write and Read on the
topic demo-events and on the Spark word count's table topic. Everything the
demo then does runs as `demo`; the Spark word count, a subprocess, gets the
user's settings as `kraftlog spark wordcount --command-config FILE`, a file
in the demo's temporary directory readable by its owner only.
"""
from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import yaml
from rich.console import Console

from client.cluster import Cluster
from devcluster import launcher
from kafka_protocol.properties_text import format_properties
from devcluster.secured import ScramUser, add_user, allow, client_addresses, secure_cluster_spec
from security.acl import AclOperation, ResourceType
from security.certs import CA_CERT
from security.client_security import ClientSecurity

USER = "demo"


@dataclass(frozen=True)
class DemoAccess:
    """How the demo's clients reach the cluster."""

    bootstrap: str
    client_config: dict[str, Any] = field(default_factory=dict, repr=False)  # security.protocol, sasl.*, ssl.*
    security: Optional[ClientSecurity] = None  # the same, for Cluster (None: plaintext)


def plaintext_access(plans: tuple[launcher.NodePlan, ...]) -> DemoAccess:
    return DemoAccess(launcher.broker_bootstrap(plans))


def secured_plans(cluster_file: Path, workdir: Path) -> tuple[tuple[launcher.NodePlan, ...], str]:
    """The plans of `cluster_file` secured, and the admin's password."""
    password = secrets.token_urlsafe(24)
    spec = secure_cluster_spec(yaml.safe_load(cluster_file.read_text(encoding="utf-8")), password)
    secured_file = workdir / "cluster-secured.yaml"
    descriptor = os.open(secured_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        yaml.safe_dump(spec, out, sort_keys=False)
    return launcher.plan_cluster(secured_file, workdir / "data"), password


def demo_user_access(console: Console, plans: tuple[launcher.NodePlan, ...], admin_password: str,
                     topics: Sequence[str]) -> DemoAccess:
    """As the bootstrapped admin (SCRAM over SASL_SSL): the demo user and its ACLs on `topics`."""
    truststore = str(plans[0].certs_dir / CA_CERT)
    addresses = client_addresses(plans)
    admin = ScramUser("admin", admin_password, truststore)
    principal = f"User:{USER}"
    operations = (AclOperation.CREATE, AclOperation.WRITE, AclOperation.READ)
    acls = [allow(principal, operation, ResourceType.TOPIC, topic) for topic in topics for operation in operations]
    with Cluster(",".join(addresses), admin.client_security()) as cluster:
        user = add_user(cluster, addresses, truststore, USER, acls, probe_topic=topics[0])
    console.print(f"secured: mTLS between nodes (certificates in {plans[0].certs_dir}), SASL_SSL clients on "
                  f"{','.join(addresses)}; admin (bootstrapped at format) created {principal} with "
                  f"{', '.join(o.name for o in operations)} on topics {', '.join(topics)}")
    return DemoAccess(",".join(addresses), user.client_config(), user.client_security())


def write_command_config(access: DemoAccess, path: Path) -> Optional[Path]:
    """The demo user's settings as a --command-config file at `path`, created
    readable by its owner only (it holds the password); None on plaintext."""
    if not access.client_config:
        return None
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(format_properties(access.client_config))
    return path
