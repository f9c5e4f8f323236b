"""The `controller-replacement` chaos scenario (KIP-853): one controller of a
dynamic quorum replaced by a new node while metadata is written and
controllers are killed and paused; no acknowledged metadata may be lost.

1. Three controllers formatted with `--initial-controllers`, found through
   `controller.quorum.bootstrap.servers`, and a spare formatted to join
   (devcluster/dynamic_quorum.py); processes on 127.0.0.1 (process faults
   only: network faults need brokers' testbed hosts, which this run has not).
2. A writer creates one ACL per request through the active controller and
   records each as acknowledged or unknown in history.jsonl.
3. The nemesis kills (kill -9) or pauses (SIGSTOP) a controller, one at a
   time, seeded (chaos/nemesis.py); meanwhile, a third of the way in, the
   spare starts, is added once it has caught up (AddRaftVoter) and a seeded
   choice among the first three (the leader half the time) is removed
   (RemoveRaftVoter), stopped and its disk wiped.
4. Healed, every acknowledged ACL must be in the active controller's
   metadata (DeleteAcls matching everything lists them), and the voters must
   be the replaced set.
"""
from __future__ import annotations

import random
import threading
import time
from typing import Any, Optional

import grpc

from client.errors import KafkaError
from client.quorum_admin import add_voter, remove_voter
from devcluster.dynamic_quorum import LocalDynamicQuorum
from devcluster.local_processes import wait_until
from kafka_protocol.errors import Errors
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import controller_pb2_grpc as cpb_grpc

from .history import HistoryRecorder
from .nemesis import Nemesis, schedule

REPLACEMENT = "controller-replacement"
CLUSTER = "Y2hhb3MtcmVwbGFjZW1lbnQ"
QUORUM_PROPERTIES = {
    "controller.quorum.election.timeout.ms": 1000,
    "controller.quorum.fetch.timeout.ms": 2000,
    "kraftlog.log.level": "INFO",
}
RECOVERY_TIMEOUT_S = 120.0
ANY = dict(resource_type=1, pattern_type=1, operation=1, permission_type=1)  # Kafka's ANY of each enum


class _Writer(threading.Thread):
    """One CreateAcls at a time through the active controller, each recorded as ok, fail or info."""

    def __init__(self, quorum: LocalDynamicQuorum, history: HistoryRecorder) -> None:
        super().__init__(daemon=True)
        self.quorum = quorum
        self.history = history
        self.acknowledged: list[str] = []
        self.unknown: list[str] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        i = 0
        leader: Optional[int] = None
        while not self.stopped.is_set():
            name = f"acl-{i}"
            call = self.history.invoke(0, "create-acl", key=name)
            try:
                leader = leader or self.quorum.describe(timeout=3)["leader_id"]
                stub = cpb_grpc.KRaftControllerStub(self.quorum.channel(leader))
                binding = cpb.AclBinding(resource_type=2, resource_name=name, pattern_type=3, principal="User:chaos",
                                         host="*", operation=3, permission_type=3)
                answer = stub.CreateAcls(cpb.CreateAclsRequest(creations=[binding]), timeout=3)
            except (grpc.RpcError, KafkaError):
                leader = None
                self.unknown.append(name)  # it may have been written: not counted as lost
                self.history.complete(call, "info")
                i += 1
                time.sleep(0.05)
                continue
            if answer.error_code == Errors.NONE and all(r.error_code == Errors.NONE for r in answer.results):
                self.acknowledged.append(name)
                self.history.complete(call, "ok")
                i += 1
            else:
                self.history.complete(call, "fail", error=Errors(answer.error_code).name)
                leader = None  # NOT_CONTROLLER: the leader moved; the same name again
                time.sleep(0.05)


def run_replacement(settings: Any) -> Any:
    from .runner import RunResult, write_summary

    results = settings.results
    results.mkdir(parents=True, exist_ok=True)
    rng = random.Random(settings.seed)
    history = HistoryRecorder(results / "history.jsonl")
    notes: list[str] = ["process faults only (kill, pause): this scenario runs on 127.0.0.1"]
    replaced: dict[str, Any] = {}
    quorum = LocalDynamicQuorum(CLUSTER, controllers=3, spares=1, properties=QUORUM_PROPERTIES)
    writer = _Writer(quorum, history)
    voters = [1, 2, 3]
    nemesis = Nemesis(quorum, voters, voters, history,  # type: ignore[arg-type]
                      partition_leader=lambda: _leader(quorum), active_controller=lambda: _leader(quorum))
    faults = schedule(REPLACEMENT, settings.seed, settings.time_limit_s)
    found: list[str] = []
    final_voters: list[int] = []
    try:
        quorum.start(1, 2, 3)
        quorum.describe(timeout=RECOVERY_TIMEOUT_S)
        writer.start()
        begin = time.monotonic()
        replacer = threading.Thread(target=_replace, args=(quorum, voters, rng, settings.time_limit_s / 3,
                                                           replaced, history), daemon=True)
        replacer.start()
        for fault in faults:
            _sleep_until(begin + fault.start_s)
            nemesis.start(fault)
            _sleep_until(begin + fault.start_s + fault.duration_s)
            nemesis.stop()
        _sleep_until(begin + settings.time_limit_s)
        nemesis.heal_all()
        replacer.join(timeout=RECOVERY_TIMEOUT_S)
        writer.stopped.set()
        writer.join(timeout=30)
        for node_id in voters:
            if node_id not in quorum.procs:
                quorum.start(node_id)
        found, final_voters = _read_back(quorum)
    except Exception as exc:  # a run that cannot finish is a broken promise, reported as such
        notes.append(f"run failed: {type(exc).__name__}: {exc}")
    finally:
        writer.stopped.set()
        (results / "logs.txt").write_text(quorum.log_tails(200))
        quorum.close()
        history.close()
    lost = sorted(set(writer.acknowledged) - set(found))
    expected_voters = sorted(replaced.get("voters", []))
    anomalies = {"lost": len(lost), "voters-not-replaced": int(final_voters != expected_voters or not expected_voters)}
    if "error" in replaced:
        notes.append(f"replacement failed: {replaced['error']}")
    summary = {
        "scenario": settings.scenario, "seed": settings.seed, "time_limit_s": settings.time_limit_s,
        "testbed": False, "testbed_run_id": None,
        "valid": not any(anomalies.values()) and not any(n.startswith("run failed") for n in notes),
        "linearizable": None, "offsets_linearizable": None, "metadata_linearizable": None,
        "sends": {"ok": len(writer.acknowledged), "info": len(writer.unknown)},
        "faults": len(faults) - len(nemesis.skipped), "anomalies": anomalies, "lost": lost[:50],
        "replacement": replaced, "final_voters": final_voters, "notes": notes + nemesis.skipped,
    }
    write_summary(results, summary)
    return RunResult(settings, summary)


def _leader(quorum: LocalDynamicQuorum) -> Optional[int]:
    try:
        return int(quorum.describe(timeout=2)["leader_id"])
    except KafkaError:
        return None


def _replace(quorum: LocalDynamicQuorum, voters: list[int], rng: random.Random, after_s: float,
             replaced: dict[str, Any], history: HistoryRecorder) -> None:
    """Start the spare, add it once caught up, remove one of the first three (stopped, wiped)."""
    try:
        _replace_one(quorum, voters, rng, after_s, replaced, history)
    except (KafkaError, TimeoutError) as exc:
        replaced["error"] = f"{type(exc).__name__}: {exc}"


def _caught_up(quorum: LocalDynamicQuorum, node_id: int) -> bool:
    try:
        info = quorum.describe(timeout=3)
    except KafkaError:
        return False  # no leader right now (a fault): ask again
    return any(r["replica_id"] == node_id and r["log_end_offset"] >= info["high_watermark"] for r in info["observers"])


def _replace_one(quorum: LocalDynamicQuorum, voters: list[int], rng: random.Random, after_s: float,
                 replaced: dict[str, Any], history: HistoryRecorder) -> None:
    time.sleep(after_s)
    spare = 4
    started = time.monotonic()
    quorum.start(spare)
    call = history.invoke(1, "replace-controller", key=spare)
    wait_until(lambda: _caught_up(quorum, spare), RECOVERY_TIMEOUT_S, "the spare caught up", interval=0.2)
    add_voter(quorum.all_addresses(), spare, quorum.directory[spare], [("CONTROLLER", "127.0.0.1", quorum.ports[spare])],
              timeout=RECOVERY_TIMEOUT_S)
    voters.append(spare)
    leader = _leader(quorum)
    old = leader if leader in (1, 2, 3) and rng.random() < 0.5 else rng.choice([1, 2, 3])
    remove_voter(quorum.all_addresses(), old, quorum.directory[old], timeout=RECOVERY_TIMEOUT_S)
    voters.remove(old)
    quorum.stop(old)
    quorum.reformat(old)
    replaced.update(added=spare, removed=old, seconds=round(time.monotonic() - started, 3), voters=list(voters))
    history.complete(call, "ok", value={"added": spare, "removed": old})


def _read_back(quorum: LocalDynamicQuorum) -> tuple[list[str], list[int]]:
    """Every ACL name in the active controller's metadata, and the voters in force."""
    def read() -> Optional[tuple[list[str], list[int]]]:
        try:
            info = quorum.describe(timeout=5)
            stub = cpb_grpc.KRaftControllerStub(quorum.channel(info["leader_id"]))
            answer = stub.DeleteAcls(cpb.DeleteAclsRequest(filters=[cpb.AclBindingFilter(**ANY)]), timeout=10)
        except (grpc.RpcError, KafkaError):
            return None
        if answer.error_code != Errors.NONE:
            return None
        names = [b.resource_name for r in answer.filter_results for b in r.matching_acls]
        return names, sorted(r["replica_id"] for r in info["voters"])
    return wait_until(read, RECOVERY_TIMEOUT_S, "the metadata read back", interval=0.5)


def _sleep_until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > 0:
        time.sleep(delay)
