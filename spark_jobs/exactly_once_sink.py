"""Streaming writes whose micro-batch is visible atomically: every row of it
once, or none (`kraftlog.sink.exactlyOnce=true`), with KIP-939's prepared
transactions.

- Each task of a micro-batch writes its rows in a transaction of its own
  transactional id, `kraftlog-spark-<query id>-<task partition>` (the query
  id is in the checkpoint, so a restarted query has the same ids), with
  two-phase commit on: the coordinator never aborts it by timeout. The task
  prepares it (flushed, still open) and sends its PreparedTxnState to the
  driver in its commit message.
- The driver's commit of the micro-batch completes every task's transaction:
  InitProducerId(keep_prepared_txn) with the task's id, then commit if the
  open transaction is the one the message names, else abort. Spark writes
  its commit log only after that returns. The driver's abort aborts them.
- A task first calls init_transactions() without keep_prepared_txn: the
  coordinator aborts whatever the id left open - an earlier attempt of the
  task, or a batch a dead driver never completed - and fences that
  attempt. Aborting is right: a prepared transaction is still open only if
  no driver completed it, so Spark's commit log cannot hold its batch (it is
  written after every transaction committed) and Spark runs the batch again.
- Idempotent across a driver that dies after committing some or all of the
  transactions but before Spark logged the batch: each transaction also
  commits the offset batch id + 1 for the group named as its transactional
  id (send_offsets_to_transaction, so it commits or aborts with the rows).
  When Spark replays the batch, a task whose id has already committed it
  (OffsetFetch with require_stable, after init_transactions has ended any
  open transaction) writes nothing. An offset rather than a marker record
  in the topic: readers of the topic never see it, and the group
  coordinator keeps it as the transaction ends, with no scan of the topic.
- A driver whose completion finds another transaction open than the task's
  (a task's zombie attempt, a coordinator that had to abort it) fails the
  commit: Spark replays the batch, and the tasks whose transaction did
  commit skip it as above.

A prepared transaction that no restart ever completes holds its partitions'
last stable offset back (read_committed readers wait) until the query is
restarted from its checkpoint. Replays must give each task the same rows
(Spark's micro-batches do: same offsets, same plan); the task partitions of
a batch are what the ids are made of.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional, Sequence

from pyspark.sql.datasource import WriterCommitMessage

from client.consumer_types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition
from client.coordinator import Coordinator
from client.errors import KafkaError, error_for_code
from client.metadata import Metadata
from client.producer import AsyncProducer, Producer
from client.transactions import PreparedTxnState
from kafka_protocol.errors import Errors
from kafka_protocol.records import Record
from kraftlog_api import groups_pb2 as gpb

from .write_options import WriteOptions, producer_config

TXN_PREFIX = "kraftlog-spark-"
COMMITTED_LOOKUP_TIMEOUT_S = 60.0
RETRY_BACKOFF_S = 0.1


def transactional_id(query_id: str, task: int) -> str:
    """One id (and the group of its batch-id offsets) per query and task partition."""
    return f"{TXN_PREFIX}{query_id}-{task}"


@dataclass
class PreparedWrite(WriterCommitMessage):
    records: int
    transactional_id: str
    prepared: Optional[str]  # PreparedTxnState's string; None: nothing to commit (no rows, or done before)


def _transactional(options: WriteOptions, tid: str) -> dict:
    return producer_config(options, **{"transactional.id": tid, "transaction.two.phase.commit.enable": "true"})


def write_prepared(options: WriteOptions, records: Iterator[tuple[str, Optional[int], Record]], tid: str,
                   batch_id: int) -> PreparedWrite:
    """A task's rows in one prepared transaction of `tid`, with the batch id as the id's group offset."""
    with Producer(_transactional(options, tid)) as producer:
        producer.init_transactions()  # aborts what this id left open, fences an older attempt
        if committed_batches(options, tid) > batch_id:
            return PreparedWrite(0, tid, None)  # a replay of a batch this id committed already
        producer.begin_transaction()
        count, first_topic = 0, None
        for topic, partition, record in records:
            producer.produce(topic, record.value, key=record.key, headers=record.headers, partition=partition,
                             timestamp=record.timestamp)
            count += 1
            first_topic = first_topic or topic
        if first_topic is None:
            producer.abort_transaction()  # nothing reached the coordinator: ends locally
            return PreparedWrite(0, tid, None)
        # Any partition of a written topic carries the offset: the lookup reads all of the group's.
        producer.send_offsets_to_transaction({TopicPartition(first_topic, 0): OffsetAndMetadata(
            batch_id + 1, f"spark batch {batch_id}")}, ConsumerGroupMetadata(tid))
        return PreparedWrite(count, tid, str(producer.prepare_transaction()))


def committed_batches(options: WriteOptions, tid: str) -> int:
    """How many batches `tid` has committed (the last one's id + 1; 0: none)."""
    return asyncio.run(_committed_batches(options, tid))


async def _committed_batches(options: WriteOptions, tid: str) -> int:
    metadata = Metadata(options.bootstrap, security=options.security)
    try:
        coordinator = Coordinator(metadata, tid, request_timeout_s=10.0, backoff_s=RETRY_BACKOFF_S)
        request = gpb.OffsetFetchRequest(group_id=tid, member_epoch=-1, require_stable=True)
        deadline = time.monotonic() + COMMITTED_LOOKUP_TIMEOUT_S
        while True:
            response = await coordinator.call("OffsetFetch", lambda: request, deadline)
            if response.error_code:
                raise error_for_code(response.error_code, f"OffsetFetch for group {tid}")
            codes = {p.error_code for t in response.topics for p in t.partitions} - {Errors.NONE}
            if not codes:
                return max((p.committed_offset for t in response.topics for p in t.partitions), default=0)
            if codes != {Errors.UNSTABLE_OFFSET_COMMIT} or time.monotonic() > deadline:
                raise error_for_code(min(codes), f"OffsetFetch for group {tid}")
            await asyncio.sleep(RETRY_BACKOFF_S)  # a transaction's markers are still being written
    finally:
        await metadata.close()


def commit_prepared(options: WriteOptions, messages: Sequence[Optional[WriterCommitMessage]], batch_id: int) -> None:
    """The driver's commit: every task's prepared transaction committed (concurrently)."""
    prepared = _prepared(messages)
    outcomes = asyncio.run(_each(options, prepared, commit=True))
    failed = [tid for (tid, _), committed in zip(prepared, outcomes) if not committed]
    if failed:
        raise KafkaError(f"micro-batch {batch_id}: the transactions of {', '.join(failed[:5])} were not the ones "
                         f"their tasks prepared (aborted instead); Spark will run the batch again")


def abort_prepared(options: WriteOptions, messages: Sequence[Optional[WriterCommitMessage]]) -> None:
    """The driver's abort: every task's transaction that reported back aborted."""
    asyncio.run(_each(options, _prepared(messages), commit=False))


def _prepared(messages: Iterable[Optional[WriterCommitMessage]]) -> list[tuple[str, PreparedTxnState]]:
    return [(m.transactional_id, PreparedTxnState.parse(m.prepared)) for m in messages
            if isinstance(m, PreparedWrite) and m.prepared is not None]


async def _each(options: WriteOptions, prepared: list[tuple[str, PreparedTxnState]], *, commit: bool) -> List[bool]:
    async def end(tid: str, state: PreparedTxnState) -> bool:
        producer = AsyncProducer(_transactional(options, tid))
        producer.start()
        try:
            if not commit:
                await producer.init_transactions()  # without keep_prepared_txn: the open transaction is aborted
                return False
            await producer.init_transactions(keep_prepared_txn=True)
            return await producer.complete_transaction(state)
        finally:
            await producer.close()

    return list(await asyncio.gather(*(end(tid, state) for tid, state in prepared)))
