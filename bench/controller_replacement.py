"""Controller replacement time in a dynamic quorum (KIP-853): three controller
processes on this machine, the leader replaced by a new node, `--trials` times.

Each trial: the spare node (formatted to join) starts and fetches as an
observer; once it has caught up it is added (AddRaftVoter), then the current
leader is removed (RemoveRaftVoter; it hands over once that commits), the
removed node is stopped and its disk wiped to be the next trial's spare.
Meanwhile a writer creates one ACL at a time through the active controller,
and the longest gap between two successful writes is reported (the metadata
unavailability the replacement caused). Per trial, in ms: catch-up (start to
caught up), add (AddRaftVoter until committed), remove (RemoveRaftVoter until
committed and a new leader answers), total.

    python -m bench.controller_replacement [--trials 3] [--out bench/results/controller_replacement.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import grpc

from client.quorum_admin import add_voter, remove_voter
from devcluster.dynamic_quorum import LocalDynamicQuorum
from devcluster.local_processes import wait_until
from kafka_protocol.errors import Errors
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import controller_pb2_grpc as cpb_grpc

CLUSTER = "Y29udHJvbGxlci1yZXBsYWNl"


class AclWriter(threading.Thread):
    """One CreateAcls at a time through the active controller; records when each succeeded."""

    def __init__(self, quorum: LocalDynamicQuorum) -> None:
        super().__init__(daemon=True)
        self.quorum = quorum
        self.done: list[float] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        i = 0
        leader = None
        while not self.stopped.is_set():
            try:
                leader = leader or self.quorum.describe(timeout=5)["leader_id"]
                stub = cpb_grpc.KRaftControllerStub(self.quorum.channel(leader))
                binding = cpb.AclBinding(resource_type=2, resource_name=f"t-{i}", pattern_type=3,
                                         principal="User:bench", host="*", operation=3, permission_type=3)
                answer = stub.CreateAcls(cpb.CreateAclsRequest(creations=[binding]), timeout=5)
            except (grpc.RpcError, Exception):
                leader = None
                time.sleep(0.05)
                continue
            if answer.error_code == Errors.NONE:
                self.done.append(time.monotonic())
                i += 1
            else:
                leader = None

    def longest_gap_ms(self, start: float, end: float) -> float:
        times = [start] + [t for t in self.done if start <= t <= end] + [end]
        return max(b - a for a, b in zip(times, times[1:])) * 1000


def trial(q: LocalDynamicQuorum, spare: int, writer: AclWriter) -> tuple[dict[str, float], int]:
    begin = time.monotonic()
    q.start(spare)
    wait_until(lambda: any(r["replica_id"] == spare and r["log_end_offset"] >= q.describe()["high_watermark"] > 0
                           for r in q.describe()["observers"]), 120, f"node {spare} caught up")
    caught_up = time.monotonic()
    add_voter(q.all_addresses(), spare, q.directory[spare], [("CONTROLLER", "127.0.0.1", q.ports[spare])], timeout=60)
    added = time.monotonic()
    old = q.describe()["leader_id"]
    remove_voter(q.all_addresses(), old, q.directory[old], timeout=60)
    wait_until(lambda: q.describe(timeout=5)["leader_id"] not in (old, -1), 60, "a new leader")
    removed = time.monotonic()
    q.stop(old)
    q.reformat(old)
    return {
        "catch_up_ms": (caught_up - begin) * 1000,
        "add_ms": (added - caught_up) * 1000,
        "remove_ms": (removed - added) * 1000,
        "total_ms": (removed - begin) * 1000,
        "longest_write_gap_ms": writer.longest_gap_ms(added, removed),
    }, old


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    results: list[dict[str, float]] = []
    with LocalDynamicQuorum(CLUSTER, controllers=3, spares=1) as q:
        q.start(1, 2, 3)
        q.describe(timeout=60)
        writer = AclWriter(q)
        writer.start()
        spare = 4
        try:
            for n in range(args.trials):
                result, spare = trial(q, spare, writer)
                results.append(result)
                print(f"trial {n + 1}: " + ", ".join(f"{k} {v:.0f}" for k, v in result.items()), flush=True)
        finally:
            writer.stopped.set()
            writer.join(timeout=10)
    summary: dict[str, Any] = {key: {"median": statistics.median(r[key] for r in results),
                                     "max": max(r[key] for r in results)} for key in results[0]}
    summary["trials"] = results
    summary["acls_written"] = len(writer.done)
    print(json.dumps({k: v for k, v in summary.items() if k != "trials"}, indent=1))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
