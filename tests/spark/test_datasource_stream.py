"""Streaming reads through ``format("kafkaconsumer")`` into a parquet sink: micro-batches
within maxOffsetsPerTrigger, records produced between them, a checkpoint restart that loses and
repeats nothing; on a real broker and a real Spark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import unique_name, wait_for

from .conftest import create_topic, produce, skip_on_tansu_offset_lookups

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
        .option("maxOffsetsPerTrigger", "30")
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
    produce(bs, topic, [(i % 2, None, b"a%d" % i, []) for i in range(50)])
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = _start(spark, bs, topic, out, checkpoint)
    try:
        wait_for(
            lambda: len(_offsets_in(spark, out, query)) >= 50,
            timeout=120,
            interval=0.5,
            message="the first 50 records in the sink",
        )
        # Records produced between micro-batches are picked up by the running query.
        produce(bs, topic, [(i % 2, None, b"b%d" % i, []) for i in range(20)])
        wait_for(
            lambda: len(_offsets_in(spark, out, query)) >= 70,
            timeout=120,
            interval=0.5,
            message="70 records in the sink",
        )
        sizes = [p["numInputRows"] for p in query.recentProgress]
    finally:
        query.stop()
    assert sizes and max(sizes) <= 30, sizes
    assert sum(1 for s in sizes if s) >= 3
    # Stopped: more records arrive, then the query restarts from its checkpoint.
    produce(bs, topic, [(i % 2, None, b"c%d" % i, []) for i in range(10)])
    query = _start(spark, bs, topic, out, checkpoint)
    try:
        wait_for(
            lambda: len(_offsets_in(spark, out, query)) >= 80,
            timeout=120,
            interval=0.5,
            message="80 records in the sink after the restart",
        )
        offsets = _offsets_in(spark, out)
    finally:
        query.stop()
    assert offsets == sorted([(0, o) for o in range(40)] + [(1, o) for o in range(40)])
    checkpointed = sorted(p.name for p in (checkpoint / "offsets").iterdir() if p.name.isdigit())
    text = (checkpoint / "offsets" / checkpointed[-1]).read_text()
    assert f'"{topic}":{{"0":40,"1":40}}' in text.replace(" ", "")


def _stream(spark: Any, bs: str, topic: str, **options: str) -> Any:
    reader = (
        spark.readStream.format("kafkaconsumer")
        .option("kafka.bootstrap.servers", bs)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_min_offsets_per_trigger_holds_back_until_enough_or_delayed(broker: Any) -> None:
    # The admission hooks Spark offers a Python source (getDefaultReadLimit, latestOffset),
    # driven as Spark drives them, without a query: whether a trigger is held back is not
    # visible from a sink without waiting for a time.
    skip_on_tansu_offset_lookups(broker)
    from pyspark.sql.streaming.datasource import ReadMinRows

    from kafkaconsumer.spark.datasource import KafkaStreamReader
    from kafkaconsumer.spark.options import parse_options

    bs = broker.bootstrap_servers
    topic = unique_name("sp-mintrigger")
    create_topic(bs, topic, 1)
    options = {"kafka.bootstrap.servers": bs, "subscribe": topic, "startingOffsets": "earliest"}
    reader = KafkaStreamReader(
        parse_options({**options, "minOffsetsPerTrigger": "25"}, streaming=True)
    )
    start = reader.initialOffset()
    limit = reader.getDefaultReadLimit()
    assert isinstance(limit, ReadMinRows) and limit.min_rows == 25
    produce(bs, topic, [(0, None, b"a%d" % i, []) for i in range(10)])
    assert reader.latestOffset(start, limit) == start  # 10 < 25: held back
    produce(bs, topic, [(0, None, b"b%d" % i, []) for i in range(20)])
    assert reader.latestOffset(start, limit) == {topic: {"0": 30}}
    # Below the minimum, maxTriggerDelay after the last trigger releases what is there.
    delayed = KafkaStreamReader(
        parse_options(
            {**options, "minOffsetsPerTrigger": "1000", "maxTriggerDelay": "1s"}, streaming=True
        )
    )
    first = delayed.initialOffset()
    wait_for(
        lambda: delayed.latestOffset(first, delayed.getDefaultReadLimit()) != first,
        timeout=30,
        interval=0.2,
        message="maxTriggerDelay to release 30 records below minOffsetsPerTrigger",
    )


def test_stream_written_to_kafka_with_trigger_delay(
    spark: Any, broker: Any, tmp_path: Path
) -> None:
    from kafkaconsumer.spark.driver import read_kafka_table

    bs = broker.bootstrap_servers
    source, sink = unique_name("sp-ssrc"), unique_name("sp-ssink")
    create_topic(bs, source, 2)
    create_topic(bs, sink, 2)
    produce(bs, source, [(i % 2, b"k%d" % i, b"v%d" % i, []) for i in range(30)])
    query = (
        _stream(spark, bs, source, minOffsetsPerTrigger="1000", maxTriggerDelay="1s")
        .selectExpr("key", "value", "partition")
        .writeStream.format("kafkaconsumer")
        .option("kafka.bootstrap.servers", bs)
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )

    def written() -> int:
        if query.exception() is not None:
            raise AssertionError(f"the streaming query failed: {query.exception()}")
        options = {"kafka.bootstrap.servers": bs, "subscribe": sink}
        return int(read_kafka_table(options, progress=False).num_rows)

    try:
        # 30 records never reach minOffsetsPerTrigger: maxTriggerDelay lets them through.
        wait_for(lambda: written() >= 30, timeout=120, interval=0.5, message="30 written")
    finally:
        query.stop()
    table = read_kafka_table({"kafka.bootstrap.servers": bs, "subscribe": sink}, progress=False)
    got = sorted((r["partition"], r["key"], r["value"]) for r in table.to_pylist())
    assert got == sorted((i % 2, b"k%d" % i, b"v%d" % i) for i in range(30))


def test_stream_data_loss_between_micro_batches(spark: Any, broker: Any, tmp_path: Path) -> None:
    if broker.is_tansu:
        pytest.skip("Tansu has no DeleteRecords")
    from kafkaconsumer.admin import KafkaAdminClient
    from kafkaconsumer.structs import TopicPartition

    bs = broker.bootstrap_servers
    topic = unique_name("sp-sloss")
    create_topic(bs, topic, 1)
    produce(bs, topic, [(0, None, b"a%d" % i, []) for i in range(20)])
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run(fail_on_data_loss: str, until: int | None) -> Any:
        query = (
            _stream(spark, bs, topic, failOnDataLoss=fail_on_data_loss)
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="200 milliseconds")
            .start()
        )
        try:
            if until is None:
                wait_for(
                    lambda: query.exception() is not None,
                    timeout=120,
                    interval=0.5,
                    message="the query to fail",
                )
                return query.exception()
            wait_for(
                lambda: len(_offsets_in(spark, out, query)) >= until,
                timeout=120,
                interval=0.5,
                message=f"{until} records in the sink",
            )
            return None
        finally:
            query.stop()

    run("false", 20)
    # While the query is stopped, records it has not read are deleted: with
    # failOnDataLoss=false the restarted query skips them and goes on.
    produce(bs, topic, [(0, None, b"b%d" % i, []) for i in range(20)])
    with KafkaAdminClient({"bootstrap.servers": bs}) as admin:
        admin.delete_records({TopicPartition(topic, 0): 30})
    run("false", 30)
    assert _offsets_in(spark, out) == [(0, o) for o in [*range(20), *range(30, 40)]]
    # Again, with failOnDataLoss=true: the query fails naming the partition and the range.
    produce(bs, topic, [(0, None, b"c%d" % i, []) for i in range(10)])
    with KafkaAdminClient({"bootstrap.servers": bs}) as admin:
        admin.delete_records({TopicPartition(topic, 0): 45})
    error = run("true", None)
    assert f"data loss in {topic}-0: offsets [40, 45)" in str(error)
