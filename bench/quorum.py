"""Quorum benchmark: three controller processes on this machine, over gRPC.

Measures, in one run against one LocalQuorum (election timeout 1000 ms, every
other setting at its default):

1. commit latency of one 1 KiB record, one append at a time (after a warm-up);
   goal: p99 <= 10 ms;
2. throughput: committed records/s with 64 single-record appends kept in
   flight against the leader (errors counted apart);
3. failover: kill -9 the leader, time until an append commits again; then
   restart the node and wait until it has caught up before the next trial;
   goals: median <= 1.5 s, max <= 3 s. The servers' own logs split each
   failover into detection (a survivor leaves Follower) and election (a
   survivor becomes Leader).

    python -m bench.quorum [--trials 20] [--seconds 10] [--quick] [--out bench/results/quorum.json]
                           [--property controller.quorum.append.linger.ms=0 ...]
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import queue
import random
import re
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Optional


from bench.bench_results import save_results, summarize

import grpc

from client.errors import KafkaError, error_for_code
from devcluster.quorum_log_client import QuorumLogClient
from devcluster.local_quorum import LocalQuorum, wait_until
from kraftlog_api import quorum_pb2, quorum_pb2_grpc

VOTERS = 3
RECORD_BYTES = 1024
IN_FLIGHT = 64
PROPERTIES = {"controller.quorum.election.timeout.ms": 1000}

# Per-append timeouts, and the bounds that keep every phase finite.
LATENCY_CALL_TIMEOUT_S = 5.0
THROUGHPUT_CALL_TIMEOUT_S = 10.0
FAILOVER_CALL_TIMEOUT_S = 0.5
FAILOVER_LIMIT_S = 30.0  # a trial with no commit by then counts as failed
CATCH_UP_LIMIT_S = 120.0
LEADER_LIMIT_S = 30.0

GOAL_LATENCY_P99_MS = 10.0
GOAL_FAILOVER_MEDIAN_S = 1.5
GOAL_FAILOVER_MAX_S = 3.0

# What a run measures: (warm-up appends, latency appends, latency seconds, throughput seconds, trials).
FULL = {"warmup": 200, "appends": 2000, "latency_seconds": 20.0, "seconds": 10.0, "trials": 20}
QUICK = {"warmup": 20, "appends": 200, "latency_seconds": 5.0, "seconds": 3.0, "trials": 3}

# A server log line for a state transition (metadata_quorum.node._on_transition).
TRANSITION = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \[node (\d+)\] \w+ [\w.]+: "
                        r"node \d+: (\w+) -> (\w+) \(epoch (\d+)")


def error_name(exc: BaseException) -> str:
    if isinstance(exc, KafkaError):
        return exc.name
    if isinstance(exc, grpc.RpcError):
        return f"grpc {exc.code().name}"  # type: ignore[attr-defined]
    return type(exc).__name__


# --- 1. commit latency at light load --------------------------------------------------------

def measure_latency(client: QuorumLogClient, record: bytes, warmup: int, appends: int, seconds: float) -> dict:
    for _ in range(warmup):
        client.append([record], timeout=LATENCY_CALL_TIMEOUT_S)
    times_ms: list[float] = []
    errors: Counter[str] = Counter()
    start = time.perf_counter()
    deadline = start + seconds
    while len(times_ms) + sum(errors.values()) < appends and time.perf_counter() < deadline:
        t0 = time.perf_counter_ns()
        try:
            client.append([record], timeout=LATENCY_CALL_TIMEOUT_S)
        except KafkaError as exc:
            errors[error_name(exc)] += 1
            continue
        times_ms.append((time.perf_counter_ns() - t0) / 1e6)
    elapsed = time.perf_counter() - start
    return {"ms": summarize(times_ms), "errors": dict(errors), "seconds": elapsed,
            "stopped_by": "count" if len(times_ms) + sum(errors.values()) >= appends else "time",
            "all_ms": [round(t, 3) for t in times_ms]}


# --- 2. throughput with 64 appends in flight ---------------------------------------------------

def outcome(future: grpc.Future) -> Optional[str]:
    """None for a committed append, else the error's name."""
    exc = future.exception()
    if exc is not None:
        return error_name(exc)
    response = future.result()
    if response.error_code:
        return error_for_code(response.error_code, response.error_message).name
    return None


def measure_throughput(client: QuorumLogClient, leader_id: int, record: bytes, seconds: float,
                       in_flight: int) -> dict:
    """Keep `in_flight` unretried appends outstanding at the leader for `seconds`; a finished one
    is replaced at once. Counts what finished inside the window; the rest drains afterwards."""
    finished: queue.SimpleQueue[tuple[grpc.Future, float, float]] = queue.SimpleQueue()

    def submit() -> None:
        sent = time.perf_counter()
        future = client.append_future(leader_id, [record], THROUGHPUT_CALL_TIMEOUT_S)
        future.add_done_callback(lambda f: finished.put((f, sent, time.perf_counter())))

    start = time.perf_counter()
    end = start + seconds
    for _ in range(in_flight):
        submit()
    outstanding = in_flight
    committed, late_commits = 0, 0
    errors: Counter[str] = Counter()
    latencies_ms: list[float] = []
    while outstanding:
        try:
            future, sent, done = finished.get(timeout=THROUGHPUT_CALL_TIMEOUT_S + 5)
        except queue.Empty:
            errors["no answer (harness)"] += outstanding
            break
        outstanding -= 1
        problem = outcome(future)
        if done > end:
            late_commits += problem is None
        elif problem is None:
            committed += 1
            latencies_ms.append((done - sent) * 1000)
        else:
            errors[problem] += 1
        if time.perf_counter() < end:
            submit()
            outstanding += 1
    return {"records_per_s": committed / seconds, "committed": committed, "seconds": seconds,
            "in_flight": in_flight, "errors": dict(errors), "committed_after_window": late_commits,
            "mb_per_s": committed * len(record) / seconds / (1 << 20),
            "append_latency_ms": summarize(latencies_ms)}


# --- 3. failover ---------------------------------------------------------------------------------

def read_high_watermark(quorum: LocalQuorum, node_id: int) -> Optional[int]:
    """The high watermark node `node_id` knows (what its ReadCommitted serves up to)."""
    stub = quorum_pb2_grpc.QuorumLogStub(quorum.channel(node_id))
    try:
        response = stub.ReadCommitted(quorum_pb2.ReadCommittedRequest(start_offset=0, max_records=1), timeout=1.0)
    except grpc.RpcError:
        return None
    return None if response.error_code else response.high_watermark


def caught_up(quorum: LocalQuorum, node_id: int) -> bool:
    """The leader sees `node_id` at its own log end offset, and `node_id` knows the leader's high watermark."""
    leader = quorum.leader(among=tuple(n for n in quorum.pids if n != node_id))
    if leader is None:
        return False
    info = quorum.describe(leader[0])
    if info is None or info.error_code:
        return False
    ends = {r.replica_id: r.log_end_offset for r in info.current_voters}
    if ends.get(node_id) != ends.get(leader[0]):
        return False
    hw = read_high_watermark(quorum, node_id)
    return hw is not None and hw >= info.high_watermark


def transitions_since(quorum: LocalQuorum, node_ids: list[int], since_wall: float) -> list[dict]:
    """State transitions the nodes logged at or after `since_wall` (the log has millisecond stamps)."""
    found = []
    for node_id in node_ids:
        for line in quorum.log_text(node_id).splitlines():
            m = TRANSITION.match(line)
            if not m:
                continue
            stamp = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if stamp >= since_wall - 0.001:
                found.append({"node": int(m.group(2)), "from": m.group(3), "to": m.group(4),
                              "epoch": int(m.group(5)), "after_s": round(stamp - since_wall, 3)})
    return sorted(found, key=lambda t: t["after_s"])


def failover_trial(quorum: LocalQuorum, client: QuorumLogClient, record: bytes) -> dict:
    leader_id, epoch = quorum.wait_for_leader(timeout=LEADER_LIMIT_S)
    client.append([record], timeout=10.0)  # a producer at work: the client's hint is the leader
    survivors = [n for n in quorum.pids if n != leader_id]
    kill_wall = time.time()
    start = time.perf_counter()
    quorum.kill(leader_id)
    attempts, last_problem, commit_s = 0, None, None
    while time.perf_counter() - start < FAILOVER_LIMIT_S:
        attempts += 1
        try:
            client.append([record], timeout=FAILOVER_CALL_TIMEOUT_S)
        except KafkaError as exc:
            last_problem = f"{exc.name}: {exc}"
            continue
        commit_s = time.perf_counter() - start
        break
    trial: dict[str, Any] = {"killed": leader_id, "epoch_before": epoch, "commit_s": commit_s,
                             "new_leader": client.leader_hint if commit_s is not None else None,
                             "attempts": attempts}
    if commit_s is None:
        trial["error"] = last_problem
    events = transitions_since(quorum, survivors, kill_wall)
    left = next((e for e in events if e["from"] == "Follower"), None)
    won = next((e for e in events if e["to"] == "Leader"), None)
    trial["detected_s"] = left["after_s"] if left else None
    trial["elected_s"] = won["after_s"] if won else None
    trial["transitions"] = events
    restarted = time.perf_counter()
    quorum.start(leader_id)
    wait_until(lambda: caught_up(quorum, leader_id), CATCH_UP_LIMIT_S, f"node {leader_id} catching up", 0.1)
    trial["catch_up_s"] = time.perf_counter() - restarted
    return trial


def fmt_s(value: Optional[float]) -> str:
    return "?" if value is None else f"{value:.2f} s"


def measure_failover(quorum: LocalQuorum, client: QuorumLogClient, record: bytes, trials: int) -> dict:
    runs = []
    for i in range(trials):
        trial = failover_trial(quorum, client, record)
        runs.append(trial)
        shown = "FAILED" if trial["commit_s"] is None else f"{trial['commit_s']:.3f} s"
        print(f"  failover {i + 1}/{trials}: killed node {trial['killed']}, commit again after {shown} "
              f"(detected {fmt_s(trial['detected_s'])}, elected {fmt_s(trial['elected_s'])}), "
              f"caught up in {trial['catch_up_s']:.2f} s", flush=True)
    values = [t["commit_s"] for t in runs if t["commit_s"] is not None]
    out: dict[str, Any] = {"s": summarize(values), "failed": trials - len(values),
                           "values_s": [round(v, 3) for v in values], "trials": runs}
    for key in ("detected_s", "elected_s", "catch_up_s"):
        out[key] = summarize([t[key] for t in runs if t[key] is not None])
    return out


# --- the run ---------------------------------------------------------------------------------------

def machine() -> dict:
    model = ""
    try:
        model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), "")
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model, "python": platform.python_version(),
            "implementation": platform.python_implementation(), "platform": platform.platform()}


def parse_property(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key.strip(), int(value) if value.strip().lstrip("-").isdigit() else value.strip()


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=None, help="failover trials (default 20; 3 with --quick)")
    parser.add_argument("--seconds", type=float, default=None,
                        help="throughput window (default 10; 3 with --quick)")
    parser.add_argument("--quick", action="store_true", help="small counts, for a smoke run")
    parser.add_argument("--property", type=parse_property, action="append", default=[], metavar="KEY=VALUE",
                        help="a server property over the benchmark's settings (to try a change; recorded)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "quorum.json"))
    args = parser.parse_args()
    plan = dict(QUICK if args.quick else FULL)
    if args.trials is not None:
        plan["trials"] = args.trials
    if args.seconds is not None:
        plan["seconds"] = args.seconds
    properties = {**PROPERTIES, **dict(args.property)}
    # SIGTERM ends the run like Ctrl-C: through the context manager, which stops every server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    record = random.Random(5).randbytes(RECORD_BYTES)
    results: dict[str, Any] = {
        "machine": machine(),
        "settings": {"voters": VOTERS, "properties": properties, "record_bytes": RECORD_BYTES,
                     "records_per_append": 1, "quick": args.quick, **plan,
                     "in_flight": IN_FLIGHT, "latency_call_timeout_s": LATENCY_CALL_TIMEOUT_S,
                     "throughput_call_timeout_s": THROUGHPUT_CALL_TIMEOUT_S,
                     "failover_call_timeout_s": FAILOVER_CALL_TIMEOUT_S, "failover_limit_s": FAILOVER_LIMIT_S},
    }
    with tempfile.TemporaryDirectory(prefix="kraftlog-bench-quorum-") as base:
        with LocalQuorum(Path(base), voters=VOTERS, properties=properties) as quorum:
            quorum.start()
            leader_id, _ = quorum.wait_for_leader(timeout=LEADER_LIMIT_S)
            print(f"quorum of {VOTERS} up, leader node {leader_id}; measuring latency ...", flush=True)
            client = quorum.client
            results["latency"] = measure_latency(client, record, plan["warmup"], plan["appends"],
                                                 plan["latency_seconds"])
            leader_id, _ = quorum.wait_for_leader(timeout=LEADER_LIMIT_S)
            print(f"measuring throughput ({IN_FLIGHT} in flight, {plan['seconds']:g} s) ...", flush=True)
            results["throughput"] = measure_throughput(client, leader_id, record, plan["seconds"], IN_FLIGHT)
            print(f"measuring failover ({plan['trials']} trials) ...", flush=True)
            results["failover"] = measure_failover(quorum, client, record, plan["trials"])

    lat, tput, fo = results["latency"]["ms"], results["throughput"], results["failover"]
    results["goals"] = {
        "latency_p99_ms": {"goal": GOAL_LATENCY_P99_MS, "value": lat.get("p99"),
                           "met": lat.get("p99", math.inf) <= GOAL_LATENCY_P99_MS},
        "failover_median_s": {"goal": GOAL_FAILOVER_MEDIAN_S, "value": fo["s"].get("p50"),
                              "met": fo["failed"] == 0 and fo["s"].get("p50", math.inf) <= GOAL_FAILOVER_MEDIAN_S},
        "failover_max_s": {"goal": GOAL_FAILOVER_MAX_S, "value": fo["s"].get("max"),
                           "met": fo["failed"] == 0 and fo["s"].get("max", math.inf) <= GOAL_FAILOVER_MAX_S},
    }
    out = save_results(args.out, results)

    goals = results["goals"]
    print()
    print(f"machine: {results['machine']['cpus']} cpus, Python {results['machine']['python']}; "
          f"{VOTERS} controllers, {properties}")
    if lat["count"]:
        print(f"commit latency, 1 x {RECORD_BYTES} B, one at a time ({lat['count']} appends): "
              f"p50 {lat['p50']:.2f} ms, p90 {lat['p90']:.2f} ms, p99 {lat['p99']:.2f} ms, max {lat['max']:.2f} ms "
              f"-> goal p99 <= {GOAL_LATENCY_P99_MS:g} ms {verdict(goals['latency_p99_ms']['met'])}")
    if results["latency"]["errors"]:
        print(f"  latency errors: {results['latency']['errors']}")
    tl = tput["append_latency_ms"]
    print(f"throughput, {IN_FLIGHT} in flight for {tput['seconds']:g} s: {tput['records_per_s']:,.0f} records/s "
          f"({tput['mb_per_s']:.2f} MB/s, {tput['committed']} committed"
          + (f", append p50 {tl['p50']:.1f} ms, p99 {tl['p99']:.1f} ms" if tl["count"] else "") + ")")
    print(f"  errors: {tput['errors'] or 'none'}")
    s = fo["s"]
    if s["count"]:
        failed = f", {fo['failed']} failed" if fo["failed"] else ""
        print(f"failover, {plan['trials']} trials: median {s['p50']:.3f} s, p90 {s['p90']:.3f} s, max {s['max']:.3f} s"
              f"{failed} "
              f"-> goal median <= {GOAL_FAILOVER_MEDIAN_S:g} s {verdict(goals['failover_median_s']['met'])}, "
              f"max <= {GOAL_FAILOVER_MAX_S:g} s {verdict(goals['failover_max_s']['met'])}")
        print(f"  all: {', '.join(f'{v:.3f}' for v in fo['values_s'])}")
        for key, label in (("detected_s", "a survivor left Follower"), ("elected_s", "a survivor became Leader"),
                           ("catch_up_s", "restarted node caught up")):
            if fo[key]["count"]:
                print(f"  {label}: median {fo[key]['p50']:.3f} s, max {fo[key]['max']:.3f} s")
    else:
        print(f"failover: all {fo['failed']} trials failed")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
