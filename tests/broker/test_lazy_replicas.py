"""Replicas whose log is opened on first use (broker/partition.py, broker/replica_manager.py):
an unopened replica answers as an empty log at offset 0 without a directory,
and its first append (as leader or follower) creates the log."""
from __future__ import annotations

import asyncio
import gc
import tracemalloc
import uuid

import pytest

from broker.delete_records import delete_records
from broker.errors import Error
from broker.follower_fetch import fetch_state
from broker.offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, list_offset, offset_for_leader_epoch
from broker.produce import append
from broker.replica_manager import ReplicaManager
from broker.server import full_delta
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import metadata_pb2 as mpb
from partition_log import partition_metadata
from partition_log.log_manager import LogManager, RECOVERY_POINT_FILE

from .helpers import Cluster, batch_of, fetch_request, fetched, replicate, run
from .test_replica_fetcher import Network, until


@pytest.fixture
def cluster(tmp_path):
    return Cluster(tmp_path, (1, 2, 3))


def directory(cluster, broker_id, name):
    return cluster[broker_id].log_manager.log_dir / name


def test_an_unopened_leader_answers_an_empty_logs_offsets_and_fetches_without_a_directory(cluster):
    cluster.create_topic("orders", {0: [1, 2, 3]})
    leader = cluster[1].get("orders", 0)
    assert not leader.opened and not directory(cluster, 1, "orders-0").exists()
    for timestamp in (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP):
        answer = list_offset(cluster[1], "orders", 0, timestamp, 0)
        assert (answer.error_code, answer.offset, answer.leader_epoch) == (0, 0, 0)
    assert list_offset(cluster[1], "orders", 0, 1_000, -1).offset == -1  # no record has a timestamp
    epoch = offset_for_leader_epoch(cluster[1], "orders", 0, 0, 0)
    assert (epoch.error_code, epoch.leader_epoch, epoch.end_offset) == (0, 0, 0)
    response = run(fetched(cluster[1], fetch_request("orders", 0, 0, current_leader_epoch=0)))
    [[answer]] = [t.partitions for t in response.responses]
    assert (answer.error_code, answer.high_watermark, answer.log_start_offset, answer.records) == (0, 0, 0, b"")
    response = run(fetched(cluster[1], fetch_request("orders", 0, 5)))
    assert response.responses[0].partitions[0].error_code == Error.OFFSET_OUT_OF_RANGE
    # Followers fetch and are counted as caught up, still nothing on disk.
    run(replicate(cluster, 2, rounds=2))
    assert leader.leadership.followers[2].log_end_offset == 0
    assert fetch_state(cluster[2].get("orders", 0), 100) == (0, 0, 0, -1, 0, 100)
    for broker_id in (1, 2, 3):
        assert not cluster[broker_id].get("orders", 0).opened
        assert not directory(cluster, broker_id, "orders-0").exists()


def test_the_first_produce_opens_the_leaders_log_and_the_first_fetch_with_data_a_followers(cluster):
    topic_id = cluster.create_topic("orders", {0: [1, 2, 3], 1: [1, 2, 3]})
    cluster.change("orders", 0, leader=2)
    cluster.change("orders", 0, leader=1)  # epoch 2, never written: recorded when the log opens
    leader = cluster[1].get("orders", 0)
    result = run(append(cluster[1], "orders", 0, batch_of([b"a", b"b"]), 1, 1000))
    assert result.error == 0 and leader.opened and leader.log_end_offset == 2
    assert [(e.epoch, e.start_offset) for e in leader.log.leader_epochs.entries] == [(2, 0)]
    assert partition_metadata.read(directory(cluster, 1, "orders-0")) == topic_id
    run(replicate(cluster, 2))
    follower = cluster[2].get("orders", 0)
    assert follower.opened and follower.log_end_offset == 2
    assert partition_metadata.read(directory(cluster, 2, "orders-0")) == topic_id
    # The partition nothing was written to stays unopened everywhere.
    assert not any(cluster[b].get("orders", 1).opened for b in (1, 2, 3))
    run(replicate(cluster, 2))
    assert leader.high_watermark == 0  # broker 3 has not fetched: an ISR member holds less
    run(replicate(cluster, 3, rounds=2))  # the second fetch tells the leader broker 3 holds both
    run(replicate(cluster, 2))
    assert leader.high_watermark == 2 and cluster[2].get("orders", 0).high_watermark == 2


def test_a_leader_of_an_epoch_it_never_wrote_makes_a_follower_truncate_as_an_opened_log_would(cluster):
    cluster.create_topic("orders", {0: [1, 2]})
    run(append(cluster[1], "orders", 0, batch_of([b"a"]), 1, 1000))
    run(replicate(cluster, 2))
    cluster.change("orders", 0, leader=2)  # epoch 1 at offset 1 on broker 2 (opened)
    cluster.change("orders", 0, leader=1)  # epoch 2
    assert cluster[1].get("orders", 0).end_offset_for_epoch(1) == (0, 1)
    cluster.create_topic("events", {0: [3, 1]})
    cluster.change("events", 0, leader=1)  # epoch 1 on broker 1, unopened
    unopened = cluster[1].get("events", 0)
    assert not unopened.opened and unopened.latest_epoch == 1
    assert [unopened.end_offset_for_epoch(e) for e in (0, 1, 2)] == [(0, 0), (1, 0), (-1, -1)]
    cluster.change("events", 0, leader=3)  # broker 1 follows, fetching with its last epoch
    assert fetch_state(cluster[1].get("events", 0), 10)[3] == 1
    run(replicate(cluster, 1))
    assert not unopened.opened and unopened.log_end_offset == 0


def test_a_restart_recovers_an_existing_log_before_its_replica_serves(cluster):
    cluster.create_topic("orders", {0: [1], 1: [1]})
    run(append(cluster[1], "orders", 0, batch_of([b"a", b"b", b"c"]), 1, 1000))
    restarted = cluster.restart(1, clean=False)
    partition = restarted.get("orders", 0)
    assert partition.opened and partition.log_end_offset == 3  # opened, recovered, at once
    assert partition.log.load_report.recovered_segments == 1
    assert not restarted.get("orders", 1).opened and not directory(cluster, 1, "orders-1").exists()
    restarted = cluster.restart(1, clean=True)
    assert restarted.get("orders", 0).log.load_report.recovered_segments == 0
    checkpointed = (restarted.log_manager.log_dir / RECOVERY_POINT_FILE).read_text()
    assert "orders 0 3" in checkpointed and "orders 1" not in checkpointed


def test_a_directory_of_a_topic_deleted_and_made_again_while_the_broker_was_away_is_deleted(cluster):
    old_id = cluster.create_topic("orders", {0: [1, 2]})
    run(append(cluster[1], "orders", 0, batch_of([b"old"]), 1, 1000))
    away = cluster.brokers.pop(1)
    away.log_manager.close()
    cluster.remove_topic("orders")
    new_id = cluster.create_topic("orders", {0: [2, 1]})
    assert new_id != old_id
    logs = LogManager(away.log_manager.log_dir, clock=cluster.clock)
    assert logs.logs[("orders", 0)].log_end_offset == 1  # the directory is still there at start
    back = cluster.brokers[1] = ReplicaManager(1, logs, cluster.clock, timer=cluster.timer)
    back.apply_metadata(cluster.image, full_delta(cluster.image))
    partition = back.get("orders", 0)
    assert partition.topic_id == new_id and not partition.opened and partition.log_end_offset == 0
    assert not directory(cluster, 1, "orders-0").exists() and ("orders", 0) not in logs.logs


def test_a_directory_without_partition_metadata_is_adopted_and_labelled(cluster):
    topic_id = cluster.create_topic("orders", {0: [1]})
    run(append(cluster[1], "orders", 0, batch_of([b"a"]), 1, 1000))
    (directory(cluster, 1, "orders-0") / partition_metadata.FILE_NAME).unlink()  # older software's directory
    restarted = cluster.restart(1)
    assert restarted.get("orders", 0).log_end_offset == 1
    assert partition_metadata.read(directory(cluster, 1, "orders-0")) == topic_id


def test_an_unreadable_partition_metadata_is_adopted_not_deleted(cluster):
    topic_id = cluster.create_topic("orders", {0: [1]})
    run(append(cluster[1], "orders", 0, batch_of([b"a"]), 1, 1000))
    (directory(cluster, 1, "orders-0") / partition_metadata.FILE_NAME).write_bytes(b"version: 7\x00\xff")
    restarted = cluster.restart(1)
    assert restarted.get("orders", 0).log_end_offset == 1  # the data stays: a damaged label names no other topic
    assert partition_metadata.read(directory(cluster, 1, "orders-0")) == topic_id


def test_deleting_a_topic_with_unopened_replicas(cluster):
    cluster.create_topic("orders", {i: [1, 2, 3] for i in range(4)})
    run(append(cluster[1], "orders", 2, batch_of([b"a"]), 1, 1000))
    unopened = cluster[1].get("orders", 0)
    cluster.remove_topic("orders")
    for broker_id in (1, 2, 3):
        assert cluster[broker_id].partitions == {}
        assert sorted(cluster.last_changes[broker_id].stopped) == [("orders", i) for i in range(4)]
        assert not list(cluster[broker_id].log_manager.log_dir.glob("orders-*"))
    with pytest.raises(Exception):
        unopened.open()  # a removed replica creates no directory afterwards
    assert not directory(cluster, 1, "orders-0").exists()


def test_delete_records_and_log_jobs_with_unopened_replicas(cluster):
    cluster.create_topic("orders", {0: [1, 2, 3]})
    run(replicate(cluster, 2))
    run(replicate(cluster, 3))
    request = bpb.DeleteRecordsRequest(timeout_ms=1000, topics=[bpb.DeleteRecordsRequest.Topic(
        name="orders", partitions=[bpb.DeleteRecordsRequest.Partition(partition_index=0, offset=-1)])])
    [[answer]] = [t.partitions for t in run(delete_records(cluster[1], request)).topics]
    assert (answer.error_code, answer.low_watermark) == (0, 0)
    request.topics[0].partitions[0].offset = 1
    [[answer]] = [t.partitions for t in run(delete_records(cluster[1], request)).topics]
    assert answer.error_code == Error.OFFSET_OUT_OF_RANGE
    logs = cluster[1].log_manager
    assert logs.run_retention() == 0 and logs.run_cleaner() == []
    logs.checkpoint()
    logs.checkpoint_high_watermarks()
    logs.flush_due()
    cluster.set_config("orders", "retention.ms", "1000")  # taken when the log opens
    partition = cluster[1].get("orders", 0)
    assert not partition.opened and partition.config.retention_ms == 1000
    assert partition.log.config.retention_ms == 1000


def test_an_unopened_replica_in_an_offline_log_directory_answers_kafka_storage_error(cluster):
    cluster.create_topic("orders", {0: [1, 2, 3]})
    cluster[1].log_manager.failure.fail(OSError(5, "Input/output error"))
    response = run(fetched(cluster[1], fetch_request("orders", 0, 0)))
    assert response.responses[0].partitions[0].error_code == Error.KAFKA_STORAGE_ERROR
    result = run(append(cluster[1], "orders", 0, batch_of([b"a"]), 1, 1000))
    assert result.error == Error.KAFKA_STORAGE_ERROR
    assert not directory(cluster, 1, "orders-0").exists()
    cluster.create_topic("events", {0: [1, 2]})  # no replica starts in an offline directory
    assert ("events", 0) in cluster.last_changes[1].failed


def test_fetch_sessions_over_unopened_replicas_open_only_what_is_written(tmp_path):
    from .test_replica_fetcher import CONFIG

    cluster = Cluster(tmp_path, (1, 2, 3), config=CONFIG)
    cluster.create_topic("orders", {i: [1 + i % 3, 1 + (i + 1) % 3, 1 + (i + 2) % 3] for i in range(6)})

    async def go():
        network = Network(cluster)
        network.sync()
        try:
            await asyncio.sleep(0.5)  # full fetches, then incremental ones parked on idle sessions
            assert all(f._sessions for f in network.fetchers.values())
            assert not any(p.opened for b in (1, 2, 3) for p in cluster[b].partitions.values())
            assert (await append(cluster[1], "orders", 3, batch_of([b"x"]), -1, 2000)).error == 0
            await until(lambda: all(cluster[b].get("orders", 3).log_end_offset == 1 for b in (1, 2, 3)))
        finally:
            await network.close()
        opened = {(b, p.index) for b in (1, 2, 3) for p in cluster[b].partitions.values() if p.opened}
        assert opened == {(1, 3), (2, 3), (3, 3)}
    run(go())


def idle_replica_bytes(tmp_path, partitions: int) -> float:
    """tracemalloc bytes a ReplicaManager holds per replica it leads or follows, unused, beside the image."""
    cluster = Cluster(tmp_path / "image", ())
    for b in (1, 2, 3):
        cluster.apply(mpb.MetadataRecord(register_broker=mpb.RegisterBrokerRecord(
            broker_id=b, incarnation_id=f"inc-{b}", broker_epoch=100 + b)))
    for t in range(partitions // 100):
        topic_id = uuid.uuid4().bytes
        records = [mpb.MetadataRecord(topic=mpb.TopicRecord(name=f"topic-{t}", topic_id=topic_id))]
        for i in range(100):
            replicas = [1 + (t + i) % 3, 1 + (t + i + 1) % 3, 1 + (t + i + 2) % 3]
            records.append(mpb.MetadataRecord(partition=mpb.PartitionRecord(
                partition_id=i, topic_id=topic_id, replicas=replicas, isr=replicas, leader=replicas[0])))
        cluster.apply(*records)
    delta = full_delta(cluster.image)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        manager = ReplicaManager(1, LogManager(tmp_path / "broker-1"))
        manager.apply_metadata(cluster.image, delta)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(manager.partitions) == partitions and len(manager.led) == partitions // 3 + (partitions % 3 > 0)
    assert not any(p.opened for p in manager.partitions.values())
    assert not list((tmp_path / "broker-1").glob("topic-*"))
    return held / partitions


def test_an_idle_replica_costs_under_750_bytes_beside_the_image(tmp_path):
    # Bytes are deterministic: ~530 B (640 B before a leader's followers were a tuple and its
    # clocks the replica manager's); 750 B holds the image's ~400 B and the fetch sessions'
    # ~300 B per replica under target 6's 2 KB.
    per_replica = idle_replica_bytes(tmp_path, 3000)
    assert per_replica < 750, f"{per_replica:.0f} B per idle replica"


def test_followers_parked_on_idle_fetch_sessions_hold_under_400_bytes_a_replica(tmp_path):
    # Three brokers' fetchers and their leaders' sessions, requests and answers serialized as
    # over gRPC. Bytes are deterministic: ~280 B here, 560 B when a session entry held the
    # parsed FetchPartition (with its request's topic name) and a full fetch left a future on
    # every partition's signal (docs/bench.md, target 6).
    from bench.replica_fetch_memory import measure

    result = run(measure(600, tmp_path, use_rss=False, top=0))
    sessions = result["bytes_per_replica_with_sessions"] - result["bytes_per_replica_created"]
    assert sessions < 400, f"{sessions:.0f} B per replica for the fetch sessions"
