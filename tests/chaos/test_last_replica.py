"""The last-replica-standing sequence without a cluster: its schedule, a
single node's power loss through the real fault layer (the other nodes'
files untouched), and the steps in order against a stand-in cluster whose
metadata moves as a real one's would (the real run: test_chaos_runs.py)."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from chaos.disk_nemesis import DiskNemesis, env_prefix
from chaos.history import HistoryRecorder, read_history
from chaos.last_replica import (DOWN_S, LAST_REPLICA, LAST_REPLICA_DURABLE, LAST_REPLICA_ELR, WARMUP_S,
                                LastReplicaStanding, draw, expected_elr)
from chaos.nemesis import SCENARIOS, Nemesis, schedule


def test_the_schedule_is_one_seeded_sequence_after_a_warm_up():
    for name in (LAST_REPLICA, LAST_REPLICA_DURABLE, LAST_REPLICA_ELR):
        assert SCENARIOS[name] == (LAST_REPLICA,)
        [fault] = schedule(name, 7, 30)
        assert (fault.kind, fault.start_s, fault.duration_s) == (LAST_REPLICA, WARMUP_S, 0.0)
        assert schedule(name, 7, 30) == [fault]
        assert schedule(name, 7, 12)[0].start_s == 3.0  # a short run warms up for a quarter of it
    # the same seed, the same sequence in every mode (their losses compare); other seeds differ
    assert schedule(LAST_REPLICA, 7, 30) == schedule(LAST_REPLICA_DURABLE, 7, 30) == schedule(LAST_REPLICA_ELR, 7, 30)
    seeds = {schedule(LAST_REPLICA, s, 30)[0].seed for s in range(20)}
    assert len(seeds) == 20
    choices = {draw(random.Random(s), 3) for s in seeds}
    assert {p for p, _ in choices} == {0, 1, 2} and all(DOWN_S[0] <= d <= DOWN_S[1] for _, d in choices)


def write_through_layer(tmp_path, node: int) -> None:
    """A process of ours under node `node`'s fault layer writes a segment: 6 bytes fsynced, 5 not."""
    data = tmp_path / f"data-{node}" / "chaos-0"
    data.mkdir(parents=True)
    writer = textwrap.dedent(f"""
        import os
        from partition_log import disk_faults as df
        df.install_from_env([{str(data.parent)!r}])
        fd = os.open({str(data / "0.log")!r}, os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"synced")
        os.fsync(fd)
        os.write(fd, b"-lost")
        os.close(fd)
    """)
    subprocess.run([*env_prefix(tmp_path / "disk")(node), sys.executable, "-c", writer], check=True, timeout=60,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


class StandIn:
    """Processes and Metadata answers of three brokers (4, 5, 6), the workload
    topic's partition 0 led by 5: its ISR shrinks once its followers are cut
    off, it goes leaderless when its leader dies (fenced), and that leader is
    elected again once started, with a new epoch - as a real cluster does.
    With `elr` (KIP-966 on), the shrink puts the followers in the ELR and the
    leader's death elects 4 from it instead."""

    def __init__(self, shrinks: bool = True, elr: bool = False):
        self.pids = {n: 100 + n for n in (1, 2, 3, 4, 5, 6)}
        self.calls: list[tuple] = []
        self.shrinks, self.elr = shrinks, elr
        self.state = SimpleNamespace(leader=5, epoch=3, isr=[4, 5, 6], eligible=[])

    def shrink(self):
        self.state.isr, self.state.eligible = [5], [4, 6] if self.elr else []

    def kill(self, node_id):
        self.calls.append(("kill", node_id))
        del self.pids[node_id]
        if self.elr:
            self.state.leader, self.state.isr, self.state.eligible = 4, [4], [6, 5]
        else:
            self.state.leader = -1
        self.state.epoch += 1

    def start(self, *node_ids):
        self.calls.append(("start", *node_ids))
        self.pids.update({n: 200 + n for n in node_ids})
        if not self.elr:
            self.state.leader, self.state.epoch = 5, self.state.epoch + 1

    def pause(self, node_id):
        self.calls.append(("pause", node_id))
        if self.shrinks:
            self.shrink()

    def resume(self, node_id):
        self.calls.append(("resume", node_id))

    def metadata(self, broker_id=None, topics=(), timeout=2.0):
        if broker_id not in self.pids:
            return None
        partition = SimpleNamespace(partition_index=0, leader_id=self.state.leader, leader_epoch=self.state.epoch,
                                    isr_nodes=list(self.state.isr), replica_nodes=[4, 5, 6],
                                    eligible_leader_replicas=list(self.state.eligible), last_known_elr=[])
        return SimpleNamespace(topics=[SimpleNamespace(name="chaos", partitions=[partition])])


class Partitioning:
    """The testbed's partition and heal calls, recorded (its real commands: test_testbed.py)."""

    def __init__(self, cluster: StandIn):
        self.cluster, self.calls = cluster, []

    def partition(self, groups):
        self.calls.append(("partition", groups))
        self.cluster.shrink()

    def heal(self):
        self.calls.append(("heal",))


def sequence(tmp_path, cluster, testbed=None, **settings):
    history = HistoryRecorder(tmp_path / "history.jsonl")
    disk = DiskNemesis(cluster, tmp_path / "disk", [1, 2, 3, 4, 5, 6], [4, 5, 6], "chaos", note=history.fault)
    lrs = LastReplicaStanding(cluster, [4, 5, 6], "chaos", 1, disk, testbed, note=history.fault, **settings)
    nemesis = Nemesis(cluster, [1, 2, 3, 4, 5, 6], [4, 5, 6], history, testbed, last_replica=lrs)
    return nemesis, history, lrs


@pytest.mark.parametrize("with_testbed", [True, False], ids=["iptables", "sigstop"])
def test_the_steps_in_order_each_in_the_history(tmp_path, monkeypatch, with_testbed):
    monkeypatch.setattr("chaos.last_replica.DOWN_S", (0.0, 0.0))
    for node in (4, 5):
        write_through_layer(tmp_path, node)
    cluster = StandIn()
    testbed = Partitioning(cluster) if with_testbed else None
    nemesis, history, lrs = sequence(tmp_path, cluster, testbed)
    [fault] = schedule(LAST_REPLICA, 1, 30)
    nemesis.start(fault)
    nemesis.stop()
    history.close()
    assert lrs.outcome["steps"] == ["cut", "isr-shrunk", "power-loss", "restart", "heal", "elected"]
    assert lrs.outcome["isr_shrunk"] and lrs.outcome["power_loss"] and lrs.outcome["re_elected"]
    if with_testbed:
        assert testbed.calls == [("partition", [[5], [4, 6]]), ("heal",)]
        assert cluster.calls == [("kill", 5), ("start", 5)]
    else:
        assert cluster.calls == [("pause", 4), ("pause", 6), ("kill", 5), ("start", 5), ("resume", 4), ("resume", 6)]
    lines = [line["value"] for line in read_history(tmp_path / "history.jsonl") if line["f"] == LAST_REPLICA]
    steps = {v["step"]: v for v in lines if v["phase"] == "step"}
    assert steps["cut"] == {"phase": "step", "step": "cut", "partition": 0, "leader": 5, "followers": [4, 6],
                            "how": "iptables" if with_testbed else "SIGSTOP", "isr": [4, 5, 6], "leader_epoch": 3}
    assert steps["isr-shrunk"]["isr"] == [5]
    # only the leader's power failed: its unfsynced 5 bytes cut, broker 4's file left as it was
    power = steps["power-loss"]
    assert (power["nodes"], power["files_cut"], power["bytes_cut"]) == ([5], 1, 5)
    assert power["topic_files"] == [{"file": "chaos-0/0.log", "before": 11, "after": 6}]
    assert (tmp_path / "data-4" / "chaos-0" / "0.log").read_bytes() == b"synced-lost"
    assert steps["elected"]["leader"] == 5 and steps["elected"]["leader_epoch"] == 5
    assert [v["phase"] for v in lines][-2:] == ["start", "stop"]  # the fault's own lines, with the whole outcome
    assert lines[-2]["re_elected"] is True


def test_with_eligible_leader_replicas_a_follower_is_expected_to_be_elected(tmp_path, monkeypatch):
    monkeypatch.setattr("chaos.last_replica.DOWN_S", (0.0, 0.0))
    cluster = StandIn(elr=True)
    nemesis, history, lrs = sequence(tmp_path, cluster, Partitioning(cluster), elr=True)
    nemesis.start(schedule(LAST_REPLICA_ELR, 1, 30)[0])
    nemesis.stop()
    history.close()
    outcome = lrs.outcome
    assert outcome["steps"] == ["cut", "isr-shrunk", "power-loss", "restart", "heal", "elected"]
    assert outcome["expected"] == "elected_follower" and outcome["elected_follower"] and not outcome["re_elected"]
    steps = {v["step"]: v for v in (line["value"] for line in read_history(tmp_path / "history.jsonl")
                                    if line["f"] == LAST_REPLICA) if v["phase"] == "step"}
    assert steps["isr-shrunk"]["elr"] == [4, 6]
    assert (steps["elected"]["leader"], steps["elected"]["isr"], steps["elected"]["elr"]) == (4, [4], [5, 6])


def test_an_isr_that_never_shrinks_stops_the_sequence_and_heals(tmp_path):
    cluster = StandIn(shrinks=False)
    nemesis, history, lrs = sequence(tmp_path, cluster, shrink_timeout_s=0.3)
    nemesis.start(schedule(LAST_REPLICA, 1, 30)[0])
    history.close()
    assert lrs.outcome["steps"] == ["cut", "isr-not-shrunk", "heal"]
    assert not lrs.outcome["power_loss"] and not lrs.outcome["re_elected"]
    assert cluster.calls == [("pause", 4), ("pause", 6), ("resume", 4), ("resume", 6)]  # nobody killed


class TwoStepShrink(StandIn):
    """The followers' last fetches straddled the leader's shrink check: it drops 4, and 6 a poll
    later, so only 6 left an ISR below min ISR and is eligible (KIP-966)."""

    def shrink(self):
        self.state.isr, self.state.eligible, self.second_pending = [5, 6], [], True

    def metadata(self, broker_id=None, topics=(), timeout=2.0):
        answer = super().metadata(broker_id, topics, timeout)
        if getattr(self, "second_pending", False):
            self.state.isr, self.state.eligible, self.second_pending = [5], [6], False
        return answer


def test_the_isrs_on_the_way_to_the_leader_alone_say_which_followers_are_eligible(tmp_path, monkeypatch):
    monkeypatch.setattr("chaos.last_replica.DOWN_S", (0.0, 0.0))
    monkeypatch.setattr("chaos.last_replica.POLL_S", 0.01)
    cluster = TwoStepShrink(elr=True)
    nemesis, history, lrs = sequence(tmp_path, cluster, Partitioning(cluster), elr=True)
    nemesis.start(schedule(LAST_REPLICA_ELR, 1, 30)[0])
    nemesis.stop()
    history.close()
    shrunk = {v["step"]: v for v in (line["value"] for line in read_history(tmp_path / "history.jsonl")
                                     if line["f"] == LAST_REPLICA) if v["phase"] == "step"}["isr-shrunk"]
    assert shrunk["isrs_seen"] == [[5, 6], [5]] and shrunk["elr"] == [6]
    assert expected_elr(shrunk["isrs_seen"], 5, [4, 6]) == [6]
    assert expected_elr([[4, 5, 6], [5]], 5, [4, 6]) == expected_elr([[5]], 5, [4, 6]) == [4, 6]
