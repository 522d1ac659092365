"""``read_kafka``: a bounded read of Kafka on the driver into a Spark DataFrame.

The offset ranges are fixed when the call starts (the options of ``format("kafkaconsumer")``),
read by one consumer into a ``pyarrow.Table`` and handed to ``spark.createDataFrame``: no UDF,
no Python on the executors. On a terminal, a progress bar shows records, MB, rate and ETA.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from kafkaconsumer.arrow import Progress, read_offset_ranges
from kafkaconsumer.spark.offsets import plan_ranges
from kafkaconsumer.spark.options import parse_options

__all__ = ["read_kafka", "read_kafka_table"]


def read_kafka_table(options: Mapping[str, Any], *, progress: bool | None = None) -> pa.Table:
    """The rows :func:`read_kafka` returns, as a ``pyarrow.Table`` (no Spark needed).

    ``progress`` None shows a bar only when stderr is a terminal.
    """
    opts = parse_options(options)
    ranges = plan_ranges(opts)
    bounds: dict[Any, tuple[int, int]] = {}
    for r in ranges:
        lo, hi = bounds.get(r.tp, (r.start, r.end))
        bounds[r.tp] = (min(lo, r.start), max(hi, r.end))
    total = sum(e - s for s, e in bounds.values())
    show = sys.stderr.isatty() if progress is None else progress
    with _progress_bar(total, show) as tick:
        return read_offset_ranges(
            opts.kafka,
            bounds,
            include_headers=opts.include_headers,
            fail_on_data_loss=opts.fail_on_data_loss,
            poll_timeout_ms=opts.poll_timeout_ms,
            progress=tick,
        )


def read_kafka(spark: Any, options: Mapping[str, Any], *, progress: bool | None = None) -> Any:
    """Read the offset ranges ``options`` name (Spark's Kafka source options: see
    docs/spark.md) on the driver and return them as a DataFrame with Spark's Kafka schema."""
    return spark.createDataFrame(read_kafka_table(options, progress=progress))


@contextmanager
def _progress_bar(total: int, show: bool) -> Iterator[Progress | None]:
    if not show or total <= 0:
        yield None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (
        TextColumn("kafka"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("records"),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task("read", total=total)
        payload = 0

        def tick(rows: int, nbytes: int) -> None:
            nonlocal payload
            payload += nbytes
            bar.update(task, advance=rows)

        yield tick
