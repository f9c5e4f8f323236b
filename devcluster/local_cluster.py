"""A throwaway local cluster of real server processes - controllers and
brokers, or combined nodes - for tests, demos and benchmarks.

The processes are LocalProcesses' (free ports, kill -9, SIGTERM,
SIGSTOP/SIGCONT, restart, all stopped by PID on close); this adds the
cluster as a client sees it (Metadata from a broker, topics created through
a broker).

Node ids: controllers 1..C, brokers C+1..C+B; combined nodes 1..N. Every
node also serves Prometheus metrics (`metrics_addresses`) on a free port.
"""
from __future__ import annotations

import contextlib

from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence

import grpc

from client.channels import open_channel
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import broker_pb2_grpc as bpb_grpc
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import controller_pb2_grpc as cpb_grpc
from kafka_protocol.errors import Errors
from kafka_protocol.fetch_framing import broker_stub

from . import launcher
from .local_processes import LocalProcesses, free_ports, wait_until
from kraftlog_server.server_config import KAFKA_PROTOCOL_LISTENERS, METRICS_LISTENER

CLUSTER_ID = "TG9jYWxDbHVzdGVyVGVzdA"
RETRIABLE_ADMIN_ERRORS = (Errors.NOT_CONTROLLER, Errors.REQUEST_TIMED_OUT)
# Kafka's customary ports, for nodes with an address of their own (hosts=)
BROKER_PORT, CONTROLLER_PORT, METRICS_PORT = 9092, 9093, 9100
CLIENTS_PORT = 9094  # the CLIENTS listener's, on a node with an address of its own
# With client_listener="PLAINTEXT": the CLIENTS listener speaks Kafka's binary protocol (Kafka's own clients).
KAFKA_CLIENTS_PROPERTIES = {KAFKA_PROTOCOL_LISTENERS: "CLIENTS"}


class LocalCluster(LocalProcesses):
    def __init__(self, directory: Path, *, controllers: int = 3, brokers: int = 3, combined: int = 0,
                 properties: Optional[Mapping[str, Any]] = None,
                 node_properties: Optional[Mapping[int, Mapping[str, Any]]] = None,
                 hosts: Optional[Mapping[int, str]] = None,
                 command_prefix: Callable[[int], Sequence[str]] = lambda node_id: (),
                 tls: bool = False, client_listener: Optional[str] = None) -> None:
        """`combined` > 0 makes that many broker,controller nodes instead of
        separate controllers and brokers. `node_properties` adds per-node
        properties by node id. `hosts` gives each node its own address (the
        chaos testbed's namespaces, each with its own ports: the listeners
        then use fixed ports); `command_prefix(node_id)` starts a node there.
        `tls`: every listener SSL with certificates the launcher makes, mTLS
        between nodes; `client_properties` are the settings a client needs.
        `client_listener` (a security protocol, e.g. SASL_SSL) gives each
        broker a second listener, CLIENTS, for clients only (on its host's
        address): `client_addresses`, and `client_bootstrap` to reach them.
        With `kraftlog.kafka.protocol.listeners: CLIENTS` in `properties`,
        that listener speaks Kafka's binary protocol, for Kafka's own
        clients (SASL_SSL with `tls`: tests/kafka_protocol/test_kafka_sasl.py)."""
        nodes: list[dict[str, Any]] = []
        self.controller_addresses: dict[int, str] = {}
        self.broker_addresses: dict[int, str] = {}
        self.metrics_addresses: dict[int, str] = {}
        self.client_addresses: dict[int, str] = {}
        node_count = combined or controllers + brokers
        client_ports: list[int] = []
        if hosts is None:
            # One call, so that no port is handed out twice; the metrics ports come last
            # but for the client listeners' after them.
            extra = (combined or brokers) if client_listener else 0
            ports = free_ports((2 * combined or node_count) + node_count + extra)
            ports, client_ports = ports[:len(ports) - extra], ports[len(ports) - extra:]
        else:
            ports = [BROKER_PORT, CONTROLLER_PORT] * combined if combined else (
                [CONTROLLER_PORT] * controllers + [BROKER_PORT] * brokers)
            ports += [METRICS_PORT] * node_count
            client_ports = [CLIENTS_PORT] * (combined or brokers) if client_listener else []

        listener = "SSL" if tls else "PLAINTEXT"
        properties = {**({"inter.broker.listener.name": listener} if tls else {}), **(properties or {})}
        if client_listener:
            properties.setdefault("inter.broker.listener.name", listener)
            properties.setdefault("listener.security.protocol.map",
                                  f"{listener}:{listener},CONTROLLER:{listener},CLIENTS:{client_listener}")
            # Clients prove who they are by SASL there, not by a certificate.
            properties.setdefault("listener.name.clients.ssl.client.auth", "none")

        def host(node_id: int) -> str:
            return "127.0.0.1" if hosts is None else hosts[node_id]

        if combined:
            for i in range(combined):
                node_id, broker_port, controller_port = i + 1, ports[2 * i], ports[2 * i + 1]
                nodes.append({"node.id": node_id, "process.roles": "broker,controller",
                              "listeners": f"{listener}://{host(node_id)}:{broker_port},"
                                           f"CONTROLLER://{host(node_id)}:{controller_port}"})
                self.broker_addresses[node_id] = f"{host(node_id)}:{broker_port}"
                self.controller_addresses[node_id] = f"{host(node_id)}:{controller_port}"
        else:
            for i in range(controllers):
                node_id = i + 1
                nodes.append({"node.id": node_id, "process.roles": "controller",
                              "listeners": f"CONTROLLER://{host(node_id)}:{ports[i]}"})
                self.controller_addresses[node_id] = f"{host(node_id)}:{ports[i]}"
            for i in range(brokers):
                node_id, port = controllers + i + 1, ports[controllers + i]
                nodes.append({"node.id": node_id, "process.roles": "broker",
                              "listeners": f"{listener}://{host(node_id)}:{port}"})
                self.broker_addresses[node_id] = f"{host(node_id)}:{port}"
        for node, port in zip(nodes, ports[-node_count:]):
            self.metrics_addresses[node["node.id"]] = node[METRICS_LISTENER] = f"{host(node['node.id'])}:{port}"
        for node, port in zip((n for n in nodes if "broker" in n["process.roles"]), client_ports):
            address = f"{host(node['node.id'])}:{port}"
            node["listeners"] += f",CLIENTS://{address}"
            self.client_addresses[node["node.id"]] = address
        for node in nodes:
            node.update((node_properties or {}).get(node["node.id"], {}))
        spec = {"cluster.id": CLUSTER_ID, "defaults": properties, "nodes": nodes, **({"tls": True} if tls else {})}
        super().__init__(directory, spec, command_prefix)
        self._channels: dict[str, grpc.Channel] = {}
        # A stub per address, as the channel: making one builds a callable for every method (about 1 ms).
        self._broker_stubs: dict[str, bpb_grpc.KafkaBrokerStub] = {}
        self.security = launcher.client_security(tuple(self.plans.values()))
        self.client_properties = launcher.client_properties(tuple(self.plans.values()))

    @property
    def controllers(self) -> tuple[int, ...]:
        return tuple(self.controller_addresses)

    @property
    def brokers(self) -> tuple[int, ...]:
        return tuple(self.broker_addresses)

    @contextlib.contextmanager
    def running(self, timeout: float = 60.0) -> Iterator["LocalCluster"]:
        """Every node started and every broker unfenced; every process
        stopped by PID on the way out, also when the block failed."""
        try:
            self.start()
            self.wait_for_brokers(timeout=timeout)
            yield self
        finally:
            self.close()

    @property
    def client_bootstrap(self) -> str:
        """Every broker's CLIENTS listener (with `client_listener`)."""
        return ",".join(self.client_addresses.values())

    @property
    def bootstrap(self) -> str:
        """Every broker's address, as bootstrap.servers / --bootstrap take them."""
        return ",".join(self.broker_addresses.values())

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()
        self._broker_stubs.clear()
        super().close()

    # --- the cluster over gRPC --------------------------------------------

    def channel(self, address: str) -> grpc.Channel:
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = open_channel(address, self.security)
        return channel

    def broker_stub(self, broker_id: int) -> bpb_grpc.KafkaBrokerStub:
        address = self.broker_addresses[broker_id]
        stub = self._broker_stubs.get(address)
        if stub is None:
            stub = self._broker_stubs[address] = broker_stub(self.channel(address))
        return stub

    def controller_stub(self, controller_id: int) -> cpb_grpc.KRaftControllerStub:
        return cpb_grpc.KRaftControllerStub(self.channel(self.controller_addresses[controller_id]))

    def live_brokers(self) -> tuple[int, ...]:
        return tuple(b for b in self.brokers if b in self.pids)

    def metadata(self, broker_id: Optional[int] = None, topics: Iterable[str] = (),
                 timeout: float = 2.0) -> Optional[bpb.MetadataResponse]:
        """A broker's Metadata answer (every topic unless named); None when it
        cannot answer (down, or still starting)."""
        topics = list(topics)
        for b in (broker_id,) if broker_id is not None else self.live_brokers():
            try:
                return self.broker_stub(b).Metadata(
                    bpb.MetadataRequest(topics=topics, all_topics=not topics), timeout=timeout)
            except grpc.RpcError:
                continue
        return None

    def wait_for_brokers(self, broker_ids: Optional[Iterable[int]] = None, timeout: float = 30.0,
                         among: Optional[Iterable[int]] = None) -> bpb.MetadataResponse:
        """Until every broker of `broker_ids` (default: the running ones) is
        registered and unfenced, as every broker of `among` sees it."""
        wanted = set(broker_ids if broker_ids is not None else self.live_brokers())
        askers = tuple(among if among is not None else wanted)

        def all_unfenced() -> Optional[bpb.MetadataResponse]:
            answer = None
            for b in askers:
                answer = self.metadata(b)
                if answer is None or not wanted <= {broker.node_id for broker in answer.brokers}:
                    return None
            return answer

        return wait_until(all_unfenced, timeout, f"brokers {sorted(wanted)} unfenced", interval=0.1)

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: Optional[Mapping[str, str]] = None, timeout: float = 30.0,
                     via: Optional[int] = None) -> cpb.CreateTopicsResponse.Result:
        """CreateTopics through a broker (forwarded to the active controller);
        the topic's result once a controller answered."""
        request = cpb.CreateTopicsRequest(topics=[cpb.CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=replication_factor,
            configs=[cpb.ConfigEntry(name=k, value=v) for k, v in (configs or {}).items()])])

        def answered() -> Optional[cpb.CreateTopicsResponse]:
            for b in (via,) if via is not None else self.live_brokers():
                try:
                    response = self.broker_stub(b).CreateTopics(request, timeout=timeout)
                except grpc.RpcError:
                    continue
                if response.error_code not in RETRIABLE_ADMIN_ERRORS:
                    return response
            return None

        response = wait_until(answered, timeout, f"CreateTopics {name}", interval=0.2)
        assert response.error_code == 0, response
        return response.topics[0]

    def wait_for_leaders(self, topic: str, timeout: float = 30.0, among: Optional[Iterable[int]] = None,
                         ) -> bpb.MetadataResponse.Topic:
        """The topic once every partition has a leader, as every live broker
        that answers describes it (brokers learn metadata at their own pace:
        a produce right after this must not meet a broker that has not heard
        of the topic). Brokers that do not answer (paused, starting) are
        not waited for."""
        allowed = set(among) if among is not None else None

        def led() -> Optional[bpb.MetadataResponse.Topic]:
            answers = [self.metadata(b, topics=[topic]) for b in self.live_brokers()]
            views = []
            for answer in answers:
                if answer is None:
                    continue
                if not answer.topics or answer.topics[0].error_code:
                    return None
                found = answer.topics[0]
                if not all(p.error_code == 0 and p.leader_id >= 0 and (allowed is None or p.leader_id in allowed)
                           for p in found.partitions):
                    return None
                views.append(found)
            leaders = {tuple(sorted((p.partition_index, p.leader_id, p.leader_epoch) for p in v.partitions))
                       for v in views}
            return views[0] if len(leaders) == 1 else None

        return wait_until(led, timeout, f"leaders for every partition of {topic}", interval=0.1)

