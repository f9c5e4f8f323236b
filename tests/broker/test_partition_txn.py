"""Transactions on real partition logs and replicas (three brokers in one
process, replication through the fetcher's own code): KIP-890 verification
of a producer's first transactional batch, markers through WriteTxnMarkers
and their refusals, the LSO, read_committed fetches with their aborted
transactions, ListOffsets, coordinator-origin batches on __consumer_offsets
and the marker listeners, DescribeProducers, followers and restarts keeping
the same state as the leader."""
from __future__ import annotations

import asyncio

import pytest

from broker.errors import Error
from broker.offsets import list_offset
from broker.produce import AppendOrigin, append, handle_produce
from broker.producer_state import ProducerStateManager
from broker.txn_markers import describe_producers, write_txn_markers
from kafka_protocol.batch import CONTROL_MASK, iter_headers
from kafka_protocol.control_records import decode_txn_marker
from kafka_protocol.internal_topics import GROUP_METADATA_TOPIC
from kafka_protocol.records import Record, encode_batch, iter_batches
from kraftlog_api import broker_pb2 as bpb
from partition_log import producer_snapshot as snapshots

from .helpers import Cluster, batch_of, fetch_request, fetched, replicate, run

TS = 1_700_000_000_000  # the helpers' FakeClock starts here
TID = "payments"


def txn_batch(pid: int, epoch: int, seq: int, *values: bytes) -> bytes:
    return encode_batch([Record(None, v, TS) for v in values], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, transactional=True)


class Coordinator:
    """The transaction coordinator's verifier as the leader sees it: the
    partitions each (producer, epoch) added to its transaction."""

    def __init__(self) -> None:
        self.added: set[tuple[int, int, str, int]] = set()
        self.asked: list[tuple[str, int, int, str, int]] = []

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str,
                     partition: int) -> int:
        self.asked.append((transactional_id, producer_id, producer_epoch, topic, partition))
        await asyncio.sleep(0)  # an answer over the network comes in a later loop step
        if (producer_id, producer_epoch, topic, partition) in self.added:
            return Error.NONE
        return Error.INVALID_TXN_STATE


class OffsetsListener:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int, bool]] = []

    def on_txn_completed(self, partition_index: int, producer_id: int, committed: bool) -> None:
        self.calls.append((partition_index, producer_id, committed))


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    c.create_topic("orders", {0: [1, 2, 3]})
    c.coordinator = Coordinator()
    c[1].txn_verifier = c.coordinator
    return c


def produce(cluster, records, *, broker=1, topic="orders", acks=1, tid=TID):
    return run(append(cluster[broker], topic, 0, records, acks, 1000, transactional_id=tid))


def markers_request(pid, epoch, committed, coordinator_epoch=0, topic="orders", partitions=(0,)):
    return bpb.WriteTxnMarkersRequest(markers=[bpb.WriteTxnMarkersRequest.Marker(
        producer_id=pid, producer_epoch=epoch, transaction_result=committed, coordinator_epoch=coordinator_epoch,
        topics=[bpb.WriteTxnMarkersRequest.Topic(name=topic, partition_indexes=list(partitions))])])


def end_txn(cluster, pid, epoch, committed, coordinator_epoch=0, topic="orders", timeout_ms=5000):
    """WriteTxnMarkers to broker 1 while brokers 2 and 3 replicate; the error code of each partition."""
    async def go():
        answer = asyncio.ensure_future(write_txn_markers(
            cluster[1], markers_request(pid, epoch, committed, coordinator_epoch, topic), timeout_ms))
        for _ in range(3):
            await asyncio.sleep(0)
            await replicate(cluster, 2)
            await replicate(cluster, 3)
        return await answer
    response = run(go())
    return [p.error_code for t in response.markers[0].topics for p in t.partitions]


def read(cluster, offset=0, *, committed, broker=1):
    request = fetch_request("orders", 0, offset)
    request.isolation_level = 1 if committed else 0
    answer = run(fetched(cluster[broker], request)).responses[0].partitions[0]
    return answer, [r.value for batch in iter_batches(answer.records) if not batch.header.is_control
                    for r in batch.records if r.offset >= offset]


def settle(cluster):
    """Followers fetch until the leader's high watermark is the log end."""
    for _ in range(2):
        run(replicate(cluster, 2))
        run(replicate(cluster, 3))


def test_a_first_transactional_batch_is_verified_with_the_coordinator(cluster):
    cluster.coordinator.added.add((7, 0, "orders", 0))
    assert produce(cluster, txn_batch(8, 0, 0, b"x")).error == Error.INVALID_TXN_STATE  # not in a transaction
    assert produce(cluster, txn_batch(7, 0, 0, b"a"), tid="").error == Error.INVALID_TXN_STATE
    assert produce(cluster, txn_batch(7, 0, 0, b"a")).base_offset == 0
    assert produce(cluster, txn_batch(7, 0, 1, b"b")).base_offset == 1
    assert cluster.coordinator.asked == [(TID, 8, 0, "orders", 0), (TID, 7, 0, "orders", 0)]
    cluster[1].txn_verifier = None
    assert produce(cluster, txn_batch(7, 0, 2, b"c")).base_offset == 2  # the transaction is open here
    assert produce(cluster, txn_batch(9, 0, 0, b"y")).error == Error.INVALID_TXN_STATE
    log = cluster[1].get("orders", 0).log
    assert log.log_end_offset == 3


def test_a_produce_request_passes_its_transactional_id(cluster):
    cluster.coordinator.added.add((7, 0, "orders", 0))
    request = bpb.ProduceRequest(acks=1, timeout_ms=1000, transactional_id=TID, topics=[
        bpb.ProduceRequest.TopicData(name="orders", partitions=[
            bpb.ProduceRequest.PartitionData(index=0, records=txn_batch(7, 0, 0, b"a"))])])
    answer = run(handle_produce(cluster[1], request)).responses[0].partitions[0]
    assert (answer.error_code, answer.base_offset) == (Error.NONE, 0)
    forged = encode_batch([Record(None, b"m", TS)], producer_id=7, producer_epoch=1, transactional=True,
                          control=True)
    request.topics[0].partitions[0].records = forged  # only brokers write markers
    assert run(handle_produce(cluster[1], request)).responses[0].partitions[0].error_code == Error.INVALID_RECORD


def test_the_lso_holds_read_committed_fetches_until_the_marker_is_replicated(cluster):
    cluster.coordinator.added.update({(7, 0, "orders", 0), (7, 1, "orders", 0)})
    produce(cluster, batch_of([b"before"]))                          # 0
    produce(cluster, txn_batch(7, 0, 0, b"t1", b"t2"))               # 1-2
    produce(cluster, batch_of([b"plain"]))                           # 3
    settle(cluster)
    partition = cluster[1].get("orders", 0)
    assert (partition.high_watermark, partition.last_stable_offset) == (4, 1)
    answer, values = read(cluster, committed=True)
    assert values == [b"before"] and answer.last_stable_offset == 1 and not answer.aborted_transactions
    answer, values = read(cluster, 2, committed=True)  # between the LSO and the high watermark: nothing yet
    assert (answer.error_code, values, answer.records) == (Error.NONE, [], b"")
    assert read(cluster, committed=False)[1] == [b"before", b"t1", b"t2", b"plain"]
    assert read(cluster, committed=False)[0].last_stable_offset == 1
    assert list_offset(cluster[1], "orders", 0, -1, -1, isolation_level=1).offset == 1
    assert list_offset(cluster[1], "orders", 0, -1, -1).offset == 4

    assert end_txn(cluster, 7, 1, committed=True) == [Error.NONE]  # marker at 4
    assert partition.last_stable_offset == partition.high_watermark == 5
    answer, values = read(cluster, committed=True)
    assert values == [b"before", b"t1", b"t2", b"plain"] and not answer.aborted_transactions
    assert list_offset(cluster[1], "orders", 0, -1, -1, isolation_level=1).offset == 5


def test_read_committed_fetches_list_the_aborted_transactions_they_may_hold(cluster):
    cluster.coordinator.added.update({(7, 0, "orders", 0), (8, 0, "orders", 0)})
    produce(cluster, txn_batch(7, 0, 0, b"a1"))                      # 0
    produce(cluster, txn_batch(8, 0, 0, b"b1"))                      # 1
    produce(cluster, txn_batch(7, 0, 1, b"a2"))                      # 2
    assert end_txn(cluster, 7, 1, committed=False) == [Error.NONE]   # 3: abort 7
    assert end_txn(cluster, 8, 1, committed=True) == [Error.NONE]    # 4: commit 8
    answer, values = read(cluster, committed=True)
    assert values == [b"a1", b"b1", b"a2"]  # the consumer drops them, knowing the aborted list
    assert [(t.producer_id, t.first_offset) for t in answer.aborted_transactions] == [(7, 0)]
    assert read(cluster, 4, committed=True)[0].aborted_transactions == []  # past the abort marker
    assert not read(cluster, committed=False)[0].aborted_transactions
    entries = cluster[1].get("orders", 0).log.collect_aborted_txns(0, 5)
    assert [(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset) for e in entries] == [(7, 0, 3, 1)]


def test_markers_from_a_deposed_coordinator_or_an_older_epoch_are_refused(cluster):
    cluster.coordinator.added.add((7, 0, "orders", 0))
    produce(cluster, txn_batch(7, 0, 0, b"a"))
    assert end_txn(cluster, 7, 1, committed=True, coordinator_epoch=5) == [Error.NONE]
    log = cluster[1].get("orders", 0).log
    end = log.log_end_offset
    assert end_txn(cluster, 7, 2, committed=False, coordinator_epoch=4) == [Error.TRANSACTION_COORDINATOR_FENCED]
    assert end_txn(cluster, 7, 0, committed=False, coordinator_epoch=5) == [Error.INVALID_PRODUCER_EPOCH]
    assert end_txn(cluster, -1, 0, committed=False) == [Error.INVALID_REQUEST]
    assert end_txn(cluster, 7, 40000, committed=False, coordinator_epoch=5) == [Error.INVALID_REQUEST]
    assert log.log_end_offset == end  # nothing appended
    assert end_txn(cluster, 7, 1, committed=False, topic="nowhere") == [Error.UNKNOWN_TOPIC_OR_PARTITION]
    assert end_txn(cluster, 7, 1, committed=False, topic="__cluster_metadata") == [Error.UNKNOWN_TOPIC_OR_PARTITION]
    response = run(write_txn_markers(cluster[2], markers_request(7, 1, True, 5), 1000))
    assert response.markers[0].topics[0].partitions[0].error_code == Error.NOT_LEADER_OR_FOLLOWER


def test_a_marker_not_replicated_in_time_answers_request_timed_out(cluster):
    response = run(write_txn_markers(cluster[1], markers_request(7, 0, True), 20))
    assert [(t.name, p.partition_index, p.error_code) for t in response.markers[0].topics
            for p in t.partitions] == [("orders", 0, Error.REQUEST_TIMED_OUT)]
    log = cluster[1].get("orders", 0).log
    (pos, h), = iter_headers(log.read(0, 1 << 20))
    assert h.is_control and decode_txn_marker(log.read(0, 1 << 20)).committed  # appended all the same


def test_coordinator_batches_on_consumer_offsets_and_the_marker_listeners(cluster):
    cluster.create_topic(GROUP_METADATA_TOPIC, {0: [1, 2, 3], 1: [1, 2, 3]})
    listener = OffsetsListener()
    cluster[1].txn_marker_listeners.append(listener.on_txn_completed)
    offsets = encode_batch([Record(b"k", b"offset", TS)], producer_id=7, producer_epoch=0, base_sequence=-1,
                           transactional=True)
    cluster[1].txn_verifier = None  # a coordinator's batch is not verified
    result = run(append(cluster[1], GROUP_METADATA_TOPIC, 1, offsets, 1, 1000, origin=AppendOrigin.COORDINATOR))
    assert result.error == Error.NONE
    # From a client, the same batch needs a sequence.
    assert run(append(cluster[1], GROUP_METADATA_TOPIC, 1, offsets, 1, 1000)).error == Error.INVALID_RECORD
    partition = cluster[1].get(GROUP_METADATA_TOPIC, 1)
    assert partition.producers.in_txn(7)

    async def go():
        answer = asyncio.ensure_future(write_txn_markers(
            cluster[1], markers_request(7, 1, True, topic=GROUP_METADATA_TOPIC, partitions=(1, 0)), 5000))
        await asyncio.sleep(0)
        seen = list(listener.calls)  # told at the append, before replication
        for _ in range(3):
            await replicate(cluster, 2)
            await replicate(cluster, 3)
            await asyncio.sleep(0)
        return seen, await answer
    seen, response = run(go())
    assert seen == [(1, 7, True), (0, 7, True)]
    assert [p.error_code for p in response.markers[0].topics[0].partitions] == [Error.NONE, Error.NONE]
    assert not partition.producers.in_txn(7)


def test_describe_producers_lists_open_transactions(cluster):
    cluster.coordinator.added.add((7, 0, "orders", 0))
    produce(cluster, batch_of([b"plain"]))
    produce(cluster, txn_batch(7, 0, 0, b"a", b"b"))
    request = bpb.DescribeProducersRequest(topics=[
        bpb.DescribeProducersRequest.Topic(name="orders", partition_indexes=[0, 9])])
    found, missing = describe_producers(cluster[1], request).topics[0].partitions
    assert [(p.producer_id, p.producer_epoch, p.last_sequence, p.current_txn_start_offset, p.coordinator_epoch)
            for p in found.active_producers] == [(7, 0, 1, 1, -1)]
    assert missing.error_code == Error.UNKNOWN_TOPIC_OR_PARTITION and missing.error_message
    reserved = bpb.DescribeProducersRequest(topics=[
        bpb.DescribeProducersRequest.Topic(name="__cluster_metadata", partition_indexes=[0, -1])])
    assert [p.error_code for p in describe_producers(cluster[1], reserved).topics[0].partitions] == [
        Error.UNKNOWN_TOPIC_OR_PARTITION] * 2
    on_follower = describe_producers(cluster[2], request).topics[0].partitions[0]
    assert on_follower.error_code == Error.NOT_LEADER_OR_FOLLOWER


def state_of(producers: ProducerStateManager, high_watermark: int):
    """What a replica's producer state says, as a snapshot would keep it."""
    entries = sorted(producers.snapshot_entries(), key=lambda e: e.producer_id)
    return entries, dict(producers.ongoing), producers.last_stable_offset(high_watermark)


def a_transactional_history(cluster):
    cluster.coordinator.added.update({(p, e, "orders", 0) for p in (7, 8) for e in range(3)})
    produce(cluster, txn_batch(7, 0, 0, b"a1"))                                          # 0
    produce(cluster, txn_batch(8, 0, 0, b"b1", b"b2"))                                   # 1-2
    produce(cluster, batch_of([b"plain"]))                                               # 3
    assert end_txn(cluster, 7, 1, committed=False, coordinator_epoch=2) == [Error.NONE]  # 4
    produce(cluster, txn_batch(7, 1, 0, b"a3"))                                          # 5, left open
    assert end_txn(cluster, 8, 1, committed=True, coordinator_epoch=2) == [Error.NONE]   # 6
    produce(cluster, txn_batch(8, 1, 0, b"b3"))                                          # 7, left open
    settle(cluster)


def test_followers_keep_the_leaders_state_and_aborted_index(cluster):
    a_transactional_history(cluster)
    leader = cluster[1].get("orders", 0)
    end = leader.log.log_end_offset
    expected = state_of(leader.producers, end)
    for broker in (2, 3):
        follower = cluster[broker].get("orders", 0)
        assert follower.log.log_end_offset == end
        assert state_of(follower.producers, end) == expected
        assert follower.log.collect_aborted_txns(0, end) == leader.log.collect_aborted_txns(0, end)
    assert expected[1] == {7: 5, 8: 7} and expected[2] == 5
    # A new leader carries on: the open transactions still hold its LSO back.
    cluster.change("orders", 0, leader=2, isr=[2, 3])
    assert cluster[2].get("orders", 0).last_stable_offset == 5


def test_a_restart_from_snapshots_equals_a_replay_of_the_whole_log(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.create_topic("orders", {0: [1, 2, 3]}, configs={"segment.bytes": "200"})  # a roll every few batches
    cluster.coordinator = Coordinator()
    cluster[1].txn_verifier = cluster.coordinator
    a_transactional_history(cluster)
    lg = cluster[1].get("orders", 0).log
    end = lg.log_end_offset
    assert len(lg.segments) > 2 and snapshots.snapshot_offsets(lg.directory)  # written at the rolls
    before = state_of(cluster[1].get("orders", 0).producers, end)

    clean = cluster.restart(1).get("orders", 0)  # from the snapshot written at close
    assert snapshots.snapshot_offsets(clean.log.directory)[-1] == end
    assert state_of(clean.producers, end) == before

    for offset in snapshots.snapshot_offsets(clean.log.directory):
        snapshots.delete_snapshot(clean.log.directory, offset)
    replayed = cluster.restart(1, clean=False).get("orders", 0)  # no snapshot: the whole log
    assert state_of(replayed.producers, end) == before

    # A damaged snapshot is deleted and the log replayed instead.
    cluster.restart(1)
    newest = snapshots.snapshot_path(lg.directory, end)
    newest.write_bytes(newest.read_bytes()[:-3])
    damaged = cluster.restart(1, clean=False).get("orders", 0)
    assert state_of(damaged.producers, end) == before
    assert end not in snapshots.snapshot_offsets(lg.directory)


def test_truncation_rolls_the_transaction_state_back(cluster):
    cluster.coordinator.added.add((7, 0, "orders", 0))
    produce(cluster, txn_batch(7, 0, 0, b"a"))
    settle(cluster)
    run(write_txn_markers(cluster[1], markers_request(7, 1, False), 0))  # 1: on the leader only
    follower = cluster[2].get("orders", 0)
    assert follower.producers.in_txn(7)
    leader = cluster[1].get("orders", 0)
    assert not leader.producers.in_txn(7) and leader.log.collect_aborted_txns(0, 2)
    leader.truncate_to(1)  # as after losing leadership to a replica without the marker
    assert leader.producers.in_txn(7) and leader.producers.producers[7].epoch == 0
    assert leader.log.collect_aborted_txns(0, 2) == []


def test_a_client_cannot_write_a_control_batch(cluster):
    control = encode_batch([Record(None, b"x", TS)], producer_id=7, producer_epoch=0, control=True)
    assert produce(cluster, control).error == Error.INVALID_RECORD
    assert not any(h.attributes & CONTROL_MASK for h in cluster[1].get("orders", 0).log.iter_batch_headers())
