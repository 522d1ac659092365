"""Kafka into Spark through this package, with no JVM Kafka jar.

- :func:`read_kafka`: a bounded read on the driver into a DataFrame (``spark.createDataFrame``
  on an Arrow table; no UDF, no Python on the executors).
- :class:`KafkaDataSource`: a Python Data Source (``format("kafkaconsumer")``) with Spark's
  Kafka source options, for parallel batch and streaming reads and for writes. Spark finds it
  by its short name once the package is installed (the top-level ``pyspark_kafkaconsumer``
  module); :func:`register` also turns on filter pushdown.
- :mod:`kafkaconsumer.spark.offset_ranges`: the bounded reads under both, into Arrow record
  batches (needs only ``pyarrow``).

See docs/spark.md. Needs ``pyspark`` >= 4.0 and ``pyarrow`` (the ``spark`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkaconsumer.spark.datasource import KafkaDataSource
    from kafkaconsumer.spark.driver import read_kafka

__all__ = ["PUSHDOWN_CONF", "KafkaDataSource", "read_kafka", "register"]

#: The Spark SQL setting without which Spark 4.2 pushes no filter into a Python data source.
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any, *, pushdown: bool = False) -> None:
    """Register the Data Source (format ``kafkaconsumer``) in ``spark``.

    With ``pushdown=True`` it also turns on ``spark.sql.python.filterPushdown.enabled`` and
    registers the source that narrows its offset ranges by the filters on ``topic``,
    ``partition``, ``offset`` and ``timestamp``. Off by default because Spark 4.2 stores the
    read planned with pushed filters on the loaded DataFrame's relation
    (``PythonDataSourceV2.setReadInfo``) and plans that DataFrame's later actions without
    filters from it, calling no Python that could tell them apart; with pushdown on, load the
    DataFrame again for each query (see docs/spark.md, "Filter pushdown")."""
    if not pushdown:
        from kafkaconsumer.spark.datasource import KafkaDataSource

        spark.dataSource.register(KafkaDataSource)
        return
    from kafkaconsumer.spark.datasource import KafkaPushdownDataSource

    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(KafkaPushdownDataSource)


def __getattr__(name: str) -> Any:
    # Imported on first use: the bounded reads (offset_ranges) need pyarrow, not pyspark.
    if name == "KafkaDataSource":
        from kafkaconsumer.spark.datasource import KafkaDataSource

        return KafkaDataSource
    if name == "read_kafka":
        from kafkaconsumer.spark.driver import read_kafka

        return read_kafka
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
