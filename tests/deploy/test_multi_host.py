"""A 3-controller + 3-broker cluster started from `kraftlog cluster render`'s
files, a dynamic quorum (KIP-853) each node formats on its host with the
render's format-<id>.sh before its first start, each node on a host of its own: its own network namespace and
address (chaos/testbed.py) and its own filesystem at the rendered paths (a
private mount namespace binds the node's own directory there, so the six
nodes read the same paths and share no directory). Each node is started as
the container image starts it (deploy/Dockerfile's ENTRYPOINT, CMD and ENV,
its node file at $KRAFTLOG_NODE_CONFIG), and the image's HEALTHCHECK runs
inside the node's namespaces as `docker exec` would. The nodes talk mTLS
with the certificates the render made, each host holding only the CA's and
its own. The clients run in the root namespace and reach the cluster only
through what the brokers advertise: one broker's address to bootstrap, the
rest from Metadata.

Skipped, with the reason, where namespaces cannot be made (not root, no `ip`).
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from chaos.testbed import NetworkTestbed, probe
from client.cluster import Cluster
from security.client_security import ClientSecurity
from client.health import SERVING, check_health
from client.producer import Producer
from client.topics import create_topic
from devcluster.local_processes import wait_until
from devcluster.read_back import read_back
from tests.cli_process import run_cli

from .dockerfile import as_local_process, read_image

CAPABILITIES = probe()
pytestmark = [
    pytest.mark.skipif(not CAPABILITIES.namespaces or not all(map(shutil.which, ("unshare", "nsenter"))),
                       reason=f"no network namespaces here: {CAPABILITIES.explain()}"),
]

CONTROLLERS, BROKERS = (1, 2, 3), (4, 5, 6)
CONTROLLER_PORT, GRPC_PORT, KAFKA_PORT = 9093, 9092, 9094
REPO = Path(__file__).resolve().parents[2]
IMAGE = read_image()
# Inside every node's mount namespace this directory is that node's own one.
MOUNT_POINT = "host"
NODE_FILE = "etc/node.yaml"  # under MOUNT_POINT: where $KRAFTLOG_NODE_CONFIG points, on every host
# The node process: its own view of MOUNT_POINT, then the server (exec: the pid stays the server's).
NODE_SHELL = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'


def cluster_file(bed: NetworkTestbed) -> str:
    """mTLS between the nodes and for gRPC clients (certificates made by the
    render, each host given its own); Kafka's protocol in plaintext beside."""
    nodes = [{"node.id": n, "host": bed.address(n), "process.roles": "controller",
              "listeners": f"CONTROLLER://:{CONTROLLER_PORT}"} for n in CONTROLLERS]
    nodes += [{"node.id": n, "host": bed.address(n), "process.roles": "broker",
               "listeners": f"SSL://:{GRPC_PORT},KAFKA://:{KAFKA_PORT}"} for n in BROKERS]
    return textwrap.dedent("""\
        cluster.id: bXVsdGktaG9zdC10ZXN0MDE
        tls: true
        quorum: dynamic
        defaults:
          controller.quorum.election.timeout.ms: 1000
          listener.security.protocol.map: SSL:SSL,CONTROLLER:SSL,KAFKA:PLAINTEXT
          inter.broker.listener.name: SSL
          kraftlog.kafka.protocol.listeners: KAFKA
          default.replication.factor: 3
          min.insync.replicas: 2
        """) + yaml.safe_dump({"nodes": nodes}, sort_keys=False)


class Hosts:
    """The testbed, each node's own directory and process; close() removes them all."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="kraftlog-multi-host-"))
        self.bed = NetworkTestbed([str(n) for n in (*CONTROLLERS, *BROKERS)])
        self.processes: dict[int, subprocess.Popen] = {}

    def own_dir(self, node: int) -> Path:
        return self.root / f"node-{node}"

    @property
    def certs(self) -> Path:
        """The render's certificates: the CA and the admin client's stay with the operator (here)."""
        return self.root / "rendered" / "certs"

    @property
    def client_settings(self) -> dict[str, str]:
        """A gRPC client's settings, with Kafka's names: mTLS with the admin certificate."""
        return {"security.protocol": "SSL", "ssl.keystore.location": str(self.certs / "admin.pem"),
                "ssl.truststore.location": str(self.certs / "ca.pem")}

    @property
    def security(self) -> ClientSecurity:
        return ClientSecurity.from_config(self.client_settings)

    def cluster(self, bootstrap: str) -> Cluster:
        return Cluster(bootstrap, self.security)

    @property
    def node_env(self) -> dict[str, str]:
        """The image's environment, its node file where this test's hosts keep it
        (a container has it at /etc/kraftlog/node.yaml; this machine has no such
        directory), and numba's cache where this checkout keeps it (the image's
        is a directory of the image)."""
        image = {key: value for key, value in IMAGE.env.items() if key != "NUMBA_CACHE_DIR"}
        return {**os.environ, **image, "KRAFTLOG_NODE_CONFIG": str(self.root / MOUNT_POINT / NODE_FILE)}

    def start(self, node: int) -> None:
        """The image's command in the node's own network and mount namespaces."""
        own = self.own_dir(node)
        with (own / "server.log").open("ab") as log:
            self.processes[node] = subprocess.Popen(
                [*self.bed.exec_prefix(node), "unshare", "--mount", "--propagation", "private",
                 "sh", "-c", NODE_SHELL, "sh", str(own), str(self.root / MOUNT_POINT),
                 *as_local_process(IMAGE.command)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=self.node_env,
                start_new_session=True)

    def format(self, node: int, script: Path) -> str:
        """The render's format script's command in the node's mount namespace; its output."""
        command = script.read_text().rsplit("exec ", 1)[1].split()
        done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", NODE_SHELL, "sh",
                               str(self.own_dir(node)), str(self.root / MOUNT_POINT), *as_local_process(command)],
                              capture_output=True, text=True, cwd=REPO, env=self.node_env, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def health_check(self, node: int) -> subprocess.Popen:
        """The image's HEALTHCHECK inside the node's namespaces, as the container engine runs it."""
        return subprocess.Popen(["nsenter", "--target", str(self.processes[node].pid), "--mount", "--net",
                                 f"--wd={REPO}", *as_local_process(IMAGE.healthcheck)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                                env=self.node_env)

    def log_tails(self) -> str:
        return "\n".join(f"--- node {n} ---\n" + "\n".join(
            (self.own_dir(n) / "server.log").read_text(errors="replace").splitlines()[-15:])
            for n in self.processes)

    def close(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
        for process in self.processes.values():
            process.wait(timeout=10)
        self.bed.close()  # and whatever is left in its namespaces
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def running_hosts() -> Iterator[Hosts]:
    """Render the cluster file, give each node its host and its own file, start them all."""
    hosts = Hosts()
    try:
        hosts.bed.create()
        mounted = hosts.root / MOUNT_POINT
        spec = hosts.root / "cluster.yaml"
        spec.write_text(cluster_file(hosts.bed))
        rendered = hosts.root / "rendered"
        done = run_cli(["cluster", "render", "--config", str(spec), "--out", str(rendered),
                        "--data-dir", str(mounted / "data"), "--config-dir", str(mounted / "etc")],
                       {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})
        assert done.returncode == 0, done.stderr
        mounted.mkdir()
        for node in (*CONTROLLERS, *BROKERS):
            # What an operator copies to each host: its own file, the CA's
            # certificate and its own certificate, nothing else.
            etc = (hosts.own_dir(node) / NODE_FILE).parent
            (etc / "certs").mkdir(parents=True)
            shutil.copy(rendered / f"node-{node}.yaml", hosts.own_dir(node) / NODE_FILE)
            for name in ("ca.pem", f"node-{node}.pem"):
                shutil.copy(hosts.certs / name, etc / "certs")
            # the format script names the node file as rendered (<config-dir>/node-<id>.yaml)
            shutil.copy(rendered / f"node-{node}.yaml", etc)
            script = rendered / f"format-{node}.sh"
            directory_id = re.search(r"directory\.id (\S+)\)", hosts.format(node, script))
            assert directory_id is not None
            # a controller takes the directory id the shared --initial-controllers list gives it
            assert node in BROKERS or \
                f"{node}@{hosts.bed.address(node)}:{CONTROLLER_PORT}:{directory_id[1]}" in script.read_text()
            hosts.start(node)
        yield hosts
    finally:
        hosts.close()


@pytest.fixture(scope="module")
def hosts():
    with running_hosts() as started:
        yield started


def listener_addresses(hosts: Hosts) -> list[str]:
    return [f"{hosts.bed.address(n)}:{CONTROLLER_PORT if n in CONTROLLERS else GRPC_PORT}"
            for n in (*CONTROLLERS, *BROKERS)]


@pytest.fixture(scope="module")
def bootstrap(hosts):
    """One broker's advertised gRPC address, once every node's listener reports
    SERVING (gRPC health, as a readiness probe asks) and the three brokers are registered."""
    address = f"{hosts.bed.address(BROKERS[0])}:{GRPC_PORT}"
    problems: list[str] = []

    def ready() -> bool:
        exited = [n for n, p in hosts.processes.items() if p.poll() is not None]
        assert not exited, f"node {exited} exited\n{hosts.log_tails()}"
        problems[:] = [f"{a}: {s}" for a in listener_addresses(hosts)
                       if (s := check_health(a, hosts.security, timeout=1)) != SERVING]
        if problems:
            return False
        with hosts.cluster(address) as cluster:
            return len(cluster.refresh([]).brokers) == len(BROKERS)

    try:
        wait_until(ready, 90.0, "quorum and brokers", interval=0.3)
    except TimeoutError:
        pytest.fail(f"the cluster did not come up ({problems})\n{hosts.log_tails()}")
    return address


def test_the_brokers_advertise_their_own_hosts_and_the_nodes_are_only_there(hosts, bootstrap):
    with hosts.cluster(bootstrap) as cluster:
        brokers = {b.node_id: (b.host, b.port) for b in cluster.refresh([]).brokers}
    assert brokers == {n: (hosts.bed.address(n), GRPC_PORT) for n in BROKERS}
    # without the admin certificate a node refuses the client (mTLS)
    assert check_health(bootstrap, ClientSecurity.from_config({
        "security.protocol": "SSL", "ssl.truststore.location": str(hosts.certs / "ca.pem")}), timeout=5) != SERVING
    # nothing listens on this machine's loopback: the nodes are on their hosts only
    with hosts.cluster(f"127.0.0.1:{GRPC_PORT}") as local:
        with pytest.raises(Exception):
            local.refresh([])


def test_the_image_health_check_passes_inside_a_broker(hosts, bootstrap):
    """On a broker, as that is where SERVING waits for something (the catch-up);
    a controller's listener is checked from outside below."""
    check = hosts.health_check(BROKERS[0])
    out, err = check.communicate(timeout=60)
    # the node's own file tells the check where it listens: every interface, dialled on loopback
    assert (check.returncode, out) == (0, f"127.0.0.1:{GRPC_PORT}: SERVING\n"), err


def test_the_health_command_checks_a_node_from_outside_its_host(hosts, bootstrap):
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    client = hosts.root / "client.properties"
    client.write_text("".join(f"{key}={value}\n" for key, value in hosts.client_settings.items()))
    addresses = listener_addresses(hosts)
    done = run_cli(["health", "--address", addresses[0], "--command-config", str(client)], env)
    assert (done.returncode, done.stdout) == (0, f"{addresses[0]}: SERVING\n"), done.stderr
    nothing = f"{hosts.bed.address(BROKERS[0])}:{CONTROLLER_PORT}"  # a broker-only host has no controller listener
    done = run_cli(["health", "--address", nothing, "--timeout", "2", "--command-config", str(client)], env)
    assert (done.returncode, done.stdout) == (1, f"{nothing}: UNAVAILABLE\n")


def test_a_grpc_client_produces_and_consumes_through_the_advertised_listeners(hosts, bootstrap):
    topic = "multi-host"
    with hosts.cluster(bootstrap) as cluster:
        create_topic(cluster, topic, 3, 3)

    def led_everywhere() -> bool:
        for node in BROKERS:
            with hosts.cluster(f"{hosts.bed.address(node)}:{GRPC_PORT}") as one:
                found = one.refresh([topic]).topics
            if not found or found[0].error_code or any(p.leader_id < 0 for p in found[0].partitions):
                return False
        return True

    wait_until(led_everywhere, 20.0, "leaders of every partition on every broker", interval=0.2)
    with Producer({**hosts.client_settings, "bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5}) as producer:
        for i in range(300):
            producer.produce(topic, f"value-{i}".encode(), key=f"key-{i}".encode())
        assert producer.flush(20) == 0
    got = read_back(bootstrap, topic, range(3), max_messages=300, idle_timeout_s=5, settings=hosts.client_settings)
    assert sorted(r.value for r in got) == sorted(f"value-{i}".encode() for i in range(300))
    # each broker keeps its replicas in its own directory, which no other node sees
    for node in BROKERS:
        data = hosts.own_dir(node) / "data" / f"node-{node}"
        assert sorted(p.name for p in data.iterdir() if p.name.startswith(topic)) == \
            [f"{topic}-{p}" for p in range(3)]
    assert not (hosts.root / MOUNT_POINT / "data").exists()  # the shared path holds nothing outside a node


def test_a_kafka_client_reaches_the_cluster_through_the_advertised_kafka_listeners(hosts, bootstrap):
    """librdkafka bootstraps from a broker that does not lead the partition:
    it reaches the leader only at the address the leader advertises."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from tests.kafka_protocol.kafka_client_reads import read_assigned
    topic = "multi-host-kafka"
    with hosts.cluster(bootstrap) as cluster:
        create_topic(cluster, topic, 1, 3)
        leader = wait_until(lambda: next((p.leader_id for p in cluster.refresh([topic]).topics[0].partitions
                                          if p.leader_id >= 0), None), 20.0, "a leader")
        advertised = {b.node_id: b for b in cluster.refresh([]).brokers}
    other = next(n for n in BROKERS if n != leader)
    settings = {"bootstrap.servers": f"{hosts.bed.address(other)}:{KAFKA_PORT}"}
    producer = confluent_kafka.Producer({**settings, "acks": "all"})
    deadline = time.monotonic() + 20
    delivered: list = []
    for i in range(20):
        producer.produce(topic, f"k{i}".encode(), on_delivery=lambda err, msg: delivered.append(err))
    while len(delivered) < 20 and time.monotonic() < deadline:
        producer.poll(0.2)
    assert delivered == [None] * 20
    assert advertised[leader].host == hosts.bed.address(leader)
    read = read_assigned(settings, [confluent_kafka.TopicPartition(topic, 0, 0)], 20, 20)
    assert [m.value() for m in read] == [f"k{i}".encode() for i in range(20)]
