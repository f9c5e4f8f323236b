"""ISR shrink and expand: the pure rules, then a leader proposing
AlterPartition changes with a fake clock, and the maximal ISR in between."""
from __future__ import annotations

import asyncio

import pytest

from broker import isr
from broker.config import BrokerConfig
from broker.errors import Error
from broker.produce import append
from kafka_protocol.errors import Errors
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb

from .helpers import Cluster, batch_of, fetch_request, run, fetched

LAG = 30000


# -- the pure rules -----------------------------------------------------------------

def test_a_follower_is_caught_up_when_it_reaches_the_leaders_end_or_the_end_it_had_at_the_last_fetch():
    f = isr.FollowerState(2)
    f.record_fetch(0, 10, now_ms=1000)
    assert f.last_caught_up_ms == 0
    f.record_fetch(10, 15, now_ms=2000)  # reached what the leader had at t=1000
    assert f.last_caught_up_ms == 1000
    f.record_fetch(15, 15, now_ms=3000)
    assert f.last_caught_up_ms == 3000 and f.log_end_offset == 15


def test_out_of_sync_is_about_time_unless_the_follower_holds_the_whole_log():
    followers = {2: isr.FollowerState(2, 5, last_caught_up_ms=0), 3: isr.FollowerState(3, 10, last_caught_up_ms=0)}
    assert isr.out_of_sync((1, 2, 3), 1, followers, 10, now_ms=LAG, lag_max_ms=LAG) == []
    assert isr.out_of_sync((1, 2, 3), 1, followers, 10, now_ms=LAG + 1, lag_max_ms=LAG) == [2]


def test_ready_to_join_needs_the_high_watermark_the_epoch_start_and_an_eligible_broker():
    followers = {2: isr.FollowerState(2, 8), 3: isr.FollowerState(3, 10), 4: isr.FollowerState(4, 10)}
    eligible = lambda b, _epoch: b in {2, 3}  # noqa: E731
    assert isr.ready_to_join((1, 2, 3, 4), (1,), followers, 9, 0, eligible) == [3]
    assert isr.ready_to_join((1, 2, 3, 4), (1,), followers, 5, 9, eligible) == [3]
    assert isr.ready_to_join((1, 2, 3, 4), (1,), followers, 5, 0, eligible) == [2, 3]


def test_next_and_maximal_isr():
    assert isr.next_isr((1, 2, 3), [3], []) == (1, 2)
    assert isr.next_isr((1, 2), [], [3]) == (1, 2, 3)
    assert isr.next_isr((1, 2), [], []) is None
    assert isr.maximal_isr((1, 2, 3), (1, 2)) == (1, 2, 3)
    assert isr.maximal_isr((1, 2), (1, 2, 3)) == (1, 2, 3)


def test_the_high_watermark_bound_waits_for_every_member():
    followers = {2: isr.FollowerState(2, 4), 3: isr.FollowerState(3)}
    assert isr.high_watermark_bound(1, 9, (1, 2), followers) == 4
    assert isr.high_watermark_bound(1, 9, (1, 2, 3), followers) is None
    assert isr.high_watermark_bound(1, 9, (1,), followers) == 9


# -- a leader deciding --------------------------------------------------------------

@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path, config=BrokerConfig(replica_lag_time_max_ms=LAG))
    c.create_topic("orders", {0: [1, 2, 3]})
    return c


def follower_fetch(cluster, replica, offset):
    run(fetched(cluster[1], fetch_request("orders", 0, offset, replica_id=replica)))


def items(request):
    return [(p.partition_index, list(p.new_isr), p.partition_epoch, p.leader_epoch)
            for t in request.topics for p in t.partitions]


def answer(request, *, error=Error.NONE, isr_=None, partition_epoch=1):
    response = cpb.AlterPartitionResponse()
    for t in request.topics:
        out = response.topics.add(topic_id=t.topic_id)
        for p in t.partitions:
            out.partitions.add(partition_index=p.partition_index, error_code=error, leader_id=1,
                               leader_epoch=p.leader_epoch, isr=isr_ if isr_ is not None else p.new_isr,
                               partition_epoch=partition_epoch)
    return response


def test_a_follower_that_stops_fetching_is_dropped_after_the_lag_time(cluster):
    leader = cluster[1].get("orders", 0)
    follower_fetch(cluster, 2, 0)
    cluster.clock.advance(LAG)
    assert cluster[1].alter_partition_request() is None  # exactly at the limit: still in sync
    run(append(cluster[1], "orders", 0, batch_of([b"a"]), 1, 1000))
    cluster.clock.advance(1)
    follower_fetch(cluster, 2, 1)
    request = cluster[1].alter_partition_request()
    assert items(request) == [(0, [1, 2], 0, 0)]
    assert request.broker_id == 1 and request.broker_epoch == 101
    assert request.topics[0].topic_id == leader.topic_id
    assert cluster[1].alter_partition_request() is None  # one proposal in flight at a time


def test_acks_all_completes_once_a_shrink_is_committed_and_not_before(cluster):
    leader = cluster[1].get("orders", 0)

    async def go():
        produced = asyncio.ensure_future(append(cluster[1], "orders", 0, batch_of([b"a"]), -1, 5000))
        await asyncio.sleep(0)
        await fetched(cluster[1], fetch_request("orders", 0, 1, replica_id=2))
        cluster.clock.advance(LAG + 1)
        request = cluster[1].alter_partition_request()
        assert items(request) == [(0, [1, 2], 0, 0)]
        await asyncio.sleep(0)
        # In flight: broker 3 still counts (the maximal ISR), the HW stays.
        assert leader.maximal_isr == (1, 2, 3) and leader.high_watermark == 0 and not produced.done()
        cluster[1].alter_partition_answered(request, answer(request))
        assert leader.isr == (1, 2) and leader.partition_epoch == 1 and leader.high_watermark == 1
        return await asyncio.wait_for(produced, 1)
    assert run(go()).error == Error.NONE


def test_a_caught_up_follower_is_proposed_for_the_isr_and_counted_while_in_flight(tmp_path):
    cluster = Cluster(tmp_path, config=BrokerConfig(replica_lag_time_max_ms=LAG))
    cluster.create_topic("orders", {0: [1, 2, 3]}, isr={0: [1, 2]})
    leader = cluster[1].get("orders", 0)
    run(append(cluster[1], "orders", 0, batch_of([b"a", b"b"]), 1, 1000))
    follower_fetch(cluster, 2, 2)
    assert leader.high_watermark == 2
    woken = []
    cluster[1].isr_change_wanted.listen(lambda: woken.append(True))  # what the shell awaits
    follower_fetch(cluster, 3, 1)  # below the high watermark: not yet
    assert woken == [] and cluster[1].alter_partition_request() is None
    follower_fetch(cluster, 3, 2)
    assert woken == [True]
    request = cluster[1].alter_partition_request()
    assert items(request) == [(0, [1, 2, 3], 0, 0)]
    assert leader.maximal_isr == (1, 2, 3) and leader.isr == (1, 2)
    run(append(cluster[1], "orders", 0, batch_of([b"c"]), 1, 1000))
    follower_fetch(cluster, 2, 3)
    assert leader.high_watermark == 2  # broker 3, maybe a member already, holds only 2
    cluster.change("orders", 0, isr=[1, 2, 3])  # the metadata log shows the outcome first
    assert leader.leadership.pending is None and leader.isr == (1, 2, 3)
    cluster[1].alter_partition_answered(request, answer(request))  # then the answer: ignored
    assert leader.partition_epoch == 1


def test_fenced_brokers_do_not_join(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.create_topic("orders", {0: [1, 2, 3]}, isr={0: [1, 2]})
    cluster.fence(3)
    follower_fetch(cluster, 3, 0)
    assert cluster[1].alter_partition_request() is None


@pytest.mark.parametrize("error", [Error.INELIGIBLE_REPLICA, Error.OPERATION_NOT_ATTEMPTED, Error.INVALID_REQUEST])
def test_a_proposal_refused_with_nothing_changed_is_dropped_and_decided_again(cluster, error):
    leader = cluster[1].get("orders", 0)
    cluster.clock.advance(LAG + 1)
    request = cluster[1].alter_partition_request()
    cluster[1].alter_partition_answered(request, answer(request, error=error))
    assert leader.leadership.pending is None and leader.isr == (1, 2, 3)
    assert items(cluster[1].alter_partition_request()) == [(0, [1], 0, 0)]


@pytest.mark.parametrize("error", [Error.NEW_LEADER_ELECTED, Error.FENCED_LEADER_EPOCH, Error.INVALID_UPDATE_VERSION,
                                   Error.NOT_LEADER_OR_FOLLOWER, Error.UNKNOWN_TOPIC_OR_PARTITION])
def test_a_proposal_the_controller_may_have_applied_holds_the_maximal_isr_until_the_metadata_log_says(tmp_path, error):
    """The reassignment scenario's loss (seeds 0 and 1, 2026-11-27): the leader
    proposed a joining replica; the controller applied it, which completed a
    reassignment removing the leader and elected the joiner (NEW_LEADER_ELECTED).
    Back on its old ISR, the leader acknowledged records the joiner never had,
    and the joiner, now leading, truncated them away. Until the metadata log
    brings the newer state the proposal stays pending and unsent, and the
    high watermark waits for the joiner too."""
    cluster = Cluster(tmp_path, config=BrokerConfig(replica_lag_time_max_ms=LAG))
    cluster.create_topic("orders", {0: [1, 2, 3]}, isr={0: [1, 2]})
    leader = cluster[1].get("orders", 0)
    run(append(cluster[1], "orders", 0, batch_of([b"a"]), 1, 1000))
    follower_fetch(cluster, 2, 1)
    follower_fetch(cluster, 3, 1)
    request = cluster[1].alter_partition_request()
    assert items(request) == [(0, [1, 2, 3], 0, 0)]
    cluster[1].alter_partition_answered(request, answer(request, error=error))
    assert leader.maximal_isr == (1, 2, 3) and cluster[1].alter_partition_request() is None
    run(append(cluster[1], "orders", 0, batch_of([b"b"]), 1, 1000))
    follower_fetch(cluster, 2, 2)
    assert leader.high_watermark == 1  # broker 2 holds offset 1; broker 3, maybe a member now, does not
    cluster.change("orders", 0, isr=[1, 2, 3])  # the metadata log has the outcome
    assert leader.leadership.pending is None and leader.isr == (1, 2, 3)


def test_an_unanswered_proposal_stays_in_flight_and_is_sent_again(cluster):
    leader = cluster[1].get("orders", 0)
    cluster.clock.advance(LAG + 1)
    request = cluster[1].alter_partition_request()
    cluster[1].alter_partition_failed(request)
    assert leader.maximal_isr == (1, 2, 3)
    cluster.clock.advance(LAG)
    again = cluster[1].alter_partition_request()
    assert items(again) == items(request)
    cluster[1].alter_partition_answered(again, cpb.AlterPartitionResponse(error_code=Errors.NOT_CONTROLLER))
    assert items(cluster[1].alter_partition_request()) == items(request)


def test_an_idle_partition_keeps_its_isr(cluster):
    for replica in (2, 3):
        follower_fetch(cluster, replica, 0)
    cluster.clock.advance(10 * LAG)
    assert cluster[1].alter_partition_request() is None


def test_an_uncleanly_elected_leader_reports_recovered_before_anyone_joins(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.create_topic("orders", {0: [1, 2, 3]}, isr={0: [2]})
    cluster.change("orders", 0, leader=1, isr=[1], recovering=True)
    follower_fetch(cluster, 2, 0)
    request = cluster[1].alter_partition_request()
    [item] = [p for t in request.topics for p in t.partitions]
    assert list(item.new_isr) == [1] and item.leader_recovery_state == mpb.RECOVERED


def test_a_fetch_from_an_older_incarnation_does_not_bring_a_replica_into_the_isr(tmp_path):
    """KIP-903: broker 3 restarted (a new broker epoch); fetches that still
    carry its old epoch do not count for joining, its new epoch's do, and the
    proposal tells the controller which epoch each member fetched with."""
    cluster = Cluster(tmp_path)
    cluster.create_topic("orders", {0: [1, 2, 3]}, isr={0: [1, 2]})
    old_epoch = cluster.image.brokers[3].broker_epoch
    cluster.apply(mpb.MetadataRecord(register_broker=mpb.RegisterBrokerRecord(
        broker_id=3, incarnation_id="inc-3-again", broker_epoch=old_epoch + 50,
        endpoints=[mpb.BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=9093)])))
    fetch = lambda epoch: run(fetched(  # noqa: E731
        cluster[1], fetch_request("orders", 0, 0, replica_id=3, replica_epoch=epoch)))
    fetch(old_epoch)
    assert cluster[1].alter_partition_request() is None
    fetch(old_epoch + 50)
    request = cluster[1].alter_partition_request()
    [item] = [p for t in request.topics for p in t.partitions]
    assert list(item.new_isr) == [1, 2, 3]
    assert [(s.broker_id, s.broker_epoch) for s in item.new_isr_with_epochs] == [(1, -1), (2, -1), (3, old_epoch + 50)]


def test_replica_lag_ignores_wall_clock_jumps(tmp_path):
    """Lag is a duration, on the monotonic clock: the leader's wall clock
    jumping an hour either way drops nobody; the monotonic clock passing the
    lag time does."""
    cluster = Cluster(tmp_path, config=BrokerConfig(replica_lag_time_max_ms=LAG), separate_timer=True)
    cluster.create_topic("orders", {0: [1, 2, 3]})
    follower_fetch(cluster, 2, 0)
    follower_fetch(cluster, 3, 0)
    run(append(cluster[1], "orders", 0, batch_of([b"a"]), 1, 1000))
    for jump in (3_600_000, -7_200_000):
        cluster.clock.advance(jump)
        assert cluster[1].alter_partition_request() is None
    cluster.timer.advance(LAG + 1)
    assert items(cluster[1].alter_partition_request()) == [(0, [1], 0, 0)]

