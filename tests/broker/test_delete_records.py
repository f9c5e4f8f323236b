"""DeleteRecords on real replica managers (no network): the leader moves its
log start offset, the followers follow it through their fetches, and the
answer's low watermark waits for the in-sync ones."""
from __future__ import annotations

import asyncio

from broker.delete_records import delete_records
from broker.errors import Error
from broker.produce import append
from kraftlog_api import broker_pb2 as bpb

from .helpers import Cluster, batch_of, replicate, run


def request(topic: str, offset: int, *, timeout_ms: int = 5000, partition: int = 0) -> bpb.DeleteRecordsRequest:
    return bpb.DeleteRecordsRequest(timeout_ms=timeout_ms, topics=[bpb.DeleteRecordsRequest.Topic(
        name=topic, partitions=[bpb.DeleteRecordsRequest.Partition(partition_index=partition, offset=offset)])])


def answer_of(response: bpb.DeleteRecordsResponse) -> tuple[int, int]:
    (partition,) = response.topics[0].partitions
    return partition.error_code, partition.low_watermark


def test_the_answer_waits_for_the_in_sync_followers(tmp_path):
    cluster = Cluster(tmp_path, (1, 2))
    cluster.create_topic("t", {0: [1, 2]})

    async def go():
        await append(cluster[1], "t", 0, batch_of([b"a"] * 6), 1, 5000)
        await replicate(cluster, 2, rounds=2)  # the follower takes the records, then the high watermark moves
        assert cluster[1].get("t", 0).high_watermark == 6
        deleting = asyncio.ensure_future(delete_records(cluster[1], request("t", 4)))
        await asyncio.sleep(0)
        assert not deleting.done()  # the follower still starts at 0
        assert cluster[1].get("t", 0).log.log_start_offset == 4  # the leader's records below 4 are gone already
        await replicate(cluster, 2, rounds=2)  # learns the leader's log start, then reports its own
        assert cluster[2].get("t", 0).log.log_start_offset == 4
        return await asyncio.wait_for(deleting, 5)

    assert answer_of(run(go())) == (Error.NONE, 4)


def test_refusals(tmp_path):
    cluster = Cluster(tmp_path, (1, 2))
    cluster.create_topic("t", {0: [1]})
    cluster.create_topic("compacted", {0: [1]}, configs={"cleanup.policy": "compact"})
    cluster.create_topic("elsewhere", {0: [2]})
    run(append(cluster[1], "t", 0, batch_of([b"a"] * 3), 1, 1000))

    def refusal(topic: str, offset: int, **kw) -> int:
        return answer_of(run(delete_records(cluster[1], request(topic, offset, **kw))))[0]

    assert refusal("t", 4) == Error.OFFSET_OUT_OF_RANGE  # above the high watermark
    assert refusal("t", -2) == Error.OFFSET_OUT_OF_RANGE
    assert refusal("compacted", 0) == Error.POLICY_VIOLATION
    assert refusal("elsewhere", 0) == Error.NOT_LEADER_OR_FOLLOWER
    assert refusal("__consumer_offsets", 0) == Error.INVALID_TOPIC_EXCEPTION
    assert refusal("__cluster_metadata", 0) == Error.UNKNOWN_TOPIC_OR_PARTITION
    assert refusal("t", 0, partition=7) == Error.UNKNOWN_TOPIC_OR_PARTITION
    assert answer_of(run(delete_records(cluster[1], request("t", -1)))) == (Error.NONE, 3)  # -1: the high watermark
    # a lower offset than the log start already moved to: nothing moves back
    assert answer_of(run(delete_records(cluster[1], request("t", 1)))) == (Error.NONE, 3)


def test_a_follower_that_does_not_follow_times_the_answer_out(tmp_path):
    cluster = Cluster(tmp_path, (1, 2))
    cluster.create_topic("t", {0: [1, 2]})

    async def go():
        await append(cluster[1], "t", 0, batch_of([b"a"] * 2), 1, 5000)
        await replicate(cluster, 2, rounds=2)
        return await delete_records(cluster[1], request("t", 1, timeout_ms=50))

    assert answer_of(run(go()))[0] == Error.REQUEST_TIMED_OUT
    assert cluster[1].get("t", 0).log.log_start_offset == 1  # the deletion stands
