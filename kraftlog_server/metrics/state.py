"""Gauges of a node's live state, computed when Prometheus scrapes.

Each collector reads the objects the node runs on (the replica manager,
the metadata image, the Raft core) at scrape time, so nothing is counted
twice and nothing costs anything between scrapes. What cannot be read
off the state - bytes moved, leaders elected - is counted where it
happens, as plain integers (broker/replica_manager.py TrafficStats, the
active controller's `elections`), and read here the same way. Scrapes
are served on the node's event loop (exposition.py), so these reads never
race the code that changes the state.

Names are those of the Prometheus JMX exporter over Kafka's MBeans with
lowercaseOutputName, as Strimzi's dashboards use them: MBean
kafka.server:type=ReplicaManager,name=LeaderCount becomes
kafka_server_replicamanager_leadercount, a `...PerSec` meter a `_total`
counter, raft-metrics' `current-leader` kafka_server_raftmetrics_current_leader.
"""
from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image.model import NO_LEADER
from metadata_quorum.metadata_state import MetadataStateMachine
from metadata_quorum.node import QuorumNode

if TYPE_CHECKING:  # a controller-only node never loads the broker's code (nor numba)
    from broker.replication_quota import ReplicationQuotas
    from broker.server import BrokerServer

REPLICA_MANAGER = "kafka_server_replicamanager_"
TOPIC_METRICS = "kafka_server_brokertopicmetrics_"
CONTROLLER = "kafka_controller_kafkacontroller_"
CONTROLLER_STATS = "kafka_controller_controllerstats_"
RAFT = "kafka_server_raftmetrics_"

# Kafka's BrokerState values (org.apache.kafka.metadata.BrokerState).
STARTING, RECOVERY, RUNNING = 1, 2, 3


def gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, documentation, value=value)


def last_applied_offset(node: QuorumNode) -> int:
    """The offset of the last committed metadata log entry this node has
    applied, control entries included (a new quorum leader's LeaderChange
    is no record of the image), as Kafka's controllers count them: caught
    up, it is the last committed offset, high watermark - 1."""
    return node.applied_end - 1


def unusable_log_dirs(directories: Iterable[Path]) -> int:
    """Log directories this process cannot write to now: gone, not a
    directory, or not writable - a file system the kernel remounted
    read-only after disk errors shows here (access() says EROFS even to
    root). One access() per directory per scrape."""
    return sum(not (os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK)) for d in directories)


class BrokerCollector:
    """kafka.server:type=ReplicaManager and BrokerState from this broker's
    replicas; BrokerTopicMetrics (all topics) from the counters the produce
    and fetch paths keep (broker/replica_manager.py TrafficStats); the
    metadata offset applied here; LogManager's offline log directories, and
    the partitions' bytes and their disk's space (kraftlog's own)."""

    def __init__(self, broker: BrokerServer, node: QuorumNode) -> None:
        self.broker = broker
        self.node = node  # the broker's observer of the metadata quorum

    def collect(self) -> Iterator[Metric]:
        replicas = self.broker.replicas
        leaders = under_replicated = under_min_isr = at_min_isr = 0
        for partition in replicas.partitions.values():
            if not partition.is_leader:
                continue
            leaders += 1
            isr = len(partition.isr)  # the committed ISR, as Kafka counts it
            under_replicated += isr < len(partition.replicas)
            under_min_isr += isr < partition.min_insync_replicas
            at_min_isr += isr == partition.min_insync_replicas
        yield gauge(REPLICA_MANAGER + "partitioncount", "Replicas on this broker, offline ones included",
                    len(replicas.partitions) + len(replicas.offline))
        yield gauge(REPLICA_MANAGER + "leadercount", "Partitions this broker leads", leaders)
        yield gauge(REPLICA_MANAGER + "underreplicatedpartitions",
                    "Partitions led here whose ISR is smaller than their replica set", under_replicated)
        yield gauge(REPLICA_MANAGER + "underminisrpartitioncount",
                    "Partitions led here whose ISR is below min.insync.replicas (acks=all refused)", under_min_isr)
        yield gauge(REPLICA_MANAGER + "atminisrpartitioncount",
                    "Partitions led here whose ISR is exactly min.insync.replicas", at_min_isr)
        yield gauge(REPLICA_MANAGER + "offlinereplicacount",
                    "Replicas on this broker whose log could not be opened", len(replicas.offline))
        updates = self.broker.isr_updates
        yield counter(REPLICA_MANAGER + "isrshrinks", "ISR shrinks of partitions led here, accepted by the controller",
                      updates.shrinks)
        yield counter(REPLICA_MANAGER + "isrexpands",
                      "ISR expansions of partitions led here, accepted by the controller", updates.expands)
        yield from replication_throttle_metrics(replicas.replication_quotas)
        state = STARTING if not self.broker.published else RECOVERY if self.broker.lifecycle.fenced else RUNNING
        yield gauge("kafka_server_kafkaserver_brokerstate",
                    "1 starting (catching up with the metadata log), 2 recovery (fenced), 3 running", state)
        yield gauge("kafka_server_brokermetadatametrics_last_applied_record_offset",
                    "Offset of the last metadata log entry applied here", last_applied_offset(self.node))
        yield from self._storage()
        yield from self._traffic()

    def _storage(self) -> Iterator[Metric]:
        log_dir = self.broker.logs.log_dir
        yield gauge("kafka_log_logmanager_offlinelogdirectorycount",
                    "Log directories of this broker it cannot write to (missing, not writable, read-only)",
                    unusable_log_dirs((log_dir,)))
        yield gauge("kraftlog_log_size_bytes", "Bytes of the segment files of the partitions on this broker",
                    sum(p.size_in_bytes for p in self.broker.replicas.partitions.values()))
        try:
            disk = shutil.disk_usage(log_dir)
        except OSError:
            return  # the directory is gone: offlinelogdirectorycount says so
        yield gauge("kraftlog_log_dir_free_bytes", "Bytes free on the file system of this broker's log directory",
                    disk.free)
        yield gauge("kraftlog_log_dir_total_bytes", "Size of the file system of this broker's log directory",
                    disk.total)

    def _traffic(self) -> Iterator[Metric]:
        traffic = self.broker.replicas.traffic
        yield counter(TOPIC_METRICS + "bytesin", "Bytes appended by this broker as leader", traffic.bytes_in)
        yield counter(TOPIC_METRICS + "messagesin", "Records appended by this broker as leader", traffic.messages_in)
        yield counter(TOPIC_METRICS + "bytesout", "Record bytes this broker answered to consumers' fetches",
                      traffic.bytes_out)
        yield counter(TOPIC_METRICS + "replicationbytesin", "Bytes this broker appended as follower",
                      traffic.replication_bytes_in)
        yield counter(TOPIC_METRICS + "replicationbytesout", "Record bytes this broker answered to followers' fetches",
                      traffic.replication_bytes_out)


def replication_throttle_metrics(quotas: ReplicationQuotas) -> Iterator[Metric]:
    """KIP-73: Kafka's LeaderReplication/FollowerReplication byte-rate, and
    kraftlog's counters of throttled bytes, held-back partitions and the
    fetcher's waits, by side."""
    now = quotas.clock()
    throttled = CounterMetricFamily("kraftlog_replication_throttled_bytes",
                                    "Bytes of throttled replicas sent (leader) or fetched (follower)", labels=["side"])
    held = CounterMetricFamily("kraftlog_replication_throttle_held_back",
                               "Partition reads (leader) or fetches (follower) held back over the throttle rate",
                               labels=["side"])
    for side, quota in (("leader", quotas.leader), ("follower", quotas.follower)):
        yield gauge(f"kafka_server_{side}replication_byte_rate",
                    f"Measured byte rate of the {side} replication throttle", quota.rate.measure(now))
        throttled.add_metric([side], quota.throttled_bytes)
        held.add_metric([side], quota.held_back)
    yield throttled
    yield held
    yield CounterMetricFamily("kraftlog_replication_throttle_wait_seconds",
                              "Time the replica fetcher slept with every partition held back by the throttle",
                              value=quotas.follower_wait_s)


class ControllerCollector:
    """kafka.controller:type=KafkaController, from this controller's metadata image.

    Every controller replays the same image, so the cluster-wide gauges are
    the same on each (aggregate them with max, not sum); only
    ActiveControllerCount tells the active one."""

    def __init__(self, node: QuorumNode, metadata: MetadataStateMachine, elections: Counter) -> None:
        self.node = node
        self.metadata = metadata
        self.elections = elections  # ElectionKind -> leaders elected while this node was the active controller

    def collect(self) -> Iterator[Metric]:
        image = self.metadata.image
        partitions = offline = imbalanced = 0
        for topic in image.topics.values():
            for state in topic.partitions.values():
                partitions += 1
                offline += state.leader == NO_LEADER
                imbalanced += not state.replicas or state.leader != state.replicas[0]
        fenced = sum(broker.fenced for broker in image.brokers.values())
        yield gauge(CONTROLLER + "activecontrollercount", "1 on the active controller, 0 on the others",
                    int(self.node.is_leader()))
        yield gauge(CONTROLLER + "globaltopiccount", "Topics in the cluster", len(image.topics))
        yield gauge(CONTROLLER + "globalpartitioncount", "Partitions in the cluster", partitions)
        yield gauge(CONTROLLER + "offlinepartitionscount", "Partitions without a leader", offline)
        yield gauge(CONTROLLER + "preferredreplicaimbalancecount",
                    "Partitions not led by their preferred (first) replica", imbalanced)
        yield gauge(CONTROLLER + "fencedbrokercount", "Registered brokers that are fenced", fenced)
        yield gauge(CONTROLLER + "activebrokercount", "Registered brokers that are unfenced",
                    len(image.brokers) - fenced)
        yield gauge(CONTROLLER + "lastappliedrecordoffset", "Offset of the last metadata log entry applied here",
                    last_applied_offset(self.node))
        yield gauge(CONTROLLER + "lastcommittedrecordoffset", "Offset of the last committed metadata record",
                    self.node.high_watermark() - 1)
        yield counter(CONTROLLER_STATS + "leaderelections",
                      "Partition leaders elected by this node as the active controller (clean, unclean, preferred, "
                      "from the ELR or the last known ELR)",
                      sum(self.elections.values()))
        yield counter(CONTROLLER_STATS + "uncleanleaderelections",
                      "Partition leaders this node elected from outside the ISR as the active controller",
                      self.elections[mpb.ELECTION_UNCLEAN])
        yield counter(CONTROLLER_STATS + "electionfromeligibleleaderreplicas",
                      "Partition leaders this node elected from the eligible leader replicas (KIP-966)",
                      self.elections[mpb.ELECTION_ELR])


class RaftCollector:
    """kafka.server:type=raft-metrics: this node's view of the metadata quorum
    (a broker-only node is an observer of it)."""

    def __init__(self, node: QuorumNode) -> None:
        self.node = node

    def collect(self) -> Iterator[Metric]:
        core = self.node.core
        leader = core.leader()
        voted_for = core.quorum_state().voted_for
        yield gauge(RAFT + "current_leader", "Id of the current quorum leader, -1 when unknown",
                    -1 if leader is None else leader)
        yield gauge(RAFT + "current_epoch", "The current quorum epoch", core.epoch())
        yield gauge(RAFT + "current_vote", "Id of the voter voted for in this epoch, -1 for none",
                    -1 if voted_for is None else voted_for)
        yield gauge(RAFT + "high_watermark", "High watermark of the metadata log", core.high_watermark)
        yield gauge(RAFT + "log_end_offset", "End offset of the metadata log here", core.log.end_offset)
        yield gauge(RAFT + "log_end_epoch", "Epoch of the last entry of the metadata log here", core.log.last_epoch)
        state = GaugeMetricFamily(RAFT + "current_state", "1 for this node's quorum state (label current_state)",
                                  labels=("current_state",))
        state.add_metric((current_state(core.state.name, core.is_voter, voted_for),), 1)
        yield state


def current_state(name: str, is_voter: bool, voted_for: object) -> str:
    """Kafka's raft-metrics current-state names: leader, candidate, prospective,
    voted, unattached, follower, observer, resigned."""
    if not is_voter and name in ("Follower", "Unattached"):
        return "observer"
    if name == "Unattached" and voted_for is not None:
        return "voted"
    return name.lower()


class SecurityCollector:
    """Authorization decisions (Kafka's authorizer-metrics, by operation,
    resource type and result) and SASL logins (the socket server's
    successful/failed-authentication-total, by mechanism). Counts only:
    never a principal's name or anything a caller sent."""

    def __init__(self, decisions: Counter, authentications: Counter, acls: Callable[[], int]) -> None:
        self.decisions = decisions  # (operation, resource type, "allowed"/"denied") -> count
        self.authentications = authentications  # (mechanism, succeeded) -> count
        self.acls = acls

    def collect(self) -> Iterator[Metric]:
        decisions = CounterMetricFamily("kraftlog_authorizer_decisions", "Authorization decisions of this node",
                                        labels=["operation", "resource_type", "result"])
        for (operation, resource_type, result), count in sorted(self.decisions.items()):
            decisions.add_metric([operation, resource_type, result], count)
        yield decisions
        yield gauge("kafka_server_authorizer_metrics_acls_total_count", "ACLs in this node's metadata image",
                    self.acls())
        for succeeded, name in ((True, "successful"), (False, "failed")):
            family = CounterMetricFamily(f"kafka_server_socket_server_metrics_{name}_authentication",
                                         f"SASL authentications that {'succeeded' if succeeded else 'failed'}",
                                         labels=["mechanism"])
            for (mechanism, outcome), count in sorted(self.authentications.items()):
                if outcome is succeeded:
                    family.add_metric([mechanism], count)
            yield family
