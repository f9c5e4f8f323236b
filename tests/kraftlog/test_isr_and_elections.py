"""ISRs and leader elections with real broker processes: three controllers
and three brokers on 127.0.0.1, partitions placed on chosen brokers.

A stopped follower leaves the ISR and comes back into it after SIGCONT;
while only the leader is in sync, acks=all is refused when
min.insync.replicas is 2. With every ISR member dead, a partition stays
offline unless its topic allows unclean elections - then a lagging replica
leads and the acknowledged records it lacked are gone, and the old leader
truncates them when it returns. With KIP-966's eligible leader replicas on, only
an unclean shutdown (kill -9: no clean-shutdown marker) costs the last ISR
member its place, and a replica of the ELR leads. The segment files a broker writes are read
by kafka-python, an independent implementation of Kafka's record format.
"""
from __future__ import annotations

import signal
from typing import Callable, Mapping, Optional

import pytest
from kafka.record.memory_records import MemoryRecords

from kafka_protocol.errors import Errors
from devcluster.local_cluster import RETRIABLE_ADMIN_ERRORS, LocalCluster
from devcluster.local_processes import wait_until
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kafka_protocol import batch as b
from kafka_protocol.records import Record, encode_batch, iter_batches

from ..client.produce_consume import produce_values

PROPERTIES = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "broker.session.timeout.ms": 2000,
    "broker.heartbeat.interval.ms": 500,
    "replica.lag.time.max.ms": 3000,
    "replica.fetch.wait.max.ms": 200,
    "replica.fetch.backoff.ms": 200,
}
A, B, C = 4, 5, 6  # the brokers (controllers are 1-3)



@pytest.fixture(scope="module")
def module_cluster(tmp_path_factory):
    c = LocalCluster(tmp_path_factory.mktemp("isr-and-elections"), controllers=3, brokers=3, properties=PROPERTIES)
    try:
        c.start()
        c.wait_for_brokers()
        yield c
    finally:
        c.close()  # SIGCONT then SIGKILL of every process still running, by PID


@pytest.fixture
def cluster(module_cluster):
    """The module's cluster with every node running and every broker unfenced, whatever
    the test before left stopped or killed (each test has topics of its own)."""
    module_cluster.start_missing()
    for node in module_cluster.pids:  # and those left paused (SIGSTOP) go on
        module_cluster.resume(node)
    module_cluster.wait_for_brokers()
    return module_cluster


def create_placed(c: LocalCluster, topic: str, replicas: tuple[int, ...],
                  configs: Optional[Mapping[str, str]] = None) -> None:
    """One partition on `replicas` (the first leads), through broker C."""
    request = cpb.CreateTopicsRequest(topics=[cpb.CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=-1, replication_factor=-1,
        assignments=[cpb.CreateTopicsRequest.Assignment(partition_index=0, broker_ids=replicas)],
        configs=[cpb.ConfigEntry(name=k, value=v) for k, v in (configs or {}).items()])])

    def answered() -> Optional[cpb.CreateTopicsResponse]:
        response = c.broker_stub(C).CreateTopics(request, timeout=30)
        return None if response.error_code in RETRIABLE_ADMIN_ERRORS else response

    response = wait_until(answered, 30, f"CreateTopics {topic}", interval=0.2)
    assert response.error_code == Errors.NONE and response.topics[0].error_code == Errors.NONE, response
    # The leader serves it once its own image has it.
    wait_for(c, replicas[0], topic, lambda p: p.leader_id == replicas[0], f"{topic} led by broker {replicas[0]}")


def described(c: LocalCluster, by: int, topic: str) -> Optional[bpb.MetadataResponse.Partition]:
    """Partition 0 of `topic` as broker `by` describes it (never ask a stopped broker)."""
    answer = c.metadata(by, [topic])
    if answer is None or not answer.topics or answer.topics[0].error_code:
        return None
    return answer.topics[0].partitions[0]


def wait_for(c: LocalCluster, by: int, topic: str, condition: Callable[[bpb.MetadataResponse.Partition], bool],
             what: str, timeout: float = 30.0) -> bpb.MetadataResponse.Partition:
    def met() -> Optional[bpb.MetadataResponse.Partition]:
        p = described(c, by, topic)
        return p if p is not None and condition(p) else None

    return wait_until(met, timeout, what, interval=0.1)


def produce(c: LocalCluster, broker: int, topic: str, values: list[bytes],
            acks: int = -1) -> bpb.ProduceResponse.PartitionResponse:
    return produce_records(c, broker, topic, [Record(None, v, 1_700_000_000_000 + i) for i, v in enumerate(values)],
                           acks)


def produce_records(c: LocalCluster, broker: int, topic: str, records: list[Record],
                    acks: int = -1) -> bpb.ProduceResponse.PartitionResponse:
    response = c.broker_stub(broker).Produce(bpb.ProduceRequest(acks=acks, timeout_ms=10000, topics=[
        bpb.ProduceRequest.TopicData(name=topic, partitions=[
            bpb.ProduceRequest.PartitionData(index=0, records=encode_batch(records))])]), timeout=20)
    return response.responses[0].partitions[0]


def acknowledged(c: LocalCluster, broker: int, topic: str, values: list[bytes], acks: int = -1) -> int:
    """Produce `values` as one batch, which must be acknowledged; its base offset."""
    answer = produce(c, broker, topic, values, acks)
    assert answer.error_code == Errors.NONE, answer
    return answer.base_offset


def fetch(c: LocalCluster, broker: int, topic: str, offset: int) -> bpb.FetchResponse.PartitionData:
    response = c.broker_stub(broker).Fetch(bpb.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, topics=[
        bpb.FetchRequest.FetchTopic(topic=topic, partitions=[bpb.FetchRequest.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
            partition_max_bytes=1 << 20)])]), timeout=10)
    return response.responses[0].partitions[0]


def consumed(c: LocalCluster, leader: int, topic: str, end: int) -> list[bytes]:
    """The values of offsets 0..end-1 as a consumer reads them from `leader`,
    once its high watermark has reached `end` - and nothing lies above it."""
    wait_until(lambda: fetch(c, leader, topic, 0).high_watermark >= end, 20,
               f"{topic}'s high watermark at {end} on broker {leader}")
    values: list[bytes] = []
    offset = 0
    while offset < end:
        answer = fetch(c, leader, topic, offset)
        assert answer.error_code == Errors.NONE and answer.records, answer
        for batch in iter_batches(answer.records):
            values += [r.value for r in batch.records if r.offset >= offset]
            offset = batch.header.last_offset + 1
    assert fetch(c, leader, topic, 0).high_watermark == end
    return values


def numbered(prefix: str, n: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(n)]


def test_a_stopped_follower_leaves_the_isr_and_acks_all_needs_min_insync_replicas(cluster) -> None:
    create_placed(cluster, "isr", (A, B), {"min.insync.replicas": "2"})
    wait_for(cluster, A, "isr", lambda p: list(p.isr_nodes) == [A, B], "isr [A, B]")
    first = numbered("in-sync", 5)
    assert acknowledged(cluster, A, "isr", first) == 0

    # A stopped follower fetches nothing and heartbeats no more: the leader
    # drops it after replica.lag.time.max.ms (AlterPartition), or the
    # controller fences it after broker.session.timeout.ms - the ISR loses it.
    cluster.signal(B, signal.SIGSTOP)
    shrunk = wait_for(cluster, A, "isr", lambda p: list(p.isr_nodes) == [A], "isr shrunk to [A]")
    assert shrunk.leader_id == A and list(shrunk.replica_nodes) == [A, B]

    refused = produce(cluster, A, "isr", [b"needs two replicas"])
    assert refused.error_code == Errors.NOT_ENOUGH_REPLICAS, refused
    # Refused before the append: acks=1 takes the very next offset.
    alone = [b"acks=1 while alone"]
    assert acknowledged(cluster, A, "isr", alone, acks=1) == len(first)

    # Resumed, the follower catches up and the leader takes it back (AlterPartition).
    cluster.signal(B, signal.SIGCONT)
    wait_for(cluster, A, "isr", lambda p: sorted(p.isr_nodes) == [A, B], "broker B back in the isr")
    last = numbered("back in sync", 3)
    assert acknowledged(cluster, A, "isr", last) == len(first) + len(alone)
    end = len(first) + len(alone) + len(last)
    assert consumed(cluster, A, "isr", end) == first + alone + last


def test_clean_and_unclean_election_after_the_whole_isr_died(cluster) -> None:
    """Two topics on the same two brokers, A leading and B following; only
    "unclean" allows unclean elections. B dies, A alone acknowledges more,
    then A dies and B comes back."""
    create_placed(cluster, "clean", (A, B))
    create_placed(cluster, "unclean", (A, B), {"unclean.leader.election.enable": "true"})
    topics = ("clean", "unclean")
    before, after = numbered("before", 5), numbered("after", 4)
    for topic in topics:
        wait_for(cluster, A, topic, lambda p: list(p.isr_nodes) == [A, B], f"{topic}'s isr [A, B]")
        assert acknowledged(cluster, A, topic, before) == 0  # acks=all: B holds them too

    cluster.kill(B)
    for topic in topics:
        wait_for(cluster, A, topic, lambda p: list(p.isr_nodes) == [A], f"{topic}'s isr shrunk to [A]")
        assert acknowledged(cluster, A, topic, after) == len(before)  # acks=all, with A the whole ISR

    # The whole ISR dies: nobody in sync is left to lead. The ISR keeps A
    # (it is never emptied), so A could come back cleanly.
    cluster.kill(A)
    for topic in topics:
        offline = wait_for(cluster, C, topic, lambda p: p.leader_id == -1, f"{topic} offline")
        assert offline.error_code == Errors.LEADER_NOT_AVAILABLE and list(offline.isr_nodes) == [A], offline

    # B returns with only `before`. "unclean" takes it as leader; "clean" waits for A.
    cluster.start(B)
    # B serves once it has caught up with the metadata log, which may be after C sees it unfenced
    cluster.wait_for_brokers([B], among=[B, C])
    elected = wait_for(cluster, C, "unclean", lambda p: p.leader_id == B, "B elected uncleanly")
    assert list(elected.isr_nodes) == [B]
    still = described(cluster, C, "clean")
    assert still.leader_id == -1 and still.error_code == Errors.LEADER_NOT_AVAILABLE, still
    refused = produce(cluster, B, "clean", [b"to a replica that may not lead"])
    assert refused.error_code == Errors.NOT_LEADER_OR_FOLLOWER and refused.current_leader_id == -1, refused
    # A producer has nobody to send to (the metadata says LEADER_NOT_AVAILABLE, above):
    # the record waits for a leader and expires after delivery.timeout.ms.
    summary = produce_values(cluster.broker_addresses[C], "clean", [b"nobody leads"], delivery_timeout_s=1.5)
    assert (summary.acknowledged, summary.failed) == (0, 1)
    assert summary.errors == {"REQUEST_TIMED_OUT": 1}

    # Exactly the records acknowledged while B was dead are gone, and their
    # offsets are given to new records.
    assert consumed(cluster, B, "unclean", len(before)) == before
    later = numbered("later", 2)
    assert acknowledged(cluster, B, "unclean", later) == len(before)

    # A returns: "clean" comes back with every acknowledged record; on
    # "unclean" A follows B, truncating what B never had, and rejoins the ISR.
    cluster.start(A)
    cluster.wait_for_brokers([A], among=[A, C])
    wait_for(cluster, C, "clean", lambda p: p.leader_id == A, "A leading clean again")
    assert consumed(cluster, A, "clean", len(before) + len(after)) == before + after
    wait_for(cluster, C, "unclean", lambda p: sorted(p.isr_nodes) == [A, B], "A back in unclean's isr")
    wait_for(cluster, C, "clean", lambda p: sorted(p.isr_nodes) == [A, B], "B back in clean's isr")
    # A preferred election hands "unclean" back to A: it holds B's records, not its own lost ones.
    elect = cpb.ElectLeadersRequest(election_type=cpb.PREFERRED,
                                    topic_partitions=[cpb.TopicPartitions(topic="unclean", partitions=[0])])
    result = cluster.broker_stub(C).ElectLeaders(elect, timeout=30)
    assert result.error_code == Errors.NONE and result.results[0].partitions[0].error_code == Errors.NONE, result
    wait_for(cluster, C, "unclean", lambda p: p.leader_id == A, "A leading unclean")
    assert consumed(cluster, A, "unclean", len(before) + len(later)) == before + later


def test_segment_files_decode_with_kafka_python(cluster) -> None:
    create_placed(cluster, "on-disk", (A, B, C))
    sent = [Record(f"key-{i}".encode() if i % 2 else None, f"value {i}".encode() * (i + 1),
                   1_700_000_000_000 + i, (("h", f"{i}".encode()),)) for i in range(12)]
    for start in range(0, len(sent), 4):
        answer = produce_records(cluster, A, "on-disk", sent[start:start + 4])
        assert answer.error_code == Errors.NONE and answer.base_offset == start, answer
    leader_epoch = described(cluster, C, "on-disk").leader_epoch
    # acks=all: every replica holds the batches. Followers write them as they fetched them.
    for broker in (A, B, C):
        segment = cluster.plans[broker].home / "data" / "on-disk-0" / "00000000000000000000.log"
        data = segment.read_bytes()
        theirs = []
        for batch in MemoryRecords(data):
            assert batch.validate_crc() and batch.leader_epoch == leader_epoch
            theirs += [(r.offset, r.key, r.value, r.timestamp, tuple(r.headers)) for r in batch]
        assert theirs == [(i, r.key, r.value, r.timestamp, r.headers) for i, r in enumerate(sent)], broker
        assert b.end_offset(data) == len(sent)



def set_elr(c: LocalCluster, level: int) -> None:
    """KIP-966's eligible.leader.replicas.version, as `kraftlog features upgrade|downgrade` sets it."""
    request = cpb.UpdateFeaturesRequest(feature_updates=[cpb.UpdateFeaturesRequest.FeatureUpdate(
        feature="eligible.leader.replicas.version", max_version_level=level, upgrade_type=1 if level else 2)])
    answer = c.broker_stub(C).UpdateFeatures(request, timeout=30)
    assert answer.error_code == Errors.NONE, answer


def test_with_eligible_leader_replicas_only_an_unclean_shutdown_costs_the_last_member_its_place(cluster) -> None:
    """KIP-966 on, "elr" on A, B, C (min ISR 2): B stopped leaves the ISR while it is still at min
    ISR (not eligible: it may miss what commits next), C stopped then is the ELR, and A alone -
    whose acks=1 write does not move the high watermark. A stopped cleanly (its marker holds its
    broker epoch) comes back as the ISR and leads again; killed (no marker), it comes back out of
    the ISR, in the last known ELR, and does not lead: C, resumed, is elected from the ELR with
    every acknowledged record."""
    set_elr(cluster, 1)
    try:
        create_placed(cluster, "elr", (A, B, C), {"min.insync.replicas": "2"})
        wait_for(cluster, A, "elr", lambda p: sorted(p.isr_nodes) == [A, B, C], "isr [A, B, C]")
        first = numbered("committed", 5)
        assert acknowledged(cluster, A, "elr", first) == 0
        cluster.pause(B)
        two = wait_for(cluster, A, "elr", lambda p: sorted(p.isr_nodes) == [A, C], "isr [A, C]")
        assert list(two.eligible_leader_replicas) == []
        cluster.pause(C)
        alone = wait_for(cluster, A, "elr", lambda p: list(p.isr_nodes) == [A], "isr [A]")
        assert alone.leader_id == A and list(alone.eligible_leader_replicas) == [C], alone
        assert acknowledged(cluster, A, "elr", [b"acks=1 alone"], acks=1) == len(first)
        assert fetch(cluster, A, "elr", 0).high_watermark == len(first)  # strict min ISR: it stays

        assert cluster.stop(A) == 0  # a clean shutdown: the marker holds A's broker epoch
        cluster.start(A)
        cluster.wait_for_brokers([A], among=[A])
        back = wait_for(cluster, A, "elr", lambda p: p.leader_id == A, "A leading again after a clean restart")
        assert list(back.isr_nodes) == [A] and list(back.eligible_leader_replicas) == [C], back

        cluster.kill(A)  # no marker: an unclean shutdown, whatever its fsyncs kept
        cluster.start(A)
        cluster.wait_for_brokers([A], among=[A])
        out = wait_for(cluster, A, "elr", lambda p: list(p.last_known_elr) == [A], "A in the last known ELR")
        assert out.leader_id == -1 and list(out.isr_nodes) == [] and list(out.eligible_leader_replicas) == [C], out

        for follower in (B, C):
            cluster.resume(follower)
        elected = wait_for(cluster, A, "elr", lambda p: p.leader_id >= 0, "a leader again")
        assert elected.leader_id == C, elected  # the ELR's; B is not eligible, A is last known only
        assert consumed(cluster, C, "elr", len(first)) == first
        # once the ISR is back at min ISR (B or A caught up and taken back), both lists empty
        done = wait_for(cluster, A, "elr", lambda p: len(p.isr_nodes) >= 2 and not p.last_known_elr
                        and not p.eligible_leader_replicas, "the ISR back at min ISR")
        assert done.leader_id == C
    finally:
        set_elr(cluster, 0)
