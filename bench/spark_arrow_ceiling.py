"""An in-memory Arrow data source with the kraftlog source's rows (bench/spark_read.py):
the same schema, partitions and 100-byte values, made with numpy instead of
fetched and decoded, so its rows/s is the ceiling of Spark's Python data
source path on this machine. Imported by Spark's Python workers (PYTHONPATH)."""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from spark_jobs.arrow_rows import arrow_schema, source_schema

ROWS_PER_BATCH = 8192


class ArrowCeilingSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "arrow_ceiling"

    def schema(self):
        return source_schema(False)

    def reader(self, schema):
        return _Reader(int(self.options["partitions"]), int(self.options["rows"]), int(self.options["value_bytes"]))


class _Reader(DataSourceReader):
    def __init__(self, partitions: int, rows: int, value_bytes: int) -> None:
        self.partitions_, self.rows, self.value_bytes = partitions, rows, value_bytes

    def partitions(self):
        return [InputPartition(p) for p in range(self.partitions_)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        # The rows are made once per task, before the first yield, so that
        # what is timed is Spark taking Arrow batches from a Python source,
        # not numpy making random bytes.
        per_partition = self.rows // self.partitions_
        made = {n: _batch(partition.value, n, self.value_bytes)
                for n in {min(ROWS_PER_BATCH, per_partition - start) for start in range(0, per_partition, ROWS_PER_BATCH)}}
        for start in range(0, per_partition, ROWS_PER_BATCH):
            yield made[min(ROWS_PER_BATCH, per_partition - start)]


def _batch(partition: int, n: int, width: int) -> pa.RecordBatch:
    data = np.random.default_rng(partition).integers(97, 123, n * width, dtype=np.uint8)
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    values = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return pa.RecordBatch.from_arrays([
        pa.nulls(n, pa.binary()), values, pa.array(["bench"] * n, pa.string()),
        pa.array(np.full(n, partition, dtype=np.int32)),
        pa.array(np.arange(n, dtype=np.int64)),
        pa.array(np.full(n, 1_700_000_000_000_000, dtype=np.int64), pa.timestamp("us", tz="UTC")),
        pa.array(np.zeros(n, dtype=np.int32)),
    ], schema=arrow_schema(False))
