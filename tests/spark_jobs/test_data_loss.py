"""failOnDataLoss: records deleted by retention before they were read fail
the read with a message naming the option, or (false) are skipped."""
from __future__ import annotations

import json
import shutil

import pytest
from pyspark.errors import AnalysisException

from client.cluster import Cluster
from devcluster.local_processes import wait_until
from spark_jobs.options import EARLIEST
from spark_jobs.topic_offsets import list_offsets

from .conftest import bootstrap, make_records, new_topic, produce
from .test_stream_read import run_available_now, sink_rows

# Small segments (segment.bytes 1 KiB: a few 10-record batches each), and
# records from 2023: every segment but the active one is past retention.ms.
LOSSY = {"segment.bytes": "1024", "retention.ms": "1000"}


def log_start(cluster, topic: str) -> int:
    with Cluster(bootstrap(cluster)) as client:
        client.refresh([topic])
        return list_offsets(client, {(topic, 0): EARLIEST})[(topic, 0)]


def produce_batches(cluster, topic: str, prefix: str, batches: int) -> None:
    for i in range(batches):
        produce(cluster, topic, 0, make_records(f"{prefix}{i}", 10))


def test_batch_read_of_deleted_offsets(spark, cluster) -> None:
    topic = new_topic(cluster, "lossy-batch", partitions=1, configs=LOSSY)
    produce_batches(cluster, topic, "b", 8)  # offsets 0..79 in more than one segment
    start = wait_until(lambda: log_start(cluster, topic) or None, 60, "retention to delete old segments")
    assert 0 < start < 80
    read = (spark.read.format("kraftlog").option("kraftlog.bootstrap.servers", bootstrap(cluster))
            .option("subscribe", topic).option("startingOffsets", json.dumps({topic: {"0": 0}})))
    with pytest.raises(AnalysisException) as caught:
        read.load().collect()
    assert (f"OFFSET_OUT_OF_RANGE: option 'startingOffsets': {topic}-0 offset 0 was deleted (the log starts at "
            f"{start}); set failOnDataLoss=false") in str(caught.value)
    rows = read.option("failOnDataLoss", "false").load().collect()
    assert sorted(r.offset for r in rows) == list(range(start, 80))


def test_streaming_read_past_a_checkpoint_whose_next_offsets_were_deleted(spark, cluster, tmp_path) -> None:
    topic = new_topic(cluster, "lossy-stream", partitions=1, configs=LOSSY)
    produce_batches(cluster, topic, "s", 1)
    strict, lenient = tmp_path / "strict", tmp_path / "lenient"
    assert sum(p["numInputRows"] for p in run_available_now(spark, cluster, topic, strict)) == 10
    shutil.copytree(strict, lenient)  # the same checkpoint (offset 10) and sink, for the second query
    produce_batches(cluster, topic, "t", 5)  # offsets 10..59; retention deletes all but the last segment
    wait_until(lambda: log_start(cluster, topic) > 10 or None, 60, "retention to delete past the checkpoint")
    start = log_start(cluster, topic)

    error = run_available_now(spark, cluster, topic, strict, expect_error=True)
    assert f"OFFSET_OUT_OF_RANGE: {topic}-0: offset 10 is out of range" in str(error)
    assert "set option 'failOnDataLoss' to false" in str(error)

    progress = run_available_now(spark, cluster, topic, lenient, failOnDataLoss="false")
    assert sum(p["numInputRows"] for p in progress) == 60 - start  # 10..start-1 skipped
    # (the copied sink's metadata names the first run's files in the other directory: only the new ones count)
    assert [offset for _, offset, _ in sink_rows(spark, lenient) if offset >= 10] == list(range(start, 60))
