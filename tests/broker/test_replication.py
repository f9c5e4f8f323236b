"""Followers replicate through follower_fetch: identical logs, the leader's high
watermark learned, divergence found and truncated, stale answers ignored."""
from __future__ import annotations

import asyncio

import pytest

from broker import follower_fetch
from broker.errors import Error
from broker.follower_fetch import Outcome
from broker.offsets import list_offset
from broker.produce import append
from kafka_protocol.records import iter_records

from .helpers import Cluster, batch_of, fetch_request, replicate, run, fetched


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    c.create_topic("orders", {0: [1, 2, 3]})
    return c


def produce(cluster, leader, values, acks=1):
    return run(append(cluster[leader], "orders", 0, batch_of(values), acks, 1000))


def log_values(cluster, broker_id):
    lg = cluster[broker_id].get("orders", 0).log
    return [r.value for data in lg.iter_reads(lg.log_start_offset, 1 << 20) for r in iter_records(data)]


def epochs(cluster, broker_id):
    return [(e.epoch, e.start_offset) for e in cluster[broker_id].get("orders", 0).log.leader_epochs.entries]


def test_followers_copy_the_leaders_bytes_and_learn_its_high_watermark(cluster):
    async def go():
        produced = [asyncio.ensure_future(append(cluster[1], "orders", 0, batch_of([v]), -1, 5000))
                    for v in (b"a", b"b", b"c")]
        await asyncio.sleep(0)
        for _ in range(3):
            await replicate(cluster, 2)
            await replicate(cluster, 3)
        return await asyncio.gather(*produced)
    assert [r.error for r in run(go())] == [Error.NONE] * 3
    leader = cluster[1].get("orders", 0).log
    for broker_id in (2, 3):
        follower = cluster[broker_id].get("orders", 0).log
        assert follower.read(0, 1 << 20) == leader.read(0, 1 << 20)
        assert follower.high_watermark == 3
        assert epochs(cluster, broker_id) == [(0, 0)]


def test_traffic_counts_clients_bytes_apart_from_the_replicas(cluster):
    batches = [batch_of([b"a", b"b"]), batch_of([b"c"])]
    for batch in batches:
        assert run(append(cluster[1], "orders", 0, batch, 1, 1000)).error == Error.NONE
    size = sum(map(len, batches))
    for follower in (2, 3):
        run(replicate(cluster, follower, rounds=2))  # the second fetch moves the high watermark, no bytes
    answer = run(fetched(cluster[1], fetch_request("orders", 0, 0)))
    assert len(answer.responses[0].partitions[0].records) == size
    leader, follower = cluster[1].traffic, cluster[2].traffic
    assert (leader.bytes_in, leader.messages_in, leader.bytes_out) == (size, 3, size)
    assert (leader.replication_bytes_in, leader.replication_bytes_out) == (0, 2 * size)
    assert (follower.bytes_in, follower.messages_in, follower.bytes_out) == (0, 0, 0)
    assert (follower.replication_bytes_in, follower.replication_bytes_out) == (size, 0)


def test_a_deposed_leader_truncates_what_the_new_leader_never_had(cluster):
    produce(cluster, 1, [b"a", b"b"])
    run(replicate(cluster, 2, rounds=2))
    run(replicate(cluster, 3, rounds=2))
    produce(cluster, 1, [b"lost"])  # acks=1: only broker 1 has it
    cluster.change("orders", 0, leader=2, isr=[2, 3])
    produce(cluster, 2, [b"c", b"d"])
    run(replicate(cluster, 1))
    assert log_values(cluster, 1) == [b"a", b"b"]  # truncated to where epoch 0 ends on the leader
    run(replicate(cluster, 1))
    assert log_values(cluster, 1) == [b"a", b"b", b"c", b"d"]
    assert epochs(cluster, 1) == [(0, 0), (1, 2)]


def test_a_follower_with_an_epoch_the_new_leader_never_wrote_truncates_to_the_shared_epochs_end(cluster):
    produce(cluster, 1, [b"a", b"b"])
    run(replicate(cluster, 2, rounds=1))  # broker 2 has a, b but has not learned the HW
    run(replicate(cluster, 3, rounds=1))
    cluster.change("orders", 0, leader=2, isr=[2, 3])
    produce(cluster, 2, [b"only-on-2"])
    cluster.change("orders", 0, leader=3, isr=[3])  # epoch 2; broker 3 never saw epoch 1
    assert epochs(cluster, 3) == [(0, 0), (2, 2)]
    assert cluster[2].get("orders", 0).high_watermark == 0
    run(replicate(cluster, 2))
    # The leader answers (epoch 0, end 2): the follower cuts there, not back to its HW.
    assert log_values(cluster, 2) == [b"a", b"b"] and epochs(cluster, 2) == [(0, 0)]


def test_a_follower_whose_epochs_all_predate_the_leaders_truncates_its_whole_log(cluster):
    produce(cluster, 1, [b"a"])
    run(replicate(cluster, 2, rounds=1))
    # Broker 2 alone writes in epochs 1 and 2 (leader twice while others were away).
    cluster.change("orders", 0, leader=2, isr=[2])
    produce(cluster, 2, [b"x1"])
    cluster.change("orders", 0, leader=3, isr=[3])
    cluster.change("orders", 0, leader=2, isr=[2])
    produce(cluster, 2, [b"x3"])
    # Broker 3 ends up leader in epoch 4 with only what it had.
    cluster.change("orders", 0, leader=3, isr=[3])
    produce(cluster, 3, [b"z"])
    # Broker 3's epoch cache starts at epoch 4: asked for epoch 3 it answers
    # (3, 0) - Kafka's answer for an epoch older than the cache - so broker 2
    # cuts its whole log, then copies the leader's.
    run(replicate(cluster, 2))
    assert log_values(cluster, 2) == []
    run(replicate(cluster, 2))
    assert log_values(cluster, 2) == log_values(cluster, 3) == [b"z"]
    assert epochs(cluster, 2) == [(4, 0)]


def test_a_follower_behind_the_leaders_log_start_starts_over_there(cluster):
    cluster.change("orders", 0, isr=[1])
    for v in (b"a", b"b", b"c", b"d"):
        produce(cluster, 1, [v])
    leader = cluster[1].get("orders", 0).log
    leader.advance_log_start_offset(2)
    request = follower_fetch.fetch_requests(cluster[2], max_wait_ms=0)[1]
    response = run(fetched(cluster[1], request))
    outcome = follower_fetch.apply_fetch_response(cluster[2], follower_fetch.sent_states(request), response)[("orders", 0)]
    assert outcome.outcome is Outcome.OUT_OF_RANGE
    start = list_offset(cluster[1], "orders", 0, -2, 0, replica_id=2).offset
    end = list_offset(cluster[1], "orders", 0, -1, 0, replica_id=2).offset
    assert (start, end) == (2, 4)
    assert follower_fetch.reset_out_of_range(cluster[2].get("orders", 0), start, end) == 2
    run(replicate(cluster, 2))
    assert log_values(cluster, 2) == [b"c", b"d"]


def test_a_follower_ahead_of_the_leaders_log_end_truncates_to_it(cluster):
    produce(cluster, 1, [b"a"])
    run(replicate(cluster, 2))
    follower = cluster[2].get("orders", 0)
    assert follower_fetch.reset_out_of_range(follower, 0, 0) == 0 and follower.log.log_end_offset == 0


def test_an_answer_to_an_outdated_request_is_ignored(cluster):
    produce(cluster, 1, [b"a"])
    request = follower_fetch.fetch_requests(cluster[2], max_wait_ms=0)[1]
    response = run(fetched(cluster[1], request))
    cluster.change("orders", 0, leader=3)
    outcome = follower_fetch.apply_fetch_response(cluster[2], follower_fetch.sent_states(request), response)[("orders", 0)]
    assert outcome.outcome is Outcome.STALE and log_values(cluster, 2) == []


def test_an_error_answer_changes_nothing(cluster):
    cluster.change("orders", 0, leader=3)  # broker 2 still asks broker 1, which now follows
    request = follower_fetch.fetch_requests(cluster[2], max_wait_ms=0)[3]
    response = run(fetched(cluster[1], request))
    outcome = follower_fetch.apply_fetch_response(cluster[2], follower_fetch.sent_states(request), response)[("orders", 0)]
    assert (outcome.outcome, outcome.error) == (Outcome.ERROR, Error.NOT_LEADER_OR_FOLLOWER)


def test_fetch_requests_group_partitions_by_leader_and_skip_those_backing_off(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.create_topic("orders", {0: [1, 2], 1: [3, 2], 2: [1, 2]})
    requests = follower_fetch.fetch_requests(cluster[2], skip=frozenset({("orders", 2)}))
    assert sorted(requests) == [1, 3]
    assert [p.partition for t in requests[1].topics for p in t.partitions] == [0]
    assert requests[1].replica_id == 2 and requests[1].replica_epoch == 102
    assert requests[1].max_wait_ms == 500


def test_the_leader_answers_out_of_range_when_it_cannot_place_the_followers_epoch(cluster):
    produce(cluster, 1, [b"a", b"b"])
    answer = run(fetched(cluster[1], fetch_request("orders", 0, 2, replica_id=2, last_fetched_epoch=5)))
    assert answer.responses[0].partitions[0].error_code == Error.OFFSET_OUT_OF_RANGE
    cluster[1].get("orders", 0).log.update_high_watermark(2)
    cluster[1].get("orders", 0).log.advance_log_start_offset(1)
    answer = run(fetched(cluster[1], fetch_request("orders", 0, 0, replica_id=2, last_fetched_epoch=0)))
    assert answer.responses[0].partitions[0].error_code == Error.OFFSET_OUT_OF_RANGE


@pytest.mark.parametrize("clean", [True, False], ids=["clean shutdown", "kill -9 after a checkpoint"])
def test_a_restarted_broker_starts_from_its_checkpointed_high_watermark(cluster, clean):
    async def go():
        produced = asyncio.ensure_future(append(cluster[1], "orders", 0, batch_of([b"a", b"b", b"c"]), -1, 5000))
        await asyncio.sleep(0)
        for _ in range(3):
            await replicate(cluster, 2)
            await replicate(cluster, 3)
        return await produced
    assert run(go()).error == Error.NONE
    assert cluster[2].get("orders", 0).high_watermark == 3
    for broker_id in (1, 2):
        if not clean:
            cluster[broker_id].log_manager.checkpoint_high_watermarks()  # the periodic job
        cluster.restart(broker_id, clean=clean)
    leader, follower = cluster[1].get("orders", 0), cluster[2].get("orders", 0)
    assert leader.is_leader and leader.high_watermark == 3 and follower.high_watermark == 3
    # Before any follower fetched from the restarted leader, consumers get everything acknowledged.
    answer = run(fetched(cluster[1], fetch_request("orders", 0, 0))).responses[0].partitions[0]
    assert answer.error_code == Error.NONE and answer.high_watermark == 3
    assert [r.value for r in iter_records(answer.records)] == [b"a", b"b", b"c"]
