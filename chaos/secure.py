"""`chaos run --secure`: the workload's user on a secured cluster.

The cluster is devcluster/secured.py's (mTLS between nodes, a SASL_SSL
listener for clients, the StandardAuthorizer). The workloads log in as the
SCRAM user `chaos`, which is not a super user: it holds exactly the ACLs
its operations need, so every produce, fetch, commit, topic create and
describe of the run goes through the authorizer - also while nodes restart
and reload their images, which is what a secured chaos run is there to
exercise. (A super user would skip the ACL checks altogether.)

The user also gets a client certificate (CN=chaos, the same principal):
the metadata workload's read index asks the controllers (DescribeQuorum),
whose listeners take mTLS only, as between nodes.
"""
from __future__ import annotations

from devcluster.local_cluster import LocalCluster
from devcluster.secured import ScramUser, add_cluster_user, allow
from security.acl import AclBinding, AclOperation, PatternType, ResourceType

from .metadata_workload import TOPIC_PREFIX

USER = "chaos"


def workload_acls(principal: str, topic: str, group: str) -> list[AclBinding]:
    """Kafka's rules for what the queue and metadata workloads do: produce
    (Write; idempotence by Write on a topic), consume and list offsets
    (Read, which implies Describe), commit and fetch offsets (Read on the
    group), create/delete/describe the meta-* topics, DescribeCluster and
    DescribeQuorum (Describe on the cluster)."""
    return [allow(principal, AclOperation.WRITE, ResourceType.TOPIC, topic),
            allow(principal, AclOperation.READ, ResourceType.TOPIC, topic),
            allow(principal, AclOperation.READ, ResourceType.GROUP, group),
            *(allow(principal, operation, ResourceType.TOPIC, TOPIC_PREFIX, PatternType.PREFIXED)
              for operation in (AclOperation.CREATE, AclOperation.DELETE, AclOperation.DESCRIBE)),
            allow(principal, AclOperation.DESCRIBE, ResourceType.CLUSTER, "kafka-cluster")]


def add_workload_user(cluster: LocalCluster, topic: str, group: str) -> ScramUser:
    """The user, its ACLs and certificate; returns once every broker enforces them."""
    return add_cluster_user(cluster, USER, workload_acls(f"User:{USER}", topic, group), probe_topic=topic,
                            certificate=True)
