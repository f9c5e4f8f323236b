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

The `unclean-election` scenario is scripted, not random: it drives Kafka's
classic loss (ISR shrinks to the leader, which acknowledges alone and dies;
a lagging replica comes back first) with `unclean.leader.election.enable`
true - writes are lost and the run says so - or false, with the same
schedule: the partition stays offline instead until its last leader
returns, and nothing is lost.
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
from devcluster.local_cluster import KAFKA_CLIENTS_PROPERTIES, LocalCluster
from devcluster.local_processes import wait_until
from devcluster.secured import CLIENT_LISTENER, secured_properties

from . import lincheck
from .history import NEMESIS, HistoryRecorder, read_history
from .nemesis import SCENARIOS, TRANSACTIONS, Nemesis, ScheduledFault, schedule
from .metadata_workload import MetadataWorkload
from .queue_checks import analyze, model_history, summarize, to_log_model
from .secure import add_workload_user
from .testbed import NetworkTestbed, probe
from .workload import CLIENTS, QueueWorkload, group_of, leader_of

log = logging.getLogger(__name__)

TOPIC = "chaos"
PARTITIONS = 3
UNCLEAN = "unclean-election"
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
# A legal history checks in seconds; proving an illegal one (the unclean
# run's lost writes) can take far longer: past this the verdict is
# "unknown" and the queue checks still name every lost write.
CHECK_TIME_LIMIT_S = 30.0


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
        return bool(self.summary["valid"]) and all(
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
    results = settings.results
    results.mkdir(parents=True, exist_ok=True)
    node_ids = [1, 2, 3, 4, 5, 6]
    capabilities = probe() if settings.network and settings.scenario != UNCLEAN else None
    use_testbed = capabilities is not None and capabilities.namespaces and capabilities.iptables
    notes: list[str] = []
    if settings.network and not use_testbed and capabilities is not None:
        notes.append(f"network faults skipped: {capabilities.explain()}")
    workdir = Path(tempfile.mkdtemp(prefix="kraftlog-chaos-"))
    testbed = NetworkTestbed([str(n) for n in node_ids]) if use_testbed else None
    history = HistoryRecorder(results / "history.jsonl")
    cluster: Optional[LocalCluster] = None
    workload: Optional[QueueWorkload] = None
    topics: Optional[MetadataWorkload] = None
    try:
        if testbed is not None:
            testbed.create()
        properties = dict(CLUSTER_PROPERTIES)
        if settings.scenario == UNCLEAN:
            properties["unclean.leader.election.enable"] = str(settings.unclean).lower()
        if settings.secure:
            properties.update(secured_properties(node_ids))
        if kafka:
            properties.update(KAFKA_CLIENTS_PROPERTIES)
        cluster = LocalCluster(
            workdir, properties=properties,
            hosts={n: testbed.address(n) for n in node_ids} if testbed else None,
            command_prefix=testbed.exec_prefix if testbed else (lambda node_id: ()),
            tls=settings.secure,
            client_listener=CLIENT_LISTENER if settings.secure else "PLAINTEXT" if kafka else None)
        cluster.start()
        cluster.wait_for_brokers(timeout=RECOVERY_TIMEOUT_S)
        min_isr = 1 if settings.scenario == UNCLEAN else 2
        cluster.create_topic(TOPIC, PARTITIONS, 3, configs={"min.insync.replicas": str(min_isr)})
        cluster.wait_for_leaders(TOPIC, timeout=RECOVERY_TIMEOUT_S)
        user = add_workload_user(cluster, TOPIC, group_of(TOPIC)) if settings.secure else None
        bootstrap = cluster.client_bootstrap if user else cluster.bootstrap
        clients = CLIENTS[settings.client]()
        workload = QueueWorkload(history, cluster.client_bootstrap if kafka else bootstrap, TOPIC, PARTITIONS,
                                 client_security=user.client_config() if user else {}, clients=clients)
        if not clients.groups:
            notes.append(f"{clients.name} clients: no group consumers (every reader is assigned)")
        nemesis = Nemesis(cluster, node_ids, list(cluster.brokers), history, testbed,
                          partition_leader=lambda: leader_of(cluster.metadata(topics=[TOPIC]), TOPIC),
                          active_controller=lambda: _active_controller(cluster))
        topics = MetadataWorkload(history, bootstrap, ",".join(cluster.controller_addresses.values()),
                                  seed=settings.seed, security=user.client_security() if user else None,
                                  controller_security=user.certificate_security() if user else None)
        workload.start()
        topics.start()
        if settings.scenario == UNCLEAN:
            faults = _unclean_election(cluster, history, settings.time_limit_s)
        else:
            faults = schedule(settings.scenario, settings.seed, settings.time_limit_s)
            _drive(nemesis, faults, settings.time_limit_s)
        workload.stop()
        topics.stop()
        nemesis.heal_all()
        _recover(cluster)
        workload.final_read()
        notes += nemesis.skipped
    finally:
        for running in (workload, topics):
            if running is not None:
                running.stop(timeout=5)
        history.close()
        if cluster is not None:
            _keep_logs(cluster, results)
            cluster.close()
        if testbed is not None:
            testbed.close()
        shutil.rmtree(workdir, ignore_errors=True)
    (results / "schedule.json").write_text(json.dumps([f.__dict__ for f in faults], indent=1))
    summary = _check(results, history.faults,
                     notes + (workload.errors if workload else []) + (topics.errors if topics else []))
    summary.update(scenario=settings.scenario, seed=settings.seed, time_limit_s=settings.time_limit_s,
                   testbed=use_testbed, unclean=settings.unclean, secure=settings.secure, client=settings.client)
    (results / "summary.json").write_text(json.dumps(summary, indent=1))
    return RunResult(settings, summary)


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


def _active_controller(cluster: LocalCluster) -> Optional[int]:
    try:
        leader = describe_quorum(",".join(cluster.controller_addresses.values()), timeout=2.0,
                                 security=cluster.security)["leader_id"]
    except Exception:  # noqa: BLE001 - no leader known right now
        return None
    return leader if leader is not None and leader >= 0 else None


def _recover(cluster: LocalCluster, topic: str = TOPIC) -> None:
    """Every node running again, every broker unfenced, every partition led."""
    stopped = [n for n in cluster.plans if n not in cluster.pids]
    if stopped:
        cluster.start(*stopped)
    cluster.wait_for_brokers(timeout=RECOVERY_TIMEOUT_S)
    cluster.wait_for_leaders(topic, timeout=RECOVERY_TIMEOUT_S)


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
    files written next to it, the summary returned."""
    faults = sum(1 for line in read_history(history_file)
                 if line["process"] == NEMESIS and line["value"].get("phase") == "start")
    if any(line["f"] == "txn" for line in read_history(history_file)):
        from .txn_run import check_transactions
        return check_transactions(history_file.parent, faults, [], history_file)
    return _check(history_file.parent, faults, [], history_file)


def _check(results: Path, faults: int, notes: list[str],
           history_file: Optional[Path] = None) -> dict[str, Any]:
    history = list(read_history(history_file or results / "history.jsonl"))
    report = analyze(history)
    (results / "anomalies.json").write_text(json.dumps(report.anomalies, indent=1))
    verdicts = {"log": _linearizable(results, "log", to_log_model(history), notes)}
    for model in ("offsets", "metadata"):
        verdicts[model] = _linearizable(results, model, model_history(history, model), notes)
    summary = summarize(report, faults=faults, verdicts=verdicts)
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


def _keep_logs(cluster: LocalCluster, results: Path) -> None:
    logs = results / "logs"
    logs.mkdir(exist_ok=True)
    for node_id, plan in cluster.plans.items():
        if plan.log_path.exists():
            shutil.copyfile(plan.log_path, logs / f"node-{node_id}.log")

