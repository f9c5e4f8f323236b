"""kraftlog for Spark: the `kraftlog` Python data source (batch and streaming
reads and writes, with the options and rows of Spark's Kafka source) and
example jobs. Import `register` and call it on a SparkSession."""
from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Make `format("kraftlog")` available in this SparkSession."""
    from .source import KraftlogDataSource  # pyspark is imported only when Spark is used

    spark.dataSource.register(KraftlogDataSource)
