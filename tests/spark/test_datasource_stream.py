"""Streaming reads through ``format("kafkaconsumer")`` into a parquet sink: micro-batches
within maxOffsetsPerTrigger, records produced between them, a checkpoint restart that loses and
repeats nothing; on a real broker and a real Spark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import unique_name, wait_for

from .conftest import create_topic, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def _offsets_in(spark: Any, out: Path, query: Any = None) -> list[tuple[int, int]]:
    if query is not None and query.exception() is not None:
        raise AssertionError(f"the streaming query failed: {query.exception()}")
    if not any(out.glob("*.parquet")):
        return []
    # With the schema given, files not yet committed to the sink's log read as no rows.
    from kafkaconsumer.spark.datasource import SCHEMA_DDL

    rows = spark.read.schema(SCHEMA_DDL).parquet(str(out)).select("partition", "offset").collect()
    return sorted((r["partition"], r["offset"]) for r in rows)


def _start(spark: Any, bs: str, topic: str, out: Path, checkpoint: Path) -> Any:
    stream = (
        spark.readStream.format("kafkaconsumer")
        .option("kafka.bootstrap.servers", bs)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "40")
        .load()
    )
    return (
        stream.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def test_stream_to_parquet_limits_and_restarts_without_loss_or_repeats(
    spark: Any, broker: Any, tmp_path: Path
) -> None:
    bs = broker.bootstrap_servers
    topic = unique_name("sp-stream")
    create_topic(bs, topic, 2)
    produce(bs, topic, [(i % 2, None, b"a%d" % i, []) for i in range(100)])
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = _start(spark, bs, topic, out, checkpoint)
    try:
        wait_for(
            lambda: len(_offsets_in(spark, out, query)) >= 100,
            timeout=120,
            interval=0.5,
            message="the first 100 records in the sink",
        )
        # Records produced between micro-batches are picked up by the running query.
        produce(bs, topic, [(i % 2, None, b"b%d" % i, []) for i in range(60)])
        wait_for(
            lambda: len(_offsets_in(spark, out, query)) >= 160,
            timeout=120,
            interval=0.5,
            message="160 records in the sink",
        )
        sizes = [p["numInputRows"] for p in query.recentProgress]
    finally:
        query.stop()
    assert sizes and max(sizes) <= 40, sizes
    assert sum(1 for s in sizes if s) >= 4
    # Stopped: more records arrive, then the query restarts from its checkpoint.
    produce(bs, topic, [(i % 2, None, b"c%d" % i, []) for i in range(50)])
    query = _start(spark, bs, topic, out, checkpoint)
    try:
        wait_for(
            lambda: len(_offsets_in(spark, out, query)) >= 210,
            timeout=120,
            interval=0.5,
            message="210 records in the sink after the restart",
        )
        offsets = _offsets_in(spark, out)
    finally:
        query.stop()
    assert offsets == sorted([(0, o) for o in range(105)] + [(1, o) for o in range(105)])
    checkpointed = sorted(p.name for p in (checkpoint / "offsets").iterdir() if p.name.isdigit())
    text = (checkpoint / "offsets" / checkpointed[-1]).read_text()
    assert f'"{topic}":{{"0":105,"1":105}}' in text.replace(" ", "")
