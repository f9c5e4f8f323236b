"""KIP-227 fetch sessions on the leader (broker/fetch.py, broker/fetch_session.py):
a full fetch makes a session, incremental fetches name and answer only what
changed, a parked fetch wakes on an append, and sessions serve only their owner."""
from __future__ import annotations

import asyncio

import pytest

from broker.config import BrokerConfig
from broker.errors import Error
from broker.fetch import handle_fetch
from broker.produce import append
from kraftlog_api import broker_pb2 as bpb

from .helpers import Cluster, batch_of, run

PARTITIONS = 8


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path, config=BrokerConfig(max_incremental_fetch_session_cache_slots=2))
    c.create_topic("orders", {i: [1, 2, 3] for i in range(PARTITIONS)})
    return c


def request(offsets=None, *, session_id=0, epoch=0, forgotten=(), max_wait_ms=0, replica_id=-1):
    r = bpb.FetchRequest(replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=1, session_id=session_id,
                         session_epoch=epoch)
    if offsets:
        r.topics.add(topic="orders", partitions=[bpb.FetchRequest.FetchPartition(
            partition=i, current_leader_epoch=-1, fetch_offset=o, last_fetched_epoch=-1) for i, o in offsets.items()])
    if forgotten:
        r.forgotten.add(topic="orders", partitions=list(forgotten))
    return r


async def fetch(replicas, r, owner=""):
    return bpb.FetchResponse.FromString(await handle_fetch(replicas, r, owner))


def answered(response):
    return {p.partition_index: p for t in response.responses for p in t.partitions}


def test_incremental_fetches_name_and_answer_only_what_changed(cluster):
    leader = cluster[1]

    async def go():
        full = await fetch(leader, request({i: 0 for i in range(PARTITIONS)}))
        assert full.session_id != 0 and len(answered(full)) == PARTITIONS
        sid = full.session_id
        idle = request(session_id=sid, epoch=1)
        nothing = await fetch(leader, idle)
        assert (nothing.error_code, nothing.session_id, answered(nothing)) == (0, sid, {})
        # The request does not grow with the session: it names no partition.
        assert idle.ByteSize() == request(session_id=sid, epoch=1).ByteSize() < 32
        await append(leader, "orders", 7, batch_of([b"x"]), 1, 1000)
        for follower in (2, 3):  # the high watermark moves (consumers read below it)
            await fetch(leader, request({7: 1}, replica_id=follower, epoch=-1))
        news = await fetch(leader, request(session_id=sid, epoch=2))
        assert list(answered(news)) == [7] and answered(news)[7].high_watermark == 1
        assert answered(news)[7].records  # the session still fetches 7 from offset 0
        # A client that names 7 with no new offset wants those records again
        # (it dropped them unreturned): Kafka's leader answers them again.
        again = await fetch(leader, request(session_id=sid, epoch=3))
        assert list(answered(again)) == [7] and answered(again)[7].records == answered(news)[7].records
        moved = await fetch(leader, request({7: 1}, session_id=sid, epoch=4, forgotten=[3]))
        assert answered(moved) == {}  # 7 at its new offset has nothing new
        await append(leader, "orders", 3, batch_of([b"y"]), 1, 1000)
        assert answered(await fetch(leader, request(session_id=sid, epoch=5))) == {}  # 3 was forgotten
    run(go())


def test_a_parked_incremental_fetch_answers_when_a_partition_of_its_session_changes(cluster):
    leader = cluster[1]

    async def go():
        sid = (await fetch(leader, request({i: 0 for i in range(PARTITIONS)}, replica_id=2))).session_id
        parked = asyncio.ensure_future(fetch(leader, request(session_id=sid, epoch=1, replica_id=2,
                                                             max_wait_ms=30_000)))
        await asyncio.sleep(0.05)
        assert not parked.done()
        await append(leader, "orders", 5, batch_of([b"x"]), 1, 1000)
        answer = await asyncio.wait_for(parked, 30)
        assert list(answered(answer)) == [5] and answered(answer)[5].records
    run(go())


def test_session_ids_and_epochs_are_checked(cluster):
    leader = cluster[1]

    async def go():
        sid = (await fetch(leader, request({0: 0}), owner="User:alice")).session_id
        assert (await fetch(leader, request(session_id=sid + 1, epoch=1), "User:alice")).error_code \
            == Error.FETCH_SESSION_ID_NOT_FOUND
        for epoch in (2, 0x7FFFFFFF, -5):
            assert (await fetch(leader, request(session_id=sid, epoch=epoch), "User:alice")).error_code \
                in (Error.INVALID_FETCH_SESSION_EPOCH, Error.FETCH_SESSION_ID_NOT_FOUND)
        # Another principal, or a follower, cannot use alice's session.
        assert (await fetch(leader, request(session_id=sid, epoch=1), "User:mallory")).error_code \
            == Error.FETCH_SESSION_ID_NOT_FOUND
        assert (await fetch(leader, request(session_id=sid, epoch=1, replica_id=2), "User:alice")).error_code \
            == Error.FETCH_SESSION_ID_NOT_FOUND
        ok = await fetch(leader, request(session_id=sid, epoch=1), "User:alice")
        assert (ok.error_code, ok.session_id) == (0, sid)
        # A replayed epoch (a duplicate request) is refused once the session moved on.
        assert (await fetch(leader, request(session_id=sid, epoch=1), "User:alice")).error_code \
            == Error.INVALID_FETCH_SESSION_EPOCH
        closed = await fetch(leader, request({0: 0}, session_id=sid, epoch=-1), "User:alice")
        assert (closed.error_code, closed.session_id, len(answered(closed))) == (0, 0, 1)
        assert (await fetch(leader, request(session_id=sid, epoch=2), "User:alice")).error_code \
            == Error.FETCH_SESSION_ID_NOT_FOUND
    run(go())


def test_a_full_cache_makes_no_session_and_a_follower_evicts_a_consumer(cluster):
    leader = cluster[1]

    async def go():
        first = (await fetch(leader, request({0: 0}))).session_id
        second = (await fetch(leader, request({0: 0}))).session_id
        assert 0 not in (first, second) and len(leader.fetch_sessions) == 2
        assert (await fetch(leader, request({0: 0}))).session_id == 0  # no slot: full fetches go on
        follower = (await fetch(leader, request({0: 0}, replica_id=2))).session_id
        assert follower != 0 and leader.fetch_sessions.get(first) is None  # the least recently used consumer
        assert (await fetch(leader, request(session_id=first, epoch=1))).error_code == Error.FETCH_SESSION_ID_NOT_FOUND
    run(go())


def test_no_slots_means_sessionless_fetches(tmp_path):
    c = Cluster(tmp_path, config=BrokerConfig(max_incremental_fetch_session_cache_slots=0))
    c.create_topic("orders", {0: [1, 2, 3]})
    answer = run(fetch(c[1], request({0: 0})))
    assert (answer.error_code, answer.session_id, len(answered(answer))) == (0, 0, 1)
