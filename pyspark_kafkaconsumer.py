"""Lets Spark find ``format("kafkaconsumer")`` with no registration call.

Spark (4.0 and later) imports every installed top-level module whose name starts with
``pyspark_`` when a session first looks up a Python data source, and registers its
``DefaultSource`` under that source's name. This source reads without filter pushdown (Spark
refuses a reader that takes filters unless ``spark.sql.python.filterPushdown.enabled`` is
set); ``kafkaconsumer.spark.register(spark)`` sets it and replaces this one with the source
that pushes filters down.
"""

from __future__ import annotations

import logging

__all__ = ["DefaultSource"]

try:
    from kafkaconsumer.spark.datasource import KafkaDataSource as DefaultSource
except ImportError as exc:  # pragma: no cover - pyarrow missing: Spark's lookup must go on
    # Spark imports this module for every session, also where only other sources are used.
    logging.getLogger(__name__).warning(
        "format kafkaconsumer is unavailable: %s (install kafkaconsumer[spark])", exc
    )
