"""`kraftlog health --config`: which listeners of a node file it checks, and how it dials them."""
from __future__ import annotations

import textwrap
from pathlib import PurePosixPath

import yaml

from devcluster import launcher, render
from kraftlog.commands.health import node_targets
from security.listeners import SecurityProtocol

CLUSTER = textwrap.dedent("""\
    cluster.id: aGVhbHRoLWNoZWNrLTAwMDE
    tls: true
    defaults:
      listener.security.protocol.map: CONTROLLER:SSL,SSL:SSL,KAFKA:PLAINTEXT,USERS:SASL_SSL
      inter.broker.listener.name: SSL
      kraftlog.kafka.protocol.listeners: KAFKA
    nodes:
      - {node.id: 1, host: 10.9.0.1, process.roles: controller, listeners: "CONTROLLER://:9093"}
      - {node.id: 4, host: 10.9.0.4, process.roles: broker,
         listeners: "SSL://10.9.0.4:9092,KAFKA://:9094,USERS://:9095"}
    """)


def test_a_node_file_is_checked_on_each_grpc_listener_with_its_own_certificate(tmp_path):
    nodes = render.render_nodes(launcher.parse_cluster(CLUSTER), config_dir=PurePosixPath("/etc/kl"))
    for node in nodes:
        (tmp_path / node.file_name).write_text(yaml.safe_dump(node.properties))
    [(address, security)] = node_targets(tmp_path / "node-1.yaml")
    assert address == "127.0.0.1:9093"  # bound on every interface: dialled on loopback
    assert security.protocol is SecurityProtocol.SSL
    assert (security.ssl.keystore_location, security.ssl.truststore_location) == (
        "/etc/kl/certs/node-1.pem", "/etc/kl/certs/ca.pem")
    # the Kafka-protocol listener speaks no gRPC, and a SASL one wants a login a node does not have
    assert [a for a, _ in node_targets(tmp_path / "node-4.yaml")] == ["10.9.0.4:9092"]
