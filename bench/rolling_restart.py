"""Rolling restart benchmark: a full roll of 3 controllers + 3 brokers under load.

A 6-partition topic (RF 3, min.insync.replicas 2) takes a steady acks=all
load from idempotent producers while devcluster/roll.py restarts every
node in turn (the active controller last among the controllers, then the
brokers), each once the cluster is healthy again. Reported: the whole
roll's time, each node's time down (SIGTERM to started again) and back to
health, produce latency p50/p99 during the roll, and each partition's
longest produce unavailability (chaos/availability.py, over the sends'
history).

    python -m bench.rolling_restart [--rate 400] [--out bench/results/rolling_restart.json]
"""
from __future__ import annotations

import argparse
import platform
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.bench_results import save_results, summarize
from chaos.availability import produce_unavailability
from chaos.history import INFO, OK, HistoryRecorder, read_history
from client.producer import Producer
from devcluster.local_cluster import LocalCluster
from devcluster.roll import ProcessesControl, roll

TOPIC = "rolled"
PARTITIONS = 6
PRODUCERS = 2
PROPERTIES = {"broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500,
              "replica.lag.time.max.ms": 3000, "controller.quorum.election.timeout.ms": 1000,
              "controller.quorum.fetch.timeout.ms": 2000}


class Load:
    """Producers sending `rate` records a second in all, every send in a history."""

    def __init__(self, bootstrap: str, rate: float, history: HistoryRecorder) -> None:
        self.bootstrap, self.interval, self.history = bootstrap, PRODUCERS / rate, history
        self.latencies_s: list[float] = []
        self.stop = threading.Event()
        self.measuring = False
        self.sent = 0
        self._threads = [threading.Thread(target=self._run, args=(i,), name=f"load-{i}") for i in range(PRODUCERS)]
        self._lock = threading.Lock()

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def join(self) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(120)

    def _run(self, index: int) -> None:
        with Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 2,
                       "delivery.timeout.ms": 120000, "request.timeout.ms": 5000}) as producer:
            n = 0
            while not self.stop.is_set():
                partition = (n + index) % PARTITIONS
                with self._lock:
                    process = self.sent
                    self.sent += 1
                call = self.history.invoke(process, "send", f"{TOPIC}-{partition}", f"p{index}-{n}")
                began = time.monotonic()
                future = producer.produce(TOPIC, f"p{index}-{n}".encode(), partition=partition)
                future.add_done_callback(lambda f, call=call, began=began: self._done(f, call, began))
                n += 1
                self.stop.wait(self.interval)
            producer.flush(timeout=120)

    def _done(self, future: Any, call: Any, began: float) -> None:
        if future.exception() is None:
            if self.measuring:
                self.latencies_s.append(time.monotonic() - began)
            self.history.complete(call, OK, future.result().offset)
        else:
            self.history.complete(call, INFO, error=repr(future.exception()))


def run(rate: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-roll-") as directory:
        cluster = LocalCluster(Path(directory), controllers=3, brokers=3, properties=PROPERTIES)
        with cluster.running(timeout=120):
            cluster.create_topic(TOPIC, PARTITIONS, 3, configs={"min.insync.replicas": "2"})
            cluster.wait_for_leaders(TOPIC)
            history = HistoryRecorder(Path(directory) / "history.jsonl")
            load = Load(cluster.bootstrap, rate, history)
            load.start()
            try:
                time.sleep(3.0)  # warm: producers connected, batches flowing
                load.measuring = True
                report = roll(tuple(cluster.plans.values()), timeout_s=180.0, control=ProcessesControl(cluster),
                              on_event=lambda line: print(f"  {time.strftime('%X')} {line}", flush=True))
                load.measuring = False
            finally:
                load.join()
                history.close()
            unavailable = produce_unavailability(read_history(history.path))
    latency = summarize([s * 1000 for s in load.latencies_s])
    return {
        "roll_s": round(report.seconds, 2),
        "nodes": [{"node": n.node_id, "roles": ",".join(n.roles), "down_s": round(n.down_s, 2),
                   "healthy_s": round(n.healthy_s, 2)} for n in report.nodes],
        "produce_latency_ms": {k: round(v, 1) if isinstance(v, float) else v for k, v in latency.items()},
        "longest_unavailability_s": {p: u["longest_s"] for p, u in unavailable.items()},
        "rate": rate, "sends": load.sent, "machine": f"{platform.machine()}, {platform.python_version()}",
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=400.0, help="records a second, all producers together")
    parser.add_argument("--out", default="bench/results/rolling_restart.json")
    args = parser.parse_args(argv)
    results = run(args.rate)
    print(f"full roll of 3 controllers + 3 brokers under {args.rate:g} records/s: {results['roll_s']} s")
    for node in results["nodes"]:
        print(f"  node {node['node']} ({node['roles']}): down {node['down_s']} s, healthy again after "
              f"{node['healthy_s']} s")
    latency = results["produce_latency_ms"]
    print(f"produce latency during the roll: p50 {latency.get('p50')} ms, p99 {latency.get('p99')} ms, "
          f"max {latency.get('max')} ms")
    print("longest produce unavailability per partition (s):", results["longest_unavailability_s"])
    print(f"results: {save_results(args.out, results)}")


if __name__ == "__main__":
    main()
