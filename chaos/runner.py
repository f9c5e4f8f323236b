"""One chaos run, start to verdict.

1. Hosts: with root and namespaces, every node in its own network namespace
   (chaos/testbed.py); otherwise all on 127.0.0.1, network faults skipped
   with the reason.
2. A real cluster (3 controllers + 3 brokers) on those hosts, and a topic
   with replication factor 3 and min.insync.replicas 2.
3. The queue workload (chaos/workload.py) while the nemesis inflicts the
   scenario's seeded faults; then every fault is healed, stopped nodes are
   started again, and every partition is read whole.
4. Checks: the queue checks (lost, duplicated, reordered, unexpected) and
   the linearizability of each partition's log by the Go checker.
5. With `secure`: the cluster of devcluster/secured.py (mTLS between
   nodes, a SASL_SSL client listener, ACLs), and every workload client
   logs in as the SCRAM user of chaos/secure.py, held to its ACLs.
   With `client="kafka"`: every broker has a second listener, CLIENTS,
   speaking Kafka's binary protocol, and the queue workload's producers
   and readers are librdkafka's (confluent-kafka) through it
   (chaos/kafka_clients.py); the topic workload stays on gRPC (admin).
6. The results directory: history.jsonl, schedule.json, summary.json,
   anomalies.json, and per checker model (log: each partition's log;
   offsets: the group's committed offsets; metadata: topic creates, deletes
   and describes, chaos/metadata_workload.py) its input <model>-history.jsonl,
   <model>-verdict.json and, when the history is illegal, <model>-failure.html.

The `transactions` scenario (chaos/txn_run.py) runs the transactional
workload and checks instead (chaos/txn_workload.py, chaos/txn_checks.py).

The `rolling-restart` scenario is one whole rolling restart
(devcluster/roll.py) under the workload: every controller, then every
broker, each once the cluster is healthy again. The run fails if the roll
stops. Every run's summary gives each partition's longest produce
unavailability (chaos/availability.py).

The `reassignment` scenario runs a fourth broker and moves the topic's
partitions between the brokers while leaders are killed
(chaos/reassign_workload.py); after recovery every move must complete.
Meanwhile each partition's ISR is sampled (chaos/min_isr.py): the summary
gives the longest time each spent below min ISR, explained by a fault and
not; unexplained for longer than the moves' own steps allow
(`MIN_ISR_BOUND_S`) makes the run invalid.

The `unclean-election` scenario is scripted, not random: it drives Kafka's
classic loss (ISR shrinks to the leader, which acknowledges alone and dies;
a lagging replica comes back first) with `unclean.leader.election.enable`
true - writes are lost and the run says so - or false, with the same
schedule: the partition stays offline instead until its last leader
returns, and nothing is lost.

The `last-replica-standing` scenarios (chaos/last_replica.py, KIP-966) are one
scripted, seeded sequence on the disk fault layer: one partition's
followers cut off from its leader until the ISR is the leader alone, the
leader's power loss alone, its restart, the heal and its re-election. With
Kafka's defaults the loss it causes is reported; `-durable` runs with
log.flush.interval.messages=1 and must lose nothing; `-elr` runs Kafka's
defaults with eligible.leader.replicas.version 1 (upgraded before the
topic is made) and min.insync.replicas 2 for every topic (the consumer
offsets' too: below min ISR the ELR keeps nothing safe): a follower is
elected from the ELR, and nothing may be lost. The summary's `last_replica_standing` says what the sequence did
and what was lost in its partition; a sequence that did not happen (for
`-elr`: no follower elected) makes the run invalid.
"""
from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from client.admin import describe_quorum
from client.cluster import Cluster as ClientCluster
from client.feature_admin import describe_features, update_features
from devcluster.local_cluster import KAFKA_CLIENTS_PROPERTIES, LocalCluster
from devcluster.local_cluster import BROKER_PORT, CLIENTS_PORT, CONTROLLER_PORT
from devcluster.local_processes import wait_until
from devcluster.roll import ProcessesControl, RollError, roll
from devcluster.secured import CLIENT_LISTENER, secured_properties

from . import lincheck, what_went_wrong
from .history import NEMESIS, HistoryRecorder, paired, read_history
from .min_isr import SAMPLE_INTERVAL_S, IsrSampler, below_min_isr, fault_windows, violations
from .matrix import checker_pruned
from .availability import produce_unavailability
from .clock_skew import ClockFiles
from .nemesis import REASSIGNMENT, ROLLING_RESTART, SCENARIOS, TRANSACTIONS, Nemesis, ScheduledFault, schedule
from .nemesis import LONG_FAULT_PRODUCER, LONG_PARTITION
from .disk_nemesis import DISK_FAULTS, DiskNemesis, durable, env_prefix
from .last_replica import LAST_REPLICA, LAST_REPLICA_DURABLE, LAST_REPLICA_ELR, LastReplicaStanding
from .metadata_workload import MetadataWorkload
from .minority_damage import MINORITY_SCENARIOS, FollowerDamage, corrupt_reads
from .queue_checks import analyze, model_history, summarize, to_log_model
from .reassign_workload import ReassignWorkload
from .secure import add_workload_user
from .testbed import NetworkTestbed, probe
from .workload import CLIENTS, QueueWorkload, group_of, leader_of

log = logging.getLogger(__name__)

TOPIC = "chaos"
PARTITIONS = 3
UNCLEAN = "unclean-election"
REPLACEMENT = "controller-replacement"  # in SCENARIOS; run by chaos/replacement_run.py
ALL_SCENARIOS = tuple(SCENARIOS) + (UNCLEAN,)
CLUSTER_PROPERTIES = {
    "broker.session.timeout.ms": 3000,
    "broker.heartbeat.interval.ms": 500,
    "replica.lag.time.max.ms": 3000,
    "controller.quorum.election.timeout.ms": 1000,
    "controller.quorum.fetch.timeout.ms": 2000,
    "kraftlog.log.level": "INFO",
}
RECOVERY_TIMEOUT_S = 120.0
# KIP-966's feature, by Kafka's name (metadata_quorum/features.py, which chaos does not import)
ELIGIBLE_LEADER_REPLICAS = "eligible.leader.replicas.version"
MIN_ISR = 2  # the workload topic's min.insync.replicas (1 in the unclean-election scenario)
# The reassignment scenario's bound on a partition's time below min ISR with
# no fault to explain it. A move's own steps never shrink the ISR: the new
# replicas join it (AlterPartition) before the PartitionChangeRecord that
# completes the move takes the old ones out, in that same record, so the
# completion trades in-sync replicas one for one. With no fault, a partition
# falls below min ISR only when followers are dropped for lag - the copy
# competes with them for the leader's disk and loop - each after
# replica.lag.time.max.ms behind, and one that keeps fetching is back within
# one more such window. Two lag windows and the sampling's own error (a
# stretch is measured to within one interval at each end) are all a move
# explains; longer, and the run is invalid.
MIN_ISR_BOUND_S = 2 * CLUSTER_PROPERTIES["replica.lag.time.max.ms"] / 1000 + 2 * SAMPLE_INTERVAL_S
# After a killed broker is restarted, the ISR may still show it from before
# the kill until the controller has fenced it (no heartbeat for
# broker.session.timeout.ms): only a sighting in the ISR that long after the
# fault stopped says it is back (chaos/min_isr.py).
RECOVERY_GRACE_S = CLUSTER_PROPERTIES["broker.session.timeout.ms"] / 1000
# A legal history checks in seconds, and so does the unclean run's illegal
# one (the log model refutes two values at one offset without a search);
# an illegal history no rule catches can take far longer: past this the
# verdict is "unknown" and the queue checks still name every lost write.
CHECK_TIME_LIMIT_S = 30.0
# The disk scenarios (chaos/disk_nemesis.py): every node's storage under the
# fault layer. EIO on fsync needs fsyncs to fail, so that scenario runs
# durable too (flush.messages=1 everywhere); a whole cluster's power loss
# and restart takes a while, so those come rarer.
DISK_SCENARIOS = tuple(s for s, kinds in SCENARIOS.items() if set(kinds) <= {*DISK_FAULTS, LAST_REPLICA})
DURABLE_SCENARIOS = ("power-loss-durable", "disk-eio-fsync", LAST_REPLICA_DURABLE)
POWER_LOSS_INTERVAL_S = 20.0


@dataclass(frozen=True)
class RunSettings:
    scenario: str
    seed: int
    time_limit_s: float
    results: Path
    unclean: bool = False  # only for the unclean-election scenario
    network: bool = True  # use the namespace testbed where the machine allows
    secure: bool = False  # TLS + mTLS between nodes, SASL_SSL/SCRAM clients, ACLs
    client: str = "grpc"  # the queue workload's clients: "grpc" (kraftlog's) or "kafka" (librdkafka)


@dataclass
class RunResult:
    settings: RunSettings
    summary: dict[str, Any]

    @property
    def valid(self) -> bool:
        # A reassignment run is also invalid when a move never completed after recovery.
        return bool(self.summary["valid"]) and self.summary.get("moves_settled") is not False and all(
            self.summary[k] in ("ok", None) for k in ("linearizable", "offsets_linearizable", "metadata_linearizable"))


def run(settings: RunSettings) -> RunResult:
    if settings.scenario not in ALL_SCENARIOS:
        raise ValueError(f"unknown scenario {settings.scenario!r}; known: {', '.join(ALL_SCENARIOS)}")
    if settings.client not in CLIENTS:
        raise ValueError(f"unknown client {settings.client!r}; known: {', '.join(CLIENTS)}")
    kafka = settings.client == "kafka"
    if kafka and (settings.secure or settings.scenario == TRANSACTIONS):
        raise ValueError("--client kafka runs on a plaintext cluster, without the transactions scenario")
    if settings.scenario == TRANSACTIONS:
        from .txn_run import run_transactions  # its own workload and checks; it uses this module's helpers
        return run_transactions(settings)
    if settings.scenario == REPLACEMENT:
        from .replacement_run import run_replacement  # a dynamic quorum of controllers, its own checks
        return run_replacement(settings)
    results = settings.results
    results.mkdir(parents=True, exist_ok=True)
    moving = settings.scenario == REASSIGNMENT  # one broker more than the replication factor
    node_ids = [1, 2, 3, 4, 5, 6, 7] if moving else [1, 2, 3, 4, 5, 6]
    capabilities = probe() if settings.network and settings.scenario != UNCLEAN else None
    use_testbed = capabilities is not None and capabilities.namespaces and capabilities.iptables
    notes: list[str] = []
    if settings.network and not use_testbed and capabilities is not None:
        notes.append(f"network faults skipped: {capabilities.explain()}")
    workdir = Path(tempfile.mkdtemp(prefix="kraftlog-chaos-"))
    testbed = NetworkTestbed([str(n) for n in node_ids]) if use_testbed else None
    clocks = ClockFiles(workdir, node_ids)
    in_testbed = testbed.exec_prefix if testbed else (lambda node_id: [])
    history = HistoryRecorder(results / "history.jsonl")
    cluster: Optional[LocalCluster] = None
    workload: Optional[QueueWorkload] = None
    topics: Optional[MetadataWorkload] = None
    mover: Optional[ReassignWorkload] = None
    sampler: Optional[IsrSampler] = None
    last_replica: Optional[LastReplicaStanding] = None
    try:
        if testbed is not None:
            testbed.create()
        properties = dict(CLUSTER_PROPERTIES)
        if settings.scenario == UNCLEAN:
            properties["unclean.leader.election.enable"] = str(settings.unclean).lower()
        if settings.scenario == LAST_REPLICA_ELR:
            # The ELR keeps nothing below min ISR safe: __consumer_offsets, at the broker default 1,
            # lost a committed offset when its leader alone power-failed (seed 1's first run).
            properties["min.insync.replicas"] = MIN_ISR
        if settings.secure:
            properties.update(secured_properties(node_ids))
        if kafka:
            properties.update(KAFKA_CLIENTS_PROPERTIES)
        prefix = lambda node_id: (*in_testbed(node_id), *clocks.prefix(node_id))  # noqa: E731
        if settings.scenario in DISK_SCENARIOS:
            prefix = env_prefix(workdir / "disk", prefix)
            properties = durable(properties) if settings.scenario in DURABLE_SCENARIOS else properties
        cluster = LocalCluster(
            workdir, properties=properties, brokers=len(node_ids) - 3,
            hosts={n: testbed.address(n) for n in node_ids} if testbed else None,
            command_prefix=prefix,
            tls=settings.secure,
            client_listener=CLIENT_LISTENER if settings.secure else "PLAINTEXT" if kafka else None)
        cluster.start()
        cluster.wait_for_brokers(timeout=RECOVERY_TIMEOUT_S)
        if settings.scenario == LAST_REPLICA_ELR:
            _enable_elr(cluster)
        min_isr = 1 if settings.scenario == UNCLEAN else MIN_ISR
        cluster.create_topic(TOPIC, PARTITIONS, 3, configs={"min.insync.replicas": str(min_isr)})
        cluster.wait_for_leaders(TOPIC, timeout=RECOVERY_TIMEOUT_S)
        user = add_workload_user(cluster, TOPIC, group_of(TOPIC)) if settings.secure else None
        bootstrap = cluster.client_bootstrap if user else cluster.bootstrap
        clients = CLIENTS[settings.client]()
        workload = QueueWorkload(history, cluster.client_bootstrap if kafka else bootstrap, TOPIC, PARTITIONS,
                                 client_security=user.client_config() if user else {}, clients=clients,
                                 producer_config=dict(LONG_FAULT_PRODUCER) if settings.scenario == LONG_PARTITION
                                 else {})
        if not clients.groups:
            notes.append(f"{clients.name} clients: no group consumers (every reader is assigned)")
        rolled: dict[str, Any] = {}
        disk = DiskNemesis(cluster, workdir / "disk", node_ids, list(cluster.brokers), TOPIC,
                           note=history.fault) if settings.scenario in DISK_SCENARIOS else None
        if disk is not None and settings.scenario in (LAST_REPLICA, LAST_REPLICA_DURABLE, LAST_REPLICA_ELR):
            last_replica = LastReplicaStanding(cluster, list(cluster.brokers), TOPIC, PARTITIONS, disk, testbed,
                                               note=history.fault, elr=settings.scenario == LAST_REPLICA_ELR)
        nemesis = Nemesis(cluster, node_ids, list(cluster.brokers), history, testbed,
                          partition_leader=lambda: leader_of(cluster.metadata(topics=[TOPIC]), TOPIC),
                          active_controller=lambda: _active_controller(cluster),
                          roll=(lambda: _roll(cluster, history, rolled)) if settings.scenario == ROLLING_RESTART
                          else None,
                          broker_port=BROKER_PORT, controller_port=CONTROLLER_PORT,
                          client_ports=(CLIENTS_PORT,) if kafka else (BROKER_PORT,), clocks=clocks,
                          disk=disk,
                          last_replica=last_replica,
                          follower_damage=_follower_damage(cluster, settings.scenario))
        topics = MetadataWorkload(history, bootstrap, ",".join(cluster.controller_addresses.values()),
                                  seed=settings.seed, security=user.client_security() if user else None,
                                  controller_security=user.certificate_security() if user else None)
        if moving:
            sampler = IsrSampler(lambda: cluster.metadata(topics=[TOPIC]), TOPIC, lambda: history.now_ns() / 1e9)
            sampler.start()
            mover = ReassignWorkload(history, bootstrap, TOPIC, list(cluster.brokers), seed=settings.seed,
                                     security=user.client_security() if user else None)
            mover.start()
        workload.start()
        topics.start()
        if settings.scenario == UNCLEAN:
            faults = _unclean_election(cluster, history, settings.time_limit_s)
        else:
            faults = schedule(settings.scenario, settings.seed, settings.time_limit_s,
                              **({"interval_s": POWER_LOSS_INTERVAL_S} if "power-loss" in settings.scenario else {}))
            _drive(nemesis, faults, settings.time_limit_s)
        workload.stop()
        topics.stop()
        if mover is not None:
            mover.stop()
        nemesis.heal_all()
        notes += [f"node {n} had exited by itself; started again" for n in _recover(cluster)]
        if mover is not None:
            mover.settle(RECOVERY_TIMEOUT_S)
            notes.append(f"moves: {mover.counts}")
        if sampler is not None:
            sampler.stop()
        workload.final_read()
        notes += nemesis.skipped
    finally:
        _tear_down(results, history, cluster, testbed, workdir, workload, topics, mover, sampler)
    (results / "schedule.json").write_text(json.dumps([f.__dict__ for f in faults], indent=1))
    summary = _check(results, history.faults,
                     notes + (workload.errors if workload else []) + (topics.errors if topics else [])
                     + (mover.errors if mover else []) + (sampler.errors if sampler else []))
    if mover is not None:
        summary["moves_settled"] = mover.settled
        if mover.settled is False:  # the CLI's verdict reads "valid"
            summary["valid"] = False
    if sampler is not None:
        summary["below_min_isr"] = _below_min_isr(results, sampler)
        if summary["below_min_isr"]["violations"]:
            summary["valid"] = False
            summary["notes"].extend(summary["below_min_isr"]["violations"])
    summary.update(scenario=settings.scenario, seed=settings.seed, time_limit_s=settings.time_limit_s,
                   testbed=use_testbed, unclean=settings.unclean, secure=settings.secure, client=settings.client,
                   testbed_run_id=testbed.run_id if testbed is not None else None)
    if last_replica is not None:
        outcome = summary["last_replica_standing"] = _last_replica_outcome(last_replica.outcome, results)
        if not outcome["happened"]:  # nothing was shown: the run says so and fails
            summary["valid"] = False
            summary["notes"].append(f"{LAST_REPLICA}: the sequence did not happen: {outcome.get('steps')}")
    if settings.scenario == ROLLING_RESTART:
        summary["roll"] = rolled
        if not rolled.get("ok"):  # a roll that stopped (or never ran) fails the run, whatever the checks say
            summary["valid"] = False
    write_summary(results, summary)
    return RunResult(settings, summary)


def write_summary(results: Path, summary: dict[str, Any]) -> None:
    """summary.json, once the summary is final: a run that is not clean gets
    its what-went-wrong.html page first, named in the summary
    (chaos/what_went_wrong.py)."""
    what_went_wrong.attach(results, summary)
    (results / "summary.json").write_text(json.dumps(summary, indent=1))


def _last_replica_outcome(sequence: dict[str, Any], results: Path) -> dict[str, Any]:
    """What the last-replica-standing sequence did (chaos/last_replica.py):
    the writes its partition acknowledged before the leader's power loss
    (those it puts at risk) and the acknowledged writes lost there and in
    the other partitions."""
    key = f"{TOPIC}-{sequence.get('partition')}"
    lost = json.loads((results / "anomalies.json").read_text())["lost"]
    history = list(read_history(results / "history.jsonl"))
    power_loss_at = next((line["time"] for line in history if line["f"] == LAST_REPLICA
                          and line["value"].get("step") == "power-loss"), None)
    acked = [call for call, done in paired(history) if call["f"] == "send" and call["key"] == key
             and done is not None and done["type"] == "ok" and power_loss_at is not None
             and done["time"] < power_loss_at]
    happened = all(sequence.get(k) for k in ("isr_shrunk", "power_loss", sequence.get("expected", "re_elected")))
    return {**sequence, "happened": happened, "acked_before_power_loss": len(acked),
            "lost_in_partition": sum(1 for a in lost if a["partition"] == key),
            "lost_elsewhere": sum(1 for a in lost if a["partition"] != key)}


def _enable_elr(cluster: LocalCluster) -> None:
    """KIP-966 on, as `kraftlog features upgrade --feature eligible.leader.replicas.version=1`."""
    with ClientCluster(cluster.bootstrap, cluster.security) as client:
        update_features(client, {ELIGIBLE_LEADER_REPLICAS: 1})
    # Answered once committed; every broker has it once it has applied that far.
    for broker in cluster.brokers:
        with ClientCluster(cluster.broker_addresses[broker], cluster.security) as client:
            wait_until(lambda: describe_features(client)["finalized"].get(ELIGIBLE_LEADER_REPLICAS) == 1,
                       RECOVERY_TIMEOUT_S, f"{ELIGIBLE_LEADER_REPLICAS} 1 applied by broker {broker}", interval=0.2)


def _follower_damage(cluster: LocalCluster, scenario: str) -> Optional[FollowerDamage]:
    """The minority-damage scenarios' fault on partition 0 of the workload's topic (chaos/minority_damage.py)."""
    if scenario not in MINORITY_SCENARIOS:
        return None
    return FollowerDamage(cluster, list(cluster.brokers), lambda n: cluster.plans[n].home / "data" / f"{TOPIC}-0",
                          stop_mode=MINORITY_SCENARIOS[scenario], isr=lambda: _partition_isr(cluster))


def _partition_isr(cluster: LocalCluster, partition: int = 0) -> Optional[list[int]]:
    """The workload partition's ISR as a running broker's metadata has it (None: none answers)."""
    metadata = cluster.metadata(topics=[TOPIC])
    for t in metadata.topics if metadata is not None else ():
        for p in t.partitions:
            if p.partition_index == partition:
                return sorted(p.isr_nodes)
    return None


def _below_min_isr(results: Path, sampler: IsrSampler) -> dict[str, Any]:
    """Each partition's longest time below min ISR, explained by a fault and not (seconds); the
    samples go to isr-samples.jsonl."""
    with (results / "isr-samples.jsonl").open("w", encoding="utf-8") as out:
        for sample in sampler.samples:
            out.write(json.dumps(sample.__dict__) + "\n")
    report = below_min_isr(sampler.samples, fault_windows(read_history(results / "history.jsonl")), MIN_ISR,
                           RECOVERY_GRACE_S)
    return {"min_isr": MIN_ISR, "bound_s": MIN_ISR_BOUND_S, "samples": len(sampler.samples),
            "partitions": {str(p): r for p, r in report.items()}, "violations": violations(report, MIN_ISR_BOUND_S)}


def _drive(nemesis: Nemesis, faults: list[ScheduledFault], time_limit_s: float) -> None:
    """Inflict the schedule in real time; returns at the time limit."""
    start = time.monotonic()
    for fault in faults:
        _sleep_until(start + fault.start_s)
        nemesis.start(fault)
        _sleep_until(start + fault.start_s + fault.duration_s)
        nemesis.stop()
    _sleep_until(start + time_limit_s)


def _sleep_until(deadline: float) -> None:
    time.sleep(max(0.0, deadline - time.monotonic()))


def _roll(cluster: LocalCluster, history: HistoryRecorder, outcome: dict[str, Any]) -> dict[str, Any]:
    """The rolling-restart scenario's fault: one whole roll of the cluster
    (devcluster/roll.py), each step in the history; `outcome` gets what it did."""
    try:
        report = roll(tuple(cluster.plans.values()), timeout_s=RECOVERY_TIMEOUT_S, control=ProcessesControl(cluster),
                      on_event=lambda line: history.fault("roll", "step", event=line))
    except RollError as exc:
        outcome.update(ok=False, error=str(exc))
        return {"error": str(exc)}
    outcome.update(ok=True, seconds=round(report.seconds, 3),
                   nodes=[{"node": n.node_id, "down_s": round(n.down_s, 3), "healthy_s": round(n.healthy_s, 3)}
                          for n in report.nodes])
    return {"nodes": [n.node_id for n in report.nodes], "seconds": outcome["seconds"]}


def _active_controller(cluster: LocalCluster) -> Optional[int]:
    try:
        leader = describe_quorum(",".join(cluster.controller_addresses.values()), timeout=2.0,
                                 security=cluster.security)["leader_id"]
    except Exception:  # noqa: BLE001 - no leader known right now
        return None
    return leader if leader is not None and leader >= 0 else None


def _recover(cluster: LocalCluster, topic: str = TOPIC) -> list[int]:
    """Every node running again, every broker unfenced, every partition led.
    The nodes that had exited by themselves (a log directory gone offline:
    it hands over and exits) are started too; returned, for the run's notes."""
    exited = [n for n in cluster.plans if n in cluster.pids and not cluster.alive(n)]
    for node in exited:
        cluster.wait_exit(node, 1.0)  # forget the old process
    stopped = [n for n in cluster.plans if n not in cluster.pids]
    if stopped:
        cluster.start(*stopped)
    cluster.wait_for_brokers(timeout=RECOVERY_TIMEOUT_S)
    cluster.wait_for_leaders(topic, timeout=RECOVERY_TIMEOUT_S)
    return exited


def _unclean_election(cluster: LocalCluster, history: HistoryRecorder, time_limit_s: float) -> list[ScheduledFault]:
    """The classic unclean loss, scripted on partition 0 (process faults only)."""
    start = time.monotonic()
    steps: list[ScheduledFault] = []

    def step(kind: str, action: Callable[[], None], **details: Any) -> None:
        steps.append(ScheduledFault(round(time.monotonic() - start, 3), kind, 0.0, 0))
        action()
        history.fault(kind, "start", **details)

    leader = wait_until(lambda: leader_of(cluster.metadata(topics=[TOPIC]), TOPIC), RECOVERY_TIMEOUT_S,
                        "a leader of partition 0")
    followers = [b for b in cluster.brokers if b != leader]
    time.sleep(min(3.0, time_limit_s / 6))  # some writes everyone has
    for follower in followers:
        step("kill", lambda f=follower: cluster.kill(f), nodes=[follower], why="ISR shrinks to the leader")
    wait_until(lambda: _isr(cluster, leader) == [leader], RECOVERY_TIMEOUT_S, "the ISR shrunk to the leader")
    time.sleep(min(4.0, time_limit_s / 4))  # writes acknowledged by the leader alone
    step("kill", lambda: cluster.kill(leader), nodes=[leader], why="the only in-sync replica dies")
    time.sleep(1.0)
    step("restart", lambda: cluster.start(*followers), nodes=followers, why="lagging replicas return first")
    # Unclean: one of them is elected and the partition serves again without
    # the leader's last writes. Clean: it stays offline until the leader returns.
    time.sleep(max(5.0, time_limit_s / 3))
    step("restart", lambda: cluster.start(leader), nodes=[leader], why="the old leader returns")
    _sleep_until(start + time_limit_s)
    return steps


def _isr(cluster: LocalCluster, broker: int) -> Optional[list[int]]:
    metadata = cluster.metadata(broker, topics=[TOPIC])
    if metadata is None:
        return None
    for t in metadata.topics:
        for p in t.partitions:
            if p.partition_index == 0:
                return sorted(p.isr_nodes)
    return None


def recheck(history_file: Path) -> dict[str, Any]:
    """Check a recorded run's history again (`kraftlog chaos check` on a
    run's history.jsonl): the queue checks and every checker model, the
    files written next to it (with what-went-wrong.html when it is not
    clean), the summary returned."""
    faults = sum(1 for line in read_history(history_file)
                 if line["process"] == NEMESIS and line["value"].get("phase") == "start")
    if any(line["f"] == "txn" for line in read_history(history_file)):
        from .txn_run import check_transactions
        summary = check_transactions(history_file.parent, faults, [], history_file)
    else:
        summary = _check(history_file.parent, faults, [], history_file)
    what_went_wrong.attach(history_file.parent, summary, history_file)
    return summary


def _check(results: Path, faults: int, notes: list[str],
           history_file: Optional[Path] = None) -> dict[str, Any]:
    history = list(read_history(history_file or results / "history.jsonl"))
    report = analyze(history)
    (results / "anomalies.json").write_text(json.dumps(report.anomalies, indent=1))
    verdicts = {"log": _linearizable(results, "log", to_log_model(history), notes)}
    for model in ("offsets", "metadata"):
        verdicts[model] = _linearizable(results, model, model_history(history, model), notes)
    summary = summarize(report, faults=faults, verdicts=verdicts)
    summary["checker_pruned"] = checker_pruned(results)
    summary["produce_unavailability_s"] = produce_unavailability(history)
    # A read that met a batch whose CRC fails: a corrupt batch was served (never allowed).
    summary["corrupt_reads"] = corrupt_reads(history)
    if summary["corrupt_reads"]:
        summary["valid"] = False
    summary["notes"] = notes
    return summary


def _linearizable(results: Path, model: str, lines: Iterable[dict[str, Any]], notes: list[str]) -> Optional[str]:
    """The checker's verdict on the model's part of the history (its files
    named after the model); None when the checker cannot run here."""
    path = results / f"{model}-history.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    html = results / f"{model}-failure.html"
    try:
        checked = lincheck.check(path, model=model, time_limit=CHECK_TIME_LIMIT_S, html=html)
    except lincheck.CheckerUnavailable as exc:
        notes.append(f"{model}: linearizability not checked: {exc}")
        return None
    (results / f"{model}-verdict.json").write_text(json.dumps(checked.result, indent=1))
    verdict = checked.result["result"] if checked.result else "unreadable"
    if verdict == "ok":
        html.unlink(missing_ok=True)
    return verdict


def _tear_down(results: Path, history: HistoryRecorder, cluster: Optional[LocalCluster],
               testbed: Optional[NetworkTestbed], workdir: Path, *running: Any) -> None:
    """End of a run, also after a failure: stop what still runs (workloads,
    samplers: anything with stop(timeout=)), keep the node logs, stop every
    node, remove the namespaces and the cluster's files."""
    for thing in running:
        if thing is not None:
            thing.stop(timeout=5)
    history.close()
    if cluster is not None:
        _keep_logs(cluster, results)
        cluster.close()
    if testbed is not None:
        testbed.close()
    shutil.rmtree(workdir, ignore_errors=True)


def _keep_logs(cluster: LocalCluster, results: Path) -> None:
    logs = results / "logs"
    logs.mkdir(exist_ok=True)
    for node_id, plan in cluster.plans.items():
        if plan.log_path.exists():
            shutil.copyfile(plan.log_path, logs / f"node-{node_id}.log")

