"""Kafka into Spark through this package, with no JVM Kafka jar.

- :func:`read_kafka`: a bounded read on the driver into a DataFrame (``spark.createDataFrame``
  on an Arrow table; no UDF, no Python on the executors).
- :class:`KafkaDataSource`: a Python Data Source (``format("kafkaconsumer")``) with Spark's
  Kafka source options, for parallel batch and streaming reads and for writes.

See docs/spark.md. Needs ``pyspark`` >= 4.0 and ``pyarrow`` (the ``spark`` extra).
"""

from __future__ import annotations

from typing import Any

from kafkaconsumer.spark.datasource import KafkaDataSource
from kafkaconsumer.spark.driver import read_kafka

__all__ = ["KafkaDataSource", "read_kafka", "register"]


def register(spark: Any) -> None:
    """Register :class:`KafkaDataSource` (format ``kafkaconsumer``) with ``spark``."""
    spark.dataSource.register(KafkaDataSource)
