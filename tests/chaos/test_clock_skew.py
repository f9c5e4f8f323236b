"""The clock-skew fault: seeded, recorded in the history, aimed through each node's clock file, undone;
and a real node whose wall clock jumps an hour keeps its coordinators' members and open transactions
(their deadlines are monotonic) until their timeouts pass for real."""
from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path

import grpc

from broker.errors import Error
from broker.groups.placement import OFFSETS_TOPIC
from chaos.clock_skew import MAX_JUMP_MS, RATES, ClockFiles
from chaos.history import HistoryRecorder
from chaos.nemesis import CLOCK_SKEW, SCENARIOS, Nemesis, ScheduledFault, schedule
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until
from kafka_protocol.records import iter_batches
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import groups_pb2 as gpb
from kraftlog_api import groups_pb2_grpc as gpb_grpc
from kraftlog_api import transactions_pb2 as tpb
from kraftlog_api import transactions_pb2_grpc as tpb_grpc
from partition_log.clock import CLOCK_FILE_ENV, NO_SKEW, Skew


class NoCluster:
    def kill(self, node_id: int) -> None: raise AssertionError("no process fault here")
    start = pause = resume = kill


def test_skew_is_seeded_recorded_and_undone(tmp_path: Path) -> None:
    clocks = ClockFiles(tmp_path, [1, 2, 3])
    assert clocks.prefix(2) == ["env", f"{CLOCK_FILE_ENV}={tmp_path / 'clock-2.json'}"]
    faults = schedule(CLOCK_SKEW, 4, 30.0)
    assert faults and {f.kind for f in faults} == {CLOCK_SKEW} and SCENARIOS[CLOCK_SKEW] == (CLOCK_SKEW,)
    history = HistoryRecorder(tmp_path / "history.jsonl")
    nemesis = Nemesis(NoCluster(), [1, 2, 3], [1, 2, 3], history, clocks=clocks)
    nemesis.start(ScheduledFault(1.0, CLOCK_SKEW, 2.0, seed=7))
    skewed = {n: Skew.parse(p.read_text()) for n, p in clocks.paths.items()}
    [node] = [n for n, s in skewed.items() if s != NO_SKEW]
    assert 1000 <= abs(skewed[node].offset_ms) <= MAX_JUMP_MS and skewed[node].rate in RATES
    nemesis.stop()
    history.close()
    assert Skew.parse(clocks.paths[node].read_text()) == NO_SKEW
    start, stop = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert start["f"] == CLOCK_SKEW and start["value"]["nodes"] == [node] and stop["value"]["phase"] == "stop"
    assert start["value"]["offset_ms"] == skewed[node].offset_ms
    # the same seed picks the same node and skew
    (tmp_path / "again").mkdir()
    again = Nemesis(NoCluster(), [1, 2, 3], [1, 2, 3], HistoryRecorder(tmp_path / "again" / "history.jsonl"),
                    clocks=ClockFiles(tmp_path / "again", [1, 2, 3]))
    details, _ = again._inflict(CLOCK_SKEW, random.Random(7))
    assert details["nodes"] == [node] and details["offset_ms"] == skewed[node].offset_ms


def test_without_clock_files_the_fault_is_skipped(tmp_path: Path) -> None:
    history = HistoryRecorder(tmp_path / "history.jsonl")
    nemesis = Nemesis(NoCluster(), [1], [1], history)
    nemesis.start(ScheduledFault(1.0, CLOCK_SKEW, 2.0, seed=1))
    history.close()
    assert nemesis.skipped and "clock files" in nemesis.skipped[0]


# -- a real node whose wall clock jumps (issue 22) ---------------------------------------------

HOUR_MS = 3_600_000
SESSION_MS = 10_000
TXN_TIMEOUT_MS = 45_000  # far beyond the few seconds the jump's checks take, even on a loaded machine
SKEWED_TOPIC, SKEWED_GROUP, SKEWED_TID = "skewed", "skewed-group", "skewed-txn"
COORDINATOR_RETRY = (Error.NOT_COORDINATOR, Error.COORDINATOR_LOAD_IN_PROGRESS, Error.COORDINATOR_NOT_AVAILABLE,
                     Error.CONCURRENT_TRANSACTIONS)
SKEWED_PROPERTIES = {
    "offsets.topic.num.partitions": 1, "offsets.topic.replication.factor": 1,
    "transaction.state.log.num.partitions": 1, "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1, "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200,
    "group.consumer.session.timeout.ms": SESSION_MS, "group.consumer.heartbeat.interval.ms": 1000,
}


@dataclass
class Consumer:
    """A KIP-848 member by raw ConsumerGroupHeartbeat calls: it owns what it was last told."""

    member_id: str = ""
    epoch: int = 0
    owned: frozenset = frozenset()

    def heartbeat(self, groups) -> gpb.ConsumerGroupHeartbeatResponse:
        owned = gpb.OwnedPartitions(topic_partitions=[gpb.TopicPartitions(
            topic=SKEWED_TOPIC, partitions=sorted(p for _, p in self.owned))] if self.owned else [])
        request = gpb.ConsumerGroupHeartbeatRequest(group_id=SKEWED_GROUP, member_id=self.member_id,
                                                    member_epoch=self.epoch, owned_partitions=owned)
        if self.epoch == 0:
            request.rebalance_timeout_ms = 60_000
            request.subscribed_topic_names.names.append(SKEWED_TOPIC)
        response = groups.ConsumerGroupHeartbeat(request, timeout=15)
        if response.error_code == Error.NONE:
            self.member_id, self.epoch = response.member_id, response.member_epoch
            if response.HasField("assignment"):
                self.owned = frozenset((t.topic, p) for t in response.assignment.topic_partitions
                                       for p in t.partitions)
        return response


def answered(call, what: str, code=lambda answer: answer.error_code):
    """The answer once it is not a coordinator still being found, loaded or busy."""
    def attempt():
        try:
            answer = call()
        except grpc.RpcError:
            return None
        return None if code(answer) in COORDINATOR_RETRY else answer
    return wait_until(attempt, 60, what, interval=0.2)


def group_members(groups) -> set[str]:
    [group] = groups.ConsumerGroupDescribe(gpb.ConsumerGroupDescribeRequest(group_ids=[SKEWED_GROUP]),
                                           timeout=15).groups
    assert group.error_code == Error.NONE, group
    return {m.member_id for m in group.members}


def txn_state(txns) -> tpb.DescribeTransactionsResponse.TransactionState:
    [state] = txns.DescribeTransactions(tpb.DescribeTransactionsRequest(transactional_ids=[SKEWED_TID]),
                                        timeout=15).transaction_states
    assert state.error_code == Error.NONE, state
    return state


def newest_offsets_record_time(c: LocalCluster) -> int:
    """The timestamp of the newest batch the group coordinator wrote (its wall clock when it wrote it)."""
    response = c.broker_stub(1).Fetch(bpb.FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        topics=[bpb.FetchRequest.FetchTopic(topic=OFFSETS_TOPIC, partitions=[bpb.FetchRequest.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
            partition_max_bytes=1 << 20)])]), timeout=15)
    batches = list(iter_batches(bytes(response.responses[0].partitions[0].records)))
    return batches[-1].header.max_timestamp if batches else -1


def test_a_wall_clock_jump_on_the_coordinator_neither_expires_members_nor_aborts_transactions(tmp_path: Path) -> None:
    """One node started as the chaos runner starts it (its clock file in its command prefix),
    coordinating a consumer group of two members and an open transaction. Its wall clock jumps
    an hour ahead: both members stay in the group and the transaction stays open (a wall-clock
    deadline would have passed for all three); what the coordinator writes from then on carries
    the skewed time. Then the member that stops heartbeating is removed, and the transaction
    aborted, once their timeouts pass on the monotonic clock."""
    clocks = ClockFiles(tmp_path, [1])
    with LocalCluster(tmp_path / "cluster", combined=1, properties=SKEWED_PROPERTIES,
                      command_prefix=clocks.prefix).running() as c:
        c.create_topic(SKEWED_TOPIC, 2, 1)
        c.wait_for_leaders(SKEWED_TOPIC)
        groups = gpb_grpc.GroupCoordinatorStub(c.channel(c.broker_addresses[1]))
        txns = tpb_grpc.TransactionCoordinatorStub(c.channel(c.broker_addresses[1]))

        # An open transaction, its timeout TXN_TIMEOUT_MS.
        answered(lambda: groups.FindCoordinator(gpb.FindCoordinatorRequest(key_type=1, keys=[SKEWED_TID]),
                                                timeout=15).coordinators[0], "the transaction coordinator")
        init = answered(lambda: c.broker_stub(1).InitProducerId(bpb.InitProducerIdRequest(
            transactional_id=SKEWED_TID, transaction_timeout_ms=TXN_TIMEOUT_MS, producer_id=-1, producer_epoch=-1),
            timeout=15), "InitProducerId")
        assert init.error_code == Error.NONE, init
        before_ms = time.time() * 1000
        added = answered(lambda: txns.AddPartitionsToTxn(tpb.AddPartitionsToTxnRequest(
            transactional_id=SKEWED_TID, producer_id=init.producer_id, producer_epoch=init.producer_epoch,
            topics=[tpb.TxnTopic(name=SKEWED_TOPIC, partitions=[0])]), timeout=15), "AddPartitionsToTxn",
            code=lambda answer: answer.results[0].results[0].error_code)
        assert added.results[0].results[0].error_code == Error.NONE
        began = time.monotonic()
        started = txn_state(txns)
        assert started.transaction_state == "Ongoing"
        # the wall clock, unskewed yet: the start time lies between our readings of the same clock
        assert int(before_ms) <= started.transaction_start_time_ms <= time.time() * 1000

        # Two members, both heartbeating.
        answered(lambda: groups.FindCoordinator(gpb.FindCoordinatorRequest(keys=[SKEWED_GROUP]),
                                                timeout=15).coordinators[0], "the group coordinator")
        a, b = Consumer(), Consumer()
        for member in (a, b):
            assert answered(lambda: member.heartbeat(groups), "a join").error_code == Error.NONE
        for member in (a, b, a, b):
            assert member.heartbeat(groups).error_code == Error.NONE
        assert group_members(groups) == {a.member_id, b.member_id}

        # The node's wall clock jumps an hour ahead; an admin's offset commit shows it took effect.
        clocks.skew(1, Skew(offset_ms=HOUR_MS))
        probe = gpb.OffsetCommitRequest(group_id="clock-probe", member_epoch=-1, topics=[
            gpb.OffsetCommitRequest.Topic(name=SKEWED_TOPIC, partitions=[
                gpb.OffsetCommitRequest.Partition(partition_index=0, committed_offset=1)])])

        def skewed() -> bool:
            # Both members keep heartbeating until the jump is seen, so neither session can end for real here.
            assert a.heartbeat(groups).error_code == Error.NONE and b.heartbeat(groups).error_code == Error.NONE
            assert groups.OffsetCommit(probe, timeout=15).topics[0].partitions[0].error_code == Error.NONE
            return newest_offsets_record_time(c) >= time.time() * 1000 + HOUR_MS - 60_000
        wait_until(skewed, 30, "the node's wall clock an hour ahead", interval=0.2)

        # b's heartbeat wakes the group coordinator's timer, whose deadlines would all have passed
        # by the wall clock; the transaction coordinator's timer looks every 200 ms. Give both a
        # few rounds, well inside every timeout.
        assert b.heartbeat(groups).error_code == Error.NONE
        time.sleep(2)
        # Not a speed check: past its real timeout the transaction's state would tell nothing about the jump.
        assert time.monotonic() - began < TXN_TIMEOUT_MS / 1000, "the run cannot tell a jump from a timeout"
        still = txn_state(txns)
        assert (still.transaction_state, still.producer_epoch) == ("Ongoing", init.producer_epoch)
        assert a.heartbeat(groups).error_code == Error.NONE  # a was not expired
        assert group_members(groups) == {a.member_id, b.member_id}

        # Real timeouts still fire: a stops heartbeating and is removed; the transaction is aborted.
        def a_gone() -> bool:
            assert b.heartbeat(groups).error_code == Error.NONE
            return a.member_id not in group_members(groups)
        wait_until(a_gone, 60, "a removed after its session timeout", interval=0.5)
        assert group_members(groups) == {b.member_id}
        aborted = wait_until(lambda: (lambda s: s if s.transaction_state == "CompleteAbort" else None)(
            txn_state(txns)), 60, "the transaction aborted on its timeout", interval=0.2)
        assert aborted.producer_epoch == init.producer_epoch + 1  # the coordinator's abort bumped the epoch
        late = txns.EndTxn(tpb.EndTxnRequest(transactional_id=SKEWED_TID, producer_id=init.producer_id,
                                             producer_epoch=init.producer_epoch, committed=True), timeout=15)
        assert late.error_code == Error.TRANSACTION_ABORTABLE
