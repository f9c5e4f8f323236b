"""What the producer tests read back: a partition's batches as its leader serves them."""
from __future__ import annotations

import time

import grpc

from devcluster.local_cluster import LocalCluster
from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.records import DecodedBatch, Record, iter_batches

READ_DEADLINE_S = 60  # bounds every read loop; never part of an assert


def leader_of(cluster: LocalCluster, topic: str, partition: int) -> int:
    described = cluster.wait_for_leaders(topic)
    return next(p.leader_id for p in described.partitions if p.partition_index == partition)


def read_batches(cluster: LocalCluster, topic: str, partition: int, min_records: int = 0) -> list[DecodedBatch]:
    """Every batch of the partition below its high watermark, fetched from
    the leader from offset 0; waits until at least `min_records` are there."""
    deadline = time.monotonic() + READ_DEADLINE_S
    while True:
        batches = _fetch_all(cluster, topic, partition)
        if batches is not None and sum(len(b.records) for b in batches) >= min_records:
            return batches
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}-{partition}: fewer than {min_records} records within {READ_DEADLINE_S}s")
        time.sleep(0.2)


def read_records(cluster: LocalCluster, topic: str, partition: int, min_records: int = 0) -> list[Record]:
    return [r for b in read_batches(cluster, topic, partition, min_records) for r in b.records]


def _fetch_all(cluster: LocalCluster, topic: str, partition: int) -> list[DecodedBatch] | None:
    leader = leader_of(cluster, topic, partition)
    batches: list[DecodedBatch] = []
    offset = 0
    while True:
        request = bpb.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=8 << 20, topics=[
            bpb.FetchRequest.FetchTopic(topic=topic, partitions=[bpb.FetchRequest.FetchPartition(
                partition=partition, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
                partition_max_bytes=4 << 20)])])
        try:
            response = cluster.broker_stub(leader).Fetch(request, timeout=10)
        except grpc.RpcError:
            return None
        data = response.responses[0].partitions[0]
        if data.error_code:
            return None
        got = list(iter_batches(data.records))
        if not got:
            return batches
        batches.extend(got)
        offset = got[-1].header.last_offset + 1
        if offset >= data.high_watermark:
            return batches
