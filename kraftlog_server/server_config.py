"""A node's configuration: a YAML file of flat, Kafka-named properties.

```yaml
node.id: 1
process.roles: controller          # or broker, or broker,controller (combined)
cluster.id: MkU3OEVBNTcwNTJENDM2Qk
controller.quorum.voters: 1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095
listeners: CONTROLLER://127.0.0.1:9093
log.dirs: /var/lib/kraftlog/node-1
```

A broker has a listener that is not a controller listener (PLAINTEXT://...
by default, `inter.broker.listener.name`); it finds the controllers through
`controller.quorum.voters`. A combined node has both kinds of listener.

Names and defaults are Kafka's wherever Kafka has the setting. As in Kafka,
an unknown property is a warning (`ServerConfig.warnings`), not an error;
every real problem is an `InvalidConfigError` whose one-line message starts
with the property's name.
"""
from __future__ import annotations

import dataclasses
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Optional

import yaml

from broker.config import BrokerConfig
from broker.config import KAFKA_PROPERTY_NAMES as BROKER_PROPERTY_NAMES
from broker.log_jobs import KAFKA_PROPERTY_NAMES as LOG_JOB_PROPERTY_NAMES
from broker.log_jobs import LogJobIntervals
from metadata_quorum.controller.controller_config import KAFKA_PROPERTY_NAMES as CONTROLLER_PROPERTY_NAMES
from metadata_quorum.controller.controller_config import ControllerConfig
from metadata_quorum.raft.config import KAFKA_PROPERTY_NAMES as QUORUM_PROPERTY_NAMES
from metadata_quorum.raft.config import QuorumConfig
from partition_log.config import LogConfig, is_log_config_key
from kafka_protocol.addresses import WILDCARD_HOSTS, format_address, local_dial_host  # noqa: F401 (re-exported)
from kafka_protocol.errors import InvalidConfigError
from security.listeners import (LISTENER_SECURITY_PROTOCOL_MAP, SecurityProtocol, effective_protocol_map,
                                listener_protocol)
from security.node_security import PROPERTY_NAMES as NODE_SECURITY_PROPERTY_NAMES, NodeSecuritySettings
from security.ssl_config import SslConfig, is_ssl_key

NODE_ID = "node.id"
PROCESS_ROLES = "process.roles"
CLUSTER_ID = "cluster.id"
VOTERS = "controller.quorum.voters"
BOOTSTRAP_SERVERS = "controller.quorum.bootstrap.servers"  # KIP-853: find a dynamic quorum
LISTENERS = "listeners"
CONTROLLER_LISTENER_NAMES = "controller.listener.names"
LOG_DIRS = "log.dirs"
LOG_DIR = "log.dir"  # Kafka's single-directory spelling, used when log.dirs is absent
METADATA_LOG_DIR = "metadata.log.dir"
MAX_BYTES_BETWEEN_SNAPSHOTS = "metadata.log.max.record.bytes.between.snapshots"
METADATA_LOG_SEGMENT_BYTES = "metadata.log.segment.bytes"
LOG_LEVEL = "kraftlog.log.level"
# Levels for single loggers beside the root's, "NAME=LEVEL,NAME=LEVEL" (as
# log4j's logger lines in Kafka's log4j.properties): e.g.
# "broker.transactions=DEBUG" logs every transaction coordinator decision.
LOGGER_LEVELS = "kraftlog.log.logger.levels"
ADVERTISED_LISTENERS = "advertised.listeners"
INTER_BROKER_LISTENER_NAME = "inter.broker.listener.name"
BROKER_RACK = "broker.rack"
# What a controller runs above the quorum: `metadata` (the metadata image and
# the controller: the real thing, and the default) or `records`, a test and
# benchmark mode (a plain store of raw records served through the QuorumLog
# RPCs, metadata_quorum/records_only/: the quorum's process tests, its demo and
# `make bench-quorum`). Not a Kafka setting; Kafka has only the former.
STATE_MACHINE = "kraftlog.quorum.state.machine"
STATE_MACHINES = ("metadata", "records")
# The node's event loop: `asyncio` (the standard library's) or `uvloop`
# (libuv's, when installed). Not a Kafka setting: the choice a JVM never has.
EVENT_LOOP = "kraftlog.event.loop"
EVENT_LOOPS = ("asyncio", "uvloop")
# Where the node serves Prometheus metrics (HOST:PORT; absent or empty: no
# metrics). Kafka has no such setting: it exposes JMX, which the Prometheus
# JMX exporter agent turns into what this listener serves directly.
METRICS_LISTENER = "kraftlog.metrics.listener"
# Broker listeners that speak Kafka's binary protocol instead of gRPC, so that
# Kafka's own clients and tools reach the broker (broker/kafka_api/). Not a
# Kafka setting: in Kafka every listener speaks it. PLAINTEXT ones only, for now.
KAFKA_PROTOCOL_LISTENERS = "kraftlog.kafka.protocol.listeners"
# The largest request a Kafka-protocol listener reads (Kafka's setting and default).
SOCKET_REQUEST_MAX_BYTES = "socket.request.max.bytes"
DEFAULT_SOCKET_REQUEST_MAX_BYTES = 104857600
# How long a Kafka-protocol connection may send nothing (Kafka's setting and default).
CONNECTIONS_MAX_IDLE_MS = "connections.max.idle.ms"
DEFAULT_CONNECTIONS_MAX_IDLE_MS = 600000

KNOWN_PROPERTIES = frozenset({
    NODE_ID, PROCESS_ROLES, CLUSTER_ID, VOTERS, BOOTSTRAP_SERVERS, LISTENERS, CONTROLLER_LISTENER_NAMES,
    LOG_DIRS, LOG_DIR, METADATA_LOG_DIR, MAX_BYTES_BETWEEN_SNAPSHOTS, METADATA_LOG_SEGMENT_BYTES,
    LOG_LEVEL, LOGGER_LEVELS, STATE_MACHINE, EVENT_LOOP, METRICS_LISTENER, KAFKA_PROTOCOL_LISTENERS, SOCKET_REQUEST_MAX_BYTES,
    CONNECTIONS_MAX_IDLE_MS,
    ADVERTISED_LISTENERS, INTER_BROKER_LISTENER_NAME, BROKER_RACK,
    LISTENER_SECURITY_PROTOCOL_MAP, *NODE_SECURITY_PROPERTY_NAMES,
    *QUORUM_PROPERTY_NAMES, *CONTROLLER_PROPERTY_NAMES, *BROKER_PROPERTY_NAMES, *LOG_JOB_PROPERTY_NAMES,
})
# Topic-level log settings (`segment.bytes`) are not server properties:
# the server file takes Kafka's broker-level names (`log.segment.bytes`).
TOPIC_LOG_KEYS = frozenset(LogConfig().to_mapping())
POSITIVE_TIMINGS = frozenset({"controller.quorum.election.timeout.ms", "controller.quorum.fetch.timeout.ms"})
ROLES = ("controller", "broker")
LOG_LEVELS = {"DEBUG": "DEBUG", "INFO": "INFO", "WARN": "WARNING", "WARNING": "WARNING",
              "ERROR": "ERROR", "CRITICAL": "CRITICAL"}
# WILDCARD_HOSTS (kafka_protocol/addresses.py): a listener on one of them
# matches a voter entry by port alone.

_CLUSTER_ID = re.compile(r"[A-Za-z0-9_-]+")
_LOGGER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_LISTENER_NAME = re.compile(r"[A-Za-z0-9_]+")
_HOST_PORT = re.compile(r"(?:\[(?P<v6>[^\]]*)\]|(?P<host>[^:\[\]]*)):(?P<port>[^:]*)")


class Endpoint(NamedTuple):
    """One listener: `CONTROLLER://127.0.0.1:9093` is Endpoint("CONTROLLER", "127.0.0.1", 9093)."""

    name: str
    host: str  # "" binds every interface, as in Kafka
    port: int

    @property
    def address(self) -> str:
        """HOST:PORT for gRPC; an IPv6 host in brackets, an empty host as 0.0.0.0."""
        return format_address(self.host or "0.0.0.0", self.port)

    def __str__(self) -> str:
        return f"{self.name}://{format_address(self.host, self.port)}"


@dataclass(frozen=True)
class ServerConfig:
    node_id: int
    process_roles: tuple[str, ...]
    cluster_id: str
    voters: dict[int, tuple[str, int]]  # node id -> (host, port) of its controller listener
    listeners: tuple[Endpoint, ...]
    controller_listener_names: tuple[str, ...]
    log_dirs: tuple[str, ...]
    metadata_log_dir: str
    quorum: QuorumConfig
    max_bytes_between_snapshots: int
    metadata_log_segment_bytes: int
    log_level: str  # a `logging` level name
    logger_levels: tuple[tuple[str, str], ...]  # (logger name, level name) beside the root's
    state_machine: str  # one of STATE_MACHINES
    controller: ControllerConfig  # num.partitions, broker.session.timeout.ms, ...
    broker: BrokerConfig  # min.insync.replicas, replica.*, log.* defaults of partition logs
    log_jobs: LogJobIntervals  # log.retention.check.interval.ms, ...
    advertised_listeners: tuple[Endpoint, ...]  # a broker's, as it registers them; () on a controller
    inter_broker_listener_name: str
    rack: Optional[str]
    metrics_listener: Optional[tuple[str, int]]  # (host, port); an empty host: every interface
    kafka_protocol_listeners: tuple[str, ...]  # broker listener names served in Kafka's protocol
    socket_request_max_bytes: int
    connections_max_idle_ms: int
    # Listener name -> security protocol, for this node's listeners and the
    # ones it connects to (controller.listener.names, inter.broker.listener.name).
    security_protocols: dict[str, SecurityProtocol]
    # Listener name -> its ssl.* settings (listener.name.<name>.ssl.* first),
    # for each of those listeners whose protocol uses TLS.
    listener_ssl: dict[str, SslConfig] = field(compare=False)
    # sasl.enabled.mechanisms, connections.max.reauth.ms, the authorizer's settings
    security: NodeSecuritySettings = field(compare=False)
    properties: dict[str, Any] = field(compare=False, repr=False)  # may hold ssl.key.password
    # controller.quorum.bootstrap.servers: where a dynamic quorum (no static voters) is found.
    quorum_bootstrap: tuple[tuple[str, int], ...] = ()
    event_loop: str = EVENT_LOOPS[0]  # one of EVENT_LOOPS
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def load(cls, path: str | Path) -> "ServerConfig":
        """Read and check a YAML file; a problem names the file and the property."""
        text = Path(path).read_text(encoding="utf-8")
        try:
            return cls.from_mapping(parse_yaml_properties(text))
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"{path}: {exc.args[0] if exc.args else exc}") from None

    @classmethod
    def from_mapping(cls, props: Mapping[str, Any]) -> "ServerConfig":
        props = dict(props)
        for key in props:
            if not isinstance(key, str):
                raise InvalidConfigError(f"{key!r}: property names are strings")
        node_id = _int(props, NODE_ID, minimum=0)
        roles = parse_roles(props)
        cluster_id = _cluster_id(props)
        log_dirs = _log_dirs(props)
        listeners = parse_listeners(props)
        controller_listener_names = parse_controller_listener_names(props)
        inter_broker = _listener_name(props, INTER_BROKER_LISTENER_NAME, "PLAINTEXT")
        config = cls(
            node_id=node_id,
            process_roles=roles,
            cluster_id=cluster_id,
            voters=_voters(props),
            quorum_bootstrap=_bootstrap_servers(props),
            listeners=listeners,
            controller_listener_names=controller_listener_names,
            log_dirs=log_dirs,
            metadata_log_dir=_path_text(props, METADATA_LOG_DIR) or log_dirs[0],
            quorum=_quorum(props),
            max_bytes_between_snapshots=_int(props, MAX_BYTES_BETWEEN_SNAPSHOTS, minimum=1,
                                             default=20 * 1024 * 1024),
            metadata_log_segment_bytes=_int(props, METADATA_LOG_SEGMENT_BYTES, minimum=1,
                                            default=1024 * 1024 * 1024),
            log_level=_log_level(props),
            logger_levels=_logger_levels(props),
            state_machine=_choice(props, STATE_MACHINE, STATE_MACHINES),
            event_loop=_choice(props, EVENT_LOOP, EVENT_LOOPS),
            controller=ControllerConfig.from_properties(props),
            broker=BrokerConfig.from_properties({k: v for k, v in props.items() if k not in TOPIC_LOG_KEYS}),
            log_jobs=LogJobIntervals.from_properties(props),
            advertised_listeners=(_advertised_listeners(props, listeners, controller_listener_names)
                                  if "broker" in roles else ()),
            inter_broker_listener_name=inter_broker,
            rack=_optional_text(props, BROKER_RACK),
            metrics_listener=_metrics_listener(props, listeners),
            kafka_protocol_listeners=tuple(name.upper() for name in parse_list(props, KAFKA_PROTOCOL_LISTENERS)),
            socket_request_max_bytes=_int(props, SOCKET_REQUEST_MAX_BYTES, minimum=1,
                                          default=DEFAULT_SOCKET_REQUEST_MAX_BYTES),
            connections_max_idle_ms=_int(props, CONNECTIONS_MAX_IDLE_MS, minimum=1,
                                         default=DEFAULT_CONNECTIONS_MAX_IDLE_MS),
            security_protocols={},  # set below, once the listeners are known to be sound
            listener_ssl={},
            security=NodeSecuritySettings(),
            properties=props,
            warnings=_warnings(props, roles, log_dirs),
        )
        if config.is_controller:
            config._check_controller()
        if config.is_broker:
            config._check_broker()
        protocols = _security_protocols(props, listeners, controller_listener_names,
                                        inter_broker if config.is_broker else None)
        config = dataclasses.replace(config, security_protocols=protocols,
                                     listener_ssl=_listener_ssl(props, listeners, protocols),
                                     security=NodeSecuritySettings.from_properties(props))
        config._check_dialled_listeners()
        if config.is_broker:
            config._check_kafka_protocol_listeners()
        return config

    @property
    def is_controller(self) -> bool:
        return "controller" in self.process_roles

    @property
    def is_broker(self) -> bool:
        return "broker" in self.process_roles

    def broker_listeners(self) -> tuple[Endpoint, ...]:
        """The listeners that are not controller listeners: where the broker serves."""
        names = set(self.controller_listener_names)
        return tuple(e for e in self.listeners if e.name not in names)

    def controller_endpoint(self) -> Endpoint:
        """The listener this controller serves the quorum on: the first of
        `controller.listener.names` that `listeners` defines, as in Kafka."""
        return find_controller_endpoint(self.listeners, self.controller_listener_names)

    def _check_dialled_listeners(self) -> None:
        """The listeners this node itself connects to (the controllers', the
        inter-broker one) authenticate nodes by their certificates: a node has
        no SASL login of its own here, so they are PLAINTEXT or SSL (mTLS)."""
        dialled = list(self.controller_listener_names[:1])
        if self.is_broker:
            dialled.append(self.inter_broker_listener_name)
        for name in dialled:
            protocol = self.security_protocols.get(name)
            if protocol is not None and protocol.uses_sasl:
                raise InvalidConfigError(f"{LISTENER_SECURITY_PROTOCOL_MAP}: {name} is {protocol.value}, but nodes "
                                         "connect to it and authenticate with certificates here: map it to SSL "
                                         "(mTLS) or PLAINTEXT, and give clients a SASL listener of their own")

    def _check_kafka_protocol_listeners(self) -> None:
        """Each name a broker listener of this node, not the one other brokers
        replicate from (followers fetch over gRPC); any security protocol.
        A controller-only node ignores the setting, as it ignores the broker's."""
        broker_names = [e.name for e in self.broker_listeners()]
        for name in self.kafka_protocol_listeners:
            if name in self.controller_listener_names:
                problem = "is a controller listener: the quorum speaks gRPC only"
            elif name not in broker_names:
                problem = f"is not a broker listener in {LISTENERS} ({','.join(broker_names)})"
            elif name == self.inter_broker_listener_name:
                problem = f"is {INTER_BROKER_LISTENER_NAME}, which brokers replicate over gRPC"
            else:
                continue
            raise InvalidConfigError(f"{KAFKA_PROTOCOL_LISTENERS}: {name} {problem}")

    def is_kafka_protocol(self, endpoint: Endpoint) -> bool:
        """Whether `endpoint`, a broker listener, speaks Kafka's protocol rather than gRPC."""
        return endpoint.name in self.kafka_protocol_listeners

    def listener_protocol(self, name: str) -> SecurityProtocol:
        return self.security_protocols[name]

    def client_ssl(self, name: str) -> Optional[SslConfig]:
        """The ssl.* settings this node connects to listener `name` with
        (None: plaintext). As in Kafka, a node uses the settings of the
        listener it connects to, and presents its keystore (mTLS)."""
        return self.listener_ssl.get(name)

    @property
    def controller_client_ssl(self) -> Optional[SslConfig]:
        """How this node reaches the controllers: over the listener a voter
        serves (controller.listener.names[0] on a broker-only node, as in
        Kafka; a controller dials its peers on its own controller listener)."""
        name = self.controller_endpoint().name if self.is_controller else self.controller_listener_names[0]
        return self.client_ssl(name)

    def voter_addresses(self) -> dict[int, str]:
        """Node id -> HOST:PORT of every voter, for dialling it over gRPC. A
        dynamic quorum's are not known yet: its bootstrap servers, under the
        negative ids the quorum transport gives them too."""
        if self.dynamic_quorum:
            return {-2 - i: format_address(host, port) for i, (host, port) in enumerate(self.quorum_bootstrap)}
        return {node: format_address(host, port) for node, (host, port) in self.voters.items()}

    @property
    def dynamic_quorum(self) -> bool:
        """No static voters: the voters are in the metadata log (KIP-853)."""
        return not self.voters

    def _check_quorum_source(self, required: str) -> None:
        if not self.voters and not self.quorum_bootstrap:
            raise InvalidConfigError(f"{VOTERS}: {required}, unless {BOOTSTRAP_SERVERS} (HOST:PORT,...) "
                                     "finds a dynamic quorum")
        if self.voters and self.quorum_bootstrap:
            raise InvalidConfigError(f"{VOTERS} and {BOOTSTRAP_SERVERS}: set one, not both (static voters, "
                                     "or a dynamic quorum found through its bootstrap servers)")

    def _check_controller(self) -> None:
        endpoint = self.controller_endpoint()
        names = set(self.controller_listener_names)
        self._check_quorum_source("is required on a controller (ID@HOST:PORT,...)")
        others = [e.name for e in self.listeners if e.name not in names]
        if others and not self.is_broker:
            # A controller-only node serves nothing but the quorum (Kafka's rule too).
            raise InvalidConfigError(
                f"{LISTENERS}: {','.join(others)} is not in {CONTROLLER_LISTENER_NAMES} "
                "(a controller-only node has only controller listeners)")
        if self.dynamic_quorum:
            return  # its voters, and whether it is one, are the metadata log's business
        if self.node_id not in self.voters:
            raise InvalidConfigError(
                f"{VOTERS}: does not include this controller's {NODE_ID} {self.node_id}")
        host, port = self.voters[self.node_id]
        if port != endpoint.port or (endpoint.host not in WILDCARD_HOSTS and endpoint.host != host):
            raise InvalidConfigError(
                f"{LISTENERS}: {endpoint} does not match this node's voter entry "
                f"{self.node_id}@{format_address(host, port)} in {VOTERS}")

    def _check_broker(self) -> None:
        if self.state_machine != STATE_MACHINES[0]:
            raise InvalidConfigError(f"{STATE_MACHINE}: a broker needs the metadata image "
                                     f"({STATE_MACHINES[0]}), not {self.state_machine}")
        self._check_quorum_source("is required on a broker too (it finds the controllers there)")
        if not self.is_controller:
            if self.node_id in self.voters:
                raise InvalidConfigError(f"{VOTERS}: names this broker-only node's {NODE_ID} {self.node_id} "
                                         "(a voter must have the controller role)")
            taken = [e.name for e in self.listeners if e.name in self.controller_listener_names]
            if taken:
                # Kafka's rule: a broker-only node reaches the controllers, it does not serve them.
                raise InvalidConfigError(f"{LISTENERS}: {','.join(taken)} is a controller listener "
                                         "(a broker-only node has none)")
        listeners = self.broker_listeners()
        if not listeners:
            raise InvalidConfigError(f"{LISTENERS}: a broker needs a listener besides "
                                     f"{','.join(self.controller_listener_names)} (e.g. PLAINTEXT://127.0.0.1:9092)")
        for endpoint in listeners:
            if endpoint.port == 0:
                raise InvalidConfigError(f"{LISTENERS}: {endpoint} needs a port (a broker registers it)")
        if self.inter_broker_listener_name not in {e.name for e in listeners}:
            raise InvalidConfigError(
                f"{INTER_BROKER_LISTENER_NAME}: {self.inter_broker_listener_name} is not a broker listener "
                f"in {LISTENERS} ({','.join(e.name for e in listeners)})")


def parse_yaml_properties(text: str) -> dict[str, Any]:
    """The flat property mapping of a YAML document (empty document: no properties)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InvalidConfigError(f"{where}not valid YAML: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InvalidConfigError("expected a mapping of property names to values")
    return data


def parse_list(props: Mapping[str, Any], key: str,
               default: tuple[str, ...] = ()) -> tuple[str, ...]:
    """A list property: a comma-separated string or a YAML list of strings."""
    value = props.get(key)
    if value is None:
        return default
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise InvalidConfigError(f"{key}: expected a comma-separated string or a list of strings, "
                                 f"got {value!r}")
    return tuple(item.strip() for item in items if item.strip())


def parse_host_port(key: str, text: str) -> tuple[str, int]:
    """HOST:PORT or [IPV6]:PORT; the port in 0..65535."""
    match = _HOST_PORT.fullmatch(text.strip())
    if match is None:
        raise InvalidConfigError(f"{key}: {text!r} is not HOST:PORT")
    host = match["v6"] if match["v6"] is not None else match["host"]
    port = match["port"]
    if not port.isdigit() or int(port) > 65535:
        raise InvalidConfigError(f"{key}: {text!r} has no valid port (0-65535)")
    return host, int(port)


def parse_roles(props: Mapping[str, Any]) -> tuple[str, ...]:
    roles = parse_list(props, PROCESS_ROLES)
    if not roles:
        raise InvalidConfigError(f"{PROCESS_ROLES}: is required (controller, broker or both)")
    for role in roles:
        if role not in ROLES:
            raise InvalidConfigError(f"{PROCESS_ROLES}: unknown role {role!r} (controller or broker)")
    if len(set(roles)) != len(roles):
        raise InvalidConfigError(f"{PROCESS_ROLES}: a role is listed twice in {','.join(roles)}")
    return roles


def _cluster_id(props: Mapping[str, Any]) -> str:
    value = props.get(CLUSTER_ID)
    if value is None:
        raise InvalidConfigError(f"{CLUSTER_ID}: is required (e.g. a 22-character base64url UUID)")
    if not isinstance(value, str):
        raise InvalidConfigError(f"{CLUSTER_ID}: must be a string, got {value!r} (quote it in YAML)")
    if not _CLUSTER_ID.fullmatch(value):
        raise InvalidConfigError(f"{CLUSTER_ID}: {value!r} may hold only letters, digits, '_' and '-'")
    return value


def _bootstrap_servers(props: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    servers = []
    for entry in parse_list(props, BOOTSTRAP_SERVERS):
        host, port = parse_host_port(BOOTSTRAP_SERVERS, entry)
        if not host or not port:
            raise InvalidConfigError(f"{BOOTSTRAP_SERVERS}: {entry!r} needs a host and a non-zero port")
        servers.append((host, port))
    return tuple(servers)


def _voters(props: Mapping[str, Any]) -> dict[int, tuple[str, int]]:
    voters: dict[int, tuple[str, int]] = {}
    for entry in parse_list(props, VOTERS):
        node, at, address = entry.partition("@")
        if not at or not node.strip().isdigit():
            raise InvalidConfigError(f"{VOTERS}: {entry!r} is not ID@HOST:PORT")
        host, port = parse_host_port(VOTERS, address)
        if not host or port == 0:
            raise InvalidConfigError(f"{VOTERS}: {entry!r} needs a host and a non-zero port")
        node_id = int(node)
        if node_id in voters:
            raise InvalidConfigError(f"{VOTERS}: node {node_id} is listed twice")
        voters[node_id] = (host, port)
    return voters


def parse_listeners(props: Mapping[str, Any], key: str = LISTENERS) -> tuple[Endpoint, ...]:
    endpoints: list[Endpoint] = []
    for entry in parse_list(props, key):
        name, sep, address = entry.partition("://")
        if not sep:
            raise InvalidConfigError(f"{key}: {entry!r} is not NAME://HOST:PORT")
        name = name.strip().upper()
        _check_listener_name(key, name)
        host, port = parse_host_port(key, address)
        if any(e.name == name for e in endpoints):
            raise InvalidConfigError(f"{key}: the listener name {name} is used twice")
        if port != 0 and key == LISTENERS and any(e.port == port for e in endpoints):
            raise InvalidConfigError(f"{key}: port {port} is used twice")
        endpoints.append(Endpoint(name, host, port))
    if not endpoints and key == LISTENERS:
        raise InvalidConfigError(f"{key}: is required (e.g. CONTROLLER://127.0.0.1:9093)")
    return tuple(endpoints)


def _advertised_listeners(props: Mapping[str, Any], listeners: tuple[Endpoint, ...],
                          controller_names: tuple[str, ...]) -> tuple[Endpoint, ...]:
    """What a broker registers: `advertised.listeners` where given, else its
    listener, for each broker listener. As in Kafka, an empty host stands for
    this machine's name, and 0.0.0.0 (a bind-anything address) is refused."""
    own = {e.name: e for e in listeners if e.name not in controller_names}
    given = {e.name: e for e in parse_listeners(props, ADVERTISED_LISTENERS)}
    for name in given:
        if name not in own:
            raise InvalidConfigError(f"{ADVERTISED_LISTENERS}: {name} is not a broker listener in {LISTENERS}")
    advertised = []
    for name, endpoint in own.items():
        chosen = given.get(name, endpoint)
        source = ADVERTISED_LISTENERS if name in given else LISTENERS
        if chosen.host in ("0.0.0.0", "::"):
            raise InvalidConfigError(
                f"{source}: {chosen} cannot be advertised (a wildcard address); "
                f"set {ADVERTISED_LISTENERS} to a routable host")
        if chosen.port == 0 and name in given:
            raise InvalidConfigError(f"{ADVERTISED_LISTENERS}: {chosen} needs a port")
        advertised.append(chosen._replace(host=chosen.host or socket.getfqdn()))
    return tuple(advertised)


def _metrics_listener(props: Mapping[str, Any], listeners: tuple[Endpoint, ...]) -> Optional[tuple[str, int]]:
    value = props.get(METRICS_LISTENER)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidConfigError(f"{METRICS_LISTENER}: expected HOST:PORT (e.g. 127.0.0.1:9404), got {value!r}")
    host, port = parse_host_port(METRICS_LISTENER, value)
    if port == 0:
        raise InvalidConfigError(f"{METRICS_LISTENER}: {value!r} needs a port (Prometheus must know where to scrape)")
    taken = [str(e) for e in listeners if e.port == port]
    if taken:
        raise InvalidConfigError(f"{METRICS_LISTENER}: port {port} is already used by {LISTENERS} {taken[0]}")
    return host, port


def _listener_name(props: Mapping[str, Any], key: str, default: str) -> str:
    value = props.get(key, default)
    if not isinstance(value, str):
        raise InvalidConfigError(f"{key}: expected a listener name, got {value!r}")
    name = value.strip().upper()
    _check_listener_name(key, name)
    return name


def _optional_text(props: Mapping[str, Any], key: str) -> Optional[str]:
    value = props.get(key)
    if value is None:
        return None
    if not isinstance(value, (str, int)) or isinstance(value, bool) or not str(value).strip():
        raise InvalidConfigError(f"{key}: expected a name, got {value!r}")
    return str(value).strip()


def _security_protocols(props: Mapping[str, Any], listeners: tuple[Endpoint, ...],
                        controller_names: tuple[str, ...], inter_broker: Optional[str]) -> dict[str, SecurityProtocol]:
    """The protocol of every listener this node serves or connects to;
    an unmapped name is Kafka's configuration error."""
    protocol_map = effective_protocol_map(props, [e.name for e in listeners], controller_names)
    names = [e.name for e in listeners] + list(controller_names) + ([inter_broker] if inter_broker else [])
    return {name: listener_protocol(name, protocol_map) for name in names}


def _listener_ssl(props: Mapping[str, Any], listeners: tuple[Endpoint, ...],
                  protocols: Mapping[str, SecurityProtocol]) -> dict[str, SslConfig]:
    """SslConfig per TLS listener; one this node serves needs a keystore
    (and, with ssl.client.auth=required, a truststore)."""
    served = {e.name for e in listeners}
    configs = {}
    for name, protocol in protocols.items():
        if not protocol.uses_tls:
            continue
        ssl = configs[name] = SslConfig.from_properties(props, name)
        if name in served and not ssl.has_keystore:
            raise InvalidConfigError(f"ssl.keystore.location: is required for the {protocol.value} listener {name} "
                                     f"(or listener.name.{name.lower()}.ssl.keystore.location)")
        if name in served and ssl.client_auth == "required" and not ssl.has_truststore:
            raise InvalidConfigError(f"ssl.truststore.location: is required for listener {name} "
                                     "with ssl.client.auth=required (the CAs of the clients' certificates)")
    return configs


def _warnings(props: Mapping[str, Any], roles: tuple[str, ...], log_dirs: tuple[str, ...]) -> tuple[str, ...]:
    warnings = [f"unknown or unsupported property {key} is ignored" for key in sorted(props)
                if key not in KNOWN_PROPERTIES and not is_ssl_key(key)
                and not (is_log_config_key(key) and key not in TOPIC_LOG_KEYS)]
    if "broker" in roles and len(log_dirs) > 1:
        warnings.append(f"{LOG_DIRS}: partitions are kept in {log_dirs[0]} only "
                        "(several log directories are not supported yet)")
    return tuple(warnings)


def parse_controller_listener_names(props: Mapping[str, Any]) -> tuple[str, ...]:
    names = tuple(name.upper() for name in parse_list(props, CONTROLLER_LISTENER_NAMES,
                                                      default=("CONTROLLER",)))
    for name in names:
        _check_listener_name(CONTROLLER_LISTENER_NAMES, name)
    return names


def find_controller_endpoint(listeners: tuple[Endpoint, ...], names: tuple[str, ...]) -> Endpoint:
    """The first of `names` (controller.listener.names) that `listeners` defines, as in Kafka."""
    by_name = {endpoint.name: endpoint for endpoint in listeners}
    for name in names:
        if name in by_name:
            return by_name[name]
    raise InvalidConfigError(
        f"{CONTROLLER_LISTENER_NAMES}: none of {','.join(names)} is defined in {LISTENERS}")


def _check_listener_name(key: str, name: str) -> None:
    if not _LISTENER_NAME.fullmatch(name):
        raise InvalidConfigError(f"{key}: {name!r} is not a listener name (letters, digits, '_')")


def _log_dirs(props: Mapping[str, Any]) -> tuple[str, ...]:
    key = LOG_DIRS if props.get(LOG_DIRS) is not None else LOG_DIR
    dirs = parse_list(props, key)
    if not dirs:
        raise InvalidConfigError(f"{LOG_DIRS}: is required (one or more directories, comma-separated)")
    return dirs


def _path_text(props: Mapping[str, Any], key: str) -> str | None:
    value = props.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidConfigError(f"{key}: expected a directory path, got {value!r}")
    return value.strip()


def _int(props: Mapping[str, Any], key: str, *, minimum: int, default: int | None = None) -> int:
    value = props.get(key)
    if value is None:
        if default is None:
            raise InvalidConfigError(f"{key}: is required (an integer >= {minimum})")
        return default
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        number = int(value)
    if number is None or number < minimum:
        raise InvalidConfigError(f"{key}: expected an integer >= {minimum}, got {value!r}")
    return number


def _quorum(props: Mapping[str, Any]) -> QuorumConfig:
    # Checked here, with the operator's property names, so that QuorumConfig's
    # own checks (which name its fields) never fire.
    timings = {key: _int(props, key, minimum=1 if key in POSITIVE_TIMINGS else 0)
               for key in QUORUM_PROPERTY_NAMES if key in props}
    return QuorumConfig.from_properties(timings)


def _choice(props: Mapping[str, Any], key: str, choices: tuple[str, ...]) -> str:
    value = props.get(key, choices[0])
    if value not in choices:
        raise InvalidConfigError(f"{key}: expected one of {', '.join(choices)}, got {value!r}")
    return str(value)


def _log_level(props: Mapping[str, Any]) -> str:
    return _level_name(LOG_LEVEL, props.get(LOG_LEVEL, "INFO"))


def _level_name(key: str, value: Any) -> str:
    level = LOG_LEVELS.get(value.strip().upper()) if isinstance(value, str) else None
    if level is None:
        raise InvalidConfigError(f"{key}: expected one of DEBUG, INFO, WARN, ERROR, CRITICAL, got {value!r}")
    return level


def _logger_levels(props: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    value = props.get(LOGGER_LEVELS, "")
    if not isinstance(value, str):
        raise InvalidConfigError(f"{LOGGER_LEVELS}: expected NAME=LEVEL,..., got {value!r}")
    levels = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        name, equals, level = item.partition("=")
        if not equals or not _LOGGER_NAME.fullmatch(name.strip()):
            raise InvalidConfigError(f"{LOGGER_LEVELS}: expected NAME=LEVEL (a dotted logger name), got {item!r}")
        levels.append((name.strip(), _level_name(LOGGER_LEVELS, level)))
    return tuple(levels)
