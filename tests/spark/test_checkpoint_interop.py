"""A streaming query moves between ``format("kafka")`` and ``format("kafkaconsumer")`` on
one checkpoint, both ways, losing and repeating nothing: both keep their offsets in the same
JSON (``{"topic":{"0":42}}``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import unique_name, wait_for

from .conftest import create_topic, produce, require_spark_connector

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


def _sink_offsets(spark: Any, out: Path) -> list[tuple[int, int]]:
    if not any(out.glob("*.parquet")):
        return []
    from kafkaconsumer.spark.datasource import SCHEMA_DDL

    got = spark.read.schema(SCHEMA_DDL).parquet(str(out)).select("partition", "offset").collect()
    return sorted((r["partition"], r["offset"]) for r in got)


def _run_until(
    spark: Any, fmt: str, bs: str, topic: str, out: Path, checkpoint: Path, total: int
) -> None:
    query = (
        spark.readStream.format(fmt)
        .option("kafka.bootstrap.servers", bs)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "25")
        .load()
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:

        def done() -> bool:
            if query.exception() is not None:
                raise AssertionError(f"the {fmt} query failed: {query.exception()}")
            return len(_sink_offsets(spark, out)) >= total

        wait_for(done, timeout=180, interval=0.5, message=f"{total} records through {fmt}")
    finally:
        query.stop()


def _last_offsets(checkpoint: Path) -> dict[str, Any]:
    log = checkpoint / "offsets"
    last = max((p for p in log.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    # Spark's offset log: a version line, the batch metadata, then one line per source.
    parsed: dict[str, Any] = json.loads(last.read_text().splitlines()[2])
    return parsed


@pytest.mark.parametrize("first, second", [("kafka", "kafkaconsumer"), ("kafkaconsumer", "kafka")])
def test_checkpoint_moves_between_sources(
    spark: Any, broker: Any, tmp_path: Path, first: str, second: str
) -> None:
    require_spark_connector()
    bs = broker.bootstrap_servers
    topic = unique_name("sp-move")
    create_topic(bs, topic, 2)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    produce(bs, topic, [(i % 2, None, b"a%d" % i, []) for i in range(60)])
    _run_until(spark, first, bs, topic, out, checkpoint, 60)
    assert _last_offsets(checkpoint) == {topic: {"0": 30, "1": 30}}
    produce(bs, topic, [(i % 2, None, b"b%d" % i, []) for i in range(40)])
    _run_until(spark, second, bs, topic, out, checkpoint, 100)
    got = _sink_offsets(spark, out)
    assert got == [(0, o) for o in range(50)] + [(1, o) for o in range(50)]
    assert _last_offsets(checkpoint) == {topic: {"0": 50, "1": 50}}
