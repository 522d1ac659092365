"""Fixtures of the Spark tests: one session-scoped ``local[2]`` SparkSession (UI off, two
shuffle partitions) with the ``kafkaconsumer`` Data Source registered, and Kafka helpers.

Spark tests skip, saying why, only when PySpark cannot start (no Java); anything else fails.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from kafkaconsumer.admin import KafkaAdminClient
from kafkaconsumer.producer import KafkaProducer

#: Why Spark's own Kafka connector is not on the session's classpath (None: it is).
CONNECTOR_MISSING: str | None = None


def _connector_jars() -> list[str]:
    # Spark's own source (format("kafka")) is the oracle of the parity tests: its connector
    # and dependencies come from Maven Central as the benchmark fetches them.
    global CONNECTOR_MISSING
    import pyspark

    from benchmarks.spark_read import ConnectorUnavailable, connector_jars

    try:
        return connector_jars(pyspark.__version__)
    except ConnectorUnavailable as exc:
        CONNECTOR_MISSING = str(exc)
        return []


def require_spark_connector() -> None:
    """Fail, saying why, when Spark's own Kafka connector could not be put on the classpath."""
    if CONNECTOR_MISSING is not None:
        pytest.fail(f"Spark's Kafka connector is needed as the oracle: {CONNECTOR_MISSING}")


def _java_missing() -> str | None:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "PySpark cannot start: no Java (java not on PATH and JAVA_HOME unset)"
    return None


@pytest.fixture(scope="session")
def spark(broker: Any) -> Iterator[Any]:
    """A ``local[2]`` SparkSession with ``KafkaDataSource`` registered and Spark's own Kafka
    connector on its classpath (``format("kafka")``, the parity oracle)."""
    if broker.is_tansu:
        pytest.skip(
            "the Spark tests run once per CI run, on Apache Kafka (their time budget); "
            "Tansu also lacks DeleteRecords and transactions"
        )
    pytest.importorskip("pyspark")
    why = _java_missing()
    if why is not None:
        pytest.skip(why)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from kafkaconsumer.spark import register

    jars = _connector_jars()
    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.jars", ",".join(jars))
        .appName("kafkaconsumer-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "768m")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
        # A loaded CI machine can take more than the default 15 s to start a worker.
        .config("spark.python.authenticate.socketTimeout", "120s")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session, pushdown=True)
    try:
        yield session
    finally:
        session.stop()


def skip_on_tansu_offset_lookups(broker: Any) -> None:
    """Skip where a read's bounds come from ListOffsets on Tansu 0.6, which answers latest
    with the last batch's base offset and every timestamp lookup with offset 0."""
    if broker.is_tansu:
        pytest.skip("Tansu 0.6 answers ListOffsets(latest) with the last batch's base offset")


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Create ``topic`` with ``partitions`` partitions."""
    with KafkaAdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics({topic: partitions})


def produce(
    bootstrap: str, topic: str, rows: Sequence[tuple[Any, ...]], *, compression: str = "none"
) -> None:
    """Send ``(partition, key, value, headers)`` rows and wait for every acknowledgement."""
    producer = KafkaProducer(
        {"bootstrap.servers": bootstrap, "compression.type": compression, "linger.ms": 5}
    )
    try:
        futures = [
            producer.send(topic, value=v, key=k, headers=h or None, partition=p)
            for p, k, v, h in rows
        ]
        producer.flush()
        for fut in futures:
            fut.get(30)
    finally:
        producer.close()


def df_rows(df: Any) -> list[tuple[Any, ...]]:
    """A DataFrame's rows as sorted comparable tuples (headers as (key, value) lists)."""
    out = []
    for r in df.collect():
        d = r.asDict(recursive=True)
        key = None if d["key"] is None else bytes(d["key"])
        value = None if d["value"] is None else bytes(d["value"])
        headers = [
            (h["key"], None if h["value"] is None else bytes(h["value"]))
            for h in d.get("headers") or []
        ]
        out.append(
            (d["topic"], d["partition"], d["offset"], key, value, d["timestampType"], headers)
        )
    return sorted(out, key=lambda t: (t[0], t[1], t[2]))
