"""Streaming writes that a replayed micro-batch does not duplicate.

Spark re-runs a micro-batch whose commit it did not log (a task failed, the
query or the driver died mid-batch) with the same input, so each task
produces the same rows in the same order. The sink makes the replay send
the very same record batches under the very same idempotent-producer
identity, and the broker's duplicate detection (broker/producer_state.py)
answers them as already written:

- the producer id is derived from (Spark query id, task partition, batch id
  // 32000) and the producer epoch is batch id % 32000: one id per task for
  32,000 micro-batches, a new epoch (sequences from 0) for each batch. The
  query id is kept in the checkpoint, so a restarted query derives the same
  identity. Derived ids lie in [2^62, 2^63), far above the ids the
  controller hands out from 0 upward through InitProducerId.
- records are cut into batches by size alone (batch.size; no linger.ms),
  partitions are chosen by key (murmur2) or, for keyless records, by a
  sticky choice seeded from the identity, so the batches and their
  sequence numbers are the same in every run of the micro-batch.
- a resent batch among the broker's last five of that producer is answered
  with its original offsets; an older one with DUPLICATE_SEQUENCE_NUMBER,
  which means "written before" and counts as delivered.

This holds while the topic keeps its partition count and the broker keeps
the producer's state (producer.id.expiration.ms, one day by default).
"""
from __future__ import annotations

import hashlib
import random
import time
from typing import Optional

import grpc

from client.cluster import Cluster
from client.errors import RequestTimedOutError, error_for_code
from client.metadata_cache import PartitionInfo
from client.partitioner import StickyPartitioner, choose_partition
from client.producer_batch import record_size_upper_bound
from client.producer_config import ProducerConfig
from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.batch import HEADER_SIZE
from kafka_protocol.errors import Errors, is_retriable
from kafka_protocol.records import Record, encode_batch


EPOCHS_PER_PRODUCER_ID = 32_000  # producer epochs are int16
DERIVED_ID_BASE = 1 << 62

TopicPartition = tuple[str, int]


def writer_identity(query_id: str, task: int, batch_id: int) -> tuple[int, int]:
    """(producer id, producer epoch) of one task of one micro-batch."""
    window, epoch = divmod(batch_id, EPOCHS_PER_PRODUCER_ID)
    digest = hashlib.sha256(f"{query_id}/{task}/{window}".encode()).digest()
    return DERIVED_ID_BASE | (int.from_bytes(digest[:8], "big") & (DERIVED_ID_BASE - 1)), epoch


class ReplayableSender:
    """One task's records of one micro-batch, sent in deterministic batches."""

    def __init__(self, cluster: Cluster, config: ProducerConfig, producer_id: int, producer_epoch: int) -> None:
        self.cluster = cluster
        self.config = config
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.sticky = StickyPartitioner(random.Random(producer_id ^ producer_epoch))
        self._open: dict[TopicPartition, list[Record]] = {}
        self._sizes: dict[TopicPartition, int] = {}
        self._sequences: dict[TopicPartition, int] = {}
        self.sent = 0

    def add(self, topic: str, partition: Optional[int], record: Record) -> None:
        partitions = self._partitions(topic)
        if partition is None:
            partition = choose_partition(topic, record.key, partitions, self.sticky)
        elif not 0 <= partition < len(partitions):
            raise error_for_code(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"column 'partition': {topic} has no partition "
                                                             f"{partition} (it has {len(partitions)})")
        tp = (topic, partition)
        size = record_size_upper_bound(record)
        if tp in self._open and self._sizes[tp] + size > self.config.batch_size:
            self._send(tp, partitions, keyless=record.key is None)
        self._open.setdefault(tp, []).append(record)
        self._sizes[tp] = self._sizes.get(tp, HEADER_SIZE) + size

    def flush(self) -> int:
        for tp in sorted(self._open):
            self._send(tp, self._partitions(tp[0]), keyless=False)
        return self.sent

    def _partitions(self, topic: str) -> list[PartitionInfo]:
        partitions = self.cluster.partitions(topic)
        if not partitions:
            raise error_for_code(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} does not exist")
        return partitions

    def _send(self, tp: TopicPartition, partitions: list[PartitionInfo], keyless: bool) -> None:
        records = self._open.pop(tp)
        del self._sizes[tp]
        sequence = self._sequences.get(tp, 0)
        data = encode_batch(records, codec=self.config.compression, producer_id=self.producer_id,
                            producer_epoch=self.producer_epoch, base_sequence=sequence)
        self._deliver(tp, data)
        self._sequences[tp] = sequence + len(records)
        self.sent += len(records)
        if keyless:
            self.sticky.on_new_batch(tp[0], partitions, tp[1])

    def _deliver(self, tp: TopicPartition, data: bytes) -> None:
        """Until acknowledged (or answered as written before), through leader changes."""
        request = bpb.ProduceRequest(acks=-1, timeout_ms=self.config.request_timeout_ms, topics=[
            bpb.ProduceRequest.TopicData(name=tp[0], partitions=[
                bpb.ProduceRequest.PartitionData(index=tp[1], records=data)])])
        deadline = time.monotonic() + self.config.delivery_timeout_ms / 1000
        problem = "no leader known"
        while time.monotonic() < deadline:
            info = self.cluster.leader_for(*tp)
            if info is not None:
                leader = info.leader
                try:
                    answer = self.cluster.broker_stub(leader).Produce(
                        request, timeout=self.config.request_timeout_ms / 1000 + 5).responses[0].partitions[0]
                except grpc.RpcError as exc:
                    problem = f"broker {leader}: {exc.code().name}"  # type: ignore[attr-defined]
                else:
                    if answer.error_code in (0, Errors.DUPLICATE_SEQUENCE_NUMBER):
                        return
                    if not is_retriable(answer.error_code):
                        raise error_for_code(answer.error_code, f"Produce to {tp[0]}-{tp[1]}: "
                                                                f"{answer.error_message}")
                    problem = str(error_for_code(answer.error_code, answer.error_message))
            time.sleep(self.config.retry_backoff_ms / 1000)
            try:
                self.cluster.refresh([tp[0]])
            except Exception:  # noqa: BLE001 - the next attempt says what is wrong
                pass
        raise RequestTimedOutError(f"{tp[0]}-{tp[1]}: not delivered within delivery.timeout.ms="
                                   f"{self.config.delivery_timeout_ms} (last: {problem})")
