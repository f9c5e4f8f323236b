"""ListOffsets, OffsetForLeaderEpoch and Metadata."""
from __future__ import annotations

import pytest

from broker.errors import Error
from broker.metadata import metadata_response
from broker.offsets import handle_list_offsets, handle_offset_for_leader_epoch, list_offset, offset_for_leader_epoch
from broker.produce import append
from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.records import Record, encode_batch

from .helpers import Cluster, replicate, run

T0 = 1_700_000_000_000


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    c.create_topic("orders", {0: [1, 2, 3]})
    return c


def produce_at(cluster, *timestamps, leader=1):
    batch = encode_batch([Record(None, b"v", ts) for ts in timestamps])
    return run(append(cluster[leader], "orders", 0, batch, 1, 1000))


def test_earliest_latest_and_by_timestamp_for_consumers_and_followers(cluster):
    produce_at(cluster, T0, T0 + 10)
    produce_at(cluster, T0 + 20)
    assert list_offset(cluster[1], "orders", 0, -1, -1).offset == 0  # HW: nothing replicated yet
    assert list_offset(cluster[1], "orders", 0, -1, -1, replica_id=2).offset == 3  # log end for followers
    assert list_offset(cluster[1], "orders", 0, T0 + 5, -1).offset == -1  # not visible yet
    run(replicate(cluster, 2, rounds=2))
    run(replicate(cluster, 3, rounds=2))
    earliest = list_offset(cluster[1], "orders", 0, -2, 0)
    latest = list_offset(cluster[1], "orders", 0, -1, 0)
    found = list_offset(cluster[1], "orders", 0, T0 + 5, 0)
    none = list_offset(cluster[1], "orders", 0, T0 + 999, 0)
    assert (earliest.offset, earliest.leader_epoch) == (0, 0)
    assert (latest.offset, latest.leader_epoch) == (3, 0)
    assert (found.offset, found.timestamp, found.leader_epoch) == (1, T0 + 10, 0)
    assert (none.error_code, none.offset, none.timestamp) == (0, -1, -1)


def test_list_offsets_errors(cluster):
    assert list_offset(cluster[2], "orders", 0, -1, -1).error_code == Error.NOT_LEADER_OR_FOLLOWER
    assert list_offset(cluster[1], "orders", 0, -1, 3).error_code == Error.UNKNOWN_LEADER_EPOCH
    assert list_offset(cluster[1], "nope", 0, -1, -1).error_code == Error.UNKNOWN_TOPIC_OR_PARTITION
    assert list_offset(cluster[1], "orders", 0, -7, -1).error_code == Error.INVALID_REQUEST


def test_handle_list_offsets(cluster):
    produce_at(cluster, T0)
    request = bpb.ListOffsetsRequest(replica_id=-1, topics=[bpb.ListOffsetsRequest.ListOffsetsTopic(
        name="orders", partitions=[bpb.ListOffsetsRequest.ListOffsetsPartition(
            partition_index=0, current_leader_epoch=-1, timestamp=-2)])])
    response = handle_list_offsets(cluster[1], request)
    assert [(t.name, p.partition_index, p.offset) for t in response.topics for p in t.partitions] == \
        [("orders", 0, 0)]


def test_offset_for_leader_epoch(cluster):
    produce_at(cluster, T0, T0)
    cluster.change("orders", 0, leader=2, isr=[2])
    cluster.change("orders", 0, leader=1, isr=[1])  # epoch 2 on broker 1, starting at 2
    produce_at(cluster, T0)
    answers = {epoch: offset_for_leader_epoch(cluster[1], "orders", 0, epoch, -1) for epoch in (0, 1, 2, 3)}
    assert [(a.leader_epoch, a.end_offset) for a in answers.values()] == [(0, 2), (0, 2), (2, 3), (-1, -1)]
    assert offset_for_leader_epoch(cluster[1], "orders", 0, 0, 1).error_code == Error.FENCED_LEADER_EPOCH
    request = bpb.OffsetForLeaderEpochRequest(replica_id=-1, topics=[
        bpb.OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic="orders", partitions=[
            bpb.OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0, current_leader_epoch=2,
                                                                      leader_epoch=1)])])
    [topic] = handle_offset_for_leader_epoch(cluster[1], request).topics
    assert [(p.partition, p.leader_epoch, p.end_offset) for p in topic.partitions] == [(0, 0, 2)]


def test_an_epoch_older_than_the_cache_ends_where_the_cache_starts(cluster):
    produce_at(cluster, T0)
    lg = cluster[1].get("orders", 0).log
    lg.update_high_watermark(1)
    cluster.change("orders", 0, leader=2, isr=[2])
    cluster.change("orders", 0, leader=1, isr=[1])
    lg.advance_log_start_offset(1)  # epoch 0 is gone from the cache
    assert [(e.epoch, e.start_offset) for e in lg.leader_epochs.entries] == [(2, 1)]
    answer = offset_for_leader_epoch(cluster[1], "orders", 0, 0, -1)
    assert (answer.leader_epoch, answer.end_offset) == (0, 1)


def test_metadata_lists_unfenced_brokers_and_every_topic(cluster):
    cluster.create_topic("audit", {0: [2, 3], 1: [3, 1]})
    cluster.fence(3)
    cluster.change("audit", 1, leader=-1)
    response = metadata_response(cluster.image, bpb.MetadataRequest(all_topics=True), cluster_id="c1",
                                 controller_id=9)
    assert (response.cluster_id, response.controller_id) == ("c1", 9)
    assert [(b.node_id, b.host, b.port) for b in response.brokers] == [(1, "127.0.0.1", 9091),
                                                                       (2, "127.0.0.1", 9092)]
    assert [t.name for t in response.topics] == ["audit", "orders"]
    audit = response.topics[0]
    assert audit.topic_id == cluster.image.topic_ids["audit"]
    got = [(p.partition_index, p.error_code, p.leader_id, list(p.replica_nodes), list(p.isr_nodes),
            list(p.offline_replicas)) for p in audit.partitions]
    assert got == [(0, 0, 2, [2, 3], [2, 3], [3]), (1, Error.LEADER_NOT_AVAILABLE, -1, [3, 1], [3, 1], [3])]


def test_metadata_for_named_topics_says_which_are_unknown(cluster):
    response = metadata_response(cluster.image, bpb.MetadataRequest(topics=["nope", "orders"]), cluster_id="c1")
    assert [(t.name, t.error_code, len(t.partitions)) for t in response.topics] == \
        [("nope", Error.UNKNOWN_TOPIC_OR_PARTITION, 0), ("orders", 0, 1)]
    assert metadata_response(cluster.image, bpb.MetadataRequest(), cluster_id="c1").topics == []
