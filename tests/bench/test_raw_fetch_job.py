"""The raw fetch job of the suite and bench/raw_fetch.py (bench/suite/kraftlog_cluster.RawFetchJob)
on a real cluster: whichever way its fetches are in flight (one at a time, a round of one per
partition, one per partition always in flight on blocking gRPC or on grpc.aio), each read of the
topic moves every stored batch exactly once: a fetch sent before the one before it was walked
would fetch a batch twice or skip one, and the counts would not be the topic's. Never a speed."""
from __future__ import annotations

import asyncio

import pytest

from bench import cluster as cluster_bench
from bench.suite import kraftlog_cluster as kl
from devcluster.local_cluster import LocalCluster
from kafka_protocol.records import Record, encode_batch

PARTITIONS = 3
BATCHES = 12  # a partition: several fetches of a few batches each (PARTITION_MAX_BYTES)
RECORDS_PER_BATCH = 7
PARTITION_MAX_BYTES = 2000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("raw-fetch"), combined=1,
                      properties=cluster_bench.PROPERTIES).running() as c:
        yield c


def fill(cluster: LocalCluster, topic: str) -> int:
    """BATCHES batches of RECORDS_PER_BATCH records into each partition; the bytes stored."""
    stored = 0
    leaders = cluster_bench.leaders(cluster, topic)
    for partition, leader in leaders.items():
        for n in range(BATCHES):
            data = encode_batch([Record(None, f"{partition}-{n}-{i}".encode() * 20, 0)
                                 for i in range(RECORDS_PER_BATCH)])
            answer = cluster.broker_stub(leader).Produce(cluster_bench.produce_request(topic, partition, data, -1),
                                                         timeout=30)
            assert answer.responses[0].partitions[0].error_code == 0
            stored += len(data)
    return stored


@pytest.mark.parametrize("mode", kl.RAW_FETCH_MODES)
def test_every_mode_reads_each_batch_once_per_read(cluster: LocalCluster, mode: str) -> None:
    topic = f"raw-{mode.replace('_', '-')}"
    cluster.create_topic(topic, PARTITIONS, 1)
    stored = fill(cluster, topic)
    job = kl.raw_fetch_job(cluster, topic, mode, reads=2)
    job.partition_max_bytes = PARTITION_MAX_BYTES

    async def run() -> dict:
        await job.prepare()
        try:
            return await job.run()
        finally:
            await job.close()

    done = asyncio.run(run())
    assert done == {"records": 2 * PARTITIONS * BATCHES * RECORDS_PER_BATCH, "bytes": 2 * stored}


def test_an_unknown_mode_is_refused(cluster: LocalCluster) -> None:
    job = kl.RawFetchJob({0: cluster.broker_addresses[cluster.brokers[0]]}, "any", "all_at_once")
    with pytest.raises(ValueError, match="all_at_once"):
        asyncio.run(job.prepare())
