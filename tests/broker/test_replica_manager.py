"""Metadata deltas make a broker lead, follow or drop its partitions."""
from __future__ import annotations

from dataclasses import replace

import pytest

from broker.errors import BrokerError, Error

from .helpers import Cluster, batch_of


@pytest.fixture
def cluster(tmp_path):
    return Cluster(tmp_path, (1, 2, 3, 4))


def test_a_new_topic_makes_the_first_replica_leader_and_the_others_followers(cluster):
    cluster.create_topic("orders", {0: [1, 2, 3], 1: [2, 3, 1]})
    p0 = cluster[1].get("orders", 0)
    assert p0.is_leader and p0.leader_epoch == 0 and p0.isr == (1, 2, 3)
    assert [(p.topic, p.index) for p in cluster.last_changes[1].leaders] == [("orders", 0)]
    assert [(p.topic, p.index) for p in cluster.last_changes[1].followers] == [("orders", 1)]
    follower = cluster[2].get("orders", 0)
    assert not follower.is_leader and follower.leader_id == 1
    assert cluster[2].followed() == {1: [follower]}
    assert ("orders", 0) not in cluster[4].partitions
    assert (cluster[1].log_manager.log_dir / "orders-0").is_dir()


def test_a_broker_without_the_partition_says_not_leader_and_an_unknown_one_says_unknown(cluster):
    cluster.create_topic("orders", {0: [1, 2, 3]})
    with pytest.raises(BrokerError) as not_here:
        cluster[4].get("orders", 0)
    assert not_here.value.error == Error.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(BrokerError) as unknown:
        cluster[4].get("orders", 7)
    assert unknown.value.error == Error.UNKNOWN_TOPIC_OR_PARTITION
    assert cluster[4].leader_hint("orders", 0) == (1, 0)


def test_leadership_moves_with_a_new_leader_epoch(cluster):
    cluster.create_topic("orders", {0: [1, 2, 3]})
    cluster.change("orders", 0, leader=2, isr=[2, 3])
    old, new = cluster[1].get("orders", 0), cluster[2].get("orders", 0)
    assert not old.is_leader and old.leader_id == 2 and old.leader_epoch == 1
    assert new.is_leader and new.leader_epoch == 1 and new.isr == (2, 3)
    assert cluster.last_changes[1].followers == [old]
    assert cluster.last_changes[3].followers == [cluster[3].get("orders", 0)]


def test_the_new_leader_records_its_epoch_at_its_log_end_at_once(cluster):
    cluster.create_topic("orders", {0: [1, 2, 3]})
    entries = cluster[1].get("orders", 0).log.leader_epochs.entries
    assert [(e.epoch, e.start_offset) for e in entries] == [(0, 0)]
    cluster.change("orders", 0, leader=2)
    entries = cluster[2].get("orders", 0).log.leader_epochs.entries
    assert [(e.epoch, e.start_offset) for e in entries] == [(1, 0)]


def test_an_isr_change_keeps_the_epoch_and_the_followers_fetch_state(cluster):
    cluster.create_topic("orders", {0: [1, 2, 3]})
    leader = cluster[1].get("orders", 0)
    leader.record_follower_fetch(2, 0)
    cluster.change("orders", 0, isr=[1, 2])
    assert leader.leader_epoch == 0 and leader.partition_epoch == 1 and leader.isr == (1, 2)
    assert leader.leadership.followers[2].log_end_offset == 0
    assert cluster.last_changes[1].leaders == [] and cluster.last_changes[2].followers == []


def test_stale_partition_state_is_ignored(cluster):
    cluster.create_topic("orders", {0: [1, 2, 3]})
    cluster.change("orders", 0, leader=2)
    follower = cluster[1].get("orders", 0)
    stale = cluster.image.topic("orders").partitions[0]
    assert follower.become_leader(replace(stale, leader=1, leader_epoch=0, partition_epoch=0)) is False
    assert not follower.is_leader


def test_deleting_a_topic_stops_its_replicas_and_deletes_their_logs(cluster):
    cluster.create_topic("orders", {0: [1, 2, 3]})
    leader = cluster[1].get("orders", 0)
    cluster.remove_topic("orders")
    for broker_id in (1, 2, 3):
        assert cluster[broker_id].partitions == {}
        assert cluster.last_changes[broker_id].stopped == [("orders", 0)]
        assert not (cluster[broker_id].log_manager.log_dir / "orders-0").exists()
        assert ("orders", 0) not in cluster[broker_id].log_manager.logs
    assert leader.stopped and not leader.is_leader
    with pytest.raises(BrokerError) as gone:
        cluster[1].get("orders", 0)
    assert gone.value.error == Error.UNKNOWN_TOPIC_OR_PARTITION


def test_a_topic_made_again_under_the_same_name_starts_with_an_empty_log(cluster):
    cluster.create_topic("orders", {0: [1]})
    cluster[1].get("orders", 0).log.append_as_leader(batch_of([b"a", b"b"]), 0)
    cluster.remove_topic("orders")
    cluster.create_topic("orders", {0: [1]})
    assert cluster[1].get("orders", 0).log.log_end_offset == 0


def test_a_replica_moved_off_a_broker_is_deleted_there(cluster):
    cluster.create_topic("orders", {0: [1, 2, 3]})
    cluster.change("orders", 0, replicas=[1, 2, 4], isr=[1, 2])
    assert cluster.last_changes[3].stopped == [("orders", 0)]
    assert not (cluster[3].log_manager.log_dir / "orders-0").exists()
    assert cluster[4].get("orders", 0).leader_id == 1
    assert set(cluster[1].get("orders", 0).leadership.followers) == {2, 4}


def test_topic_configs_reach_the_logs_and_min_insync_replicas(cluster):
    cluster.create_topic("orders", {0: [1, 2, 3]}, configs={"max.message.bytes": "2000",
                                                           "min.insync.replicas": "2"})
    partition = cluster[1].get("orders", 0)
    assert partition.log.config.max_message_bytes == 2000 and partition.min_insync_replicas == 2
    cluster.set_config("orders", "min.insync.replicas", "3")
    cluster.set_config("", "retention.ms", "1000", topic=False)
    assert partition.min_insync_replicas == 3 and partition.log.config.retention_ms == 1000
