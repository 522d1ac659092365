"""Filter pushdown on a real broker and a real Spark: the rows are those Spark's own source
returns for the same query, and the broker serves only the narrowed ranges (its own
per-topic byte counter, read over JMX)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kafkaconsumer.admin import KafkaAdminClient
from kafkaconsumer.producer import KafkaProducer
from kafkaconsumer.spark.offsets import plan
from kafkaconsumer.spark.options import parse_options
from kafkaconsumer.spark.pushdown import Pushdown
from tests.helpers import unique_name

from .conftest import create_topic, produce, require_spark_connector
from .test_parity import read, rows

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

HOUR_MS = 3600 * 1000
RECORDS = 20_000
METRICS_TOOL = Path(__file__).with_name("BrokerTopicMetrics.java")


def bytes_out(broker: Any, topic: str) -> int:
    """The bytes of fetch responses the broker has served for ``topic`` (its
    BrokerTopicMetrics BytesOutPerSec count)."""
    cluster = broker.extra.get("cluster")
    if cluster is None:
        pytest.skip("the broker's metrics are read from the Apache Kafka node this session started")
    pid = cluster.brokers[0].pid
    out = subprocess.run(
        ["java", str(METRICS_TOOL), str(pid), topic, "BytesOutPerSec"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return int(out.split()[1])


@pytest.fixture(scope="module")
def ten_hours(spark: Any, broker: Any) -> tuple[str, int]:
    """A 2-partition topic of 20,000 records whose CreateTime timestamps cover ten hours
    (every 50th record half an hour older than its neighbours); returns it and its start."""
    require_spark_connector()
    topic = unique_name("pd-hours")
    create_topic(broker.bootstrap_servers, topic, 2)
    base = int(time.time() * 1000) - 11 * HOUR_MS
    producer = KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20})
    try:
        futures = []
        for i in range(RECORDS):
            ts = base + i * (10 * HOUR_MS) // RECORDS - (HOUR_MS // 2 if i % 50 == 25 else 0)
            futures.append(
                producer.send(topic, value=b"%06d" % i * 30, partition=i % 2, timestamp_ms=ts)
            )
        producer.flush()
        for f in futures:
            f.get(60)
    finally:
        producer.close()
    return topic, base


def _ts(ms: int) -> str:
    return f"timestamp_millis({ms})"


def test_pushed_filters_return_the_rows_spark_returns(
    spark: Any, broker: Any, ten_hours: tuple[str, int]
) -> None:
    topic, base = ten_hours
    bs = broker.bootstrap_servers
    wheres = [
        "partition = 1",
        "partition IN (0, 5)",
        f"topic = '{topic}' AND offset > 100 AND offset <= 300",
        "offset = 7",
        f"timestamp >= {_ts(base + 4 * HOUR_MS + 1)}",
        f"timestamp > {_ts(base + 4 * HOUR_MS)}",
        f"timestamp BETWEEN {_ts(base + 2 * HOUR_MS)} AND {_ts(base + 3 * HOUR_MS)}",
        f"timestamp < {_ts(base + HOUR_MS)}",
        f"timestamp >= {_ts(base + 9 * HOUR_MS)} AND partition = 0 AND offset < 9990",
        f"timestamp >= {_ts(base + 20 * HOUR_MS)}",
    ]
    for where in wheres:
        ours = read(spark, "kafkaconsumer", bs, {"subscribe": topic}).where(where)
        theirs = read(spark, "kafka", bs, {"subscribe": topic}).where(where)
        expected = rows(theirs)
        assert rows(ours) == expected, where
    # Partition filters leave the other partitions without a task.
    only = read(spark, "kafkaconsumer", bs, {"subscribe": topic}).where("partition = 1")
    assert only.rdd.getNumPartitions() == 1


def test_last_hour_of_ten_fetches_a_tenth(
    spark: Any, broker: Any, ten_hours: tuple[str, int]
) -> None:
    topic, base = ten_hours
    bs = broker.bootstrap_servers
    last_hour = f"timestamp >= {_ts(base + 9 * HOUR_MS)}"

    def served(fmt: str, where: str | None) -> tuple[int, int]:
        df = read(spark, fmt, bs, {"subscribe": topic})
        if where:
            df = df.where(where)
        before = bytes_out(broker, topic)
        n = df.count()
        return n, bytes_out(broker, topic) - before

    n_all, all_bytes = served("kafkaconsumer", None)
    n_hour, hour_bytes = served("kafkaconsumer", last_hour)
    n_spark, spark_bytes = served("kafka", last_hour)
    assert n_all == RECORDS and n_hour == n_spark
    assert RECORDS * 0.08 <= n_hour <= RECORDS * 0.12
    print(
        f"broker BytesOut: whole topic {all_bytes}, last hour through pushdown {hour_bytes} "
        f"({hour_bytes / all_bytes:.3f}), through Spark's source {spark_bytes}"
    )
    assert 0.05 <= hour_bytes / all_bytes <= 0.2
    # Spark's own source reads the whole topic and filters afterwards.
    assert spark_bytes >= 0.9 * all_bytes


def test_upper_bounds_narrow_only_log_append_time_topics(spark: Any, broker: Any) -> None:
    bs = broker.bootstrap_servers
    appended = unique_name("pd-append")
    created = unique_name("pd-create")
    with KafkaAdminClient({"bootstrap.servers": bs}) as admin:
        admin.create_topics({appended: 1}, configs={"message.timestamp.type": "LogAppendTime"})
        admin.create_topics({created: 1})
    marks = []
    for wave in range(3):
        time.sleep(0.05)
        marks.append(int(time.time() * 1000))
        time.sleep(0.05)
        for t in (appended, created):
            produce(bs, t, [(0, None, b"w%d-%d" % (wave, i), []) for i in range(40)])
    # The second wave: at or after its mark, before the third's.
    pushdown = Pushdown(ts_low_ms=marks[1], ts_high_ms=marks[2])
    for topic, expected_end in ((appended, 80), (created, 120)):
        ranges, _ = plan(
            parse_options({"kafka.bootstrap.servers": bs, "subscribe": topic}), pushdown=pushdown
        )
        assert [(r.start, r.end) for r in ranges] == [(40, expected_end)], topic
    for topic in (appended, created):
        where = f"timestamp >= {_ts(marks[1])} AND timestamp < {_ts(marks[2])}"
        ours = read(spark, "kafkaconsumer", bs, {"subscribe": topic}).where(where)
        theirs = read(spark, "kafka", bs, {"subscribe": topic}).where(where)
        assert rows(ours) == rows(theirs) and ours.count() == 40


def test_discovered_without_register(broker: Any, tmp_path: Path) -> None:
    """A session that never calls register() finds format("kafkaconsumer") by its name (the
    pyspark_kafkaconsumer module), and reads without filter pushdown."""
    if broker.is_tansu:
        pytest.skip(
            "Tansu 0.6 answers ListOffsets(latest) with the last batch's base offset + 1, so a "
            "bounded read of records produced in one batch stops short"
        )
    bs = broker.bootstrap_servers
    topic = unique_name("pd-found")
    create_topic(bs, topic, 1)
    produce(bs, topic, [(0, None, b"v%d" % i, []) for i in range(30)])
    script = tmp_path / "job.py"
    script.write_text(
        "import sys\n"
        "from pyspark.sql import SparkSession\n"
        "spark = (SparkSession.builder.master('local[1]')"
        ".config('spark.ui.enabled', 'false').getOrCreate())\n"
        "df = (spark.read.format('kafkaconsumer').option('kafka.bootstrap.servers', sys.argv[1])"
        ".option('subscribe', sys.argv[2]).load())\n"
        "print('ROWS', df.where('offset >= 10').count(), "
        "spark.conf.get('spark.sql.python.filterPushdown.enabled'))\n"
        "spark.stop()\n"
    )
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    proc = subprocess.run(
        [sys.executable, str(script), bs, topic],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ROWS 20 false" in proc.stdout, proc.stdout[-2000:]


def test_register_without_pushdown_keeps_a_reused_dataframe_whole(
    broker: Any, tmp_path: Path
) -> None:
    """register(spark) leaves pushdown off, so a DataFrame that served a filtered action still
    reads every record in its next, unfiltered one (with pushdown Spark 4.2 would plan that
    action with the first action's filters)."""
    if broker.is_tansu:
        pytest.skip(
            "Tansu 0.6 answers ListOffsets(latest) with the last batch's base offset + 1, so a "
            "bounded read of records produced in one batch stops short"
        )
    bs = broker.bootstrap_servers
    topic = unique_name("pd-reuse")
    create_topic(bs, topic, 1)
    produce(bs, topic, [(0, None, b"v%d" % i, []) for i in range(30)])
    script = tmp_path / "job.py"
    script.write_text(
        "import sys\n"
        "from pyspark.sql import SparkSession\n"
        "from kafkaconsumer.spark import register\n"
        "spark = (SparkSession.builder.master('local[1]')"
        ".config('spark.ui.enabled', 'false').getOrCreate())\n"
        "register(spark)\n"
        "df = (spark.read.format('kafkaconsumer').option('kafka.bootstrap.servers', sys.argv[1])"
        ".option('subscribe', sys.argv[2]).option('startingOffsets', 'earliest').load())\n"
        "print('ROWS', df.where('offset < 5').count(), df.count(), "
        "spark.conf.get('spark.sql.python.filterPushdown.enabled'))\n"
        "spark.stop()\n"
    )
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    proc = subprocess.run(
        [sys.executable, str(script), bs, topic],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ROWS 5 30 false" in proc.stdout, proc.stdout[-2000:]
