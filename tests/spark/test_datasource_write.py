"""Writes through ``format("kafkaconsumer")`` read back through it, on a real broker and a
real Spark."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import unique_name

from .conftest import create_topic, df_rows

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def test_write_then_read_back(spark: Any, broker: Any) -> None:
    bs = broker.bootstrap_servers
    topic = unique_name("sp-write")
    create_topic(bs, topic, 3)
    from pyspark.sql import Row

    rows = [
        Row(
            key=None if i % 4 == 0 else f"k{i}",
            value=bytearray(b"v%d" % i),
            partition=i % 3,
            headers=[Row(key="h", value=bytearray(b"%d" % i))],
        )
        for i in range(90)
    ]
    df = spark.createDataFrame(
        rows,
        "key string, value binary, partition int, "
        "headers array<struct<key: string, value: binary>>",
    )
    df.write.format("kafkaconsumer").option("kafka.bootstrap.servers", bs).option(
        "topic", topic
    ).mode("append").save()
    back = (
        spark.read.format("kafkaconsumer")
        .option("kafka.bootstrap.servers", bs)
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
    )
    got = sorted(((r[1], r[3], r[4], r[6]) for r in df_rows(back)), key=lambda t: t[2])
    want = sorted(
        (
            (i % 3, None if i % 4 == 0 else b"k%d" % i, b"v%d" % i, [("h", b"%d" % i)])
            for i in range(90)
        ),
        key=lambda t: t[2],
    )
    assert got == want
    # A topic column instead of the option, as Spark's sink reads it.
    spark.createDataFrame([(topic, b"x")], "topic string, value binary").write.format(
        "kafkaconsumer"
    ).option("kafka.bootstrap.servers", bs).mode("append").save()
    # The same DataFrame: each action reads up to the latest offsets when it runs.
    assert back.count() == 91
