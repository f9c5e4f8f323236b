"""`kraftlog cluster render`: one node file per node of a cluster file, for
nodes that run on their own hosts.

`cluster up` starts every node on this machine; a real cluster runs each
node on its own host from its own file. Rendering derives, per node, what
`cluster up` derives for a local run, but for the node's host:

- `host:` on a node of the cluster file (a name or an address) is where the
  node runs. A listener that binds every interface (`PLAINTEXT://:9092`) is
  advertised, and a controller's is dialled, at that host; a listener with a
  host of its own keeps it.
- `advertised.listeners` on every broker, unless the file gives them: a
  client only ever reaches a broker at what it advertises.
- the quorum: `controller.quorum.voters` (static voters, `id@host:port` of
  each controller), or with `quorum: dynamic` at the top of the file a
  KIP-853 quorum: `controller.quorum.bootstrap.servers` (`host:port` of each
  initial controller) on every node, and per node the one `kraftlog storage
  format` to run on its host before its first start. The initial controllers
  (every controller without `join: true`) are formatted with one shared
  `--initial-controllers id@host:port:DIRID,...`, whose directory ids are made
  once per render; brokers and joining controllers with neither option.
  `quorum_properties` is the one place that writes the quorum.
- `log.dirs`: `<data-dir>/node-<id>` on the node's host, and with
  `tls: true` the `ssl.*` paths under `<config-dir>/certs/`, whose files the
  render writes too (a CA, each node's certificate for its host names).

Nothing is written unless every node checks out: each node's properties
pass `ServerConfig` as the server will read them, no two nodes on one host
share a port, and no address a node is reached at is a wildcard.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Mapping, Sequence

import yaml

from kafka_protocol.errors import InvalidConfigError
from kraftlog_server.server_config import (
    ADVERTISED_LISTENERS, BOOTSTRAP_SERVERS, LOG_DIRS, NODE_ID, VOTERS, WILDCARD_HOSTS, ServerConfig, format_address,
    parse_controller_listener_names, parse_listeners, parse_roles,
)
from kraftlog_server.storage_format import new_directory_id
from partition_log.checkpoint import write_atomically
from security import certs

from .launcher import (ADMIN_CERT, CERTS_DIR, DYNAMIC, NODE_HOST, NODE_JOIN, QUORUM, ClusterSpec, add_tls,
                       derived_voters, ensure_node_certificates, merged_properties)

DEFAULT_DATA_DIR = PurePosixPath("/var/lib/kraftlog")
DEFAULT_CONFIG_DIR = PurePosixPath("/etc/kraftlog")


@dataclass(frozen=True)
class RenderedNode:
    node_id: int
    host: str  # where the node runs, as the others reach it
    properties: dict[str, Any]  # its node file
    config: ServerConfig
    # A dynamic quorum's node: how it is formatted; `initial_controllers` the shared list
    # on an initial controller, None on a broker or a joining controller.
    dynamic: bool = False
    initial_controllers: str | None = None

    @property
    def file_name(self) -> str:
        return f"node-{self.node_id}.yaml"

    @property
    def format_file_name(self) -> str:
        return f"format-{self.node_id}.sh"

    def format_command(self, config_dir: PurePosixPath = DEFAULT_CONFIG_DIR) -> str:
        """The `kraftlog storage format` to run on the node's host, its file under config_dir."""
        command = f"kraftlog storage format --config {config_dir / self.file_name}"
        return command if self.initial_controllers is None else \
            f"{command} --initial-controllers {self.initial_controllers}"

    def ports(self) -> list[int]:
        """Every port the node binds on its host."""
        ports = [e.port for e in self.config.listeners if e.port]
        if self.config.metrics_listener is not None:
            ports.append(self.config.metrics_listener[1])
        return ports


def quorum_properties(nodes: Sequence[Mapping[str, Any]], hosts: Mapping[int, str],
                      dynamic: bool = False) -> dict[str, str]:
    """How every node finds the controllers: the static voter set, or for a
    dynamic quorum (KIP-853) `controller.quorum.bootstrap.servers`, HOST:PORT
    of each of `nodes`' controllers (the voters are formatted into the log instead)."""
    voters = derived_voters(nodes, hosts)
    if not dynamic:
        return {VOTERS: voters}
    return {BOOTSTRAP_SERVERS: ",".join(voter.partition("@")[2] for voter in voters.split(","))}


def initial_controllers(nodes: Sequence[Mapping[str, Any]], hosts: Mapping[int, str]) -> str:
    """`--initial-controllers` for `nodes`' controllers: ID@HOST:PORT:DIRID each,
    with a directory id made here, once, for every one of them."""
    return ",".join(f"{voter}:{new_directory_id()}" for voter in derived_voters(nodes, hosts).split(","))


def render_nodes(spec: ClusterSpec, data_dir: PurePosixPath = DEFAULT_DATA_DIR,
                 config_dir: PurePosixPath = DEFAULT_CONFIG_DIR) -> tuple[RenderedNode, ...]:
    """Every node's file, checked; InvalidConfigError names the node and the property."""
    merged = merged_properties(spec)
    hosts = {props[NODE_ID]: _guarded(props[NODE_ID], node_host, props, spec.hosts) for props in merged}
    dynamic = spec.quorum == DYNAMIC
    if dynamic:
        initial = _initial_voters(spec, merged)
        quorum = quorum_properties(initial, hosts, dynamic=True)
        shared = initial_controllers(initial, hosts)
    else:
        quorum = {} if VOTERS in spec.defaults else quorum_properties(merged, hosts)
    rendered = []
    for props in merged:
        node_id = props[NODE_ID]
        for key, value in quorum.items():
            props.setdefault(key, value)
        props[LOG_DIRS] = str(data_dir / f"node-{node_id}")
        if spec.tls:
            add_tls(props, config_dir / CERTS_DIR)
        config = _guarded(node_id, _checked, props, hosts[node_id])
        formatted_with = shared if dynamic and any(n[NODE_ID] == node_id for n in initial) else None
        rendered.append(RenderedNode(node_id, hosts[node_id], props, config, dynamic, formatted_with))
    check_ports(rendered)
    return tuple(rendered)


def _initial_voters(spec: ClusterSpec, merged: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """A dynamic quorum's first voters: its controllers without `join: true`.
    Static voters in the file, a broker marked to join, or no initial
    controller at all cannot make one."""
    for props in merged:
        if VOTERS in props:
            raise InvalidConfigError(f"node {props[NODE_ID]}: {VOTERS}: a `{QUORUM}: {DYNAMIC}` cluster has no "
                                     "static voters (they are formatted into the log)")
        if props[NODE_ID] in spec.joining and "controller" not in parse_roles(props):
            raise InvalidConfigError(f"node {props[NODE_ID]}: {NODE_JOIN}: only a controller joins the quorum")
    initial = [p for p in merged if p[NODE_ID] not in spec.joining and "controller" in parse_roles(p)]
    if not initial:
        raise InvalidConfigError(f"{QUORUM}: {DYNAMIC}: no initial controller (a node with process.roles "
                                 f"controller and no `{NODE_JOIN}: true`) to start the quorum")
    return initial


def node_host(props: Mapping[str, Any], hosts: Mapping[int, str]) -> str:
    """The node's `host`, else the host its first listener names."""
    given = hosts.get(props[NODE_ID])
    if given is not None:
        return given
    named = [e.host for e in parse_listeners(props) if e.host not in WILDCARD_HOSTS]
    if not named:
        raise InvalidConfigError(f"{NODE_HOST}: is required when every listener binds every interface "
                                 "(the others would dial 0.0.0.0): give the node's host name or address")
    return named[0]


def _checked(props: dict[str, Any], host: str) -> ServerConfig:
    """Advertise the node at its host, then read it as the server will."""
    if "broker" in parse_roles(props):
        props[ADVERTISED_LISTENERS] = _advertised(props, host)
    config = ServerConfig.from_mapping(props)
    for voter, (voter_host, port) in config.voters.items():
        if voter_host in WILDCARD_HOSTS:
            raise InvalidConfigError(f"{VOTERS}: node {voter} at {format_address(voter_host, port)} is a "
                                     "wildcard address; name the host it is reached at")
    # ServerConfig reads an empty host as its own machine's name: here, the machine that renders.
    for endpoint in parse_listeners(props, ADVERTISED_LISTENERS):
        if endpoint.host in WILDCARD_HOSTS:
            raise InvalidConfigError(f"{ADVERTISED_LISTENERS}: {endpoint} names no host clients can reach")
    return config


def _advertised(props: Mapping[str, Any], host: str) -> str:
    """Each broker listener as the file advertises it, else at the node's host
    (a listener bound to one address: at that address). A name the file
    advertises that no listener has is kept, for ServerConfig to refuse."""
    given = {e.name: e for e in parse_listeners(props, ADVERTISED_LISTENERS)}
    controller_names = parse_controller_listener_names(props)
    own = [e for e in parse_listeners(props) if e.name not in controller_names]
    advertised = [given.pop(e.name, None) or e._replace(host=host if e.host in WILDCARD_HOSTS else e.host)
                  for e in own]
    return ",".join(str(e) for e in (*advertised, *given.values()))


def check_ports(nodes: Sequence[RenderedNode]) -> None:
    """No two nodes of one host bind the same port."""
    taken: dict[tuple[str, int], int] = {}
    for node in nodes:
        for port in node.ports():
            other = taken.setdefault((node.host, port), node.node_id)
            if other != node.node_id:
                raise InvalidConfigError(f"node {node.node_id}: port {port} on host {node.host} "
                                         f"is node {other}'s too")


def _guarded(node_id: int, check, *args):  # type: ignore[no-untyped-def]
    try:
        return check(*args)
    except InvalidConfigError as exc:
        raise InvalidConfigError(f"node {node_id}: {exc.args[0] if exc.args else exc}") from None


def write_rendered(nodes: Sequence[RenderedNode], out: Path, source: str, certificates: bool,
                   config_dir: PurePosixPath = DEFAULT_CONFIG_DIR) -> list[Path]:
    """Each node's file as OUT/node-<id>.yaml, and for a dynamic quorum's node
    OUT/format-<id>.sh, its format command (the node file at config_dir on its
    host); with `certificates` (a TLS cluster), OUT/certs/ holds the CA
    (ca.key stays with the operator), each node's certificate and the admin's."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for node in nodes:
        header = (f"# node {node.node_id} on {node.host}: `kraftlog server --config <this file>`\n"
                  f"# rendered by `kraftlog cluster render` from {source}; render again rather than edit.\n")
        path = out / node.file_name
        write_atomically(path, (header + yaml.safe_dump(node.properties, sort_keys=False)).encode())
        written.append(path)
        if node.dynamic:
            written.append(_write_format_script(node, out, source, config_dir))
    if certificates:
        written.extend(_write_certificates(nodes, out / CERTS_DIR))
    return written


def _write_format_script(node: RenderedNode, out: Path, source: str, config_dir: PurePosixPath) -> Path:
    """Run once on the node's host, before its first start. The directory ids
    in it are this render's: every controller's script must come from the same one."""
    role = "an initial controller" if node.initial_controllers is not None else \
        ("a controller that joins later (`kraftlog quorum add-controller` once it runs)"
         if "controller" in node.config.process_roles else "a broker")
    script = (f"#!/bin/sh\n# node {node.node_id} on {node.host}, {role}: format its directory once, before "
              f"its first start.\n# rendered by `kraftlog cluster render` from {source} with every other node's "
              f"script; run scripts of one render only.\nset -e\nexec {node.format_command(config_dir)}\n")
    path = out / node.format_file_name
    write_atomically(path, script.encode())
    path.chmod(0o755)
    return path


def _write_certificates(nodes: Sequence[RenderedNode], directory: Path) -> list[Path]:
    """A CA and a certificate per node for every host it is reached at, each
    made once: a second render keeps them (delete one to have it made again)."""
    keystores = [ensure_node_certificates(directory, n.node_id, n.config, [n.host]) for n in nodes]
    return [directory / certs.CA_CERT, *keystores, directory / f"{ADMIN_CERT}.pem"]
