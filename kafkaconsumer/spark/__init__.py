"""Kafka into Spark through this package, with no JVM Kafka jar.

- :func:`read_kafka`: a bounded read on the driver into a DataFrame (``spark.createDataFrame``
  on an Arrow table; no UDF, no Python on the executors).
- :class:`KafkaDataSource`: a Python Data Source (``format("kafkaconsumer")``) with Spark's
  Kafka source options, for parallel batch and streaming reads and for writes.

- :mod:`kafkaconsumer.spark.offset_ranges`: the bounded reads under both, into Arrow record
  batches (needs only ``pyarrow``).

See docs/spark.md. Needs ``pyspark`` >= 4.0 and ``pyarrow`` (the ``spark`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkaconsumer.spark.datasource import KafkaDataSource
    from kafkaconsumer.spark.driver import read_kafka

__all__ = ["KafkaDataSource", "read_kafka", "register"]


def register(spark: Any) -> None:
    """Register :class:`KafkaDataSource` (format ``kafkaconsumer``) with ``spark``."""
    from kafkaconsumer.spark.datasource import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)


def __getattr__(name: str) -> Any:
    # Imported on first use: the bounded reads (offset_ranges) need pyarrow, not pyspark.
    if name == "KafkaDataSource":
        from kafkaconsumer.spark.datasource import KafkaDataSource

        return KafkaDataSource
    if name == "read_kafka":
        from kafkaconsumer.spark.driver import read_kafka

        return read_kafka
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
