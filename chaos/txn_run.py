"""The `transactions` chaos scenario, start to verdict (chaos/runner.py's
steps with this scenario's parts):

1. Hosts and a cluster as for every scenario, with a small
   `__transaction_state` (5 partitions) and `__consumer_offsets` (3), the
   coordinator's timeout sweep every second, and every node started with
   the marker writer's test hook (KRAFTLOG_TEST_MARKER_DELAY,
   broker/transactions/markers.py): a share of WriteTxnMarkers sends
   delayed, and a share of acknowledged ones sent again late.
2. The transactional workload (chaos/txn_workload.py) on topic `txn`
   (3 partitions, RF 3, min.insync.replicas 2), with late EndTxn re-sends,
   while the nemesis draws from the scenario's faults: kill -9 and SIGSTOP
   of partition leaders and of the transaction coordinator, isolating the
   coordinator or a leader, partitions, and producers replaced
   mid-transaction.
3. Heal, restart, wait until no transaction is open, read everything, and
   check (chaos/txn_checks.py): summary.json and anomalies.json as the
   other scenarios write them.
"""
from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path
from typing import Any, Optional

from devcluster.local_cluster import LocalCluster
from kafka_protocol.coordinator_placement import partition_for

from .history import HistoryRecorder, read_history
from .nemesis import Nemesis, schedule
from .runner import (CLUSTER_PROPERTIES, RECOVERY_TIMEOUT_S, RunResult, RunSettings, _active_controller, _drive,
                     _recover, _tear_down, write_summary)
from .testbed import NetworkTestbed, probe
from .txn_checks import analyze, summarize
from .txn_workload import TxnWorkload, transactional_id
from .workload import leader_of

TOPIC = "txn"
PARTITIONS = 3
TXN_STATE_PARTITIONS = 5
TXN_STATE_TOPIC = "__transaction_state"
# Up to 300 ms of delay for 30% of marker sends; half the acknowledged requests sent again late.
MARKER_CHAOS = "300,0.3,0.5"
TXN_PROPERTIES = {
    "transaction.state.log.num.partitions": TXN_STATE_PARTITIONS,
    "offsets.topic.num.partitions": 3,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
    # Every coordinator decision and every marker, with its cause, in the
    # nodes' logs: what an anomaly is traced back through.
    "kraftlog.log.logger.levels": "broker.transactions=DEBUG,broker.txn_markers=DEBUG",
}


def run_transactions(settings: RunSettings) -> RunResult:
    if settings.secure:
        raise ValueError("the transactions scenario runs plaintext only (its clients have no SCRAM user yet)")
    results = settings.results
    results.mkdir(parents=True, exist_ok=True)
    node_ids = [1, 2, 3, 4, 5, 6]
    capabilities = probe() if settings.network else None
    use_testbed = capabilities is not None and capabilities.namespaces and capabilities.iptables
    notes: list[str] = []
    if settings.network and not use_testbed and capabilities is not None:
        notes.append(f"network faults skipped: {capabilities.explain()}")
    workdir = Path(tempfile.mkdtemp(prefix="kraftlog-chaos-txn-"))
    testbed = NetworkTestbed([str(n) for n in node_ids]) if use_testbed else None
    history = HistoryRecorder(results / "history.jsonl")
    cluster: Optional[LocalCluster] = None
    workload: Optional[TxnWorkload] = None
    faults = []
    try:
        if testbed is not None:
            testbed.create()

        def prefix(node_id: int) -> list[str]:
            inside = testbed.exec_prefix(node_id) if testbed is not None else []
            return [*inside, "env", f"KRAFTLOG_TEST_MARKER_DELAY={MARKER_CHAOS}"]

        cluster = LocalCluster(workdir, properties={**CLUSTER_PROPERTIES, **TXN_PROPERTIES},
                               hosts={n: testbed.address(n) for n in node_ids} if testbed else None,
                               command_prefix=prefix)
        cluster.start()
        cluster.wait_for_brokers(timeout=RECOVERY_TIMEOUT_S)
        cluster.create_topic(TOPIC, PARTITIONS, 3, configs={"min.insync.replicas": "2"})
        cluster.wait_for_leaders(TOPIC, timeout=RECOVERY_TIMEOUT_S)
        workload = TxnWorkload(history, cluster.bootstrap, TOPIC, PARTITIONS, seed=settings.seed)
        workers = itertools.cycle(range(workload.workers))

        def coordinator() -> Optional[int]:
            """The coordinator of the next worker's id (they take turns being the target)."""
            index = partition_for(transactional_id(next(workers)), TXN_STATE_PARTITIONS)
            return leader_of(cluster.metadata(topics=[TXN_STATE_TOPIC]), TXN_STATE_TOPIC, index)

        nemesis = Nemesis(cluster, node_ids, list(cluster.brokers), history, testbed,
                          partition_leader=lambda: leader_of(cluster.metadata(topics=[TOPIC]), TOPIC),
                          active_controller=lambda: _active_controller(cluster),
                          txn_coordinator=coordinator, crash_producer=workload.crash_producer)
        workload.start()
        faults = schedule(settings.scenario, settings.seed, settings.time_limit_s)
        _drive(nemesis, faults, settings.time_limit_s)
        workload.stop()
        nemesis.heal_all()
        _recover(cluster, TOPIC)
        workload.final_read()
        notes += nemesis.skipped
    finally:
        _tear_down(results, history, cluster, testbed, workdir, workload)
    (results / "schedule.json").write_text(json.dumps([f.__dict__ for f in faults], indent=1))
    late_markers = _late_marker_copies(results / "logs")
    summary = check_transactions(results, history.faults, notes + (workload.errors if workload else []))
    summary.update(scenario=settings.scenario, seed=settings.seed, time_limit_s=settings.time_limit_s,
                   testbed=use_testbed, unclean=False, secure=False, late_marker_copies=late_markers,
                   testbed_run_id=testbed.run_id if testbed is not None else None)
    write_summary(results, summary)
    return RunResult(settings, summary)


def check_transactions(results: Path, faults: int, notes: list[str],
                       history_file: Optional[Path] = None) -> dict[str, Any]:
    """The transactional checks on a recorded history; anomalies.json written beside it."""
    report = analyze(read_history(history_file or results / "history.jsonl"))
    (results / "anomalies.json").write_text(json.dumps(report.anomalies, indent=1))
    summary = summarize(report, faults=faults)
    summary["notes"] = notes
    return summary


def _late_marker_copies(logs: Path) -> dict[str, int]:
    """What the brokers answered the marker hook's late copies, by error (from their logs)."""
    answers: dict[str, int] = {}
    for path in sorted(logs.glob("node-*.log")):
        for line in path.read_text(errors="replace").splitlines():
            if "test hook: late marker copy (" in line:
                for code in line.rsplit(": ", 1)[-1].split(", "):
                    answers[code.strip()] = answers.get(code.strip(), 0) + 1
    return dict(sorted(answers.items()))
