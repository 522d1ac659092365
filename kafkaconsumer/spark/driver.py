"""``read_kafka``: a bounded read of Kafka on the driver into a Spark DataFrame.

The offset ranges are fixed when the call starts (the options of ``format("kafkaconsumer")``,
``keyFormat``/``valueFormat`` and the schema registry's included), read by one consumer into a
``pyarrow.Table`` (keys and values decoded on the driver) and handed to
``spark.createDataFrame``: no UDF, no Python on the executors. On a terminal, a progress bar shows records, MB, rate and ETA.
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from kafkaconsumer.record.arrow import repeated_int32
from kafkaconsumer.spark.columns import spark_headers_table
from kafkaconsumer.spark.formats import (
    FormatOptions,
    decode_table,
    pin,
    spark_schema,
    split_format_options,
)
from kafkaconsumer.spark.offset_ranges import Progress, read_offset_ranges
from kafkaconsumer.spark.offsets import plan_ranges
from kafkaconsumer.spark.options import parse_options

__all__ = ["read_kafka", "read_kafka_table"]

logger = logging.getLogger(__name__)

# The JVM handles (py4j objects) of the DataFrames earlier reads made, with the size of each
# read's table. py4j keeps every method called on a handle in the handle itself, so a dropped
# DataFrame's handle, and those of DataFrames derived from it, sit in reference cycles that only
# Python's cyclic collector frees; until it runs, the driver's JVM keeps that read's whole
# table. A read of large tables makes few Python objects, so the collector seldom runs by
# itself: repeated reads of 2,000,000 records of 100 B ran a 3 GB driver out of heap on the
# sixth. A read that finds earlier reads of at least RELEASE_AFTER_BYTES still alive runs the
# collector first (a full collection took 36-80 ms in a driver of 126,000 objects).

#: Earlier reads still alive, in bytes of their tables, from which a read runs Python's cyclic
#: garbage collector before it reads (see docs/spark.md).
RELEASE_AFTER_BYTES = 64 << 20
_earlier_reads: list[tuple[list[weakref.ref[Any]], int]] = []  # guarded by _reads_lock
_reads_lock = threading.Lock()

#: Bytes of table from which ``read_kafka`` through Spark Connect logs a warning: the server
#: turns the table into rows in its own memory, and its plan cache keeps them (see
#: docs/spark.md, Spark Connect).
CONNECT_WARN_BYTES = 64 << 20


def read_kafka_table(
    options: Mapping[str, Any], *, progress: bool | None = None, console: Any = None
) -> pa.Table:
    """The rows :func:`read_kafka` returns, as a ``pyarrow.Table`` (no Spark needed).

    ``progress`` None shows a bar only when stderr is a terminal; ``console`` is the
    ``rich.console.Console`` to draw it on (default: stderr).
    """
    return _read_table(options, progress, console)[0]


def _read_table(
    options: Mapping[str, Any], progress: bool | None, console: Any
) -> tuple[pa.Table, FormatOptions, list[str]]:
    opts, formats = _parse(options)
    ranges = plan_ranges(opts)
    bounds: dict[Any, tuple[int, int]] = {}
    for r in ranges:
        lo, hi = bounds.get(r.tp, (r.start, r.end))
        bounds[r.tp] = (min(lo, r.start), max(hi, r.end))
    total = sum(e - s for s, e in bounds.values())
    show = sys.stderr.isatty() if progress is None else progress
    with _progress_bar(total, show, console) as tick:
        table = read_offset_ranges(
            opts.consumer_config("driver"),
            bounds,
            include_headers=opts.include_headers,
            fail_on_data_loss=opts.fail_on_data_loss,
            poll_timeout_ms=opts.poll_timeout_ms,
            progress=tick,
        )
    table = spark_headers_table(table)
    topics = sorted({tp.topic for tp in bounds})
    return (decode_table(formats, table) if formats.typed else table), formats, topics


def _parse(options: Mapping[str, Any]) -> tuple[Any, FormatOptions]:
    rest, formats = split_format_options(options)
    opts = parse_options(rest)
    if formats.typed:
        topics = [
            t.strip()
            for name, value in rest.items()
            if str(name).lower() == "subscribe"
            for t in str(value).split(",")
            if t.strip()
        ]
        formats = pin(formats, topics)
    return opts, formats


def read_kafka(
    spark: Any, options: Mapping[str, Any], *, progress: bool | None = None, console: Any = None
) -> Any:
    """Read the offset ranges ``options`` name (Spark's Kafka source options: see
    docs/spark.md) on the driver and return them as a DataFrame with Spark's Kafka schema
    (``progress`` and ``console`` as for :func:`read_kafka_table`)."""
    _release_dropped_reads()
    table, formats, topics = _read_table(options, progress, console)
    table, names = _topic_numbers(table, topics)
    nbytes = table.nbytes
    if nbytes >= CONNECT_WARN_BYTES and _is_connect(spark):
        logger.warning(
            "read_kafka sends %.0f MB of records to the Spark Connect server, which turns them "
            "into rows in its own memory and keeps them with the plans it caches for the "
            'session (spark.connect.session.planCache.*); format("kafkaconsumer") reads '
            "them on the server's executors instead",
            nbytes / 1e6,
        )
    if formats.typed:
        # The Data Source's schema (a PERMISSIVE read's _corrupt_record included), so that
        # both reads give the same columns and types.
        include = "headers" in table.column_names
        schema = spark_schema(formats, include)
        if names is not None:
            schema = _numbered_topic(schema)
        df = spark.createDataFrame(table, schema=schema)
    else:
        df = spark.createDataFrame(table)
    made = [df]
    # createDataFrame makes one partition per Arrow batch of
    # spark.sql.execution.arrow.maxRecordsPerBatch rows (10,000 by default): 200 tasks for 2 M
    # rows, each costing more to schedule than to run. The rows are on the driver either way;
    # as many partitions as Spark's default parallelism keep every core busy.
    parallelism = _default_parallelism(spark)
    if parallelism is not None:
        df = df.coalesce(parallelism)
        made.append(df)
    if names is not None:
        df = df.withColumn("topic", _topic_names(names))
        made.append(df)
    _track_jvm_handles(spark, made, nbytes)
    return df


def _release_dropped_reads() -> None:
    with _reads_lock:
        _earlier_reads[:] = [r for r in _earlier_reads if any(h() is not None for h in r[0])]
        pending = sum(nbytes for _, nbytes in _earlier_reads)
    if pending >= RELEASE_AFTER_BYTES:
        # Only unreachable cycles are freed: a DataFrame the caller still holds keeps its
        # handle (and its read stays counted).
        gc.collect()


def _is_connect(spark: Any) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _track_jvm_handles(spark: Any, frames: list[Any], nbytes: int) -> None:
    if _is_connect(spark):
        return  # no py4j handles: the Connect server holds the relations
    handles = [weakref.ref(df._jdf) for df in frames]
    with _reads_lock:
        _earlier_reads.append((handles, nbytes))


def _topic_numbers(table: pa.Table, topics: list[str]) -> tuple[pa.Table, list[str] | None]:
    """``table`` with its ``topic`` column as each row's index into the topic names returned
    beside it (None: left as it is, for a table without rows).

    Spark ships the rows of a large ``createDataFrame`` inside its tasks, and every action
    copies them out again into rows: the topic name repeated on every row was about a fifth
    of those bytes for 100-byte values. As numbers, the names are put back by an expression
    over a literal array, in the same tasks."""
    i = table.schema.get_field_index("topic")
    if i < 0 or not table.num_rows:
        return table, None
    if len(topics) == 1:
        numbers: pa.Array = repeated_int32(0, table.num_rows)
        names = topics
    else:
        encoded = table.column(i).combine_chunks().dictionary_encode()
        numbers, names = encoded.indices, encoded.dictionary.to_pylist()
    return table.set_column(i, pa.field("topic", pa.int32()), numbers), names


def _numbered_topic(schema: Any) -> Any:
    """``schema`` with the ``topic`` field an integer (see :func:`_topic_numbers`)."""
    from pyspark.sql.types import IntegerType, StructField, StructType

    return StructType(
        [
            StructField("topic", IntegerType(), f.nullable) if f.name == "topic" else f
            for f in schema.fields
        ]
    )


def _topic_names(names: list[str]) -> Any:
    """The expression that turns the ``topic`` numbers back into the names. ``try_`` keeps
    the column nullable, as Spark's Kafka source declares it (no index is ever out of
    range)."""
    from pyspark.sql import functions as F

    return F.try_element_at(F.array(*[F.lit(name) for name in names]), F.col("topic") + F.lit(1))


def _default_parallelism(spark: Any) -> int | None:
    # A Spark Connect session has no SparkContext (and says so with an error); its server
    # may run on other machines than this one anyway.
    if _is_connect(spark):
        conf = spark.conf.get("spark.default.parallelism", None)
        return max(1, int(conf)) if conf else None
    return max(1, int(spark.sparkContext.defaultParallelism))


@contextmanager
def _progress_bar(total: int, show: bool, console: Any) -> Iterator[Progress | None]:
    if not show or total <= 0:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    # The task counts records (so the ETA is in records); the payload size and the record
    # rate are fields of their own.
    columns = (
        TextColumn("kafka"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("records"),
        TextColumn("{task.fields[mb]:.1f} MB"),
        TextColumn("{task.fields[rate]:,.0f} records/s"),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("read", total=total, mb=0.0, rate=0.0)
        started = time.monotonic()
        rows_done = 0
        payload = 0

        def tick(rows: int, nbytes: int) -> None:
            nonlocal rows_done, payload
            rows_done += rows
            payload += nbytes
            elapsed = max(time.monotonic() - started, 1e-6)
            bar.update(task, advance=rows, mb=payload / 1e6, rate=rows_done / elapsed)

        yield tick
