"""A real 3-node cluster (combined nodes) with SSL on every listener and mTLS
between nodes: the Raft quorum, broker registration and replication all run
over TLS; a client with security.protocol=SSL and a certificate produces and
consumes; a client without one, or with one from another CA, is refused."""
from __future__ import annotations

import pytest
import trustme

from client.cluster import Cluster
from client.errors import NetworkError
from client.producer import Producer
from devcluster.local_cluster import LocalCluster
from devcluster.read_back import read_back
from kafka_protocol.errors import KafkaError
from security.client_security import ClientSecurity
from security.listeners import SecurityProtocol

TOPIC = "secured"
RECORDS = 200
IDLE_S = 30.0  # a read ends once nothing new came for this long; never part of an assert


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("tls-cluster"), combined=3, tls=True,
                      properties={"default.replication.factor": 3, "min.insync.replicas": 2}).running() as c:
        c.create_topic(TOPIC, partitions=3, replication_factor=3)
        c.wait_for_leaders(TOPIC)
        yield c


def test_every_node_listens_with_ssl_and_dials_its_peers_with_its_certificate(cluster):
    for plan in cluster.plans.values():
        assert set(plan.config.security_protocols.values()) == {SecurityProtocol.SSL}
        assert plan.config.controller_client_ssl.keystore_location.endswith(f"node-{plan.node_id}.pem")
    # three brokers registered through TLS to the controllers, replicas in sync over TLS
    topic = cluster.wait_for_leaders(TOPIC)
    assert all(len(p.isr_nodes) == 3 for p in topic.partitions)


def test_an_ssl_client_produces_and_consumes(cluster):
    settings = {"bootstrap.servers": cluster.bootstrap, **cluster.client_properties}
    assert settings["security.protocol"] == "SSL"
    with Producer({**settings, "acks": "all"}) as producer:
        futures = [producer.produce(TOPIC, f"v{i}".encode(), partition=i % 3) for i in range(RECORDS)]
        producer.flush(60)
    assert all(f.result(timeout=0).offset >= 0 for f in futures)
    got = read_back(cluster.bootstrap, TOPIC, range(3), max_messages=RECORDS, idle_timeout_s=IDLE_S,
                    settings=cluster.client_properties)
    assert sorted(r.value for r in got) == sorted(f"v{i}".encode() for i in range(RECORDS))


def _refused(cluster: LocalCluster, security: ClientSecurity) -> None:
    with Cluster(cluster.bootstrap, security) as client:
        with pytest.raises((NetworkError, KafkaError)):
            client.refresh([])


def test_clients_without_a_trusted_certificate_are_refused(cluster, tmp_path):
    ca_file = str(cluster.security.ssl.truststore_location)
    _refused(cluster, ClientSecurity.from_config({"security.protocol": "SSL", "ssl.truststore.location": ca_file}))
    stranger = trustme.CA().issue_cert("client.example", common_name="admin")
    keystore = tmp_path / "stranger.pem"
    keystore.write_bytes(stranger.private_key_and_cert_chain_pem.bytes())
    _refused(cluster, ClientSecurity.from_config({"security.protocol": "SSL", "ssl.truststore.location": ca_file,
                                                  "ssl.keystore.location": str(keystore)}))
    _refused(cluster, ClientSecurity())  # plaintext to an SSL listener
    # and the cluster still serves a trusted client
    with Cluster(cluster.bootstrap, cluster.security) as client:
        assert len(client.refresh([]).brokers) == 3
