"""The `kraftlog` data source: Spark's Kafka source and sink, over kraftlog's gRPC API.

    spark.dataSource.register(KraftlogDataSource)   # or spark_jobs.register(spark)
    spark.read.format("kraftlog").option("kraftlog.bootstrap.servers", "127.0.0.1:9092")
        .option("subscribe", "events").load()
    df.write.format("kraftlog").option("kraftlog.bootstrap.servers", ...).option("topic", "out").save()
"""
from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource, DataSourceReader, DataSourceStreamReader, DataSourceStreamWriter, DataSourceWriter,
)
from pyspark.sql.types import StructType

from .arrow_rows import source_schema
from .batch_reader import KraftlogBatchReader
from .options import Options, parse_read_options
from .stream_reader import KraftlogStreamReader
from .writer import batch_writer, stream_writer


class KraftlogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kraftlog"

    def schema(self) -> StructType:
        return source_schema(Options(self.options).boolean("includeHeaders", False))

    def reader(self, schema: StructType) -> DataSourceReader:
        return KraftlogBatchReader(parse_read_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KraftlogStreamReader(parse_read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return batch_writer(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return stream_writer(self.options, schema)
