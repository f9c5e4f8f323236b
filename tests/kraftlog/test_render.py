"""`kraftlog cluster render`: one node file per node of a multi-host cluster
file (devcluster/render.py), and what it refuses."""
from __future__ import annotations

import os
import textwrap
from pathlib import PurePosixPath

import pytest
import yaml
from cryptography import x509

from devcluster import launcher, render
from kafka_protocol.errors import InvalidConfigError
from kraftlog_server.server_config import ServerConfig
from tests.cli_process import run_cli

MULTI = textwrap.dedent("""\
    cluster.id: bXVsdGktaG9zdC0wMDAwMQ
    defaults:
      min.insync.replicas: 2
      listener.security.protocol.map: PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,KAFKA:PLAINTEXT
    nodes:
      - {node.id: 1, host: 10.9.0.1, process.roles: controller, listeners: "CONTROLLER://:9093"}
      - {node.id: 2, host: 10.9.0.2, process.roles: controller, listeners: "CONTROLLER://0.0.0.0:9093"}
      - {node.id: 3, process.roles: controller, listeners: "CONTROLLER://10.9.0.3:9093"}
      - node.id: 4
        host: broker-4.example
        process.roles: broker
        listeners: PLAINTEXT://:9092,KAFKA://:9094
        kraftlog.kafka.protocol.listeners: KAFKA
        kraftlog.metrics.listener: ":9404"
      - node.id: 5
        host: 10.9.0.1
        process.roles: broker
        listeners: PLAINTEXT://:9192
    """)


def rendered(text: str = MULTI, **kw) -> dict[int, render.RenderedNode]:
    return {n.node_id: n for n in render.render_nodes(launcher.parse_cluster(text), **kw)}


def test_each_node_is_reached_at_its_host_and_keeps_its_own_directories():
    nodes = rendered(data_dir=PurePosixPath("/srv/kl"))
    voters = "1@10.9.0.1:9093,2@10.9.0.2:9093,3@10.9.0.3:9093"
    assert {n.properties["controller.quorum.voters"] for n in nodes.values()} == {voters}
    assert [n.host for n in nodes.values()] == ["10.9.0.1", "10.9.0.2", "10.9.0.3", "broker-4.example", "10.9.0.1"]
    assert "host" not in nodes[1].properties  # a cluster-file key, not a node property
    assert nodes[4].properties["advertised.listeners"] == "PLAINTEXT://broker-4.example:9092,KAFKA://broker-4.example:9094"
    assert nodes[4].properties["listeners"] == "PLAINTEXT://:9092,KAFKA://:9094"  # still binds every interface
    assert nodes[5].properties["advertised.listeners"] == "PLAINTEXT://10.9.0.1:9192"
    assert "advertised.listeners" not in nodes[1].properties
    assert len({n.properties["log.dirs"] for n in nodes.values()}) == 5
    assert nodes[3].properties["log.dirs"] == "/srv/kl/node-3"
    # each file is read back by the server as rendered
    for node in nodes.values():
        assert ServerConfig.from_mapping(yaml.safe_load(yaml.safe_dump(node.properties))) == node.config


def test_the_same_port_on_two_hosts_is_fine_on_one_host_refused():
    assert rendered()[1].ports() == [9093] and rendered()[4].ports() == [9092, 9094, 9404]
    clash = MULTI.replace("listeners: PLAINTEXT://:9192", "listeners: PLAINTEXT://:9093")
    with pytest.raises(InvalidConfigError, match="node 5: port 9093 on host 10.9.0.1 is node 1's too"):
        rendered(clash)
    metrics_clash = MULTI.replace("listeners: PLAINTEXT://:9192",
                                  "listeners: PLAINTEXT://:9192\n    kraftlog.metrics.listener: ':9093'")
    with pytest.raises(InvalidConfigError, match="port 9093 on host 10.9.0.1"):
        rendered(metrics_clash)


BROKER_5 = "listeners: PLAINTEXT://:9192"


@pytest.mark.parametrize("old, new, message", [
    # a broker binding every interface with no host would be advertised as 0.0.0.0
    ("host: 10.9.0.1\n    process.roles: broker", "process.roles: broker", "node 5: host: is required"),
    # a controller so would be in the voter set
    ("host: 10.9.0.1, process.roles: controller", "process.roles: controller", "node 1: host: is required"),
    ("host: 10.9.0.1, process.roles: controller", "host: 0.0.0.0, process.roles: controller",
     "nodes\\[0\\]: host: expected the host name"),
    ("host: 10.9.0.1, process.roles: controller", "host: 'a b', process.roles: controller",
     "nodes\\[0\\]: host: expected the host name"),
    ("host: 10.9.0.1, process.roles: controller", "host: 'ctl-1:9093', process.roles: controller",
     "nodes\\[0\\]: host: expected the host name"),
    ("host: 10.9.0.1, process.roles: controller", "host: 7, process.roles: controller",
     "nodes\\[0\\]: host: expected the host name"),
    (BROKER_5, BROKER_5 + "\n    advertised.listeners: PLAINTEXT://0.0.0.0:9192",
     "node 5: advertised.listeners: PLAINTEXT://0.0.0.0:9192 cannot be advertised"),
    # an empty host is the rendering machine's own name to the server: never the node's
    (BROKER_5, BROKER_5 + "\n    advertised.listeners: PLAINTEXT://:9192", "node 5: .*names no host clients can reach"),
])
def test_a_node_without_a_reachable_address_is_refused(old, new, message):
    assert old in MULTI
    with pytest.raises(InvalidConfigError, match=message):
        rendered(MULTI.replace(old, new, 1))


def test_static_voters_given_in_the_file_must_name_hosts():
    text = MULTI.replace("defaults:\n", "defaults:\n  controller.quorum.voters: "
                         "1@0.0.0.0:9093,2@10.9.0.2:9093,3@10.9.0.3:9093\n")
    with pytest.raises(InvalidConfigError, match="node 1 at 0.0.0.0:9093 is a wildcard"):
        rendered(text)


def test_a_tls_cluster_gets_certificate_paths_and_certificates_for_each_host(tmp_path):
    text = textwrap.dedent("""\
        cluster.id: bXVsdGktaG9zdC0wMDAwMQ
        tls: true
        nodes:
          - {node.id: 1, host: 10.9.0.1, process.roles: controller, listeners: "CONTROLLER://:9093"}
          - {node.id: 4, host: broker-4.example, process.roles: broker, listeners: "SSL://:9092",
             inter.broker.listener.name: SSL}
        """)
    spec = launcher.parse_cluster(text)
    nodes = render.render_nodes(spec, config_dir=PurePosixPath("/etc/kl"))
    assert nodes[1].properties["ssl.keystore.location"] == "/etc/kl/certs/node-4.pem"
    assert nodes[1].properties["ssl.truststore.location"] == "/etc/kl/certs/ca.pem"
    assert nodes[1].config.listener_protocol("SSL").value == "SSL"
    written = render.write_rendered(nodes, tmp_path, "cluster.yaml", spec.tls)
    assert {p.name for p in written} == {"node-1.yaml", "node-4.yaml", "ca.pem", "node-1.pem", "node-4.pem",
                                         "admin.pem"}
    cert = x509.load_pem_x509_certificate((tmp_path / "certs" / "node-4.pem").read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "broker-4.example" in names.get_values_for_type(x509.DNSName)
    before = (tmp_path / "certs" / "node-4.pem").read_bytes()
    render.write_rendered(nodes, tmp_path, "cluster.yaml", spec.tls)  # a second render keeps them
    assert (tmp_path / "certs" / "node-4.pem").read_bytes() == before


def test_the_command_writes_one_file_per_node_or_nothing(tmp_path):
    good = tmp_path / "cluster.yaml"
    good.write_text(MULTI)
    done = run_cli(["cluster", "render", "--config", str(good), "--out", str(tmp_path / "out")], dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"node-{i}.yaml" for i in range(1, 6)]
    assert "node 4 (broker) on broker-4.example" in done.stdout
    assert ServerConfig.load(tmp_path / "out" / "node-4.yaml").node_id == 4
    bad = tmp_path / "bad.yaml"
    bad.write_text(MULTI.replace("PLAINTEXT://:9192", "PLAINTEXT://:9093"))
    done = run_cli(["cluster", "render", "--config", str(bad), "--out", str(tmp_path / "none")], dict(os.environ))
    assert done.returncode != 0
    assert f"{bad}: node 5: port 9093" in done.stderr
    assert not (tmp_path / "none").exists()
    # one host renders its own file, the others still checked
    done = run_cli(["cluster", "render", "--config", str(good), "--out", str(tmp_path / "one"), "--node-id", "5"],
                   dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["node-5.yaml"]
    done = run_cli(["cluster", "render", "--config", str(good), "--out", str(tmp_path / "two"), "--node-id", "9"],
                   dict(os.environ))
    assert done.returncode != 0 and "--node-id: no node 9 in the file" in done.stderr
    assert not (tmp_path / "two").exists()


def test_cluster_up_dials_a_wildcard_controller_at_its_host(tmp_path):
    plans = launcher.plan_nodes(launcher.parse_cluster(MULTI), tmp_path)
    assert plans[0].config.voters[1] == ("10.9.0.1", 9093)
    assert plans[0].config.voters[3] == ("10.9.0.3", 9093)  # a listener's own address wins
    ipv6 = MULTI.replace("host: 10.9.0.1, process.roles: controller", "host: 'fd00::1', process.roles: controller")
    assert rendered(ipv6)[1].properties["controller.quorum.voters"].startswith("1@[fd00::1]:9093,")


def test_a_listener_the_file_advertises_keeps_its_address_and_the_others_get_the_host():
    text = MULTI.replace("kraftlog.metrics.listener: \":9404\"",
                         "kraftlog.metrics.listener: \":9404\"\n    advertised.listeners: KAFKA://127.0.0.1:19094")
    assert rendered(text)[4].properties["advertised.listeners"] == \
        "PLAINTEXT://broker-4.example:9092,KAFKA://127.0.0.1:19094"
    unknown = text.replace("KAFKA://127.0.0.1:19094", "OTHER://127.0.0.1:19094")
    with pytest.raises(InvalidConfigError, match="node 4: advertised.listeners: OTHER is not a broker listener"):
        rendered(unknown)


DYNAMIC = MULTI.replace("defaults:\n", "quorum: dynamic\ndefaults:\n").replace(
    "{node.id: 3, process.roles: controller,", "{node.id: 3, join: true, process.roles: controller,")


def test_a_dynamic_quorum_is_found_through_bootstrap_servers_and_formatted_from_one_list(tmp_path):
    nodes = rendered(DYNAMIC, data_dir=PurePosixPath(tmp_path / "data"))
    # node 3 joins later: not a bootstrap server, not an initial voter
    assert {n.properties["controller.quorum.bootstrap.servers"] for n in nodes.values()} == \
        {"10.9.0.1:9093,10.9.0.2:9093"}
    assert not any("controller.quorum.voters" in n.properties for n in nodes.values())
    shared = nodes[1].initial_controllers
    assert shared is not None and shared == nodes[2].initial_controllers
    ids = [entry.split("@")[0] for entry in shared.split(",")]
    assert ids == ["1", "2"] and shared.startswith("1@10.9.0.1:9093:") and ",2@10.9.0.2:9093:" in shared
    assert nodes[3].initial_controllers is None and nodes[4].initial_controllers is None
    assert rendered(DYNAMIC)[1].initial_controllers != shared  # directory ids are made per render
    written = render.write_rendered(tuple(nodes.values()), tmp_path / "out", "cluster.yaml", False,
                                    PurePosixPath(tmp_path / "out"))
    assert sorted(p.name for p in written) == sorted([f"node-{i}.yaml" for i in range(1, 6)] +
                                                     [f"format-{i}.sh" for i in range(1, 6)])
    script = (tmp_path / "out" / "format-2.sh").read_text()
    assert f"exec kraftlog storage format --config {tmp_path}/out/node-2.yaml --initial-controllers {shared}\n" \
        in script
    assert (tmp_path / "out" / "format-2.sh").stat().st_mode & 0o111
    assert (tmp_path / "out" / "format-4.sh").read_text().endswith(
        f"exec kraftlog storage format --config {tmp_path}/out/node-4.yaml\n")
    # the formatted directories take the ids the list names
    from kraftlog_server.storage_format import format_storage
    for node_id in (1, 2, 3):
        outcome = format_storage(ServerConfig.load(tmp_path / "out" / f"node-{node_id}.yaml"),
                                 initial_controllers=nodes[node_id].initial_controllers)
        if node_id < 3:
            assert f"{node_id}@10.9.0.{node_id}:9093:{outcome.directory_id}" in shared
        else:
            assert outcome.voters is None and outcome.directory_id not in shared


@pytest.mark.parametrize("old, new, message", [
    ("host: 10.9.0.1\n    process.roles: broker", "host: 10.9.0.1\n    join: true\n    process.roles: broker",
     "node 5: join: only a controller joins"),
    ("defaults:\n", "defaults:\n  controller.quorum.voters: 1@10.9.0.1:9093\n",
     "node 1: controller.quorum.voters: a `quorum: dynamic` cluster has no static voters"),
    ("quorum: dynamic", "quorum: elastic", "quorum: expected static or dynamic, got 'elastic'"),
    ("join: true", "join: 'yes'", r"nodes\[2\]: join: expected true or false"),
    ("quorum: dynamic\n", "", "join: only a controller of a `quorum: dynamic` cluster joins later \\(nodes 3\\)"),
])
def test_a_dynamic_quorum_that_cannot_start_is_refused(old, new, message):
    assert old in DYNAMIC
    with pytest.raises(InvalidConfigError, match=message):
        rendered(DYNAMIC.replace(old, new, 1))


def test_a_dynamic_quorum_with_no_initial_controller_is_refused():
    every_one_joins = DYNAMIC.replace("{node.id: 1, host", "{node.id: 1, join: true, host").replace(
        "{node.id: 2, host", "{node.id: 2, join: true, host")
    with pytest.raises(InvalidConfigError, match="quorum: dynamic: no initial controller"):
        rendered(every_one_joins)
    no_controller = textwrap.dedent("""\
        cluster.id: bXVsdGktaG9zdC0wMDAwMQ
        quorum: dynamic
        nodes:
          - {node.id: 4, host: broker-4.example, process.roles: broker, listeners: "PLAINTEXT://:9092"}
        """)
    with pytest.raises(InvalidConfigError, match="no initial controller"):
        rendered(no_controller)


def test_the_command_writes_format_scripts_and_cluster_up_refuses_a_dynamic_quorum(tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(DYNAMIC)
    done = run_cli(["cluster", "render", "--config", str(cluster), "--out", str(tmp_path / "out")], dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert f"format first: {tmp_path}/out/format-1.sh" in done.stdout
    assert "--initial-controllers 1@10.9.0.1:9093:" in (tmp_path / "out" / "format-1.sh").read_text()
    done = run_cli(["cluster", "render", "--config", str(cluster), "--out", str(tmp_path / "one"), "--node-id", "1"],
                   dict(os.environ))
    assert done.returncode != 0 and "rendered for every node at once" in done.stderr
    assert not (tmp_path / "one").exists()
    with pytest.raises(InvalidConfigError, match="`cluster up` runs static voters"):
        launcher.plan_nodes(launcher.parse_cluster(DYNAMIC), tmp_path)
