"""The minority-damage fault without a cluster: a follower's segment file
bit-flipped or cut short (seeded, what was hit recorded), the process calls
it makes, and what a log does when it opens the damaged copy."""
from __future__ import annotations

import os
import random
import shutil

import pytest

from chaos.history import FAIL, HistoryRecorder, OK, read_history
from chaos.minority_damage import (MINORITY_FAULTS, MINORITY_SCENARIOS, FollowerDamage, corrupt_reads,
                                   cut_segment, flip_batch_byte, last_segment, segment_batches)
from chaos.nemesis import SCENARIOS, schedule
from kafka_protocol import batch as b
from kafka_protocol.errors import CorruptRecordError
from kafka_protocol.records import Record, encode_batch
from partition_log.config import LogConfig
from partition_log.log import Log

BATCHES = 30


def written(folder):
    """A partition folder as a follower leaves it when killed: 30 batches of 3 records, no flush."""
    lg = Log(folder, LogConfig())
    for i in range(BATCHES):
        lg.append_as_leader(encode_batch([Record(None, b"v%d-%d" % (i, j), 1_700_000_000_000) for j in range(3)]), 1)
    for seg in lg.segments:
        seg.close()
    return lg.active_segment.log_path


def test_a_flipped_byte_lands_in_one_batch_s_records_and_breaks_only_its_crc(tmp_path):
    path = written(tmp_path / "chaos-0")
    assert last_segment(tmp_path / "chaos-0") == path
    before = path.read_bytes()
    hit = flip_batch_byte(path, random.Random(5))
    after = path.read_bytes()
    assert [i for i in range(len(before)) if before[i] != after[i]] == [hit["position"]]
    assert after[hit["position"]] == hit["value"] == before[hit["position"]] ^ 0xFF
    start = hit["batch_position"]
    assert start + b.HEADER_SIZE <= hit["position"] < start + b.parse_header(after, start).size
    broken = []
    for pos, h in segment_batches(path):  # the headers still read: every batch is still found
        try:
            b.validate_batch(after, pos, pos + h.size)
        except CorruptRecordError:
            broken.append(h.base_offset)
    assert broken == [hit["batch_offset"]] and len(segment_batches(path)) == BATCHES
    # seeded: the same seed hits the same byte of the same file
    copy = tmp_path / "copy.log"
    copy.write_bytes(before)
    assert {k: v for k, v in flip_batch_byte(copy, random.Random(5)).items() if k != "file"} == \
        {k: v for k, v in hit.items() if k != "file"}


@pytest.mark.parametrize("seed", range(6))
def test_a_cut_removes_whole_batches_or_ends_inside_one(tmp_path, seed):
    path = written(tmp_path / "chaos-0")
    batches = segment_batches(path)
    cut = cut_segment(path, random.Random(seed))
    assert os.path.getsize(path) == cut["size_after"] == cut["size_before"] - cut["bytes_cut"]
    assert 1 <= cut["batches_cut"] <= 4 and cut["last_offset_cut"] == BATCHES * 3 - 1
    first_cut = [pos for pos, h in batches if h.base_offset == cut["first_offset_cut"]][0]
    kept = segment_batches(path)
    assert kept == batches[:len(batches) - cut["batches_cut"]]
    assert (cut["size_after"] > first_cut) == cut["mid_batch"]


@pytest.mark.parametrize("kind", MINORITY_FAULTS)
def test_a_killed_follower_s_recovery_cuts_its_log_at_the_damage(tmp_path, kind):
    """What the follower's restart does with the damage after a kill: the
    recovery (every batch past the recovery point, CRC included) cuts its log
    where the damage starts; the rest it fetches again from the leader."""
    folder = tmp_path / "chaos-0"
    path = written(folder)
    rng = random.Random(3)
    hit = flip_batch_byte(path, rng) if kind == "follower-bitflip" else cut_segment(path, rng)
    reopened = Log(folder, LogConfig())
    assert reopened.log_end_offset == hit["batch_offset" if kind == "follower-bitflip" else "first_offset_cut"]
    assert reopened.load_report.truncated_bytes > 0 or not hit.get("mid_batch", True)


class Processes:
    def __init__(self):
        self.calls = []

    def kill(self, node_id):
        self.calls.append(("kill", node_id))

    def stop(self, node_id, timeout=None):
        self.calls.append(("stop", node_id))
        return 0

    def start(self, *node_ids):
        self.calls.append(("start", *node_ids))


@pytest.mark.parametrize("stop_mode", sorted(set(MINORITY_SCENARIOS.values())))
def test_the_fault_damages_a_follower_while_it_is_down_then_kills_the_leader(tmp_path, stop_mode):
    original = written(tmp_path / "template" / "chaos-0")
    for broker in (1, 2, 3):
        shutil.copytree(original.parent, tmp_path / f"node-{broker}" / "chaos-0")
    cluster = Processes()
    damage = FollowerDamage(cluster, [1, 2, 3], lambda n: tmp_path / f"node-{n}" / "chaos-0", stop_mode=stop_mode)
    details, undo = damage.inflict("follower-truncate", random.Random(0), leader=2)
    follower = details["follower"]
    assert follower in (1, 3) and details["leader"] == 2 and details["nodes"] == [follower, 2]
    assert details["damaged"] and details["stop"] == stop_mode
    assert details["file"] == str(tmp_path / f"node-{follower}" / "chaos-0" / original.name)
    assert os.path.getsize(details["file"]) == details["size_after"] < os.path.getsize(original)
    assert cluster.calls == [(stop_mode, follower), ("start", follower), ("kill", 2)]
    undo()
    assert cluster.calls[-1] == ("start", 2)
    # a follower with no batch yet: stopped and started, nothing damaged, and it says so
    (tmp_path / "empty" / "chaos-0").mkdir(parents=True)
    details, _ = FollowerDamage(cluster, [1, 2], lambda n: tmp_path / "empty" / "chaos-0").inflict(
        "follower-bitflip", random.Random(0), leader=1)
    assert details["damaged"] is False and details["follower"] == 2


def test_the_scenarios_draw_damage_and_leader_kills_seeded():
    for name in MINORITY_SCENARIOS:
        faults = schedule(name, 2, 30)
        assert faults == schedule(name, 2, 30)
        assert {f.kind for f in faults} <= set(SCENARIOS[name]) == {*MINORITY_FAULTS, "kill"}
    # the chaos test's seed: both damages and a kill within its 30 s
    assert {f.kind for f in schedule("minority-damage", 7, 30)} == {*MINORITY_FAULTS, "kill"}


def test_reads_that_met_a_corrupt_batch_are_counted(tmp_path):
    with HistoryRecorder(tmp_path / "history.jsonl") as history:
        for error in ("CorruptRecordError: chaos-0: batch at byte 0 fails its CRC", "KafkaStorageError: offline"):
            history.complete(history.invoke(1, "poll", None, {"consumer": "c"}), FAIL, error=error)
        history.complete(history.invoke(2, "poll", None, {"consumer": "c"}), OK, {})
    assert corrupt_reads(list(read_history(tmp_path / "history.jsonl"))) == 1


def test_the_nemesis_damages_only_a_partition_whose_replicas_are_all_in_sync(tmp_path, monkeypatch):
    """A damage waits (bounded) until every replica is in the ISR again: the
    copies an earlier damage cut have their writes back, so at any time the
    damaged copies are a minority; else it is skipped, saying why."""
    from chaos import nemesis as nm

    monkeypatch.setattr(nm, "DAMAGE_WAIT_S", 1.0)
    original = written(tmp_path / "template" / "chaos-0")
    for broker in (1, 2, 3):
        shutil.copytree(original.parent, tmp_path / f"node-{broker}" / "chaos-0")
    isr = [[1, 2], [1, 2], [1, 2, 3]]  # broker 3 catches up at the third look
    cluster = Processes()
    damage = FollowerDamage(cluster, [1, 2, 3], lambda n: tmp_path / f"node-{n}" / "chaos-0",
                            isr=lambda: isr.pop(0) if len(isr) > 1 else isr[0])
    history = HistoryRecorder(tmp_path / "history.jsonl")
    nemesis = nm.Nemesis(cluster, [1, 2, 3], [1, 2, 3], history, partition_leader=lambda: 1,
                         follower_damage=damage)
    nemesis.start(nm.ScheduledFault(0.0, "follower-bitflip", 1.0, 4))
    assert cluster.calls[0][0] == "kill" and cluster.calls[-1] == ("kill", 1)
    nemesis.stop()
    isr[:] = [[1, 2]]  # never in sync again: skipped
    nemesis.start(nm.ScheduledFault(2.0, "follower-truncate", 1.0, 5))
    history.close()
    [skipped] = [line["value"] for line in read_history(tmp_path / "history.jsonl")
                 if line["process"] == "nemesis" and line["value"]["phase"] == "skipped"]
    assert "isr [1, 2]" in skipped["reason"] and nemesis.skipped


def test_a_damaged_follower_must_be_seen_out_of_the_isr_before_the_next_damage(tmp_path, monkeypatch):
    """A follower killed and started within its session is still listed in the
    ISR until it registers again: a full ISR right after a damage proves
    nothing, and a second damage then could make the damaged copies a
    majority (a chaos run lost 271 writes so). The next damage waits until
    the damaged follower has been seen out of the ISR and back in it."""
    from chaos import nemesis as nm

    monkeypatch.setattr(nm, "DAMAGE_WAIT_S", 1.0)
    original = written(tmp_path / "template" / "chaos-0")
    for broker in (1, 2, 3):
        shutil.copytree(original.parent, tmp_path / f"node-{broker}" / "chaos-0")
    isr = [[1, 2, 3]]
    cluster = Processes()
    damage = FollowerDamage(cluster, [1, 2, 3], lambda n: tmp_path / f"node-{n}" / "chaos-0",
                            isr=lambda: isr.pop(0) if len(isr) > 1 else isr[0])
    history = HistoryRecorder(tmp_path / "history.jsonl")
    nemesis = nm.Nemesis(cluster, [1, 2, 3], [1, 2, 3], history, partition_leader=lambda: 1,
                         follower_damage=damage)
    nemesis.start(nm.ScheduledFault(0.0, "follower-bitflip", 1.0, 4))
    nemesis.stop()
    calls = len(cluster.calls)
    nemesis.start(nm.ScheduledFault(1.0, "follower-truncate", 1.0, 5))  # the stale full ISR only: skipped
    assert len(cluster.calls) == calls and "not yet seen out of the ISR" in nemesis.skipped[-1]
    [first] = [line["value"] for line in read_history(tmp_path / "history.jsonl")
               if line["process"] == "nemesis" and line["value"]["phase"] == "start"]
    isr[:] = [[1, 2, 3], [b for b in (1, 2, 3) if b != first["follower"]], [1, 2, 3]]  # out, then back
    nemesis.start(nm.ScheduledFault(2.0, "follower-truncate", 1.0, 5))
    assert len(cluster.calls) > calls
    nemesis.stop()
    history.close()
