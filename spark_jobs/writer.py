"""The kraftlog sink: `df.write.format("kraftlog")` and `writeStream.format("kraftlog")`.

Both take Arrow batches of the input (key, value, optional topic, partition,
headers; see write_options). A batch write sends through the project's
Producer (batching, retries, idempotence as configured); a streaming write
goes through idempotent_sink so that a micro-batch Spark replays after a
failure does not write its records twice, or, with
`kraftlog.sink.exactlyOnce=true`, through exactly_once_sink: each
micro-batch in prepared transactions that the driver's commit commits, so a
read_committed reader sees all of a batch or none of it. So does a batch write given
`writerId` and `batchId`: foreachBatch's way to the same guarantee (Python
streaming sinks have no Update output mode, so aggregations that emit
changes, like wordcount's, write through foreachBatch). Records carry the time they are
written as CreateTime, as Spark's Kafka sink does.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator, List, Optional

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from client.cluster import Cluster
from client.errors import KafkaError
from client.producer import Producer
from client.producer_config import ProducerConfig
from kafka_protocol.records import Record

from .exactly_once_sink import abort_prepared, commit_prepared, transactional_id, write_prepared
from .idempotent_sink import ReplayableSender, writer_identity
from .write_options import WriteOptions, parse_write_options, producer_config

# Spark's local properties of a micro-batch's tasks (StreamExecution).
BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"


@dataclass
class Written(WriterCommitMessage):
    records: int


def input_records(batch: pa.RecordBatch, options: WriteOptions) -> Iterator[tuple[str, Optional[int], Record]]:
    """(topic, partition or None, record) per input row."""
    now_ms = int(time.time() * 1000)
    names = {name.lower(): name for name in batch.schema.names}
    count = batch.num_rows

    def column(name: str) -> list:
        return batch.column(names[name]).to_pylist() if name in names else [None] * count

    values, keys = column("value"), column("key")
    topics = [options.topic] * count if options.topic else column("topic")
    partitions, headers = column("partition"), column("headers")
    for i in range(count):
        topic = topics[i]
        if topic is None:
            raise KafkaError("column 'topic': null in a row, and no 'topic' option is set")
        record_headers = tuple((h["key"], _bytes(h["value"])) for h in headers[i] or ())
        yield topic, partitions[i], Record(_bytes(keys[i]), _bytes(values[i]), now_ms, record_headers)


def _bytes(data: object) -> Optional[bytes]:
    return data.encode("utf-8") if isinstance(data, str) else data  # type: ignore[return-value]


def write_replayable(options: WriteOptions, iterator: Iterator[pa.RecordBatch], writer_id: str,
                     batch_id: int) -> Written:
    """This task's rows through idempotent_sink: a rerun of the same
    (writer, task, batch) sends the same batches, which the broker deduplicates."""
    producer_id, epoch = writer_identity(writer_id, TaskContext.get().partitionId(), batch_id)
    config = ProducerConfig.parse(producer_config(options))
    with Cluster(options.bootstrap, options.security) as cluster:
        sender = ReplayableSender(cluster, config, producer_id, epoch)
        for batch in iterator:
            for topic, partition, record in input_records(batch, options):
                sender.add(topic, partition, record)
        return Written(sender.flush())


class KraftlogBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Written:
        if self.options.writer_id is not None and self.options.batch_id is not None:
            return write_replayable(self.options, iterator, self.options.writer_id, self.options.batch_id)
        failures: list[BaseException] = []

        def delivered(error: Optional[KafkaError], _metadata: object) -> None:
            if error is not None and not failures:
                failures.append(error)

        count = 0
        with Producer(producer_config(self.options)) as producer:
            for batch in iterator:
                for topic, partition, record in input_records(batch, self.options):
                    producer.produce(topic, record.value, key=record.key, headers=record.headers,
                                     partition=partition, timestamp=record.timestamp, on_delivery=delivered)
                    count += 1
            producer.flush()
        if failures:
            raise failures[0]
        return Written(count)


class KraftlogStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        context = TaskContext.get()
        query_id = context.getLocalProperty(QUERY_ID_PROPERTY)
        batch_id = int(context.getLocalProperty(BATCH_ID_PROPERTY))
        if self.options.exactly_once:
            records = (row for batch in iterator for row in input_records(batch, self.options))
            return write_prepared(self.options, records, transactional_id(query_id, context.partitionId()), batch_id)
        return write_replayable(self.options, iterator, query_id, batch_id)

    def commit(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
        """Exactly-once: every task's prepared transaction committed. Idempotent: the
        records are in the topics once every task returned; nothing more to do."""
        if self.options.exactly_once:
            commit_prepared(self.options, messages, batchId)

    def abort(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
        """Exactly-once: the prepared transactions aborted. Idempotent: records already
        sent stay; the replay deduplicates them."""
        if self.options.exactly_once:
            abort_prepared(self.options, messages)


def batch_writer(options: dict, schema: StructType) -> KraftlogBatchWriter:
    return KraftlogBatchWriter(parse_write_options(options, schema, streaming=False))


def stream_writer(options: dict, schema: StructType) -> KraftlogStreamWriter:
    return KraftlogStreamWriter(parse_write_options(options, schema, streaming=True))
