"""A small secured cluster for the tests over SASL_SSL (the authorization
matrix, the CLI, the Spark source and sink): three combined nodes, mTLS
between them, a SASL_SSL listener for users, devcluster/secured.py's settings
(the StandardAuthorizer, super users admin and node-1..3); SCRAM users and
ACLs set as the launcher's mTLS admin certificate (CN=admin, a super user)."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from client.cluster import Cluster
from client.security_admin import ScramUpsertion, alter_user_scram_credentials, create_acls
from devcluster.local_cluster import LocalCluster
from devcluster.secured import secured_properties
from security.acl import AclBinding
from security.scram_credentials import ScramMechanism

MECHANISM = "SCRAM-SHA-512"


@contextmanager
def secured_cluster(directory: Path, passwords: Mapping[str, str], acls: Sequence[AclBinding],
                    properties: Mapping[str, object] = {}) -> Iterator[LocalCluster]:
    """`passwords`: SCRAM user -> password (`admin` among them is a super user);
    `properties`: more node settings."""
    with LocalCluster(directory, combined=3, tls=True, client_listener="SASL_SSL",
                      properties={**secured_properties(range(1, 4)),
                                  "default.replication.factor": 3, "min.insync.replicas": 2,
                                  **properties}).running() as c:
        with Cluster(c.bootstrap, c.security) as admin:
            alter_user_scram_credentials(admin, [ScramUpsertion(user, ScramMechanism.SCRAM_SHA_512, password, 4096)
                                                 for user, password in passwords.items()])
            assert all(error is None for error in create_acls(admin, list(acls)))
        yield c


def user_settings(cluster: LocalCluster, user: str, password: str) -> dict[str, str]:
    """A SASL_SSL user's client settings, with Kafka's names."""
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": MECHANISM, "sasl.username": user,
            "sasl.password": password, "ssl.truststore.location": str(cluster.security.ssl.truststore_location)}
