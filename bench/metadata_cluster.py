"""Metadata scale on a real cluster: many partitions (RF 3) created through the CLI.

Starts 3 controllers and 3 brokers (devcluster), then runs `kraftlog topics
create` for every topic, several CLI processes at a time (so the active
controller has several CreateTopics in flight), and measures:

- the time until every CLI has answered (created), and until every broker
  names a leader for every partition (led);
- each broker's RSS before and after, per replica it holds;
- each node's CPU seconds while the partitions are created and led (a
  broker blocked on disk I/O waits without computing: the wall times say
  more on this shared machine, the CPU seconds what the nodes did);
- a controller failover at that size: the active controller is killed
  (SIGKILL) and the time until a new one creates a topic is measured.

    python -m bench.metadata_scale --cluster [--cluster-topics 100] [--cluster-partitions 100]
                                   [--cluster-parallel 8]
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from bench.cluster import cpu_seconds
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until

# Long enough that brokers busy opening thousands of logs are not fenced.
PROPERTIES = {"broker.session.timeout.ms": 60000, "broker.heartbeat.interval.ms": 2000}
WAIT_S = 1800.0


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def _cli(cluster: LocalCluster, name: str, partitions: int, rf: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "kraftlog", "topics", "create", name, "--partitions", str(partitions),
         "--replication-factor", str(rf), "--bootstrap", cluster.bootstrap],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ))


def _all_led(cluster: LocalCluster, total: int) -> bool:
    for broker in cluster.live_brokers():
        answer = cluster.metadata(broker, timeout=60.0)
        if answer is None:
            return False
        led = sum(1 for t in answer.topics if not t.name.startswith("__")
                  for p in t.partitions if p.leader_id >= 0)
        if led < total:
            return False
    return True


def _active_controller(cluster: LocalCluster) -> Optional[int]:
    answer = cluster.metadata(timeout=60.0)
    return answer.controller_id if answer is not None and answer.controller_id >= 0 else None


def _create_all(cluster: LocalCluster, names: list[str], partitions: int, rf: int, parallel: int) -> int:
    """Run `kraftlog topics create` for every name, `parallel` CLIs at a time;
    a CLI that fails (a broker busy opening logs may not answer in the CLI's
    15 s) is run again if its topic does not exist. How many were run again."""
    again = 0
    todo = list(names)
    for _ in range(3):
        failed: list[str] = []
        running: list[tuple[str, subprocess.Popen[bytes]]] = []
        while todo or running:
            while todo and len(running) < parallel:
                name = todo.pop(0)
                running.append((name, _cli(cluster, name, partitions, rf)))
            name, cli = running.pop(0)
            _, err = cli.communicate(timeout=WAIT_S)
            if cli.returncode != 0:
                failed.append(name)
                print(f"  {name}: {err.decode(errors='replace').strip()[-200:]}", file=sys.stderr)
        if not failed:
            return again
        answer = cluster.metadata(timeout=60.0)
        known = {t.name for t in answer.topics if not t.error_code} if answer is not None else set()
        todo = [n for n in failed if n not in known]
        again += len(todo)
        if not todo:
            return again
    raise RuntimeError(f"kraftlog topics create failed three times for {todo[:5]}")


def run(topics: int, partitions: int, rf: int, parallel: int = 8) -> dict[str, Any]:
    total = topics * partitions
    with tempfile.TemporaryDirectory(prefix="metadata-cluster-") as root:
        cluster = LocalCluster(Path(root), properties=PROPERTIES)
        with cluster.running():
            # A node that lost a race for its port exits at start; a failover needs all three controllers.
            dead = [n for n in (*cluster.controllers, *cluster.brokers) if not cluster.alive(n)]
            if dead:
                raise RuntimeError(f"nodes {dead} did not start (see {root}/data/node-*/server.log)")
            before = {b: rss_bytes(cluster.pids[b]) for b in cluster.brokers}
            nodes = [*cluster.controllers, *cluster.brokers]
            cpu = {n: cpu_seconds(cluster.pids[n]) for n in nodes}
            started = time.perf_counter()
            retried = _create_all(cluster, [f"scale-{t:05d}" for t in range(topics)], partitions, rf, parallel)
            created_s = time.perf_counter() - started
            wait_until(lambda: _all_led(cluster, total), WAIT_S, f"{total} partitions led", interval=1.0)
            led_s = time.perf_counter() - started
            cpu = {n: round(cpu_seconds(cluster.pids[n]) - cpu[n], 1) for n in nodes}
            print(f"  created in {created_s:.1f} s ({retried} CLIs run again), every partition led in {led_s:.1f} s",
                  flush=True)
            after = {b: rss_bytes(cluster.pids[b]) for b in cluster.brokers}
            replicas_per_broker = total * rf / len(cluster.brokers)
            per_replica = {b: (after[b] - before[b]) / replicas_per_broker for b in cluster.brokers}

            active = wait_until(lambda: _active_controller(cluster), 60.0, "an active controller")
            killed = time.perf_counter()
            cluster.kill(active)
            cluster.create_topic("after-failover", 1, rf, timeout=WAIT_S)
            failover_s = time.perf_counter() - killed
    return {
        "cluster": {"topics": topics, "partitions_per_topic": partitions, "replication_factor": rf,
                    "partitions": total, "clis_in_parallel": parallel, "clis_run_again": retried},
        "created_s": round(created_s, 2),
        "all_led_s": round(led_s, 2),
        "broker_rss_before_mb": {b: round(v / 1e6, 1) for b, v in before.items()},
        "broker_rss_after_mb": {b: round(v / 1e6, 1) for b, v in after.items()},
        "broker_rss_per_replica_bytes": {b: round(v) for b, v in per_replica.items()},
        "node_cpu_s": cpu,
        "controller_failover_s": round(failover_s, 2),
    }


def report(results: dict[str, Any]) -> None:
    c = results["cluster"]
    print(f"cluster: {c['partitions']:,} partitions ({c['topics']} topics x {c['partitions_per_topic']}, "
          f"RF {c['replication_factor']}) through {c['clis_in_parallel']} CLIs at a time "
          f"({c['clis_run_again']} run again): created in "
          f"{results['created_s']:.1f} s, every partition led in {results['all_led_s']:.1f} s")
    print(f"CPU seconds per node meanwhile: {results['node_cpu_s']}")
    print(f"broker RSS per replica: {results['broker_rss_per_replica_bytes']} B "
          f"(after: {results['broker_rss_after_mb']} MB)")
    print(f"controller failover (SIGKILL of the active one until a topic is created): "
          f"{results['controller_failover_s']:.1f} s")
