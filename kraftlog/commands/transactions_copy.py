"""Consume-transform-produce, exactly once: `kraftlog transactions copy`.

Records are read from one topic by a read_committed consumer in a group and
written to another by a transactional producer, one transaction per poll():
the copies and the group's new offsets (send_offsets_to_transaction) commit
together or not at all. So a copier killed at any point and started again
(same group, same transactional.id: the restart fences the dead one and
aborts its open transaction) leaves every source record in the destination
once. On an abortable error the transaction is aborted and the consumer
goes back to the group's committed offsets, to read the batch again; a fatal
error (fenced by another copier with the same id) ends the command.

It is a CLI command rather than a script under client/: it then runs as a
process against any cluster with --bootstrap/--command-config like every
other command, and tests can kill -9 it.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from client.consumer import Consumer
from client.consumer_types import ConsumerRecord, OffsetAndMetadata, TopicPartition
from client.errors import KafkaException
from client.producer import Producer

log = logging.getLogger(__name__)

COMMIT_ATTEMPTS = 5  # a commit that timed out is called again (it resumes) this many times, then aborted


@dataclass
class CopyStats:
    copied: int = 0
    transactions: int = 0
    aborted: int = 0


def copy_exactly_once(client_settings: Mapping[str, Any], source: str, destination: str, group: str,
                      transactional_id: str, *, max_records: Optional[int] = None, idle_exit_s: Optional[float] = None,
                      on_commit: Optional[Callable[[CopyStats], None]] = None) -> CopyStats:
    """Copy until `max_records` are copied (None: forever), or nothing came for
    `idle_exit_s` seconds (None: wait on). `client_settings`: bootstrap.servers and
    security settings for both clients."""
    consumer = Consumer({**client_settings, "group.id": group, "isolation.level": "read_committed",
                         "enable.auto.commit": "false", "auto.offset.reset": "earliest"})
    producer: Optional[Producer] = None
    stats = CopyStats()
    try:
        producer = Producer({**client_settings, "transactional.id": transactional_id})
        producer.init_transactions()
        consumer.subscribe([source])
        idle_since = time.monotonic()
        while max_records is None or stats.copied < max_records:
            records = consumer.poll(1.0)
            if not records:
                if idle_exit_s is not None and time.monotonic() - idle_since >= idle_exit_s:
                    break
                continue
            idle_since = time.monotonic()
            if max_records is not None:
                records = records[:max_records - stats.copied]
            if _copy_batch(consumer, producer, records, destination):
                stats.copied += len(records)
                stats.transactions += 1
                if on_commit is not None:
                    on_commit(stats)
            else:
                stats.aborted += 1
        return stats
    finally:
        if producer is not None:
            producer.close()
        consumer.close()


def _copy_batch(consumer: Consumer, producer: Producer, records: list[ConsumerRecord], destination: str) -> bool:
    """One transaction: the copies and the offsets after them. False when it was aborted."""
    offsets: dict[TopicPartition, OffsetAndMetadata] = {}
    for r in records:
        offsets[r.topic_partition] = OffsetAndMetadata(r.offset + 1, leader_epoch=r.leader_epoch)
    producer.begin_transaction()
    try:
        for r in records:
            producer.produce(destination, r.value, key=r.key, headers=r.headers, timestamp=r.timestamp)
        producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
        _commit(producer)
        return True
    except KafkaException as exc:
        if exc.info.fatal():
            raise
        log.warning("aborting the transaction of %d records: %s", len(records), exc)
        producer.abort_transaction()
        _rewind(consumer, list(offsets))
        return False


def _commit(producer: Producer) -> None:
    for attempt in range(COMMIT_ATTEMPTS):
        try:
            producer.commit_transaction()
            return
        except KafkaException as exc:
            if not exc.info.retriable() or attempt == COMMIT_ATTEMPTS - 1:
                raise
            log.info("commit_transaction: %s; calling it again", exc)


def _rewind(consumer: Consumer, partitions: list[TopicPartition]) -> None:
    """Back to the group's committed offsets: the aborted batch is read again."""
    committed = consumer.committed(partitions)
    assigned = consumer.assignment()
    for tp in partitions:
        if tp not in assigned:
            continue  # revoked meanwhile: its next owner starts from the committed offset
        om = committed.get(tp)
        if om is not None:
            consumer.seek(tp, om.offset)
        else:
            consumer.seek_to_beginning([tp])  # auto.offset.reset=earliest: where a fresh group starts
