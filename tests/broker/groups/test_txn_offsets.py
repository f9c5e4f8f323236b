"""Transactional offset commits (TxnOffsetCommit) in the pure group machine:
pending per producer until the marker, Kafka's order rules, the member
checks, require_stable, deletions, hostile values, and loading from real
__consumer_offsets batches (plain, transactional and control) ending in the
state the live path reached."""
from __future__ import annotations

from kafka_protocol.control_records import encode_txn_marker
from kafka_protocol.records import Record, encode_batch
from broker.errors import Error
from broker.groups.loading import replay_batches
from broker.groups.machine import GroupMachine
from broker.groups.records import encode_record
from kraftlog_api import groups_pb2 as gpb

from .sim import CONFIG, GROUP, Sim
from .test_records_and_placement import Ids

TOPICS = {"orders": 6, "payments": 3}
IDS = Ids(sorted(TOPICS))
PID, EPOCH = 4000, 3


class Log:
    """A __consumer_offsets partition as the shell writes it: each answer's
    plain records as one batch, its transactional records as the producer's
    batch right after, markers as control batches; the live machine sees the
    markers when they are appended, as on_txn_completed does."""

    def __init__(self) -> None:
        self.sim = Sim(TOPICS)
        self.machine = self.sim.machine
        self.bytes = b""
        self.now = 100

    def plain(self, records) -> None:
        records = self.sim.take_records() + list(records)  # the heartbeats' records come first
        if records:
            self.bytes += encode_batch([Record(*encode_record(r, IDS), timestamp=self.now) for r in records])

    def txn_commit(self, offsets: dict[tuple[str, int], int], *, pid: int = PID, group: str = GROUP,
                   member_id: str = "", generation: int = -1, metadata: str = "", tid: str = "tid",
                   epoch: int = EPOCH) -> dict[tuple[str, int], int]:
        request = txn_request(offsets, pid=pid, group=group, member_id=member_id, generation=generation,
                              metadata=metadata, tid=tid, epoch=epoch)
        response, records, txn_records = self.machine.txn_offset_commit(request, self.now, self.sim.topics)
        self.plain(records)
        if txn_records:
            self.bytes += encode_batch([Record(*encode_record(r, IDS), timestamp=self.now) for r in txn_records],
                                       producer_id=pid, producer_epoch=epoch, base_sequence=-1, transactional=True)
        return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}

    def commit(self, offsets: dict[tuple[str, int], int], group: str = GROUP) -> None:
        request = gpb.OffsetCommitRequest(group_id=group, member_epoch=-1, topics=[
            gpb.OffsetCommitRequest.Topic(name=t, partitions=[gpb.OffsetCommitRequest.Partition(
                partition_index=p, committed_offset=o)]) for (t, p), o in sorted(offsets.items())])
        response, records = self.machine.commit(request, self.now, self.sim.topics)
        assert all(p.error_code == 0 for t in response.topics for p in t.partitions)
        self.plain(records)

    def marker(self, committed: bool, pid: int = PID, epoch: int = EPOCH + 1) -> None:
        self.plain([])
        self.bytes += encode_txn_marker(pid, epoch, committed, 0, self.now)
        self.machine.complete_txn(pid, committed)

    def committed(self, group: str = GROUP, machine: GroupMachine | None = None) -> dict[tuple[str, int], int]:
        state = (machine or self.machine).state
        return {tp: v.offset for tp, v in state.groups[group].offsets.items()} if group in state.groups else {}

    def loaded(self) -> GroupMachine:
        machine = GroupMachine(CONFIG)
        replay_batches(machine, self.bytes, IDS)
        return machine

    def check_replay(self) -> GroupMachine:
        """Loading the log rebuilds exactly the live state, positions included."""
        self.plain([])
        machine = self.loaded()
        live, rebuilt = self.machine.state, machine.state
        assert rebuilt.pending == live.pending
        assert {g: (x.offsets, x.offset_positions, x.epoch) for g, x in rebuilt.groups.items()} == \
            {g: (x.offsets, x.offset_positions, x.epoch) for g, x in live.groups.items()}
        return machine


def txn_request(offsets: dict[tuple[str, int], int], *, pid: int = PID, group: str = GROUP, member_id: str = "",
                generation: int = -1, metadata: str = "", tid: str = "tid", epoch: int = EPOCH,
                instance_id: str = "") -> gpb.TxnOffsetCommitRequest:
    by_topic: dict[str, list[gpb.TxnOffsetCommitRequest.Partition]] = {}
    for (topic, index), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append(gpb.TxnOffsetCommitRequest.Partition(
            partition_index=index, committed_offset=offset, committed_leader_epoch=2, committed_metadata=metadata))
    return gpb.TxnOffsetCommitRequest(
        transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, generation_id=generation,
        member_id=member_id, group_instance_id=instance_id,
        topics=[gpb.TxnOffsetCommitRequest.Topic(name=t, partitions=ps) for t, ps in by_topic.items()])


def fetch(machine: GroupMachine, partitions=None, *, stable: bool = True, group: str = GROUP):
    request = gpb.OffsetFetchRequest(group_id=group, member_epoch=-1, require_stable=stable)
    for topic, indexes in (partitions or {}).items():
        request.topics.add(topic=topic, partitions=indexes)
    response = machine.fetch(request)
    return {(t.name, p.partition_index): (p.committed_offset, p.error_code) for t in response.topics
            for p in t.partitions}


def test_pending_until_commit_marker_then_committed() -> None:
    log = Log()
    assert log.txn_commit({("orders", 0): 10, ("orders", 1): 11}) == {("orders", 0): 0, ("orders", 1): 0}
    assert GROUP in log.machine.state.groups  # a lone producer's commit makes the (empty) group at once
    assert log.committed() == {}
    assert fetch(log.machine, {"orders": [0, 1, 2]}) == {
        ("orders", 0): (-1, Error.UNSTABLE_OFFSET_COMMIT), ("orders", 1): (-1, Error.UNSTABLE_OFFSET_COMMIT),
        ("orders", 2): (-1, 0)}
    assert fetch(log.machine, {"orders": [0]}, stable=False) == {("orders", 0): (-1, 0)}
    log.check_replay()
    log.marker(True)
    assert log.committed() == {("orders", 0): 10, ("orders", 1): 11}
    assert fetch(log.machine, {"orders": [0, 1]}) == {("orders", 0): (10, 0), ("orders", 1): (11, 0)}
    assert log.machine.state.pending == {}
    log.check_replay()


def test_abort_marker_drops_pending_and_keeps_the_committed_offset() -> None:
    log = Log()
    log.commit({("orders", 0): 5})
    log.txn_commit({("orders", 0): 50, ("payments", 2): 7})
    log.marker(False)
    assert log.committed() == {("orders", 0): 5}
    assert fetch(log.machine) == {("orders", 0): (5, 0)}
    log.marker(True)  # a marker with nothing pending (a retried or unrelated one) changes nothing
    assert log.committed() == {("orders", 0): 5}
    log.check_replay()


def test_order_rules_follow_record_positions_as_kafka() -> None:
    log = Log()
    # plain commit, then the transactional record: the marker makes the transaction's offset committed
    log.commit({("orders", 0): 1})
    log.txn_commit({("orders", 0): 2})
    log.marker(True)
    assert log.committed() == {("orders", 0): 2}
    # transactional record, then a plain commit before the marker: the later (plain) record stands
    log.txn_commit({("orders", 0): 3})
    log.commit({("orders", 0): 4})
    log.marker(True)
    assert log.committed() == {("orders", 0): 4}
    # and a plain commit after the marker wins as the log says
    log.txn_commit({("orders", 0): 5})
    log.marker(True)
    log.commit({("orders", 0): 6})
    assert log.committed() == {("orders", 0): 6}
    # two producers: the one whose record is later wins, whatever the markers' order
    log.txn_commit({("orders", 1): 10}, pid=1)
    log.txn_commit({("orders", 1): 20}, pid=2)
    log.marker(True, pid=2)
    log.marker(True, pid=1)
    assert log.committed()[("orders", 1)] == 20
    log.check_replay()


def test_member_and_generation_checks() -> None:
    log = Log()
    member = log.sim.join("a", ("orders",))
    codes = lambda **kw: set(log.txn_commit({("orders", 0): 1}, **kw).values())  # noqa: E731
    assert codes(member_id="nobody", generation=member.epoch) == {Error.UNKNOWN_MEMBER_ID}
    assert codes(member_id=member.member_id, generation=member.epoch + 1) == {Error.FENCED_MEMBER_EPOCH}
    assert codes(member_id=member.member_id, generation=member.epoch - 1) == {Error.ILLEGAL_GENERATION}
    assert log.machine.state.pending == {}  # refusals write nothing
    assert codes(member_id=member.member_id, generation=member.epoch) == {0}
    assert codes() == {0}  # no member id, generation or instance id: not checked (a producer outside the group)
    # the group has members, so an unknown member (even with generation -1) is refused
    assert codes(member_id="nobody") == {Error.UNKNOWN_MEMBER_ID}
    # a group that does not exist: a generation means the producer thought it was a member
    assert set(log.txn_commit({("orders", 0): 1}, group="other", generation=2).values()) == {Error.ILLEGAL_GENERATION}
    assert "other" not in log.machine.state.groups
    log.check_replay()


def test_hostile_values() -> None:
    log = Log()
    codes = log.txn_commit({("orders", 0): 1, ("orders", 6): 1, ("orders", -1): 1, ("gone", 0): 1})
    assert codes == {("orders", 0): 0, ("orders", 6): Error.UNKNOWN_TOPIC_OR_PARTITION,
                     ("orders", -1): Error.UNKNOWN_TOPIC_OR_PARTITION, ("gone", 0): Error.UNKNOWN_TOPIC_OR_PARTITION}
    assert set(log.txn_commit({("orders", 1): 1}, metadata="x" * (CONFIG.offset_metadata_max_bytes + 1)).values()) \
        == {Error.OFFSET_METADATA_TOO_LARGE}
    before = dict(log.machine.state.pending)
    for kwargs, code in (({"tid": ""}, Error.INVALID_REQUEST), ({"pid": -1}, Error.INVALID_REQUEST),
                         ({"epoch": -1}, Error.INVALID_REQUEST), ({"epoch": 40000}, Error.INVALID_REQUEST),
                         ({"group": ""}, Error.INVALID_GROUP_ID)):
        assert set(log.txn_commit({("orders", 2): 1}, **kwargs).values()) == {code}, kwargs
    assert log.machine.state.pending == before
    # Every partition refused: no record, and no group made for nothing.
    assert set(log.txn_commit({("gone", 0): 1}, group="ghost").values()) == {Error.UNKNOWN_TOPIC_OR_PARTITION}
    assert "ghost" not in log.machine.state.groups
    # A negative offset is stored as given, as Kafka does (and as OffsetCommit here does).
    assert log.txn_commit({("orders", 3): -5}) == {("orders", 3): 0}
    log.marker(True)
    assert log.committed()[("orders", 3)] == -5
    log.check_replay()


def test_deleting_a_group_or_topic_tombstones_pending_offsets() -> None:
    log = Log()
    log.commit({("orders", 0): 1}, group="g2")
    log.txn_commit({("orders", 0): 2, ("orders", 1): 3}, group="g2")
    response, records = log.machine.delete(["g2"])
    log.plain(records)
    assert response.results[0].error_code == 0  # pending offsets do not block a deletion (Kafka's new coordinator)
    assert sorted((k.topic, k.partition) for k, v in records if k.topic) == [("orders", 0), ("orders", 1)]
    assert "g2" not in log.machine.state.groups and log.machine.state.pending == {}
    log.marker(True)  # the transaction's commit then finds nothing to commit
    assert "g2" not in log.machine.state.groups
    log.check_replay()
    log.txn_commit({("payments", 0): 4, ("orders", 2): 5})
    assert log.machine.offset_topics() == {"payments", "orders"}
    records = log.machine.delete_offsets({"payments"})
    log.plain(records)
    assert [(k.topic, k.partition, v) for k, v in records] == [("payments", 0, None)]
    log.marker(True)
    assert log.committed() == {("orders", 2): 5}
    log.check_replay()


def test_loading_replays_markers_in_log_order_and_skips_other_control_batches() -> None:
    log = Log()
    log.txn_commit({("orders", 0): 7})
    log.marker(False)
    log.txn_commit({("orders", 0): 8})
    # a control batch that is not a marker (an unknown type) is skipped
    log.bytes += encode_batch([Record(key=b"\x00\x00\x00\x09", value=b"", timestamp=0)], producer_id=PID,
                              producer_epoch=EPOCH, transactional=True, control=True)
    loaded = log.check_replay()
    assert fetch(loaded, {"orders": [0]}) == {("orders", 0): (-1, Error.UNSTABLE_OFFSET_COMMIT)}
    log.marker(True)
    assert fetch(log.check_replay(), {"orders": [0]}) == {("orders", 0): (8, 0)}


def test_fetch_of_every_partition_flags_pending_ones_only_among_committed() -> None:
    log = Log()
    log.commit({("orders", 0): 1, ("orders", 1): 2})
    log.txn_commit({("orders", 1): 3, ("orders", 2): 4})
    assert fetch(log.machine) == {("orders", 0): (1, 0), ("orders", 1): (-1, Error.UNSTABLE_OFFSET_COMMIT)}
    assert fetch(log.machine, stable=False) == {("orders", 0): (1, 0), ("orders", 1): (2, 0)}
