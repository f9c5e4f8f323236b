"""A local cluster from one YAML file: every node a background process.

The cluster file (deploy/README.md has the details):

```yaml
cluster.id: MkU3OEVBNTcwNTJENDM2Qk
defaults:                      # properties every node gets
  controller.quorum.election.timeout.ms: 1000
nodes:                         # per node: its own properties, over the defaults
  - node.id: 1
    process.roles: controller
    listeners: CONTROLLER://127.0.0.1:19091
```

Under the data directory each node has `node-<id>/` holding `server.yaml`
(its derived properties), `server.log` (stdout and stderr, appended),
`server.pid`, and `data/` (its `log.dirs`).

`tls: true` at the top of the file makes a TLS cluster for tests and demos:
the launcher keeps a CA and certificates in `<data-dir>/certs/` (made by
`kraftlog certs`' code on first start: `node-<id>.pem` per node with its
hosts, `admin.pem` for the launcher's own client, `ca.pem`), and gives each
node, unless the file sets them, `ssl.keystore.location`,
`ssl.truststore.location`, `ssl.client.auth: required` (mTLS between nodes)
and a `listener.security.protocol.map` with every listener on SSL.

`scram_users: {admin: admin-secret}` at the top of the file (optional, off
by default) formats each controller's directory before its first start as
`kraftlog storage format --add-scram` would: SCRAM-SHA-256 and SCRAM-SHA-512
credentials per user, appended once by the first active controller. The
passwords stay in the cluster file; no node's file holds them.

The first half of this module is pure (parse the file, derive each node's
properties and check them through ServerConfig); the second half starts,
finds and stops processes.
"""
from __future__ import annotations

import ipaddress
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from client.admin import describe_quorum
from client.cluster import Cluster
from partition_log.checkpoint import write_atomically
from kafka_protocol.errors import InvalidConfigError, KafkaError
from security import certs
from security.client_security import ClientSecurity
from security.listeners import LISTENER_SECURITY_PROTOCOL_MAP, SecurityProtocol
from security.ssl_config import CLIENT_AUTH, KEYSTORE_LOCATION, TRUSTSTORE_LOCATION, SslConfig
from security.scram_config import ScramSetting
from security.scram_credentials import DEFAULT_ITERATIONS, ScramMechanism

from kraftlog_server.server_config import (
    CLUSTER_ID, LOG_DIR, LOG_DIRS, NODE_ID, VOTERS, WILDCARD_HOSTS, ServerConfig, find_controller_endpoint,
    format_address, local_dial_host, parse_controller_listener_names, parse_listeners, parse_roles, parse_yaml_properties,
)
from kraftlog_server.storage_format import format_storage

DEFAULTS = "defaults"
NODES = "nodes"
TLS = "tls"
SCRAM_USERS = "scram_users"  # user name -> password, for each controller's bootstrap.checkpoint
# `quorum: dynamic` (KIP-853): only `cluster render` writes one (devcluster/render.py); `cluster up` is static.
QUORUM = "quorum"
STATIC, DYNAMIC = "static", "dynamic"
CLUSTER_KEYS = (CLUSTER_ID, DEFAULTS, NODES, TLS, SCRAM_USERS, QUORUM)
# A node's host (name or address) in the cluster file: not a node property but
# where the node runs and what the others dial when its listener binds every
# interface (`kraftlog cluster render`, devcluster/render.py).
NODE_HOST = "host"
# `join: true` on a controller of a dynamic quorum: formatted to join later, not an initial voter.
NODE_JOIN = "join"
CERTS_DIR = "certs"
LOG_NAME = "server.log"  # in each node's directory, beside server.yaml
ADMIN_CERT = "admin"  # the launcher's own client certificate
# The launcher lays out each node's directory itself.
LAUNCHER_OWNED = (LOG_DIRS, LOG_DIR)


# -- pure: the cluster file and each node's properties ----------------------------------------

@dataclass(frozen=True)
class ClusterSpec:
    cluster_id: str
    defaults: dict[str, Any]
    nodes: tuple[dict[str, Any], ...]  # each node's own properties, node.id included
    tls: bool = False  # certificates made by the launcher, every listener SSL, mTLS
    hosts: dict[int, str] = field(default_factory=dict)  # node id -> its `host`, where the file gives one
    quorum: str = STATIC  # `quorum:` of the file: static voters or a dynamic (KIP-853) quorum
    joining: frozenset[int] = frozenset()  # controllers with `join: true` (a dynamic quorum's, formatted to join)


@dataclass(frozen=True)
class NodePlan:
    """One node as the launcher runs it: its properties, checked, and its files."""

    node_id: int
    home: Path  # <data-dir>/node-<id>
    properties: dict[str, Any]
    config: ServerConfig
    certs_dir: Path | None = None  # a `tls: true` cluster's CA and certificates
    # The cluster file's scram_users, formatted into a controller's directory before its first start.
    scram_users: tuple[ScramSetting, ...] = field(default=(), repr=False)

    @property
    def config_path(self) -> Path:
        return self.home / "server.yaml"

    @property
    def log_path(self) -> Path:
        return self.home / LOG_NAME

    @property
    def pid_path(self) -> Path:
        return self.home / "server.pid"


def default_data_dir(cluster_file: str | Path) -> Path:
    return Path(tempfile.gettempdir()) / f"kraftlog-{Path(cluster_file).stem}"


def plan_cluster(cluster_file: str | Path, data_dir: str | Path | None = None) -> tuple[NodePlan, ...]:
    """Read the cluster file and derive every node's checked configuration."""
    text = Path(cluster_file).read_text(encoding="utf-8")
    home = Path(data_dir) if data_dir is not None else default_data_dir(cluster_file)
    try:
        users = parse_scram_users(text)
        return tuple(replace(plan, scram_users=users) for plan in plan_nodes(parse_cluster(text), home))
    except InvalidConfigError as exc:
        raise InvalidConfigError(f"{cluster_file}: {exc.args[0] if exc.args else exc}") from None


def parse_cluster(text: str) -> ClusterSpec:
    data = parse_yaml_properties(text)
    for key in data:
        if key not in CLUSTER_KEYS:
            raise InvalidConfigError(f"{key}: not a cluster file key ({', '.join(CLUSTER_KEYS)}); "
                                     f"node properties go under {DEFAULTS} or {NODES}")
    if data.get(CLUSTER_ID) is None:
        raise InvalidConfigError(f"{CLUSTER_ID}: is required at the top of the cluster file")
    defaults = _properties(DEFAULTS, data.get(DEFAULTS) or {})
    nodes = data.get(NODES)
    if not isinstance(nodes, list) or not nodes:
        raise InvalidConfigError(f"{NODES}: expected a list of nodes, each a mapping with {NODE_ID}")
    specs = tuple(_properties(f"{NODES}[{i}]", node) for i, node in enumerate(nodes))
    host_of = [_node_host(f"{NODES}[{i}]", node.pop(NODE_HOST, None)) for i, node in enumerate(specs)]
    joins = [_flag(f"{NODES}[{i}]: {NODE_JOIN}", node.pop(NODE_JOIN, False)) for i, node in enumerate(specs)]
    seen: set[Any] = set()
    for i, node in enumerate(specs):
        node_id = node.get(NODE_ID)
        # An int here, so that a node's directory is named as its id prints.
        if not isinstance(node_id, int) or isinstance(node_id, bool) or node_id < 0:
            raise InvalidConfigError(f"{NODES}[{i}]: {NODE_ID}: expected an integer >= 0, got {node_id!r}")
        if node[NODE_ID] in seen:
            raise InvalidConfigError(f"{NODES}[{i}]: {NODE_ID} {node[NODE_ID]} is used twice")
        seen.add(node[NODE_ID])
    tls = _flag(TLS, data.get(TLS, False))
    quorum = data.get(QUORUM, STATIC)
    if quorum not in (STATIC, DYNAMIC):
        raise InvalidConfigError(f"{QUORUM}: expected {STATIC} or {DYNAMIC}, got {quorum!r}")
    hosts = {node[NODE_ID]: host for node, host in zip(specs, host_of) if host is not None}
    joining = frozenset(node[NODE_ID] for node, join in zip(specs, joins) if join)
    if joining and quorum != DYNAMIC:
        raise InvalidConfigError(f"{NODE_JOIN}: only a controller of a `{QUORUM}: {DYNAMIC}` cluster joins later "
                                 f"(nodes {', '.join(map(str, sorted(joining)))})")
    return ClusterSpec(cluster_id=data[CLUSTER_ID], defaults=defaults, nodes=specs, tls=tls, hosts=hosts,
                       quorum=quorum, joining=joining)


def _flag(where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidConfigError(f"{where}: expected true or false, got {value!r}")
    return value


_HOST_NAME = re.compile(r"(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                        r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?")


def _node_host(where: str, value: Any) -> str | None:
    """A DNS name or an IP address, never a wildcard: others dial it."""
    if value is None:
        return None
    host = value.strip() if isinstance(value, str) else ""
    if host not in WILDCARD_HOSTS and not _HOST_NAME.fullmatch(host):
        try:
            ipaddress.ip_address(host)
        except ValueError:
            host = ""
    if host in WILDCARD_HOSTS:
        raise InvalidConfigError(f"{where}: {NODE_HOST}: expected the host name or address the node is "
                                 f"reached at (not a wildcard), got {value!r}")
    return host


def parse_scram_users(text: str) -> tuple[ScramSetting, ...]:
    """`scram_users: {NAME: PASSWORD, ...}` -> a SCRAM-SHA-256 and a SCRAM-SHA-512 credential per user."""
    users = parse_yaml_properties(text).get(SCRAM_USERS) or {}
    if not isinstance(users, dict) or not all(isinstance(n, str) and n and isinstance(p, str) and p
                                              for n, p in users.items()):
        raise InvalidConfigError(f"{SCRAM_USERS}: expected a mapping of user names to passwords, both non-empty text")
    return tuple(ScramSetting(mechanism, DEFAULT_ITERATIONS, name, password=password)
                 for name, password in users.items() for mechanism in ScramMechanism)


def plan_nodes(spec: ClusterSpec, data_dir: Path) -> tuple[NodePlan, ...]:
    """Each node's properties: cluster.id, the defaults, its own, then what
    the launcher derives (controller.quorum.voters unless given, log.dirs)."""
    data_dir = data_dir.absolute()
    if spec.quorum != STATIC:
        raise InvalidConfigError(f"{QUORUM}: {spec.quorum}: `cluster up` runs static voters; "
                                 "`cluster render` renders a dynamic quorum")
    merged = merged_properties(spec)
    voters = None if VOTERS in spec.defaults else derived_voters(merged, spec.hosts)
    certs_dir = data_dir / CERTS_DIR if spec.tls else None
    plans = []
    for props in merged:
        node_id = props[NODE_ID]
        home = data_dir / f"node-{node_id}"
        try:
            if voters is not None:
                props.setdefault(VOTERS, voters)
            props[LOG_DIRS] = str(home / "data")
            if certs_dir is not None:
                add_tls(props, certs_dir)
            config = ServerConfig.from_mapping(props)
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"node {node_id}: {exc.args[0] if exc.args else exc}") from None
        plans.append(NodePlan(node_id, home, props, config, certs_dir))
    return tuple(plans)


def merged_properties(spec: ClusterSpec) -> list[dict[str, Any]]:
    """Each node's properties as the file gives them: cluster.id, the defaults, then its own."""
    return [{NODE_ID: node[NODE_ID], CLUSTER_ID: spec.cluster_id, **spec.defaults, **node} for node in spec.nodes]


def add_tls(props: dict[str, Any], certs_dir: Path) -> None:
    """A TLS cluster's settings, where the file does not give its own."""
    names = [e.name for e in parse_listeners(props)] + list(parse_controller_listener_names(props))
    props.setdefault(LISTENER_SECURITY_PROTOCOL_MAP, ",".join(f"{n}:SSL" for n in dict.fromkeys(names)))
    props.setdefault(KEYSTORE_LOCATION, str(certs_dir / f"node-{props[NODE_ID]}.pem"))
    props.setdefault(TRUSTSTORE_LOCATION, str(certs_dir / certs.CA_CERT))
    props.setdefault(CLIENT_AUTH, "required")


def client_security(plans: Sequence[NodePlan]) -> ClientSecurity:
    """How the launcher's own client (and a test's) reaches the nodes: with
    the admin certificate on a `tls: true` cluster, plaintext otherwise."""
    certs_dir = plans[0].certs_dir if plans else None
    if certs_dir is None:
        return ClientSecurity()
    return ClientSecurity(SecurityProtocol.SSL, SslConfig(keystore_location=str(certs_dir / f"{ADMIN_CERT}.pem"),
                                                          truststore_location=str(certs_dir / certs.CA_CERT)))


def client_properties(plans: Sequence[NodePlan]) -> dict[str, str]:
    """The same as a client's settings (security.protocol, ssl.*), for producers and consumers."""
    security = client_security(plans)
    if security.ssl is None:
        return {}
    return {"security.protocol": security.protocol.value, KEYSTORE_LOCATION: str(security.ssl.keystore_location),
            TRUSTSTORE_LOCATION: str(security.ssl.truststore_location)}


def ensure_certificates(plan: NodePlan) -> None:
    """A `tls: true` cluster's CA, this node's certificate and the admin client's, made once."""
    if plan.certs_dir is not None:
        ensure_node_certificates(plan.certs_dir, plan.node_id, plan.config)


def ensure_node_certificates(certs_dir: Path, node_id: int, config: ServerConfig, hosts: Iterable[str] = ()) -> Path:
    """The CA, node-<id>.pem and the admin's in `certs_dir`, each made only if
    missing; the node's names its listeners' hosts, `hosts` and the loopback
    names (a node's own checks dial those). The node's keystore path."""
    if not (certs_dir / certs.CA_CERT).exists():
        certs.init_ca(certs_dir)
    names = {e.host for e in (*config.listeners, *config.advertised_listeners)
             if e.host not in WILDCARD_HOSTS} | {"127.0.0.1", "localhost", *hosts}
    keystore = certs_dir / f"node-{node_id}.pem"
    if not keystore.exists():
        certs.issue(certs_dir, f"node-{node_id}", sorted(names))
    if not (certs_dir / f"{ADMIN_CERT}.pem").exists():
        certs.issue(certs_dir, ADMIN_CERT, client=True)
    return keystore


def bootstrap_controllers(plans: Iterable[NodePlan]) -> str:
    """HOST:PORT,... of every voter, for DescribeQuorum."""
    addresses: dict[str, None] = {}
    for plan in plans:
        addresses.update(dict.fromkeys(plan.config.voter_addresses().values()))
    return ",".join(addresses)


def _properties(where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise InvalidConfigError(f"{where}: expected a mapping of property names to values")
    for key in value:
        if key == CLUSTER_ID:
            raise InvalidConfigError(f"{where}: {CLUSTER_ID} belongs at the top of the cluster file")
        if key in LAUNCHER_OWNED:
            raise InvalidConfigError(f"{where}: {key} is set by the launcher "
                                     "(<data-dir>/node-<id>/data); choose the directory with --data-dir")
    return dict(value)


def derived_voters(nodes: Sequence[Mapping[str, Any]], hosts: Mapping[int, str]) -> str:
    """`id@host:port` of each controller's controller listener; a wildcard
    host is dialled at the node's `host`, else on the loopback interface."""
    voters = []
    for props in nodes:
        try:
            if "controller" not in parse_roles(props):
                continue
            endpoint = find_controller_endpoint(parse_listeners(props), parse_controller_listener_names(props))
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"node {props[NODE_ID]}: {exc.args[0] if exc.args else exc}") from None
        host = hosts.get(props[NODE_ID], endpoint.host) if endpoint.host in WILDCARD_HOSTS else endpoint.host
        voters.append(f"{props[NODE_ID]}@{format_address(local_dial_host(host), endpoint.port)}")
    if not voters:
        raise InvalidConfigError(f"{NODES}: no node has process.roles controller")
    return ",".join(voters)


# -- processes --------------------------------------------------------------------------------

class LeaderNotFoundError(Exception):
    """`cluster up` gave up: no leader in time, or a node exited."""


def read_pid(plan: NodePlan) -> int | None:
    try:
        text = plan.pid_path.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else None


def is_alive(pid: int, config_path: Path) -> bool:
    """The process runs and is this node's server: its command line names the
    node's config file, or (a node the tests' fork server started, whose command
    line is the server's) its stdout is the node's log; so a reused pid is not
    taken for the node."""
    command_line = _command_line(pid)
    if str(config_path).encode() in command_line:
        return True
    try:
        return bool(command_line) and os.readlink(f"/proc/{pid}/fd/1") == str(config_path.parent / LOG_NAME)
    except OSError:
        return False


def _command_line(pid: int) -> list[bytes]:
    """The process's arguments; none if it is gone or a zombie."""
    # Just after exec the kernel may show an empty command line for a few
    # milliseconds; a process that keeps it empty is a zombie (or a kernel thread).
    deadline = time.monotonic() + 0.5
    while True:
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            return []
        if raw or stat.rpartition(b")")[2].split()[:1] == [b"Z"] or time.monotonic() >= deadline:
            return raw.split(b"\0")
        time.sleep(0.005)


def running_pid(plan: NodePlan) -> int | None:
    pid = read_pid(plan)
    return pid if pid is not None and is_alive(pid, plan.config_path) else None


def start_node(plan: NodePlan, command_prefix: Sequence[str] = ()) -> int:
    """Write the node's server.yaml and start it in its own session; its pid.
    `command_prefix` runs it through another command that execs it (the
    chaos testbed's `ip netns exec NS`), so the pid is still the server's."""
    return launch_node(plan, command_prefix).pid


def launch_node(plan: NodePlan, command_prefix: Sequence[str] = ()) -> subprocess.Popen:
    """start_node's process, for a starter that waits for it itself."""
    prepare_node(plan)
    command = [*command_prefix, sys.executable, "-m", "kraftlog", *node_arguments(plan)]
    with plan.log_path.open("ab") as log:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    write_pid(plan, process.pid)
    return process


def prepare_node(plan: NodePlan) -> None:
    """What a node's start needs on disk: its directory, certificates, server.yaml and (on a
    controller's first start with scram_users) its formatted storage."""
    plan.home.mkdir(parents=True, exist_ok=True)
    ensure_certificates(plan)
    write_atomically(plan.config_path, yaml.safe_dump(plan.properties, sort_keys=False).encode())
    if plan.scram_users and plan.config.is_controller:
        format_storage(plan.config, plan.scram_users, ignore_formatted=True)  # first start only


def node_arguments(plan: NodePlan) -> list[str]:
    """`kraftlog` arguments that run the node."""
    return ["server", "--config", str(plan.config_path)]


def write_pid(plan: NodePlan, pid: int) -> None:
    write_atomically(plan.pid_path, f"{pid}\n".encode())


def wait_for_leader(plans: tuple[NodePlan, ...], timeout: float) -> dict[str, Any]:
    """The quorum's description once it has a leader and every node still runs."""
    deadline = time.monotonic() + timeout
    bootstrap = bootstrap_controllers(plans)
    last_error: KafkaError | None = None
    while True:
        exited = [plan.node_id for plan in plans if running_pid(plan) is None]
        if exited:
            raise LeaderNotFoundError(f"node {', '.join(map(str, exited))} exited")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LeaderNotFoundError(f"no leader after {timeout:g}s ({last_error})")
        try:
            return describe_quorum(bootstrap, timeout=min(1.0, remaining), security=client_security(plans))
        except KafkaError as exc:
            last_error = exc


def broker_bootstrap(plans: Iterable[NodePlan]) -> str:
    """HOST:PORT,... of every broker's first advertised gRPC listener ("" without brokers)."""
    return ",".join(f"{e.host}:{e.port}" for plan in plans if plan.config.is_broker
                    for e in [e for e in plan.config.advertised_listeners
                              if not plan.config.is_kafka_protocol(e)][:1])


def wait_for_brokers(plans: tuple[NodePlan, ...], timeout: float) -> list[int]:
    """Wait until every broker of the file is registered and unfenced (Metadata lists
    only unfenced brokers); their ids. Nothing to wait for without brokers."""
    expected = {plan.node_id for plan in plans if plan.config.is_broker}
    if not expected:
        return []
    deadline = time.monotonic() + timeout
    seen: set[int] = set()
    with Cluster(broker_bootstrap(plans), client_security(plans)) as cluster:
        while True:
            exited = [plan.node_id for plan in plans if running_pid(plan) is None]
            if exited:
                raise LeaderNotFoundError(f"node {', '.join(map(str, exited))} exited")
            try:
                seen = {b.node_id for b in cluster.refresh([]).brokers}
            except KafkaError:
                pass
            if expected <= seen:
                return sorted(expected)
            if time.monotonic() >= deadline:
                missing = ", ".join(map(str, sorted(expected - seen)))
                raise LeaderNotFoundError(f"broker {missing} not unfenced after {timeout:g}s")
            time.sleep(0.2)


def describe_if_reachable(plans: tuple[NodePlan, ...], timeout: float = 2.0) -> dict[str, Any] | None:
    try:
        return describe_quorum(bootstrap_controllers(plans), timeout=timeout, security=client_security(plans))
    except KafkaError:
        return None


def stop_nodes(plans: tuple[NodePlan, ...], grace: float = 10.0) -> dict[int, str]:
    """Stop broker-only nodes first, then the rest, as Kafka's operators do: a
    broker's controlled shutdown needs the controllers still up. Node id -> what happened."""
    brokers_only = tuple(p for p in plans if p.config.is_broker and not p.config.is_controller)
    combined = tuple(p for p in plans if p.config.is_broker and p.config.is_controller)
    controllers_only = tuple(p for p in plans if not p.config.is_broker)
    outcome = _stop_group(brokers_only, grace) if brokers_only else {}
    # Combined nodes one at a time: each one's controlled shutdown needs a
    # quorum of the others. (The last one has none left and waits out its
    # bounded shutdown; see the issue note.)
    for plan in combined:
        outcome.update(_stop_group((plan,), grace))
    if controllers_only:
        outcome.update(_stop_group(controllers_only, grace))
    return dict(sorted(outcome.items()))


def stop_node(plan: NodePlan, grace: float = 10.0) -> str:
    """SIGTERM one node, SIGKILL it if it outlives `grace` seconds; what happened."""
    return _stop_group((plan,), grace)[plan.node_id]


def _stop_group(plans: tuple[NodePlan, ...], grace: float) -> dict[int, str]:
    """SIGTERM each running node, SIGKILL what outlives `grace` seconds, and
    remove the pid files of nodes that are gone."""
    outcome: dict[int, str] = {}
    running = {plan.node_id: (plan, pid) for plan in plans if (pid := running_pid(plan)) is not None}
    for plan in plans:
        if plan.node_id not in running:
            outcome[plan.node_id] = "not running"
    for node_id, (plan, pid) in running.items():
        _signal(pid, signal.SIGTERM)
        outcome[node_id] = f"stopped (pid {pid})"
    survivors = _wait_gone(running, grace)
    for node_id, (plan, pid) in survivors.items():
        _signal(pid, signal.SIGKILL)
        outcome[node_id] = f"killed after {grace:g}s (pid {pid})"
    for node_id in _wait_gone(survivors, 5.0):
        outcome[node_id] = f"still running (pid {running[node_id][1]})"
    for plan in plans:
        if running_pid(plan) is None:
            plan.pid_path.unlink(missing_ok=True)
    return dict(sorted(outcome.items()))


def log_tail(plan: NodePlan, lines: int = 20) -> str:
    try:
        with plan.log_path.open("rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - 64 * 1024))
            text = log.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _wait_gone(nodes: Mapping[int, tuple[NodePlan, int]], timeout: float) -> dict[int, tuple[NodePlan, int]]:
    deadline = time.monotonic() + timeout
    while True:
        left = {i: (plan, pid) for i, (plan, pid) in nodes.items() if is_alive(pid, plan.config_path)}
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
