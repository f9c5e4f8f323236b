"""`kraftlog cluster roll`: restart every node of a cluster file, one at a
time, the way operators roll a Kafka cluster for an upgrade or a config change.

Order: the controllers first, then the brokers. Controllers go first because
a restarted (newer) broker may ask the controllers for what only newer
controllers know, while controllers never write what older brokers cannot
read: they write only what the finalized `metadata.version` allows
(metadata_quorum/features.py). Among the controllers the followers go
first and the active controller last, so the quorum elects a new leader
once, not at every step (the leader is asked again before each step: it may
have moved). Combined nodes count as controllers.

A node is stopped with SIGTERM (a broker's controlled shutdown moves its
leaderships away first; a leading controller hands over) and started again.
Before the next node, the cluster must be healthy, within the timeout:

- the restarted node runs and each of its gRPC listeners answers health
  SERVING (a broker only once it has caught up with the metadata log);
- the quorum has a leader, with the same leader and epoch at two looks
  STABLE_S apart, and every voter's log reaches the high watermark;
- every broker of the file is unfenced, and as each broker answers Metadata,
  every partition has a leader and its whole replica set in its ISR (no
  under-replicated partition).

The roll checks the same before it touches the first node (a degraded
cluster is not rolled). When the cluster does not get healthy in time, or
the restarted node exits, the roll stops there with a RollError naming the
node and what is missing: it never goes on to the next node.

The pure part (the order, and reading the quorum's and the brokers'
answers into a problem or none) is first; the polling below it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Protocol, Sequence

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from client.admin import describe_quorum
from client.channels import open_channel
from kafka_protocol.errors import KafkaError
from kafka_protocol.fetch_framing import broker_stub
from kraftlog_api import broker_pb2 as bpb
from kraftlog_server.server_config import WILDCARD_HOSTS, format_address

from . import launcher
from .launcher import NodePlan
from .local_processes import LocalProcesses

POLL_S = 0.25
STABLE_S = 0.5  # the quorum's leader and epoch unchanged this long
CALL_TIMEOUT_S = 2.0


class RollError(Exception):
    """The roll stopped: a node did not come back, or the cluster did not get healthy in time."""


# -- pure: the order, and what the answers say ------------------------------------------------

def selected(plans: Sequence[NodePlan], *, brokers_only: bool = False,
             controllers_only: bool = False) -> tuple[NodePlan, ...]:
    """The nodes a roll restarts: with the broker role, with the controller role, or all."""
    if brokers_only and controllers_only:
        raise ValueError("--brokers-only and --controllers-only exclude each other")
    if brokers_only:
        return tuple(p for p in plans if p.config.is_broker)
    if controllers_only:
        return tuple(p for p in plans if p.config.is_controller)
    return tuple(plans)


def next_node(remaining: Sequence[NodePlan], active_controller: Optional[int]) -> NodePlan:
    """The node to restart next: a controller that is not the active one, else
    the active controller, else the first broker (file order)."""
    controllers = [p for p in remaining if p.config.is_controller]
    if controllers:
        followers = [p for p in controllers if p.node_id != active_controller]
        return (followers or controllers)[0]
    return remaining[0]


def quorum_problem(info: Mapping[str, Any]) -> Optional[str]:
    """What keeps the quorum from being healthy in a DescribeQuorum answer
    (client.admin.describe_quorum's form), or None."""
    if info["leader_id"] < 0:
        return "the quorum has no leader"
    high_watermark = info["high_watermark"]
    lagging = [f"voter {v['replica_id']} at offset {v['log_end_offset']}" for v in info["voters"]
               if v["log_end_offset"] < high_watermark]
    if high_watermark < 0 or lagging:
        return f"voters behind the high watermark {high_watermark}: {', '.join(lagging) or 'not known yet'}"
    return None


def partitions_problem(answers: Mapping[int, Optional[bpb.MetadataResponse]],
                       brokers: Iterable[int]) -> Optional[str]:
    """What keeps the brokers from being healthy, as each broker's Metadata
    answer (None: no answer) shows it: a broker not unfenced, a partition
    without a leader or with replicas outside its ISR. None when healthy."""
    expected = set(brokers)
    for asked, answer in sorted(answers.items()):
        if answer is None:
            return f"broker {asked} does not answer Metadata"
        missing = expected - {b.node_id for b in answer.brokers}
        if missing:
            return f"broker {', '.join(map(str, sorted(missing)))} not unfenced (as broker {asked} sees it)"
        for topic in answer.topics:
            if topic.error_code:
                return f"topic {topic.name}: error {topic.error_code} (as broker {asked} sees it)"
            for p in topic.partitions:
                where = f"{topic.name}-{p.partition_index}"
                if p.leader_id < 0:
                    return f"{where} has no leader (as broker {asked} sees it)"
                if set(p.isr_nodes) != set(p.replica_nodes):
                    return (f"{where} is under-replicated: ISR {sorted(p.isr_nodes)} of replicas "
                            f"{sorted(p.replica_nodes)} (as broker {asked} sees it)")
    return None


# -- processes --------------------------------------------------------------------------------

class NodeControl(Protocol):
    """How the roll stops, starts and watches a node's process."""

    def stop(self, plan: NodePlan) -> str: ...  # SIGTERM and wait (SIGKILL after a grace); what happened
    def start(self, plan: NodePlan) -> None: ...
    def alive(self, plan: NodePlan) -> bool: ...


@dataclass(frozen=True)
class LauncherControl:
    """Nodes started by `kraftlog cluster up`: found by their pid files."""

    grace_s: float = 60.0
    command_prefix: Callable[[int], Sequence[str]] = lambda node_id: ()

    def stop(self, plan: NodePlan) -> str:
        return launcher.stop_node(plan, self.grace_s)

    def start(self, plan: NodePlan) -> None:
        launcher.start_node(plan, self.command_prefix(plan.node_id))

    def alive(self, plan: NodePlan) -> bool:
        return launcher.running_pid(plan) is not None


@dataclass(frozen=True)
class ProcessesControl:
    """Nodes of a LocalProcesses (tests, chaos, bench): its own handles, so
    that it still stops every process it started."""

    processes: LocalProcesses
    grace_s: Optional[float] = None  # default: the processes' stop_timeout_s

    def stop(self, plan: NodePlan) -> str:
        return f"stopped (exit status {self.processes.stop(plan.node_id, self.grace_s)})"

    def start(self, plan: NodePlan) -> None:
        self.processes.start(plan.node_id)

    def alive(self, plan: NodePlan) -> bool:
        return self.processes.alive(plan.node_id)


@dataclass(frozen=True)
class RolledNode:
    node_id: int
    roles: tuple[str, ...]
    stopped: str  # what the stop did
    down_s: float  # from the SIGTERM to the process started again
    healthy_s: float  # from the start to the cluster healthy again


@dataclass
class RollReport:
    nodes: list[RolledNode] = field(default_factory=list)
    seconds: float = 0.0


def roll(plans: Sequence[NodePlan], *, timeout_s: float = 120.0, brokers_only: bool = False,
         controllers_only: bool = False, control: Optional[NodeControl] = None,
         on_event: Callable[[str], None] = lambda line: None) -> RollReport:
    """Restart the selected nodes of `plans` one at a time (see the module
    docstring); raises RollError where it stops. `timeout_s` bounds each
    wait for the cluster to be healthy."""
    control = control or LauncherControl()
    plans = tuple(plans)
    remaining = list(selected(plans, brokers_only=brokers_only, controllers_only=controllers_only))
    watch = ClusterWatch(plans)
    report = RollReport()
    begun = time.monotonic()
    try:
        watch.wait_healthy(None, timeout_s, control, "before the roll")
        on_event(f"cluster healthy; rolling {len(remaining)} node(s)")
        while remaining:
            plan = next_node(remaining, watch.active_controller())
            remaining.remove(plan)
            roles = plan.config.process_roles
            on_event(f"node {plan.node_id} ({','.join(roles)}): stopping")
            stop_at = time.monotonic()
            stopped = control.stop(plan)
            control.start(plan)
            started_at = time.monotonic()
            on_event(f"node {plan.node_id}: {stopped}; started again")
            watch.wait_healthy(plan, timeout_s, control, f"after restarting node {plan.node_id}")
            healthy_s = time.monotonic() - started_at
            report.nodes.append(RolledNode(plan.node_id, roles, stopped, started_at - stop_at, healthy_s))
            on_event(f"node {plan.node_id}: back, cluster healthy after {healthy_s:.1f}s")
    finally:
        watch.close()
    report.seconds = time.monotonic() - begun
    return report


class ClusterWatch:
    """The health checks of a roll, over the cluster file's nodes."""

    def __init__(self, plans: Sequence[NodePlan]) -> None:
        self.plans = tuple(plans)
        self.security = launcher.client_security(self.plans)
        self.controllers = launcher.bootstrap_controllers(self.plans)
        self.brokers = {p.node_id: address for p in self.plans if p.config.is_broker
                        for address in grpc_addresses(p, controller=False)[:1]}
        self._channels: dict[str, grpc.Channel] = {}

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()

    def _channel(self, address: str) -> grpc.Channel:
        if address not in self._channels:
            self._channels[address] = open_channel(address, self.security)
        return self._channels[address]

    def active_controller(self) -> Optional[int]:
        try:
            leader = describe_quorum(self.controllers, timeout=CALL_TIMEOUT_S, security=self.security)["leader_id"]
        except KafkaError:
            return None
        return leader if leader >= 0 else None

    def wait_healthy(self, restarted: Optional[NodePlan], timeout_s: float, control: NodeControl,
                     when: str) -> None:
        """Until the cluster is healthy (and `restarted` back), the quorum's
        leader stable for STABLE_S; RollError at the timeout or if the node exits."""
        deadline = time.monotonic() + timeout_s
        stable: Optional[tuple[tuple[int, int], float]] = None  # (leader, epoch), first seen healthy at
        while True:
            if restarted is not None and not control.alive(restarted):
                raise RollError(f"node {restarted.node_id} exited after its restart; the roll stops here. "
                                f"End of its log {restarted.log_path}:\n{launcher.log_tail(restarted)}")
            problem, leader = self.problem(restarted)
            now = time.monotonic()
            if problem is None and leader is not None:
                if stable is None or stable[0] != leader:
                    stable = (leader, now)
                elif now - stable[1] >= STABLE_S:
                    return
            else:
                stable = None
            if now >= deadline:
                node = f"node {restarted.node_id} " if restarted is not None else ""
                raise RollError(f"{when}: the cluster is not healthy after {timeout_s:g}s "
                                f"({problem or f'the quorum leader not yet the same for {STABLE_S:g}s'}); "
                                f"the roll stops here, "
                                f"{node}and every node not yet restarted left as they are")
            time.sleep(POLL_S)

    def problem(self, restarted: Optional[NodePlan]) -> tuple[Optional[str], Optional[tuple[int, int]]]:
        """What is not healthy now (None: nothing), and the quorum's (leader, epoch) if known."""
        if restarted is not None:
            for address in grpc_addresses(restarted):
                if not self._serving(address):
                    return f"node {restarted.node_id} is not serving on {address} yet", None
        try:
            info = describe_quorum(self.controllers, timeout=CALL_TIMEOUT_S, security=self.security)
        except KafkaError as exc:
            return f"no quorum leader answers ({exc})", None
        leader = (info["leader_id"], info["leader_epoch"])
        problem = quorum_problem(info)
        if problem is None and self.brokers:
            problem = partitions_problem({b: self._metadata(a) for b, a in self.brokers.items()}, self.brokers)
        return problem, leader

    def _serving(self, address: str) -> bool:
        stub = health_pb2_grpc.HealthStub(self._channel(address))
        try:
            answer = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=CALL_TIMEOUT_S)
        except grpc.RpcError:
            return False
        return answer.status == health_pb2.HealthCheckResponse.SERVING

    def _metadata(self, address: str) -> Optional[bpb.MetadataResponse]:
        try:
            return broker_stub(self._channel(address)).Metadata(bpb.MetadataRequest(all_topics=True),
                                                                timeout=CALL_TIMEOUT_S)
        except grpc.RpcError:
            return None


def grpc_addresses(plan: NodePlan, *, controller: bool = True) -> list[str]:
    """HOST:PORT of the node's gRPC listeners: its controller listener (as
    the voters name it), then its advertised broker listeners that speak
    gRPC (a wildcard host is dialled on the loopback interface)."""
    config = plan.config
    endpoints = []
    voter = config.voter_addresses().get(plan.node_id)
    if controller and config.is_controller and voter is None:
        endpoints.append(config.controller_endpoint())
    if config.is_broker:
        endpoints += [e for e in config.advertised_listeners if not config.is_kafka_protocol(e)]
    addresses = [voter] if controller and config.is_controller and voter is not None else []
    for e in endpoints:
        host = e.host if e.host not in WILDCARD_HOSTS else ("::1" if e.host == "::" else "127.0.0.1")
        addresses.append(format_address(host, e.port))
    return list(dict.fromkeys(addresses))
