"""deploy/'s image, compose file, Kubernetes manifests and systemd units,
checked as far as this machine allows without a container engine or a
Kubernetes API server: the compose file against the Compose specification's
JSON schema (check-jsonschema's bundled copy), every manifest against
Kubernetes' own OpenAPI schemas in strict mode (kubernetes-validate's
bundled copies: `kubectl --dry-run=client` needs a server to read them
from), the units with `systemd-analyze verify`, and each file against the
cluster file it starts. The image's entry point and health check run as
processes in tests/deploy/test_multi_host.py."""
from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path, PurePosixPath

import kubernetes_validate
import pytest
import yaml

from devcluster import launcher, render
from kraftlog.commands.common import NODE_CONFIG_ENV
from kraftlog_server.server_config import ServerConfig

from .dockerfile import REPO, as_local_process, read_image

DEPLOY = REPO / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
KUBERNETES_VERSION = "1.30.0"  # the oldest release still maintained when these were written
BIN = Path(sys.executable).parent


def documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


# -- the image ----------------------------------------------------------------------------------

def test_the_image_is_slim_runs_as_a_user_and_checks_its_health():
    image = read_image()
    assert image.all("FROM")[0].startswith("python:3.11-slim")
    user = image.last("USER").split(":")[0]
    assert user not in ("root", "0") and [i for i, _ in image.instructions][-1] == "CMD"
    assert image.instructions.index(("USER", image.last("USER"))) < \
        image.instructions.index(("ENTRYPOINT", image.last("ENTRYPOINT")))
    assert image.command == ["kraftlog", "server"] and image.healthcheck == ["kraftlog", "health"]
    # both read the node file from the variable the image sets
    assert image.env[NODE_CONFIG_ENV] == "/etc/kraftlog/node.yaml"
    assert "/var/lib/kraftlog" in image.last("VOLUME")


def test_the_image_copies_every_package_the_project_installs():
    packages = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    copied = {args.split()[0] for args in read_image().all("COPY")}
    assert {name.rstrip("*") for name in packages} | {"pyproject.toml"} == copied
    assert all((REPO / source).exists() for source in copied)
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", ".venv", "tests"} <= set(ignored)


# -- compose ------------------------------------------------------------------------------------

def test_the_compose_file_follows_the_compose_specification():
    done = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec",
                           str(DEPLOY / "compose.yaml")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_compose_node_files_are_the_render_of_its_cluster_file(tmp_path):
    """Rendered again, they come out byte for byte: edit cluster.yaml, then render."""
    spec = launcher.parse_cluster((DEPLOY / "compose" / "cluster.yaml").read_text())
    nodes = render.render_nodes(spec)
    render.write_rendered(nodes, tmp_path, "deploy/compose/cluster.yaml", certificates=False)
    for node in nodes:
        assert (tmp_path / node.file_name).read_text() == (DEPLOY / "compose" / node.file_name).read_text(), \
            f"deploy/compose/{node.file_name} is stale: kraftlog cluster render --config " \
            "deploy/compose/cluster.yaml --out deploy/compose"


def test_each_compose_service_runs_its_node_and_publishes_what_it_advertises():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    nodes = {n.host: n for n in render.render_nodes(launcher.parse_cluster(
        (DEPLOY / "compose" / "cluster.yaml").read_text()))}
    assert set(compose["services"]) == set(nodes)
    image = read_image()
    for name, service in compose["services"].items():
        node = nodes[name]
        assert service["hostname"] == name
        mounts = {target: source for source, target, *_ in (v.split(":") for v in service["volumes"])}
        assert mounts[image.env[NODE_CONFIG_ENV]] == f"./compose/{node.file_name}"
        assert mounts["/var/lib/kraftlog"] == name and name in compose["volumes"]
        published = {}
        for port in service.get("ports", []):
            _, host_port, container_port = port.split(":")
            published[int(host_port)] = int(container_port)
        bound = {e.name: e.port for e in node.config.listeners}
        for endpoint in node.config.advertised_listeners:
            if endpoint.host == "127.0.0.1":  # advertised to the docker host: published there
                assert published[endpoint.port] == bound[endpoint.name], (name, endpoint)
            else:
                assert endpoint.host == name


# -- Kubernetes ---------------------------------------------------------------------------------

def manifests() -> list[dict]:
    return [doc for path in sorted(KUBERNETES.glob("*.yaml")) if path.name != "kustomization.yaml"
            for doc in documents(path)]


def test_every_manifest_passes_kubernetes_schemas_in_strict_mode():
    kustomization = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(
        p.name for p in KUBERNETES.glob("*.yaml") if p.name != "kustomization.yaml")
    kinds = []
    for doc in manifests():
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        kinds.append(doc["kind"])
    assert sorted(kinds) == sorted(["Namespace", "ConfigMap", "Service", "Service", "Service", "StatefulSet",
                                    "StatefulSet", "PodDisruptionBudget", "PodDisruptionBudget"])


def test_the_schema_check_catches_a_misspelt_field():
    statefulset = next(doc for doc in manifests() if doc["kind"] == "StatefulSet")
    broken = copy.deepcopy(statefulset)
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["grcp"] = {"port": 9093}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


def cluster_spec() -> launcher.ClusterSpec:
    config_map = next(doc for doc in manifests() if doc["kind"] == "ConfigMap")
    return launcher.parse_cluster(config_map["data"]["cluster.yaml"])


def test_each_pod_renders_a_node_of_the_cluster_file_at_its_own_name():
    """Ordinal i of a StatefulSet is node NODE_ID_BASE + i at <pod>.<service>.<namespace>.svc.cluster.local,
    its readiness probe asks the gRPC health of that node's listener, its budget and service select it."""
    nodes = {n.node_id: n for n in render.render_nodes(cluster_spec())}
    docs = manifests()
    seen = set()
    for sts in (d for d in docs if d["kind"] == "StatefulSet"):
        pod = sts["spec"]["template"]["spec"]
        labels = sts["spec"]["template"]["metadata"]["labels"]
        assert sts["spec"]["selector"]["matchLabels"] == labels
        base = int(next(e["value"] for e in pod["initContainers"][0]["env"] if e["name"] == "NODE_ID_BASE"))
        role = labels["app.kubernetes.io/component"]
        namespace = sts["metadata"]["namespace"]
        for ordinal in range(sts["spec"]["replicas"]):
            node = nodes[base + ordinal]
            seen.add(node.node_id)
            assert node.config.process_roles == (role,)
            assert node.host == f"{sts['metadata']['name']}-{ordinal}.{sts['spec']['serviceName']}." \
                                f"{namespace}.svc.cluster.local"
            probe = pod["containers"][0]["readinessProbe"]["grpc"]["port"]
            assert probe == (node.config.controller_endpoint() if role == "controller"
                             else node.config.broker_listeners()[0]).port
        headless = next(d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == sts["spec"]["serviceName"])
        assert headless["spec"]["clusterIP"] == "None" and headless["spec"]["publishNotReadyAddresses"] is True
        assert headless["spec"]["selector"] == labels
        budget = next(d for d in docs if d["kind"] == "PodDisruptionBudget"
                      and d["metadata"]["name"] == sts["metadata"]["name"])
        assert budget["spec"]["selector"]["matchLabels"] == labels and budget["spec"]["maxUnavailable"] == 1
        claim = sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"]
        mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
        assert mounts[claim] == "/var/lib/kraftlog"
        assert pod["securityContext"]["runAsNonRoot"] is True
    assert seen == set(nodes)  # every node of the file has its pod


def test_the_init_step_writes_the_pods_own_node_file():
    """The render init container's command, run here for the third broker pod
    (its two directories moved under a temporary one)."""
    broker = next(d for d in manifests() if d["kind"] == "StatefulSet" and "broker" in d["metadata"]["name"])
    init = broker["spec"]["template"]["spec"]["initContainers"][0]
    env = {e["name"]: e["value"] for e in init["env"]}
    with tempfile.TemporaryDirectory() as tmp:
        cluster_dir, node_dir = Path(tmp, "cluster"), Path(tmp, "node")
        cluster_dir.mkdir()
        node_dir.mkdir()
        config_map = next(doc for doc in manifests() if doc["kind"] == "ConfigMap")
        (cluster_dir / "cluster.yaml").write_text(config_map["data"]["cluster.yaml"])
        script = init["args"][0].replace("/etc/kraftlog-cluster", str(cluster_dir)) \
            .replace("/etc/kraftlog", str(node_dir)).replace("/tmp/render", f"{tmp}/render") \
            .replace("kraftlog cluster", " ".join(as_local_process(["kraftlog", "cluster"])))
        done = subprocess.run([*init["command"], script], capture_output=True, text=True, timeout=120, cwd=REPO,
                              env={**os.environ, **env, "HOSTNAME": "kraftlog-broker-2"})
        assert done.returncode == 0, done.stderr
        config = ServerConfig.load(node_dir / "node.yaml")
    assert config.node_id == int(env["NODE_ID_BASE"]) + 2
    assert str(config.advertised_listeners[0]) == \
        "PLAINTEXT://kraftlog-broker-2.kraftlog-broker.kraftlog.svc.cluster.local:9092"
    assert config.log_dirs == (str(PurePosixPath("/var/lib/kraftlog") / f"node-{config.node_id}"),)


# -- systemd ------------------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_the_unit_passes_systemd_analyze_verify(tmp_path):
    """Verified as instance 1, with its ExecStart's program at this machine's install
    (a unit whose program is missing fails verify)."""
    unit = (DEPLOY / "systemd" / "kraftlog@.service").read_text()
    assert "ExecStart=/opt/kraftlog/bin/kraftlog server --config /etc/kraftlog/node-%i.yaml" in unit
    (tmp_path / "kraftlog@1.service").write_text(unit.replace("/opt/kraftlog/bin/", f"{BIN}/"))
    done = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "kraftlog@1.service")],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")  # an unknown key or section is a warning on stderr


@pytest.mark.skipif(shutil.which("systemd-sysusers") is None, reason="systemd-sysusers is not installed")
def test_the_sysusers_file_makes_the_units_user(tmp_path):
    done = subprocess.run(["systemd-sysusers", f"--root={tmp_path}", "--dry-run",
                           str(DEPLOY / "systemd" / "kraftlog.sysusers.conf")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "Creating user 'kraftlog'" in done.stdout + done.stderr
