"""Streaming progress outside Spark: ``commitOffsetsToGroup`` commits each committed
micro-batch's end offsets to a consumer group (what Kafka's group tools and lag monitors
read), ``Trigger.AvailableNow`` ends at the offsets of its start while a producer keeps
writing, and each micro-batch logs its backlog; on a real broker and a real Spark."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from kafkaconsumer.admin import KafkaAdminClient
from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.producer import KafkaProducer
from kafkaconsumer.structs import TopicPartition
from tests.helpers import unique_name

from .conftest import create_topic, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


def _end_offsets(bs: str, topic: str) -> dict[int, int]:
    tps = [TopicPartition(topic, p) for p in range(2)]
    with KafkaConsumer({"bootstrap.servers": bs}) as consumer:
        return {tp.partition: n for tp, n in consumer.end_offsets(tps).items()}


def test_available_now_ends_at_its_start_and_commits_to_the_group(
    spark: Any, broker: Any, tmp_path: Path
) -> None:
    bs = broker.bootstrap_servers
    topic = unique_name("sp-avail")
    group = unique_name("sp-lag")
    create_topic(bs, topic, 2)
    produce(bs, topic, [(i % 2, None, b"a%d" % i, []) for i in range(300)])
    stop = threading.Event()

    def keep_writing() -> None:
        producer = KafkaProducer({"bootstrap.servers": bs, "linger.ms": 5})
        try:
            i = 0
            while not stop.is_set():
                producer.send(topic, value=b"more%d" % i, partition=i % 2)
                i += 1
                if i % 20 == 0:
                    producer.flush()
                    stop.wait(0.05)
        finally:
            producer.close()

    writer = threading.Thread(target=keep_writing, daemon=True)
    writer.start()
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    try:
        before = _end_offsets(bs, topic)
        query = (
            spark.readStream.format("kafkaconsumer")
            .option("kafka.bootstrap.servers", bs)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "100")
            .option("commitOffsetsToGroup", group)
            .load()
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        # It ends by itself although records keep coming.
        assert query.awaitTermination(300), "Trigger.AvailableNow did not end"
        assert query.exception() is None, query.exception()
        batches = [p for p in query.recentProgress if p["numInputRows"]]
        after = _end_offsets(bs, topic)
    finally:
        stop.set()
        writer.join(30)
    source = batches[-1]["sources"][0]
    # A Python source's offsets show in the progress as the JSON text it returned.
    end_json = source["endOffset"]
    if isinstance(end_json, str):
        end_json = json.loads(end_json)
    end = {int(p): o for p, o in end_json[topic].items()}
    assert all(before[p] <= end[p] for p in end), (before, end)
    assert sum(after.values()) > sum(end.values()), "the producer kept writing past the end"
    assert len(batches) >= 3 and max(p["numInputRows"] for p in batches) <= 100
    from kafkaconsumer.spark.datasource import SCHEMA_DDL

    rows = spark.read.schema(SCHEMA_DDL).parquet(str(out)).select("partition", "offset").collect()
    got = sorted((r["partition"], r["offset"]) for r in rows)
    assert got == [(p, o) for p in (0, 1) for o in range(end[p])]
    # The latest offsets the source saw show in the query's progress.
    assert source.get("latestOffset") is not None
    # The group holds the end offsets: what kafka-consumer-groups --describe reads.
    with KafkaAdminClient({"bootstrap.servers": bs}) as admin:
        committed = admin.list_consumer_group_offsets(group)
    assert {tp.partition: om.offset for tp, om in committed.items()} == end
