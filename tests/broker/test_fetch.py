"""Fetch: consumers below the high watermark, followers to the log end,
epoch checks, out-of-range offsets, byte limits and the long poll."""
from __future__ import annotations

import asyncio

import pytest

from broker.errors import Error
from broker.produce import append
from kafka_protocol.records import iter_records

from .helpers import Cluster, batch_of, fetch_request, replicate, run, fetched


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    c.create_topic("orders", {0: [1, 2, 3]})
    return c


def one(response):
    [topic] = response.responses
    [answer] = topic.partitions
    return answer


def values(answer):
    return [r.value for r in iter_records(answer.records)]


def produce(cluster, *batches, acks=1):
    async def go():
        for values_ in batches:
            await append(cluster[1], "orders", 0, batch_of(values_), acks, 1000)
    run(go())


def test_consumers_see_only_what_is_below_the_high_watermark(cluster):
    produce(cluster, [b"a", b"b"], [b"c"])
    answer = one(run(fetched(cluster[1], fetch_request("orders", 0, 0))))
    assert (answer.error_code, answer.high_watermark, answer.records) == (0, 0, b"")
    run(replicate(cluster, 2, rounds=2))
    run(replicate(cluster, 3, rounds=2))
    answer = one(run(fetched(cluster[1], fetch_request("orders", 0, 0))))
    assert answer.high_watermark == 3 and answer.last_stable_offset == 3 and values(answer) == [b"a", b"b", b"c"]
    produce(cluster, [b"d"])
    answer = one(run(fetched(cluster[1], fetch_request("orders", 0, 3))))
    assert (answer.error_code, answer.records) == (0, b"")  # between the HW and the log end: nothing yet


def test_a_follower_reads_to_the_log_end_and_its_fetch_moves_the_high_watermark(cluster):
    produce(cluster, [b"a", b"b"])
    leader = cluster[1].get("orders", 0)
    answer = one(run(fetched(cluster[1], fetch_request("orders", 0, 0, replica_id=2))))
    assert values(answer) == [b"a", b"b"] and answer.high_watermark == 0
    run(fetched(cluster[1], fetch_request("orders", 0, 2, replica_id=2, last_fetched_epoch=0)))
    assert leader.high_watermark == 0  # broker 3 has not fetched
    answer = one(run(fetched(cluster[1], fetch_request("orders", 0, 2, replica_id=3, last_fetched_epoch=0))))
    assert leader.high_watermark == 2 and answer.high_watermark == 2


def test_the_high_watermark_never_moves_back(cluster):
    produce(cluster, [b"a", b"b"])
    leader = cluster[1].get("orders", 0)
    for replica in (2, 3):
        run(fetched(cluster[1], fetch_request("orders", 0, 2, replica_id=replica, last_fetched_epoch=0)))
    assert leader.high_watermark == 2
    run(fetched(cluster[1], fetch_request("orders", 0, 1, replica_id=2)))
    assert leader.high_watermark == 2


@pytest.mark.parametrize("epoch, error", [(0, Error.NONE), (-1, Error.NONE),
                                          (1, Error.UNKNOWN_LEADER_EPOCH)])
def test_current_leader_epoch_is_checked(cluster, epoch, error):
    answer = one(run(fetched(cluster[1], fetch_request("orders", 0, 0, current_leader_epoch=epoch))))
    assert answer.error_code == error


def test_an_older_epoch_is_fenced_and_names_the_leader(cluster):
    cluster.change("orders", 0, leader=2)
    cluster.change("orders", 0, leader=1)
    answer = one(run(fetched(cluster[1], fetch_request("orders", 0, 0, current_leader_epoch=1))))
    assert (answer.error_code, answer.current_leader_id, answer.current_leader_epoch) == \
        (Error.FENCED_LEADER_EPOCH, 1, 2)


def test_fetching_from_a_follower_or_for_an_unknown_partition(cluster):
    answer = one(run(fetched(cluster[2], fetch_request("orders", 0, 0))))
    assert (answer.error_code, answer.current_leader_id) == (Error.NOT_LEADER_OR_FOLLOWER, 1)
    assert one(run(fetched(cluster[1], fetch_request("nope", 0, 0)))).error_code == \
        Error.UNKNOWN_TOPIC_OR_PARTITION


def test_a_fetch_from_a_broker_that_is_not_a_replica_is_refused(tmp_path):
    cluster = Cluster(tmp_path, (1, 2, 3, 4))
    cluster.create_topic("orders", {0: [1, 2, 3]})
    answer = one(run(fetched(cluster[1], fetch_request("orders", 0, 0, replica_id=4))))
    assert answer.error_code == Error.NOT_LEADER_OR_FOLLOWER


@pytest.mark.parametrize("offset", [-1, 3])
def test_offsets_outside_the_log_are_out_of_range(cluster, offset):
    produce(cluster, [b"a", b"b"])
    assert one(run(fetched(cluster[1], fetch_request("orders", 0, offset)))).error_code == \
        Error.OFFSET_OUT_OF_RANGE
    answer = one(run(fetched(cluster[1], fetch_request("orders", 0, offset, replica_id=2))))
    assert answer.error_code == Error.OFFSET_OUT_OF_RANGE
    assert cluster[1].get("orders", 0).leadership.followers[2].log_end_offset is None


def test_max_bytes_still_returns_one_whole_batch(cluster):
    cluster.change("orders", 0, isr=[1])
    produce(cluster, [b"x" * 200], [b"y" * 200], [b"z" * 200])
    answer = one(run(fetched(cluster[1], fetch_request("orders", 0, 0, max_bytes=10))))
    assert values(answer) == [b"x" * 200]
    answer = one(run(fetched(cluster[1], fetch_request("orders", 0, 0, partition_max_bytes=600))))
    assert values(answer) == [b"x" * 200, b"y" * 200]


def test_a_long_poll_wakes_when_the_high_watermark_passes_new_records(cluster):
    cluster.change("orders", 0, isr=[1])

    async def go():
        loop = asyncio.get_running_loop()
        start = loop.time()
        fetching = asyncio.ensure_future(fetched(cluster[1], fetch_request("orders", 0, 0, max_wait_ms=5000)))
        await asyncio.sleep(0.005)
        assert not fetching.done()
        await append(cluster[1], "orders", 0, batch_of([b"late"]), 1, 1000)
        response = await asyncio.wait_for(fetching, 1)
        return response, loop.time() - start
    response, waited = run(go())
    assert values(one(response)) == [b"late"] and waited < 1


def test_a_follower_long_poll_wakes_on_append(cluster):
    async def go():
        fetching = asyncio.ensure_future(fetched(cluster[1], fetch_request(
            "orders", 0, 0, replica_id=2, max_wait_ms=5000)))
        await asyncio.sleep(0.002)
        assert not fetching.done()
        await append(cluster[1], "orders", 0, batch_of([b"a"]), 1, 1000)  # the HW cannot move: 3 lags
        return await asyncio.wait_for(fetching, 1)
    assert values(one(run(go()))) == [b"a"]


def test_a_long_poll_answers_empty_after_max_wait(cluster):
    async def go():
        return await fetched(cluster[1], fetch_request("orders", 0, 0, max_wait_ms=10))
    answer = one(run(go()))
    assert (answer.error_code, answer.records) == (0, b"")


def test_a_long_poll_answers_at_once_when_leadership_moves(cluster):
    async def go():
        fetching = asyncio.ensure_future(fetched(cluster[1], fetch_request("orders", 0, 0, max_wait_ms=5000)))
        await asyncio.sleep(0.002)
        cluster.change("orders", 0, leader=2)
        return await asyncio.wait_for(fetching, 1)
    assert one(run(go())).error_code == Error.NOT_LEADER_OR_FOLLOWER
