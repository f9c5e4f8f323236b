"""Reads the Kafka-client tests share: what a leader stores (batch headers,
no decode) and what an assign()-based confluent-kafka consumer reads
(tests/kafka_protocol/ and tests/spark_jobs/test_kafka_clients.py)."""
from __future__ import annotations

import time
from typing import Any, Sequence

from confluent_kafka import Consumer

from devcluster.local_cluster import LocalCluster
from kafka_protocol.batch import iter_headers
from kraftlog_api import broker_pb2 as bpb


def stored_batches(cluster: LocalCluster, topic: str, partition: int = 0) -> list:
    """The batch headers as the leader stores them (gRPC Fetch, no decode)."""
    leader = next(p.leader_id for p in cluster.wait_for_leaders(topic).partitions if p.partition_index == partition)
    answer = cluster.broker_stub(leader).Fetch(bpb.FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=8 << 20, topics=[bpb.FetchRequest.FetchTopic(
            topic=topic, partitions=[bpb.FetchRequest.FetchPartition(
                partition=partition, fetch_offset=0, current_leader_epoch=-1, last_fetched_epoch=-1,
                partition_max_bytes=8 << 20)])]), timeout=10)
    return [header for _, header in iter_headers(bytes(answer.responses[0].partitions[0].records))]


def read_assigned(settings: dict[str, Any], assignment: Sequence[Any], count: int, timeout_s: float) -> list:
    """The messages a confluent-kafka consumer with `settings` (plus a group id
    assign() never uses, and no auto commit) reads from `assignment` (its
    TopicPartitions), until it has `count` or `timeout_s` passed; errors
    (a partition's end) are passed over."""
    consumer = Consumer({"group.id": "unused-by-assign", "enable.auto.commit": False, **settings})
    read: list = []
    try:
        consumer.assign(list(assignment))
        deadline = time.monotonic() + timeout_s
        while len(read) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                read.append(message)
    finally:
        consumer.close()
    return read
