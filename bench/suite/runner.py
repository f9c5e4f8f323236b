"""The suite: start every system, run every workload once per repetition
(systems interleaved, so a noisy minute hits them all), then the failovers;
stop everything by PID; write results.json, the charts and results.md.

Suites (`--suite`): all, limits, redis, nats, kraftlog (with `all`, each
figure gets its ratio to the peer and to the limit). `--quick` is the
smallest run of the same workloads (one repetition, a few thousand records).
"""
from __future__ import annotations

import datetime
import os
import platform
import traceback
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional

from bench.bench_results import save_results

from . import kraftlog_cluster as kl
from . import librdkafka, limits, nats_jetstream, redis_streams
from .measure import Recorder
from .parallel import run_jobs
from .processes import PeerProcesses
from .report import CPU_UNIT, write_charts, write_markdown

SUITES = {"all": ("limits", "redis", "nats", "kraftlog"), "limits": ("limits",), "redis": ("redis",),
          "nats": ("nats",), "kraftlog": ("kraftlog",)}
PRODUCERS = 4
LATENCY_LOAD = 0.2  # of the measured RF3 acks=all maximum


@dataclass(frozen=True)
class Sizes:
    records: int  # per produce run with 100-byte values (split over the processes)
    records_1k: int  # per produce run with 1 KiB values
    records_librdkafka: int  # per librdkafka produce run (100-byte values): a C client goes faster
    repetitions: int
    run_seconds: float  # a run stops there, counting what it moved
    latency_seconds: float
    failover_trials: int
    dd_mb: int
    iperf3_seconds: int
    grpc_bytes: int


FULL = Sizes(records=1_000_000, records_1k=250_000, records_librdkafka=3_000_000, repetitions=3, run_seconds=300, latency_seconds=15,
             failover_trials=3, dd_mb=512, iperf3_seconds=5, grpc_bytes=1 << 30)
QUICK = Sizes(records=4_000, records_1k=1_000, records_librdkafka=4_000, repetitions=1, run_seconds=30, latency_seconds=2,
              failover_trials=1, dd_mb=16, iperf3_seconds=1, grpc_bytes=16 << 20)
VALUE_BYTES, VALUE_1K = 100, 1024


def sizes_for(quick: bool, records: Optional[int]) -> Sizes:
    sizes = QUICK if quick else FULL
    if records is not None:
        sizes = replace(sizes, records=records, records_1k=max(1, records // 4), records_librdkafka=3 * records)
    return sizes


class Suite:
    def __init__(self, groups: tuple[str, ...], sizes: Sizes, say: Callable[[str], None]) -> None:
        self.groups, self.sizes, self.say = groups, sizes, say
        self.recorder = Recorder()
        self.peers: dict[str, dict[str, Any]] = {}
        self.errors: list[dict[str, str]] = []
        self.node_pids: list[int] = []  # kraftlog nodes, every pid they ever had

    # --- one repetition's steps, by system ------------------------------------

    def steps(self, processes: PeerProcesses, stack: ExitStack) -> list[tuple[str, Callable[[], None]]]:
        """Start what the suite's groups need (skipping a peer that cannot run here, saying why); the
        steps of one repetition, in order."""
        s, steps = self.sizes, []
        if "limits" in self.groups:
            steps.append(("dd write + fdatasync", lambda: limits.dd_write(processes, self.recorder, s.dd_mb)))
            reason = limits.iperf3_missing()
            if reason:
                self.peers["iperf3"] = {"skipped": reason}
            else:
                steps.append(("iperf3 loopback", lambda: limits.iperf3_loopback(processes, self.recorder,
                                                                                 s.iperf3_seconds)))
            _, address = limits.start_grpc_ceiling(processes)
            steps.append(("gRPC-Python streaming ceiling", lambda: limits.grpc_streams(address, self.recorder,
                                                                                       s.grpc_bytes)))
        if "redis" in self.groups:
            reason = redis_streams.missing()
            if reason:
                self.peers["redis"] = {"skipped": reason}
            else:
                port = redis_streams.start(processes)
                self.peers["redis"] = {"version": redis_streams.version(), "port": port}
                steps += self._redis_steps(port, self._pids(processes, "redis-server"))
        if "nats" in self.groups:
            reason = nats_jetstream.missing()
            if reason:
                self.peers["nats"] = {"skipped": reason}
            else:
                single, three = nats_jetstream.start(processes, 1), nats_jetstream.start(processes, 3)
                self.peers["nats"] = {"version": nats_jetstream.version(), "r1": single, "r3": three}
                steps += self._nats_steps(single, three, self._pids(processes, "nats-1-"),
                                          self._pids(processes, "nats-3-"))
        if "kraftlog" in self.groups:
            main = stack.enter_context(kl.start_cluster(processes.directory("kraftlog-3-brokers"), 3))
            one = stack.enter_context(kl.start_cluster(processes.directory("kraftlog-1-broker"), 1))
            self._remember_pids(main, one)
            self.clusters = (main, one)
            steps += self._kraftlog_steps(main, one)
        return steps

    def _redis_steps(self, port: int, servers: list[int]) -> list[tuple[str, Callable[[], None]]]:
        s = self.sizes

        def xadd(key: str, label: str, value_bytes: int, records: int, producers: int) -> None:
            streams = [f"{key}-{i}" for i in range(producers)]
            done = run_jobs([redis_streams.XaddJob(port, stream, records // producers, value_bytes, s.run_seconds)
                             for stream in streams], s.run_seconds, servers)
            self.throughput(f"redis.xadd.{key}", label, "redis", done, value_bytes)

        def xread() -> None:
            xadd("1p", "Redis XADD pipelined, 1 producer", VALUE_BYTES, s.records, 1)
            done = run_jobs([redis_streams.XreadJob(port, "1p-0", s.records, s.run_seconds)], s.run_seconds, servers)
            self.throughput("redis.xread", "Redis XREAD (hiredis), 1 reader", "redis", done, VALUE_BYTES)
            redis_streams.delete_streams(port, ["1p-0"])

        def xadd_4p() -> None:
            xadd("4p", f"Redis XADD pipelined, {PRODUCERS} producers", VALUE_BYTES, s.records, PRODUCERS)
            redis_streams.delete_streams(port, [f"4p-{i}" for i in range(PRODUCERS)])

        def xadd_1k() -> None:
            xadd("1p_1KiB", "Redis XADD pipelined, 1 producer, 1 KiB", VALUE_1K, s.records_1k, 1)
            redis_streams.delete_streams(port, ["1p_1KiB-0"])

        return [("Redis XADD 1 producer + XREAD", xread), (f"Redis XADD {PRODUCERS} producers", xadd_4p),
                ("Redis XADD 1 KiB", xadd_1k)]

    def _nats_steps(self, single: list[str], three: list[str], single_pids: list[int],
                    three_pids: list[int]) -> list[tuple[str, Callable[[], None]]]:
        s = self.sizes

        def publish(urls: list[str], replicas: int, servers: list[int]) -> None:
            stream = f"BENCH_R{replicas}"
            nats_jetstream.create_stream(urls, stream, replicas)
            done = run_jobs([nats_jetstream.PublishJob(urls, stream.lower(), s.records, VALUE_BYTES, s.run_seconds)],
                            s.run_seconds, servers)
            self.throughput(f"nats.r{replicas}.1p", f"NATS JetStream R{replicas} ({len(urls)} server"
                            f"{'s' if len(urls) > 1 else ''}), async acks, 1 producer", "nats", done, VALUE_BYTES)

        return [("NATS JetStream R1", lambda: publish(single, 1, single_pids)),
                ("NATS JetStream R3", lambda: publish(three, 3, three_pids))]

    def _kraftlog_steps(self, cluster: Any, one_broker: Any) -> list[tuple[str, Callable[[], None]]]:
        s, add = self.sizes, self.recorder.add
        main, one = kl.bootstrap(cluster), kl.bootstrap(one_broker)
        servers = {main: cluster, one: one_broker}

        def produce(key: str, label: str, bootstrap: str, topic: str, acks: str, idempotence: bool,
                    producers: int, value_bytes: int, records: int) -> float:
            jobs = [kl.ProduceJob(bootstrap, topic, records // producers, value_bytes, acks, idempotence,
                                  s.run_seconds) for _ in range(producers)]
            done = run_jobs(jobs, s.run_seconds, list(servers[bootstrap].pids.values()))
            rate = self.throughput(f"kraftlog.produce.{key}", label, "kraftlog", done, value_bytes, split=True)
            if done["records"] < records:
                self.recorder.note(f"kraftlog.produce.{key}", f"a run delivered {done['records']:,} of "
                                   f"{records:,} records within {s.run_seconds:g}s")
            return rate

        def produce_arrow(bootstrap: str) -> None:
            done = run_jobs([kl.ArrowProduceJob(bootstrap, "rf1", s.records, VALUE_BYTES, "1", s.run_seconds)],
                            s.run_seconds, list(servers[bootstrap].pids.values()))
            self.throughput("kraftlog.produce.arrow.rf1_acks1.1p", f"{label}, produce_arrow(), 1 producer",
                            "kraftlog", done, VALUE_BYTES, split=True)

        def rf3_and_latency() -> None:
            rate = produce("rf3_all_idem.1p", "kraftlog RF3 acks=all idempotent, 1 producer", main, "rf3", "all",
                           True, 1, VALUE_BYTES, s.records)
            target = max(1.0, rate * LATENCY_LOAD)
            before = kl.scrape_histograms(cluster)
            done = run_jobs([kl.LatencyJob(main, "rf3", target, s.latency_seconds, VALUE_BYTES)],
                            s.latency_seconds + 120)
            after = kl.scrape_histograms(cluster)
            [worker] = done["workers"]
            for p in ("50", "99", "99.9"):
                add(f"kraftlog.latency.rf3_all.p{p}", f"kraftlog produce latency p{p}, RF3 acks=all at 20% of max",
                    "ms", "kraftlog", worker[f"p{p}_ms"])
            # The scheduling delay beside it (issue 21 target 3): the servers' event-loop lag (bucket bounds)
            # and the client's own.
            lag = kl.pooled_delta(after["lag"], before["lag"])
            for p, q in (("50", .5), ("99", .99)):
                add(f"kraftlog.latency.rf3_all.server_loop_lag.p{p}", f"servers' event-loop lag p{p} (at most) "
                    "during the latency run", "ms", "kraftlog", kl.quantile_bound(lag, q) * 1000)
            add("kraftlog.latency.rf3_all.client_loop_lag.p99", "client's event-loop lag p99 during the latency run",
                "ms", "kraftlog", worker["client_lag_p99_ms"])

        def consume() -> None:
            done = run_jobs([kl.ConsumeJob(main, "rf3", s.records, s.run_seconds)], s.run_seconds,
                            list(cluster.pids.values()))
            self.throughput("kraftlog.consume.decoded", "kraftlog consumer, decoded records", "kraftlog", done,
                            VALUE_BYTES, split=True)
            done = run_jobs([kl.ConsumeJob(main, "rf3", s.records, s.run_seconds, arrow=True)], s.run_seconds,
                            list(cluster.pids.values()))
            self.throughput("kraftlog.consume.arrow", "kraftlog consumer, poll_arrow() into Arrow rows", "kraftlog",
                            done, VALUE_BYTES, split=True)
            done = run_jobs([kl.raw_fetch_job(cluster, "rf3", kl.RAW_FETCH_ROW_MODE)], s.run_seconds,
                            list(cluster.pids.values()))
            mb = sum(w["bytes"] for w in done["workers"]) / 1e6
            label = f"kraftlog raw Fetch (batches undecoded, {kl.RAW_FETCH_ROW_MODE.replace('_', ' ')})"
            add("kraftlog.fetch.raw", label, "MB/s", "kraftlog", mb / done["seconds"])
            for who, whose, seconds in (("client", "client's", done["client_cpu_s"]),
                                        ("servers", "servers'", done["server_cpu_s"])):
                add(f"kraftlog.fetch.raw.cpu_{who}", f"{label}: {whose} CPU per MB", "CPU µs/MB", "kraftlog",
                    seconds / max(mb, 1e-9) * 1e6)

        label = "kraftlog RF1 acks=1"
        return [*self._librdkafka_steps(cluster), 
            ("kraftlog RF1 acks=1, 1 producer", lambda: produce(
                "rf1_acks1.1p", f"{label}, 1 producer", main, "rf1", "1", False, 1, VALUE_BYTES, s.records)),
            (f"kraftlog RF1 acks=1, {PRODUCERS} producers", lambda: produce(
                "rf1_acks1.4p", f"{label}, {PRODUCERS} producers", main, "rf1", "1", False, PRODUCERS, VALUE_BYTES,
                s.records)),
            ("kraftlog RF1 acks=1, 1 KiB", lambda: produce(
                "rf1_acks1.1p_1KiB", f"{label}, 1 producer, 1 KiB", main, "rf1", "1", False, 1, VALUE_1K,
                s.records_1k)),
            ("kraftlog RF1 acks=1, produce_arrow(), 1 producer", lambda: produce_arrow(main)),
            ("kraftlog RF1 acks=1, one-broker cluster", lambda: produce(
                "rf1_acks1.1p_one_broker", f"{label}, 1 producer, one-broker cluster", one, "rf1", "1", False, 1,
                VALUE_BYTES, s.records)),
            ("kraftlog RF3 acks=all + latency at 20%", rf3_and_latency),
            (f"kraftlog RF3 acks=all, {PRODUCERS} producers", lambda: produce(
                "rf3_all_idem.4p", f"kraftlog RF3 acks=all idempotent, {PRODUCERS} producers", main, "rf3", "all",
                True, PRODUCERS, VALUE_BYTES, s.records)),
            ("kraftlog consume + raw fetch", consume),
        ]

    def _librdkafka_steps(self, cluster: Any) -> list[tuple[str, Callable[[], None]]]:
        """confluent-kafka (librdkafka) through the brokers' Kafka listener, beside the gRPC client's runs:
        produce RF1 acks=1 and RF3 acks=all, then everything in rf1 and rf3 read back."""
        s, bootstrap, servers = self.sizes, kl.kafka_bootstrap(cluster), list(cluster.pids.values())

        def produce(key: str, label: str, topic: str, acks: str, idempotence: bool) -> None:
            job = librdkafka.RdProduceJob(bootstrap, topic, s.records_librdkafka, VALUE_BYTES, acks, idempotence,
                                          s.run_seconds)
            done = run_jobs([job], s.run_seconds, servers)
            self.throughput(f"kraftlog.produce.librdkafka.{key}", label, "kraftlog", done, VALUE_BYTES, split=True)
            [worker] = done["workers"]
            if worker["errors"] or worker["undelivered"]:
                self.recorder.note(f"kraftlog.produce.librdkafka.{key}", f"{worker['errors']:,} failed, "
                                   f"{worker['undelivered']:,} undelivered")

        def consume(topic: str) -> None:
            done = run_jobs([librdkafka.RdConsumeJob(bootstrap, topic, kl.PARTITIONS, s.run_seconds)], s.run_seconds,
                            servers)
            key = f"kraftlog.consume.librdkafka.{topic}"
            self.throughput(key, f"librdkafka consumer (confluent-kafka), {topic.upper()}, assigned, 1 process",
                            "kraftlog", done, VALUE_BYTES, split=True)
            [worker] = done["workers"]
            if worker["records"] < worker["expected"]:
                self.recorder.note(key, f"read {worker['records']:,} of {worker['expected']:,} records within "
                                        f"{s.run_seconds:g}s")

        return [
            ("librdkafka RF1 acks=1", lambda: produce(
                "rf1_acks1", "librdkafka producer (confluent-kafka), RF1 acks=1, 1 process", "rf1", "1", False)),
            ("librdkafka RF3 acks=all", lambda: produce(
                "rf3_all_idem", "librdkafka producer (confluent-kafka), RF3 acks=all idempotent, 1 process", "rf3",
                "all", True)),
            ("librdkafka consume RF1", lambda: consume("rf1")),
            ("librdkafka consume RF3", lambda: consume("rf3")),
        ]

    def failover_steps(self) -> list[tuple[str, Callable[[], None]]]:
        if "kraftlog" not in self.groups:
            return []
        main, _ = self.clusters
        trials = self.sizes.failover_trials

        def partition() -> None:
            for seconds in kl.partition_failover_s(main, "rf3", trials):
                self.recorder.add("kraftlog.failover.partition", "partition leader failover after kill -9", "s",
                                  "kraftlog", seconds)
            self._remember_pids(main)

        def controller() -> None:
            for seconds in kl.controller_failover_s(main, trials):
                self.recorder.add("kraftlog.failover.controller", "active controller failover after kill -9", "s",
                                  "kraftlog", seconds)
            self._remember_pids(main)

        return [("kraftlog partition failover", partition), ("kraftlog controller failover", controller)]

    def throughput(self, key: str, label: str, group: str, done: dict[str, Any], value_bytes: int,
                   split: bool = False) -> float:
        """A run's records/s, and its CPU per record (client and servers): steadier on a shared machine.
        `split`: the client processes' and the servers' CPU per record apart too (a C client's own cost
        is not kraftlog's)."""
        self.recorder.add(key, label, "records/s", group, done["records_per_s"], value_bytes)
        if done["records"]:
            self.recorder.add(f"{key}.cpu", f"{label}: CPU per record, client + servers", CPU_UNIT, group,
                              (done["client_cpu_s"] + done["server_cpu_s"]) / done["records"] * 1e6)
            if split:
                for who, whose, seconds in (("client", "client processes'", done["client_cpu_s"]),
                                            ("servers", "servers'", done["server_cpu_s"])):
                    self.recorder.add(f"{key}.cpu_{who}", f"{label}: {whose} CPU per record", CPU_UNIT, group,
                                      seconds / done["records"] * 1e6)
        return done["records_per_s"]

    @staticmethod
    def _pids(processes: PeerProcesses, name: str) -> list[int]:
        return [p.pid for p in processes.started if p.name.startswith(name)]

    def _remember_pids(self, *clusters: Any) -> None:
        for cluster in clusters:
            self.node_pids += [pid for pid in cluster.pids.values() if pid not in self.node_pids]

    def run_step(self, name: str, step: Callable[[], None]) -> None:
        before = {k: len(f.runs) for k, f in self.recorder.figures.items()}
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - one failed workload is reported, the others still run
            self.errors.append({"step": name, "error": f"{type(exc).__name__}: {exc}",
                                "traceback": traceback.format_exc(limit=6)})
            self.say(f"[red]{name}: FAILED[/] {type(exc).__name__}: {exc}")
            return
        for key, figure in self.recorder.figures.items():
            if len(figure.runs) > before.get(key, 0):
                self.say(f"{figure.label}: {figure.runs[-1]:,.2f} {figure.unit}")


def run_suite(name: str, quick: bool, out: Path, records: Optional[int] = None,
              say: Callable[[str], None] = print,
              advance: Callable[[int, int, str], None] = lambda done, total, what: None) -> dict[str, Any]:
    """Run suite `name`; results.json, charts and results.md in `out`; the results."""
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}; one of {', '.join(SUITES)}")
    sizes = sizes_for(quick, records)
    suite = Suite(SUITES[name], sizes, say)
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = os.getloadavg()
    with PeerProcesses() as processes, ExitStack() as stack:
        workdir = str(processes.root)
        try:
            steps = suite.steps(processes, stack)
        except Exception as exc:  # noqa: BLE001 - a system that did not start is reported
            suite.errors.append({"step": "start", "error": f"{type(exc).__name__}: {exc}",
                                 "traceback": traceback.format_exc(limit=6)})
            steps = []
        plan = [(f"repetition {r + 1}/{sizes.repetitions}: {what}", step)
                for r in range(sizes.repetitions) for what, step in steps]
        plan += suite.failover_steps() if steps else []
        for done, (what, step) in enumerate(plan):
            advance(done, len(plan), what)
            suite.run_step(what, step)
        advance(len(plan), len(plan), "stopping")
        stack.close()  # the kraftlog clusters, by PID
        processes.close()  # the peers, by PID, and every temp dir
        stopped = processes.records()
    results: dict[str, Any] = {
        "suite": name, "quick": quick, "started": started.isoformat(timespec="seconds"),
        "seconds": round((datetime.datetime.now(datetime.timezone.utc) - started).total_seconds(), 1),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "load_average_before": load_before, "load_average_after": os.getloadavg()},
        "sizes": asdict(sizes), "producer_settings": kl.PRODUCER_SETTINGS, "workdir": workdir,
        "peers": suite.peers, "figures": suite.recorder.to_json(), "errors": suite.errors,
        "processes": stopped, "kraftlog_node_pids": suite.node_pids,
    }
    out.mkdir(parents=True, exist_ok=True)
    results["charts"] = [str(p) for p in write_charts(suite.recorder, out)]
    results["comparisons"], results["goals"] = write_markdown(suite.recorder, results, out / "results.md")
    results["table"] = str(out / "results.md")
    save_results(out / "results.json", results)
    return results
