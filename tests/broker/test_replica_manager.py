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
    # Logs open on first use: leading or following creates no directory (test_lazy_replicas.py).
    assert not (cluster[1].log_manager.log_dir / "orders-0").exists() and not p0.opened


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


def expected_roles(replicas):
    """The led and followed partitions, found the slow way: every partition looked at."""
    led = {tp for tp, p in replicas.partitions.items() if p.is_leader}
    followed = {}
    for tp, p in replicas.partitions.items():
        if not p.is_leader and p.leader_id >= 0:
            followed.setdefault(p.leader_id, set()).add(tp)
    return led, followed


def test_the_led_and_followed_indexes_match_the_partitions_through_every_kind_of_change(cluster):
    cluster.create_topic("orders", {i: [1 + i % 4, 1 + (i + 1) % 4, 1 + (i + 2) % 4] for i in range(8)})
    cluster.create_topic("events", {0: [2, 1], 1: [1, 2]})
    cluster.change("orders", 0, leader=2, isr=[2, 3])       # leadership moves away
    cluster.change("orders", 1, leader=3, isr=[3, 4])       # and to a follower of someone else
    cluster.change("orders", 2, leader=-1, isr=[3])         # leaderless: followed by nobody
    cluster.change("orders", 3, replicas=[4, 2, 3])         # broker 1 loses its replica
    cluster.remove_topic("events")
    cluster.create_topic("events", {0: [3, 1]})             # the same name, a new topic id
    for broker_id in (1, 2, 3, 4):
        replicas = cluster[broker_id]
        led, followed = expected_roles(replicas)
        assert set(replicas.led) == led
        assert {leader: {(p.topic, p.index) for p in ps} for leader, ps in replicas.followed().items()} == followed
        assert sorted(replicas.followed_leaders()) == sorted(followed)
        for leader, tps in followed.items():
            assert {(p.topic, p.index) for p in replicas.followed_by(leader)} == tps
    [events] = [p for p in cluster[1].followed_by(3) if p.topic == "events"]
    assert events.topic_id == cluster.image.topic_ids["events"]  # the new topic's replica, not the old one
    assert ("orders", 3) not in cluster[1].partitions and ("orders", 2) not in cluster[3].led


def test_a_topic_config_change_touches_only_that_topics_partitions(cluster):
    cluster.create_topic("orders", {0: [1, 2, 3]})
    cluster.create_topic("events", {0: [1, 2, 3]})
    events_config = cluster[1].get("events", 0).log.config
    cluster.set_config("orders", "min.insync.replicas", "2")
    cluster.set_config("orders", "retention.ms", "1000")
    assert cluster[1].get("orders", 0).min_insync_replicas == 2
    assert cluster[1].get("orders", 0).log.config.retention_ms == 1000
    assert cluster[1].get("events", 0).log.config is events_config
    cluster.set_config("", "min.insync.replicas", "3", topic=False)
    assert cluster[1].get("events", 0).min_insync_replicas == 3
    assert cluster[1].get("orders", 0).min_insync_replicas == 2  # the topic's own setting wins
