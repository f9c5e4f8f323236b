"""The launcher's pure half (cluster files, derived node configurations) and
its pid handling on short-lived stand-in processes."""
from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
import yaml

from devcluster import launcher
from kraftlog_server.server_config import ServerConfig
from kafka_protocol.errors import InvalidConfigError

REPO = Path(__file__).resolve().parents[2]

THREE = textwrap.dedent("""\
    cluster.id: MkU3OEVBNTcwNTJENDM2Qk
    defaults:
      controller.quorum.election.timeout.ms: 500
      kraftlog.log.level: DEBUG
    nodes:
      - node.id: 1
        process.roles: controller
        listeners: CONTROLLER://127.0.0.1:19091
      - node.id: 2
        process.roles: controller
        listeners: CONTROLLER://127.0.0.1:19092
        kraftlog.log.level: INFO
      - node.id: 3
        process.roles: [controller]
        listeners: CONTROLLER://:19093
    """)


def test_each_node_gets_the_defaults_its_own_properties_and_derived_ones(tmp_path):
    plans = launcher.plan_nodes(launcher.parse_cluster(THREE), tmp_path)
    assert [p.node_id for p in plans] == [1, 2, 3]
    voters = "1@127.0.0.1:19091,2@127.0.0.1:19092,3@127.0.0.1:19093"  # the wildcard dialled on loopback
    first, second, third = plans
    assert first.properties == {
        "node.id": 1,
        "cluster.id": "MkU3OEVBNTcwNTJENDM2Qk",
        "controller.quorum.election.timeout.ms": 500,
        "kraftlog.log.level": "DEBUG",
        "process.roles": "controller",
        "listeners": "CONTROLLER://127.0.0.1:19091",
        "controller.quorum.voters": voters,
        "log.dirs": str(tmp_path / "node-1" / "data"),
    }
    assert second.config.log_level == "INFO" and first.config.log_level == "DEBUG"
    assert third.config.controller_endpoint().host == ""
    for plan in plans:
        assert plan.home == tmp_path / f"node-{plan.node_id}"
        assert (plan.config_path, plan.log_path, plan.pid_path) == (
            plan.home / "server.yaml", plan.home / "server.log", plan.home / "server.pid")
        assert plan.config.quorum.election_timeout_ms == 500
        assert plan.config.cluster_id == "MkU3OEVBNTcwNTJENDM2Qk"
        # what start_node writes is what the server will read back
        assert ServerConfig.from_mapping(yaml.safe_load(yaml.safe_dump(plan.properties))) == plan.config
    assert launcher.bootstrap_controllers(plans) == "127.0.0.1:19091,127.0.0.1:19092,127.0.0.1:19093"


def test_voters_given_in_defaults_are_kept(tmp_path):
    text = THREE.replace("defaults:\n", "defaults:\n  controller.quorum.voters: "
                         "1@127.0.0.1:19091,2@127.0.0.1:19092,3@127.0.0.1:19093,4@127.0.0.1:19094\n")
    plans = launcher.plan_nodes(launcher.parse_cluster(text), tmp_path)
    assert all(sorted(p.config.voters) == [1, 2, 3, 4] for p in plans)


def test_relative_data_dirs_become_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plans = launcher.plan_nodes(launcher.parse_cluster(THREE), Path("data"))
    assert plans[0].properties["log.dirs"] == str(tmp_path / "data" / "node-1" / "data")


@pytest.mark.parametrize("name, size", [("quorum-3.yaml", 3), ("quorum-5.yaml", 5)])
def test_the_deploy_files_plan_cleanly(name, size):
    plans = launcher.plan_cluster(REPO / "deploy" / name)
    assert len(plans) == size
    assert len({p.config.controller_endpoint().port for p in plans}) == size
    assert all(p.config.voters == plans[0].config.voters and len(p.config.voters) == size for p in plans)
    assert all(p.config.warnings == () for p in plans)
    assert plans[0].home == Path(tempfile.gettempdir()) / f"kraftlog-{Path(name).stem}" / "node-1"


def test_the_secure_deploy_file_plans_ssl_listeners_with_launcher_made_certificates():
    plans = launcher.plan_cluster(REPO / "deploy" / "secure-3.yaml")
    certs = Path(tempfile.gettempdir()) / "kraftlog-secure-3" / "certs"
    for plan in plans:
        assert plan.config.warnings == ()
        assert {p.value for p in plan.config.security_protocols.values()} == {"SSL"}
        ssl = plan.config.listener_ssl["CONTROLLER"]
        assert (ssl.keystore_location, ssl.truststore_location, ssl.client_auth) == (
            str(certs / f"node-{plan.node_id}.pem"), str(certs / "ca.pem"), "required")
    assert launcher.client_properties(plans)["security.protocol"] == "SSL"


def test_tls_must_be_a_boolean():
    with pytest.raises(InvalidConfigError, match="tls: expected true or false"):
        launcher.parse_cluster(THREE + "tls: yes please\n")


def test_default_data_dir_is_named_after_the_cluster_file():
    assert launcher.default_data_dir("deploy/quorum-3.yaml") == Path(tempfile.gettempdir()) / "kraftlog-quorum-3"


NODE = "  - {node.id: 1, process.roles: controller, listeners: 'CONTROLLER://127.0.0.1:19091'}\n"

BAD_FILES = [
    # (cluster file, words the one-line message must hold)
    ("cluster.id: abc\nnodes: [\n", "not valid YAML"),
    ("- 1\n", "mapping"),
    ("cluster.id: abc\nnode.id: 1\nnodes:\n" + NODE, "node.id: not a cluster file key"),
    ("nodes:\n" + NODE, "cluster.id: is required"),
    ("cluster.id: abc\n", "nodes: expected a list"),
    ("cluster.id: abc\nnodes: []\n", "nodes: expected a list"),
    ("cluster.id: abc\nnodes: {node.id: 1}\n", "nodes: expected a list"),
    ("cluster.id: abc\nnodes:\n  - controller\n", "nodes[0]: expected a mapping"),
    ("cluster.id: abc\ndefaults: [1]\nnodes:\n" + NODE, "defaults: expected a mapping"),
    ("cluster.id: abc\nnodes:\n  - {process.roles: controller}\n", "nodes[0]: node.id: expected an integer"),
    ("cluster.id: abc\nnodes:\n  - {node.id: '1'}\n", "nodes[0]: node.id: expected an integer"),
    ("cluster.id: abc\nnodes:\n" + NODE + NODE, "nodes[1]: node.id 1 is used twice"),
    ("cluster.id: abc\ndefaults: {log.dirs: /x}\nnodes:\n" + NODE, "defaults: log.dirs is set by the launcher"),
    ("cluster.id: abc\nnodes:\n  - {node.id: 1, log.dir: /x}\n", "nodes[0]: log.dir is set by the launcher"),
    ("cluster.id: abc\nnodes:\n  - {node.id: 1, cluster.id: x}\n", "cluster.id belongs at the top"),
    ("cluster.id: 'a b'\nnodes:\n" + NODE, "node 1: cluster.id:"),
    ("cluster.id: abc\nnodes:\n  - {node.id: 1, process.roles: broker, listeners: 'PLAINTEXT://:9092'}\n",
     "nodes: no node has process.roles controller"),
    ("cluster.id: abc\nnodes:\n  - {node.id: 1, listeners: 'CONTROLLER://127.0.0.1:19091'}\n",
     "node 1: process.roles: is required"),
    ("cluster.id: abc\nnodes:\n  - {node.id: 1, process.roles: controller}\n", "node 1: listeners: is required"),
    ("cluster.id: abc\nnodes:\n  - {node.id: 1, process.roles: controller, listeners: 'X://127.0.0.1:1'}\n",
     "node 1: controller.listener.names: none of CONTROLLER"),
    ("cluster.id: abc\ndefaults: {controller.quorum.fetch.timeout.ms: 0}\nnodes:\n" + NODE,
     "node 1: controller.quorum.fetch.timeout.ms:"),
    ("cluster.id: abc\ndefaults: {controller.quorum.voters: '2@127.0.0.1:19092'}\nnodes:\n" + NODE,
     "node 1: controller.quorum.voters: does not include"),
]


@pytest.mark.parametrize("text, words", BAD_FILES, ids=[w for _, w in BAD_FILES])
def test_a_bad_cluster_file_names_the_file_and_the_problem(tmp_path, text, words):
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    with pytest.raises(InvalidConfigError) as caught:
        launcher.plan_cluster(path, tmp_path / "data")
    message = str(caught.value)
    assert message.startswith(f"INVALID_CONFIG: {path}: ") and words in message and "\n" not in message
    assert not (tmp_path / "data").exists(), "nothing is written before every node checks out"


# -- pid handling, on stand-ins whose command line names the node's config like a server's does --

@pytest.fixture
def plan(tmp_path):
    plans = launcher.plan_nodes(launcher.parse_cluster(THREE), tmp_path)
    plans[0].home.mkdir(parents=True)
    return plans[0]


def stand_in(plan, code: str = "import time; time.sleep(60)") -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", code, "--config", str(plan.config_path)],
                               stdout=subprocess.PIPE)
    plan.pid_path.write_text(f"{process.pid}\n")
    return process


def test_a_node_is_alive_only_if_its_pid_runs_its_config(plan, tmp_path):
    assert launcher.read_pid(plan) is None and launcher.running_pid(plan) is None
    process = stand_in(plan)
    try:
        assert launcher.running_pid(plan) == process.pid
        # The same pid with another node's config (a reused pid) is not this node.
        assert not launcher.is_alive(process.pid, tmp_path / "node-2" / "server.yaml")
    finally:
        process.kill()
        process.wait()
    assert launcher.running_pid(plan) is None
    plan.pid_path.write_text("garbage\n")
    assert launcher.read_pid(plan) is None


def test_down_terms_then_kills_and_removes_pid_files(plan):
    plans = (plan,)
    stubborn = stand_in(plan, "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                              "print('ready', flush=True); time.sleep(60)")
    try:
        assert stubborn.stdout.readline() == b"ready\n"  # SIGTERM is ignored from here on
        assert launcher.stop_nodes(plans, grace=0.2) == {1: f"killed after 0.2s (pid {stubborn.pid})"}
        assert stubborn.wait(5) == -signal.SIGKILL
        assert not plan.pid_path.exists()
    finally:
        stubborn.kill()
        stubborn.wait()
    polite = stand_in(plan)
    try:
        assert launcher.stop_nodes(plans, grace=5) == {1: f"stopped (pid {polite.pid})"}
        assert polite.wait(5) == -signal.SIGTERM
    finally:
        polite.kill()
        polite.wait()
    assert launcher.stop_nodes(plans) == {1: "not running"}


def test_log_tail_is_the_last_lines(plan):
    assert launcher.log_tail(plan) == "(no log)"
    plan.log_path.write_text("".join(f"line {i}\n" for i in range(100)))
    assert launcher.log_tail(plan, lines=3) == "line 97\nline 98\nline 99"
