"""Batch reads through Spark against a real cluster."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from pyspark.errors import AnalysisException


from ..client.produce_consume import consume
from .conftest import bootstrap, make_records, new_topic, produce


def read(spark, cluster, **options):
    reader = spark.read.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster))
    return reader.options(**options).load()


@pytest.fixture(scope="module")
def events(cluster):
    """Topic 'batch-events': partition 0 has 40 keyed records with headers in
    two batches, partition 1 has 25 keyless ones, partition 2 is empty."""
    topic = new_topic(cluster, "batch-events", partitions=3)
    records0 = make_records("p0", 40, headers=True)
    produce(cluster, topic, 0, records0[:15])
    produce(cluster, topic, 0, records0[15:])
    records1 = make_records("p1", 25, keyed=False, start_ms=1_800_000_000_000)
    produce(cluster, topic, 1, records1)
    return topic, {0: records0, 1: records1}


def test_batch_read_equals_what_was_produced(spark, cluster, events) -> None:
    topic, produced = events
    rows = read(spark, cluster, subscribe=topic, includeHeaders="true").collect()
    assert len(rows) == 65
    for row in rows:
        record = produced[row.partition][row.offset]
        assert (row.key, row.value, row.topic, row.timestampType) == (record.key, record.value, topic, 0)
        assert row.timestamp.replace(tzinfo=timezone.utc) == datetime.fromtimestamp(record.timestamp / 1000,
                                                                                     timezone.utc)
        assert [(h.key, h.value) for h in row.headers] == list(record.headers)
    assert sorted((r.partition, r.offset) for r in rows) == \
        [(0, i) for i in range(40)] + [(1, i) for i in range(25)]
    # The same records as the console consumer reads.
    consumed = consume(bootstrap(cluster), topic, max_messages=65, idle_timeout_s=10)
    assert {(c.partition, c.offset, c.value, c.key) for c in consumed} == \
        {(r.partition, r.offset, r.value, r.key) for r in rows}


def test_schema_without_headers_is_sparks_kafka_schema(spark, cluster, events) -> None:
    df = read(spark, cluster, subscribe=events[0])
    assert df.schema.simpleString() == ("struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
                                        "timestamp:timestamp,timestampType:int>")


def test_offset_ranges_from_json(spark, cluster, events) -> None:
    topic, produced = events
    rows = read(spark, cluster, subscribe=topic,
                startingOffsets=json.dumps({topic: {"0": 10, "1": -2, "2": -2}}),
                endingOffsets=json.dumps({topic: {"0": 20, "1": 5, "2": -1}})).collect()
    assert sorted((r.partition, r.offset) for r in rows) == [(0, i) for i in range(10, 20)] + [(1, i) for i in range(5)]
    assigned = read(spark, cluster, assign=json.dumps({topic: [1]}), startingOffsets=json.dumps({topic: {"1": 20}}))
    assert [r.value for r in assigned.orderBy("offset").collect()] == [r.value for r in produced[1][20:]]


def test_starting_timestamp_finds_the_first_record_at_or_after_it(spark, cluster, events) -> None:
    topic, produced = events
    rows = read(spark, cluster, assign=json.dumps({topic: [0, 1]}),
                startingTimestamp=str(produced[0][30].timestamp)).collect()
    # partition 1's records are all later than that timestamp
    assert sorted((r.partition, r.offset) for r in rows) == [(0, i) for i in range(30, 40)] + [(1, i) for i in range(25)]


def test_min_partitions_splits_ranges_into_more_tasks_with_the_same_rows(spark, cluster, events) -> None:
    topic, _ = events
    df = read(spark, cluster, subscribe=topic, minPartitions="6")
    assert df.rdd.getNumPartitions() >= 6
    assert sorted((r.partition, r.offset) for r in df.collect()) == \
        sorted((r.partition, r.offset) for r in read(spark, cluster, subscribe=topic).collect())


def error_of(spark, cluster, **options) -> str:
    with pytest.raises(AnalysisException) as caught:
        read(spark, cluster, **options).collect()
    return str(caught.value)


def test_unknown_topic_names_the_option(spark, cluster) -> None:
    message = error_of(spark, cluster, subscribe="no-such-topic")
    assert "UNKNOWN_TOPIC_OR_PARTITION: option 'subscribe': topic 'no-such-topic' does not exist" in message


def test_malformed_starting_offsets_json_names_the_option(spark, cluster, events) -> None:
    message = error_of(spark, cluster, subscribe=events[0], startingOffsets='{"batch-events": {"0": 1')
    assert "INVALID_CONFIG: option 'startingOffsets'" in message and "is not earliest, latest or JSON" in message


def test_offsets_out_of_range_name_the_option(spark, cluster, events) -> None:
    topic = events[0]
    message = error_of(spark, cluster, subscribe=topic, startingOffsets=json.dumps({topic: {"0": 1000, "1": 0, "2": 0}}))
    assert "OFFSET_OUT_OF_RANGE: option 'startingOffsets': batch-events-0 offset 1000 is past the end" in message
    message = error_of(spark, cluster, subscribe=topic, startingOffsets=json.dumps({topic: {"0": 0}}))
    assert "option 'startingOffsets': gives no offset for batch-events-1, batch-events-2" in message


def test_unreachable_bootstrap_names_the_option(spark, cluster) -> None:
    with pytest.raises(AnalysisException) as caught:
        spark.read.format("kraftlog").option("kraftlog.bootstrap.servers", "127.0.0.1:1") \
            .option("subscribe", "x").load().collect()
    assert "NETWORK_EXCEPTION: option 'kraftlog.bootstrap.servers': no broker of 127.0.0.1:1 could be reached" \
        in str(caught.value)
