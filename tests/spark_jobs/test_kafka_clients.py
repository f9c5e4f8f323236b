"""Kafka's own clients beside Spark, on the shared cluster's Kafka listener:
what confluent-kafka (librdkafka) writes, the Spark source reads byte for
byte (keys, values, headers, timestamps, through compressed and plain
batches), and what the Spark sink writes, confluent-kafka reads byte for byte."""
from __future__ import annotations

import time

from confluent_kafka import (OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, Producer as CKProducer,
                             TopicPartition as CKTp)
from pyspark.sql import functions as F

from kafka_protocol.compression import Codec
from tests.kafka_protocol.kafka_client_reads import read_assigned, stored_batches

from .conftest import bootstrap, new_topic

READ_TIMEOUT_S = 60  # bounds the confluent-kafka read; never in an assert
T0 = 1_700_000_000_000
HEADERS_TYPE = "array<struct<key:string,value:binary>>"


def written(i: int) -> tuple:
    """(key, value, headers) of the i-th record: bytes of every value, empty
    and null keys and values, a null header value, a repeated header key and
    a value that compresses."""
    key = None if i % 5 == 0 else (b"" if i % 7 == 0 else f"key-{i}".encode())
    value = None if i == 3 else (b"" if i == 4 else bytes(range(256))[i:] + b"\x00\xff" * i + f"#{i}".encode())
    headers = [] if i % 3 == 0 else [("h", bytes([i, 0, 255])), ("none", None), ("h", f"again-{i}".encode())]
    return key, value, headers


def as_bytes(value):
    return None if value is None else bytes(value)


def test_confluent_kafka_to_the_spark_source_and_the_spark_sink_to_confluent_kafka(spark, cluster) -> None:
    # confluent-kafka writes: one producer compresses (zstd), one does not
    source = new_topic(cluster, "ck-to-spark", partitions=2)
    sent, errors = {}, []

    def delivered(record):
        def report(err, msg) -> None:
            if err is not None:
                errors.append(err)
            else:
                sent[(msg.partition(), msg.offset())] = record
        return report

    for codec, indexes in (("zstd", range(0, 30)), ("none", range(30, 40))):
        producer = CKProducer({"bootstrap.servers": cluster.client_bootstrap, "compression.type": codec,
                               "linger.ms": 20, "acks": "all"})
        for i in indexes:
            key, value, headers = written(i)
            producer.produce(source, value, key, partition=i % 2, headers=headers, timestamp=T0 + i,
                             on_delivery=delivered((key, value, headers, T0 + i)))
        assert producer.flush(30) == 0
    assert errors == [] and len(sent) == 40
    assert {Codec(h.codec).name.lower() for h in stored_batches(cluster, source, 0)} == {"zstd", "none"}

    # the Spark source reads them
    rows = (spark.read.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster))
            .option("subscribe", source).option("includeHeaders", "true").load()
            .select("partition", "offset", "key", "value", "headers", "timestampType",
                    F.expr("unix_millis(timestamp)").alias("ms")).collect())
    got = {(r.partition, r.offset): (as_bytes(r.key), as_bytes(r.value),
                                     [(h.key, as_bytes(h.value)) for h in r.headers], r.ms) for r in rows}
    assert got == sent
    assert {r.timestampType for r in rows} == {0}  # CreateTime, as the producer set it

    # the Spark sink writes (gzip); confluent-kafka reads, assigned (no group)
    target = new_topic(cluster, "spark-to-ck", partitions=2)
    # a first header names the row: keys and values repeat, and one value is null
    rows = [(*written(i)[:2], i % 2, [{"key": "row", "value": b"%d" % i}]
             + [{"key": k, "value": v} for k, v in written(i)[2]]) for i in range(40)]
    before_ms = int(time.time() * 1000)
    (spark.createDataFrame(rows, f"key binary, value binary, partition int, headers {HEADERS_TYPE}")
     .write.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster)).option("topic", target)
     .option("kraftlog.compression.type", "gzip").option("acks", "all").mode("append").save())
    after_ms = int(time.time() * 1000)
    read = read_assigned({"bootstrap.servers": cluster.client_bootstrap},
                         [CKTp(target, p, OFFSET_BEGINNING) for p in (0, 1)], len(rows), READ_TIMEOUT_S)
    assert len(read) == len(rows)
    assert {m.headers()[0][1]: (m.key(), m.value(), m.partition(), m.headers()) for m in read} == {
        headers[0]["value"]: (key, value, partition, [(h["key"], h["value"]) for h in headers])
        for key, value, partition, headers in rows}
    # written at the time of the write, as Spark's Kafka sink stamps them
    assert all(m.timestamp()[0] == TIMESTAMP_CREATE_TIME and before_ms <= m.timestamp()[1] <= after_ms for m in read)
    assert {Codec(h.codec).name.lower() for h in stored_batches(cluster, target, 0)} == {"gzip"}
