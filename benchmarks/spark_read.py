"""Kafka into Spark: this package's three read paths against Spark's own Kafka source, on the
same broker, in one run.

Produces ``--records`` values of ``--size`` bytes into ``--partitions`` partitions of a fresh
topic, then on one ``local[2]`` SparkSession times ``count()`` and
``sum(length(value))`` through

(a) ``kafkaconsumer.spark.read_kafka`` (the read on the driver, then ``createDataFrame``),
(b) the Data Source, ``format("kafkaconsumer")``,
(c) Spark's built-in source, ``format("kafka")``: ``spark-sql-kafka-0-10_2.13`` at the version
    of the installed PySpark and its dependencies, fetched with ``mvn`` into
    ``--jar-cache`` (outside the repository) and passed through ``spark.jars``;

then, given ``--registry URL`` (a Confluent-compatible schema registry, such as the Apicurio
Registry the tests build), on a second topic of as many Avro records framed for it, times
``sum(value.n)`` through

(d) the Data Source with ``valueFormat=avro`` and ``schema.registry.url`` (no jar),
(e) ``format("kafka")`` and Spark's ``from_avro`` (the ``spark-avro_2.13`` jar of the installed
    PySpark's version, fetched with ``mvn``) on ``substring(value, 6)``, the 5-byte frame
    stripped;

and finally ``KafkaConsumer.poll_arrow`` against ``poll()`` (records/s, one consumer, every
value touched). Each Spark timing includes the read: every action reads Kafka again.

    python benchmarks/spark_read.py --bootstrap 127.0.0.1:19092
    python benchmarks/spark_read.py --records 200000          # a quick run

Maven Central must serve the connector at the installed PySpark's version; when it does not,
the run stops and says so (install the newest PySpark whose connector is served).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.bench</groupId><artifactId>spark-kafka-jars</artifactId><version>1</version>
  <dependencies><dependency>
    <groupId>org.apache.spark</groupId><artifactId>spark-sql-kafka-0-10_2.13</artifactId>
    <version>{version}</version>
  </dependency></dependencies>
</project>
"""


#: Where the connector jars are cached unless told otherwise (outside the repository).
DEFAULT_JAR_CACHE = Path.home() / ".cache" / "kafkaconsumer-bench"


class ConnectorUnavailable(RuntimeError):
    """Spark's Kafka connector could not be fetched (no ``mvn``, or the version not served)."""


def connector_jars(version: str, cache: Path = DEFAULT_JAR_CACHE) -> list[str]:
    """The connector and the dependencies PySpark does not ship, fetched once into ``cache``
    (the benchmark and the tests comparing with Spark's own source use it). Raises
    :class:`ConnectorUnavailable` saying why when they cannot be fetched."""
    import pyspark

    out = cache / f"spark-sql-kafka-{version}"
    jars_dir = out / "jars"
    if not jars_dir.exists() or not any(jars_dir.glob("spark-sql-kafka*.jar")):
        out.mkdir(parents=True, exist_ok=True)
        (out / "pom.xml").write_text(_POM.format(version=version))
        try:
            proc = subprocess.run(
                [
                    "mvn",
                    "-q",
                    "-B",
                    f"-Dmaven.repo.local={cache / 'm2'}",
                    "dependency:copy-dependencies",
                    f"-DoutputDirectory={jars_dir}",
                    "-DincludeScope=runtime",
                ],
                cwd=out,
                capture_output=True,
                text=True,
            )
        except FileNotFoundError:
            raise ConnectorUnavailable("mvn is not installed") from None
        if proc.returncode != 0:
            raise ConnectorUnavailable(
                f"cannot fetch spark-sql-kafka-0-10_2.13:{version} with mvn (is this "
                "version served? pin PySpark to one whose connector is):\n"
                + proc.stdout[-2000:]
                + proc.stderr[-2000:]
            )
    shipped = {_artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return sorted(str(p) for p in jars_dir.glob("*.jar") if _artifact(p.name) not in shipped)


def spark_avro_jar(version: str) -> str:
    """The ``spark-avro_2.13`` jar of ``version`` in the local Maven repository, fetched with
    ``mvn`` when missing. Raises :class:`ConnectorUnavailable` saying why it cannot be."""
    jar = (
        Path.home()
        / ".m2"
        / "repository"
        / f"org/apache/spark/spark-avro_2.13/{version}/spark-avro_2.13-{version}.jar"
    )
    if not jar.exists():
        try:
            proc = subprocess.run(
                [
                    "mvn",
                    "-q",
                    "-B",
                    "dependency:get",
                    f"-Dartifact=org.apache.spark:spark-avro_2.13:{version}",
                    "-Dtransitive=false",
                ],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
        except FileNotFoundError:
            raise ConnectorUnavailable("mvn is not installed") from None
        if proc.returncode != 0 or not jar.exists():
            raise ConnectorUnavailable(f"cannot fetch spark-avro_2.13:{version} with mvn")
    return str(jar)


#: The Avro records of (d) and (e): a record of a long, a string, a double and an array.
AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "Event",
    "namespace": "bench",
    "fields": [
        {"name": "n", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "score", "type": "double"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}


def produce_avro(
    bootstrap: str, topic: str, partitions: int, records: int, registry_url: str
) -> None:
    """Register :data:`AVRO_SCHEMA` as ``<topic>-value`` and write ``records`` Avro records
    framed for the registry (magic byte, schema id), record ``i`` with ``n = i``."""
    import io
    import json
    import urllib.request

    import fastavro
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafkaconsumer.formats.wire import frame

    request = urllib.request.Request(
        f"{registry_url}/subjects/{topic}-value/versions",
        data=json.dumps({"schema": json.dumps(AVRO_SCHEMA)}).encode(),
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30.0) as response:
        schema_id = int(json.loads(response.read())["id"])
    parsed = fastavro.parse_schema(AVRO_SCHEMA)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1 << 20})
    for i in range(records):
        out = io.BytesIO()
        record = {"n": i, "name": f"user-{i % 1000}", "score": i / 7, "tags": ["a", "b"]}
        fastavro.schemaless_writer(out, parsed, record)
        value = frame(schema_id, out.getvalue())
        while True:
            try:
                p.produce(topic, value=value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
    if p.flush(120):
        sys.exit("produce did not finish")


def bench_avro(
    spark: Any, bootstrap: str, topic: str, records: int, registry_url: str, rounds: int
) -> list[tuple[str, float]]:
    """Best seconds of ``rounds`` for sum(value.n) through (d) and (e)."""
    import json

    from pyspark.sql.avro.functions import from_avro
    from pyspark.sql.functions import expr

    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic,
        "startingOffsets": "earliest",
    }
    expected = records * (records - 1) // 2

    def ours() -> Any:
        return (
            spark.read.format("kafkaconsumer")
            .options(**options)
            .option("valueFormat", "avro")
            .option("schema.registry.url", registry_url)
            .load()
        )

    def theirs() -> Any:
        raw = spark.read.format("kafka").options(**options).load()
        return raw.select(
            from_avro(expr("substring(value, 6)"), json.dumps(AVRO_SCHEMA)).alias("value")
        )

    paths = (
        ('(d) format("kafkaconsumer"), valueFormat=avro', ours),
        ('(e) format("kafka") + from_avro', theirs),
    )
    for _name, make in paths:
        make().selectExpr("sum(value.n)").first()  # warm-up
    best: dict[str, float] = {}
    for round_no in range(rounds):
        for name, make in paths:
            t, total = _time(lambda make=make: make().selectExpr("sum(value.n)").first()[0])
            if total != expected:
                sys.exit(f"{name}: sum(value.n) = {total}, expected {expected}")
            load = os.getloadavg()[0]
            print(
                f"round {round_no + 1} {name}: sum(value.n) {t:.2f} s (load average {load:.1f})",
                flush=True,
            )
            best[name] = min(best.get(name, t), t)
    return [(name, best[name]) for name, _make in paths]


def _artifact(jar: str) -> str:
    # "kafka-clients-3.9.2.jar" -> "kafka-clients"
    parts = jar[:-4].split("-")
    while parts and parts[-1][:1].isdigit():
        parts.pop()
    return "-".join(parts)


def produce(bootstrap: str, topic: str, partitions: int, records: int, size: int) -> None:
    """Write the records with confluent-kafka (fast, off the measured paths)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.size": 1 << 20,
            "compression.type": "none",
            "queue.buffering.max.messages": 1000000,
        }
    )
    value = b"x" * size
    for i in range(records):
        while True:
            try:
                p.produce(topic, value=value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
    if p.flush(120):
        sys.exit("produce did not finish")


def _time(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def bench_spark(
    bootstrap: str,
    topic: str,
    records: int,
    size: int,
    jars: list[str],
    rounds: int,
    avro: tuple[str, str] | None = None,
) -> tuple[list[tuple[str, float, float]], list[tuple[str, float]]]:
    """Best seconds of ``rounds`` for count() and for sum(length(value)) per read path, and,
    given ``avro`` (the Avro topic and the registry URL), of sum(value.n) for (d) and (e)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from kafkaconsumer.spark import read_kafka, register

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("spark_read benchmark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "3g")
        .config("spark.python.authenticate.socketTimeout", "120s")
        .config("spark.jars", ",".join(jars))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic,
        "startingOffsets": "earliest",
    }
    expected_sum = records * size

    def ours() -> Any:
        return spark.read.format("kafkaconsumer").options(**options).load()

    def theirs() -> Any:
        return spark.read.format("kafka").options(**options).load()

    def driver() -> Any:
        return read_kafka(spark, options, progress=False)

    paths = (
        ("(a) read_kafka (driver)", driver),
        ('(b) format("kafkaconsumer")', ours),
        ('(c) format("kafka") (Spark\'s own)', theirs),
    )
    for _name, make in paths:
        make().count()  # warm-up: JVM classes, Python workers, connections
    # Rounds interleave the paths so that a change in the machine's load hits all of them;
    # the best round of each path is reported, with the load average around it.
    best: dict[str, tuple[float, float]] = {}
    for round_no in range(rounds):
        for name, make in paths:
            t_count, n = _time(lambda make=make: make().count())
            t_sum, s = _time(lambda make=make: make().selectExpr("sum(length(value))").first()[0])
            if n != records or s != expected_sum:
                sys.exit(
                    f"{name}: read {n} records / {s} bytes, expected {records} / {expected_sum}"
                )
            load = os.getloadavg()[0]
            print(
                f"round {round_no + 1} {name}: count {t_count:.2f} s, "
                f"sum(length(value)) {t_sum:.2f} s (load average {load:.1f})",
                flush=True,
            )
            c, m = best.get(name, (t_count, t_sum))
            best[name] = (min(c, t_count), min(m, t_sum))
    rows = [(name, *best[name]) for name, _make in paths]
    avro_rows = bench_avro(spark, bootstrap, avro[0], records, avro[1], rounds) if avro else []
    spark.stop()
    return rows, avro_rows


def bench_poll(
    bootstrap: str, topic: str, partitions: int, records: int
) -> list[tuple[str, float]]:
    """Records/s of poll_arrow and of poll() reading every record once."""
    from kafkaconsumer.consumer import KafkaConsumer
    from kafkaconsumer.structs import TopicPartition

    out = []
    for name in ("poll()", "poll_arrow()"):
        c = KafkaConsumer(
            {
                "bootstrap.servers": bootstrap,
                "auto.offset.reset": "earliest",
                "max.poll.records": 100000,
            }
        )
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        n = total = 0
        start = time.perf_counter()
        if name == "poll()":
            while n < records:
                for rec in c.poll(1000):
                    total += len(rec.value)
                    n += 1
        else:
            import pyarrow.compute as pc

            while n < records:
                batch = c.poll_arrow(1000)
                n += batch.num_rows
                total += pc.sum(pc.binary_length(batch.column(1))).as_py() or 0
        elapsed = time.perf_counter() - start
        c.close()
        out.append((name, records / elapsed))
        print(f"{name}: {records / elapsed:,.0f} records/s", flush=True)
    return out


def main() -> None:
    """Run the benchmark and print a markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
    )
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (best reported)")
    ap.add_argument("--jar-cache", type=Path, default=DEFAULT_JAR_CACHE)
    ap.add_argument("--registry", help="Confluent-compatible schema registry URL for (d) and (e)")
    args = ap.parse_args()
    import pyspark

    try:
        jars = connector_jars(pyspark.__version__, args.jar_cache)
        if args.registry is not None:
            jars.append(spark_avro_jar(pyspark.__version__))
    except ConnectorUnavailable as exc:
        sys.exit(str(exc))
    if args.registry is None:
        print("no --registry: (d) and (e) are left out", flush=True)
    _run(args, jars, args.registry)


def _run(args: argparse.Namespace, jars: list[str], registry_url: str | None) -> None:
    import pyspark

    topic = f"spark-bench-{uuid.uuid4().hex[:8]}"
    print(
        f"producing {args.records:,} x {args.size} B into {topic} ({args.partitions} "
        f"partitions) on {args.bootstrap}; PySpark {pyspark.__version__}",
        flush=True,
    )
    produce(args.bootstrap, topic, args.partitions, args.records, args.size)
    avro = None
    if registry_url is not None:
        avro = (f"{topic}-avro", registry_url)
        produce_avro(args.bootstrap, avro[0], args.partitions, args.records, registry_url)
    spark_rows, avro_rows = bench_spark(
        args.bootstrap, topic, args.records, args.size, jars, args.rounds, avro
    )
    poll_rows = bench_poll(args.bootstrap, topic, args.partitions, args.records)
    ref = spark_rows[2]
    print(
        f"\n{args.records:,} records x {args.size} B, {args.partitions} partitions, "
        f"local[2], PySpark {pyspark.__version__}, best of {args.rounds} interleaved rounds, "
        f"load average now {os.getloadavg()[0]:.1f}\n"
    )
    print("| read path | count() s | sum(length(value)) s | vs Spark's source (count / sum) |")
    print("|---|---:|---:|---:|")
    for name, c, s in spark_rows:
        print(f"| {name} | {c:.2f} | {s:.2f} | {ref[1] / c:.2f}x / {ref[2] / s:.2f}x |")
    if avro_rows:
        print('\n| Avro read path | sum(value.n) s | vs format("kafka") + from_avro |')
        print("|---|---:|---:|")
        for name, t in avro_rows:
            print(f"| {name} | {t:.2f} | {avro_rows[1][1] / t:.2f}x |")
    print("\n| consumer call | records/s | vs poll() |")
    print("|---|---:|---:|")
    for name, rate in poll_rows:
        print(f"| {name} | {rate:,.0f} | {rate / poll_rows[0][1]:.2f}x |")


if __name__ == "__main__":
    main()
