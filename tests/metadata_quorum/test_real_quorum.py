"""Real controller processes on 127.0.0.1, checked over gRPC.

Each test starts its own quorum (LocalQuorum: free ports, a temp dir) and
stops every process by PID when it ends, also when it fails.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devcluster.local_processes import wait_until
from devcluster.local_quorum import LocalQuorum

FAST = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
}


@pytest.fixture
def make_quorum(tmp_path: Path):
    quorums: list[LocalQuorum] = []

    def make(voters: int = 3, **properties: object) -> LocalQuorum:
        q = LocalQuorum(tmp_path / f"q{len(quorums)}", voters, {**FAST, **properties})
        quorums.append(q)
        q.start()
        return q

    yield make
    for q in quorums:
        q.close()


def committed_everywhere(q: LocalQuorum, nodes, expected):
    """True once every node in `nodes` has applied exactly `expected`."""
    return lambda: all(q.applied(n) == expected for n in nodes)


def append_all(q: LocalQuorum, values: list[bytes]) -> list[tuple[int, bytes]]:
    acked = []
    for value in values:
        base, last = q.client.append([value], timeout=15)
        assert base == last
        acked.append((last, value))
    return acked


def test_leader_is_elected_and_described_by_the_cli(make_quorum) -> None:
    q = make_quorum()
    leader, epoch = q.wait_for_leader()
    bootstrap = ",".join(q.addresses.values())
    out = subprocess.run(
        [sys.executable, "-m", "kraftlog", "quorum", "describe", "--bootstrap-controller", bootstrap, "--json"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    described = json.loads(out)
    assert described["leader_id"] == leader
    assert described["leader_epoch"] >= epoch
    assert sorted(v["replica_id"] for v in described["voters"]) == [1, 2, 3]
    # The leader-change record of the new epoch commits at once.
    assert described["high_watermark"] >= 1


def test_appends_commit_and_replicate_to_every_node(make_quorum) -> None:
    q = make_quorum()
    q.wait_for_leader()
    acked = append_all(q, [f"record-{i}".encode() for i in range(40)])
    base, last = q.client.append([b"a", b"b", b"c"])
    acked += [(base, b"a"), (base + 1, b"b"), (last, b"c")]
    assert last == base + 2
    wait_until(committed_everywhere(q, q.plans, acked), 10, "every node applied every record")


def test_kill_9_of_the_leader_elects_another_and_loses_nothing(make_quorum) -> None:
    q = make_quorum()
    old_leader, old_epoch = q.wait_for_leader()
    acked = append_all(q, [f"before-{i}".encode() for i in range(30)])
    q.kill(old_leader)
    survivors = tuple(n for n in q.plans if n != old_leader)
    new_leader, new_epoch = q.wait_for_leader(among=survivors)
    assert new_leader != old_leader and new_epoch > old_epoch
    acked += append_all(q, [f"after-{i}".encode() for i in range(10)])
    wait_until(committed_everywhere(q, survivors, acked), 10, "survivors hold every acknowledged record")
    # The old leader restarts from its files and catches up.
    q.start(old_leader)
    wait_until(committed_everywhere(q, q.plans, acked), 20, "the restarted node caught up")
    assert q.leader(survivors)[0] == new_leader


def test_a_node_behind_the_log_start_catches_up_through_a_snapshot(make_quorum) -> None:
    q = make_quorum(**{"metadata.log.max.record.bytes.between.snapshots": 2048})
    leader, _ = q.wait_for_leader()
    follower = next(n for n in q.plans if n != leader)
    acked = append_all(q, [b"early-%03d" % i for i in range(5)])
    wait_until(committed_everywhere(q, [follower], acked), 10, "the follower caught up once")
    q.kill(follower)
    acked += append_all(q, [b"x" * 200 + b"-%03d" % i for i in range(60)])  # ~12 KiB: several snapshots
    snapshots = sorted((q.plans[leader].home / "data" / "__cluster_metadata-0").glob("*.checkpoint"))
    assert snapshots, "the leader took no snapshot"
    q.start(follower)
    wait_until(committed_everywhere(q, q.plans, acked), 20, "the restarted follower caught up")
    assert "installed snapshot" in q.log_text(follower)


def test_a_paused_leader_is_replaced_and_steps_down_when_resumed(make_quorum) -> None:
    q = make_quorum()
    old_leader, old_epoch = q.wait_for_leader()
    acked = append_all(q, [b"one", b"two"])
    q.signal(old_leader, signal.SIGSTOP)
    others = tuple(n for n in q.plans if n != old_leader)
    new_leader, new_epoch = q.wait_for_leader(among=others, timeout=20)
    assert new_epoch > old_epoch
    acked += append_all(q, [b"three"])
    q.signal(old_leader, signal.SIGCONT)

    def old_leader_follows():
        response = q.describe(old_leader)
        return response is not None and response.error_code != 0 and response.leader_id == new_leader

    wait_until(old_leader_follows, 10, "the resumed leader follows the new one")
    time.sleep(1.5)  # give a disruptive node the time to disturb: it must not
    assert q.leader(others) == (new_leader, new_epoch)
    wait_until(committed_everywhere(q, q.plans, acked), 10, "every node holds every record")


def test_sigterm_of_the_leader_hands_over_gracefully(make_quorum) -> None:
    # Followers would notice a vanished leader only after a minute; the
    # EndQuorumEpoch of a graceful shutdown must make one campaign at once.
    q = make_quorum(**{"controller.quorum.fetch.timeout.ms": 60000})
    leader, epoch = q.wait_for_leader(timeout=30)
    acked = append_all(q, [b"before"])
    assert q.stop(leader) == 0
    others = tuple(n for n in q.plans if n != leader)
    new_leader, new_epoch = q.wait_for_leader(among=others, timeout=20)
    assert new_epoch > epoch
    acked += append_all(q, [b"after"])
    wait_until(committed_everywhere(q, others, acked), 10, "the others hold every record")
