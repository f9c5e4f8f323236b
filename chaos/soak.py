"""`make soak`: a long run of steady load under rotating faults, watching
the node processes for leaks.

The cluster, workload and checks are the chaos runs' (chaos/runner.py);
the faults come in a fixed rotation (`ROTATION`, network faults only with
the namespace testbed), one every `fault_every_s`, each healed before the
next. Every `sample_every_s` each node's RSS, open fds and threads are
sampled (chaos/soak_stats.py). The results folder gets the samples
(soak-samples.jsonl), the chart (soak.png), each node's growth over its
longest life, and the run's usual checks (summary.json: anomalies,
checker verdicts, the checker's seconds and the operations of unknown
outcome it pruned, per model).

    python -m chaos.soak --minutes 30 --results soak-results
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from itertools import cycle
from pathlib import Path
from typing import Any, Optional

from devcluster.local_cluster import LocalCluster

from . import soak_stats
from .clock_skew import ClockFiles
from .history import HistoryRecorder
from .matrix import checker_seconds
from .nemesis import CLOCK_SKEW, Nemesis, ScheduledFault
from .runner import (CLUSTER_PROPERTIES, MIN_ISR, PARTITIONS, RECOVERY_TIMEOUT_S, TOPIC, _active_controller, _check,
                     _recover, _tear_down, write_summary)
from .testbed import NetworkTestbed, probe
from .workload import CLIENTS, QueueWorkload, leader_of

ROTATION = ("pause", CLOCK_SKEW, "kill")
NETWORK_ROTATION = ("partition-halves", "isolate-leader", "loss")
# Growth over a whole soak that counts as a leak, per hour of a node's life:
# a steady cluster's memory and handles level off once caches and pools are warm.
LEAK_PER_HOUR = {"rss_mb": 50.0, "fds": 20.0, "threads": 5.0}


def run_soak(results: Path, *, minutes: float, sample_every_s: float, fault_every_s: float, fault_s: float,
             seed: int, network: bool = True) -> dict[str, Any]:
    results.mkdir(parents=True, exist_ok=True)
    node_ids = [1, 2, 3, 4, 5, 6]
    capabilities = probe() if network else None
    testbed = (NetworkTestbed([str(n) for n in node_ids])
               if capabilities is not None and capabilities.namespaces and capabilities.iptables else None)
    rotation = ROTATION + (NETWORK_ROTATION if testbed else ())
    workdir = Path(tempfile.mkdtemp(prefix="kraftlog-soak-"))
    clocks = ClockFiles(workdir, node_ids)
    in_testbed = testbed.exec_prefix if testbed else (lambda node_id: [])
    history = HistoryRecorder(results / "history.jsonl")
    samples: list[dict] = []
    cluster: Optional[LocalCluster] = None
    workload: Optional[QueueWorkload] = None
    notes: list[str] = []
    try:
        if testbed is not None:
            testbed.create()
        cluster = LocalCluster(workdir, properties=dict(CLUSTER_PROPERTIES), brokers=len(node_ids) - 3,
                               hosts={n: testbed.address(n) for n in node_ids} if testbed else None,
                               command_prefix=lambda node_id: [*in_testbed(node_id), *clocks.prefix(node_id)])
        cluster.start()
        cluster.wait_for_brokers(timeout=RECOVERY_TIMEOUT_S)
        cluster.create_topic(TOPIC, PARTITIONS, 3, configs={"min.insync.replicas": str(MIN_ISR)})
        cluster.wait_for_leaders(TOPIC, timeout=RECOVERY_TIMEOUT_S)
        workload = QueueWorkload(history, cluster.bootstrap, TOPIC, PARTITIONS, clients=CLIENTS["grpc"]())
        live = cluster
        nemesis = Nemesis(cluster, node_ids, list(cluster.brokers), history, testbed,
                          partition_leader=lambda: leader_of(live.metadata(topics=[TOPIC]), TOPIC),
                          active_controller=lambda: _active_controller(live), clocks=clocks)
        workload.start()
        _soak(cluster, nemesis, samples, rotation, seed=seed, seconds=minutes * 60,
              sample_every_s=sample_every_s, fault_every_s=fault_every_s, fault_s=fault_s)
        workload.stop()
        nemesis.heal_all()
        _recover(cluster)
        workload.final_read()
        notes += nemesis.skipped
    finally:
        _tear_down(results, history, cluster, testbed, workdir, workload)
    (results / "soak-samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    summary = _check(results, history.faults, notes + (workload.errors if workload else []))
    grown = soak_stats.growth(samples)
    leaks = [f"{g.describe()}: {m} grows {g.per_hour[m]:+.1f}/h"
             for g in grown for m, limit in LEAK_PER_HOUR.items()
             if g.minutes >= 10 and g.per_hour[m] > limit]
    summary.update(scenario="soak", minutes=minutes, seed=seed, testbed=testbed is not None, rotation=list(rotation),
                   growth=[g.describe() for g in grown], leaks=leaks,
                   checker_s=checker_seconds(results))
    # The summary first: a chart that cannot be drawn must not cost the run's findings.
    write_summary(results, summary)
    if samples:
        soak_stats.chart(samples, results / "soak.png",
                         f"soak: {minutes:g} min, faults {', '.join(rotation)} every {fault_every_s:g} s")
    return summary


def _soak(cluster: LocalCluster, nemesis: Nemesis, samples: list[dict], rotation: tuple[str, ...], *, seed: int,
          seconds: float, sample_every_s: float, fault_every_s: float, fault_s: float) -> None:
    """Sample every interval and inflict the rotation until `seconds` have passed,
    the last fault healed a fault's length before the end."""
    start = time.monotonic()
    kinds = cycle(rotation)
    # The first sample waits one interval: the workload's connections and
    # the brokers' pools are still being made at the start.
    next_sample, next_fault, fault_ends = start + sample_every_s, start + fault_every_s / 2, None
    n = 0
    while (now := time.monotonic()) < start + seconds:
        if now >= next_sample:
            _sample(cluster, samples, now - start)
            next_sample += sample_every_s
        if fault_ends is not None and now >= fault_ends:
            nemesis.stop()
            fault_ends = None
        elif fault_ends is None and now >= next_fault and now + 2 * fault_s < start + seconds:
            nemesis.start(ScheduledFault(round(now - start, 3), next(kinds), fault_s, seed + n))
            n += 1
            fault_ends, next_fault = now + fault_s, next_fault + fault_every_s
        time.sleep(max(0.0, min(next_sample, fault_ends or next_fault, start + seconds) - time.monotonic()))
    nemesis.stop()
    _sample(cluster, samples, time.monotonic() - start)


def _sample(cluster: LocalCluster, samples: list[dict], t_s: float) -> None:
    for node, pid in sorted(cluster.pids.items()):
        stats = soak_stats.sample(pid)
        if stats is not None:
            role = "broker" if node in cluster.brokers else "controller"
            samples.append({"t_s": round(t_s, 1), "node": node, "role": role, "pid": pid, **stats})


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--sample-every", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--fault-every", type=float, default=60.0, help="seconds between fault starts")
    parser.add_argument("--fault-length", type=float, default=15.0, help="seconds each fault lasts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-network", action="store_true", help="127.0.0.1 only: process and clock faults")
    parser.add_argument("--results", type=Path, default=Path("soak-results"))
    args = parser.parse_args(argv)
    summary = run_soak(args.results, minutes=args.minutes, sample_every_s=args.sample_every,
                       fault_every_s=args.fault_every, fault_s=args.fault_length, seed=args.seed,
                       network=not args.no_network)
    for line in summary["growth"]:
        print(line)
    ok = summary["valid"] and not summary["leaks"] and all(
        summary[k] in ("ok", None) for k in ("linearizable", "offsets_linearizable", "metadata_linearizable"))
    verdicts = {k: summary[k] for k in ("linearizable", "offsets_linearizable", "metadata_linearizable")}
    print(f"soak {'ok' if ok else 'FAILED'}: {summary['anomalies']}, checker {verdicts} "
          f"in {summary['checker_s']} s, unknown outcomes pruned {summary.get('checker_pruned') or 'none'}, "
          f"leaks {summary['leaks'] or 'none'}; chart {args.results / 'soak.png'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
