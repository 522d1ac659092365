"""Typed key/value columns through ``format("kafkaconsumer")`` on a real registry, broker and
Spark: schema-registry Avro checked against Spark's own ``from_avro``, plain Avro, Protobuf, JSON
Schema, a streaming read, and bad input."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from kafkaconsumer.formats.wire import frame
from tests.formats import conftest as formats_fixtures
from tests.helpers import unique_name
from tests.support.apicurio_registry import ApicurioRegistry

from .conftest import create_topic, produce

# The session's Apicurio Registry, shared with tests/formats.
registry = formats_fixtures.registry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

V1: dict[str, Any] = {
    "type": "record",
    "name": "User",
    "namespace": "app",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": "string"},
        {"name": "legacy", "type": "string", "default": ""},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
# v2 adds a field with a default; v3 removes ``legacy``.
V2: dict[str, Any] = {
    **V1,
    "fields": [
        *V1["fields"],
        {"name": "score", "type": ["null", "double"], "default": None},
        {
            "name": "kind",
            "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]},
            "default": "A",
        },
    ],
}
V3: dict[str, Any] = {**V2, "fields": [f for f in V2["fields"] if f["name"] != "legacy"]}
_SPARK_AVRO = "org/apache/spark/spark-avro_2.13/{v}/spark-avro_2.13-{v}.jar"


def _avro(schema: Any, record: Any) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def _spark_avro_jar() -> str:
    import pyspark

    version = pyspark.__version__
    jar = Path.home() / ".m2" / "repository" / _SPARK_AVRO.format(v=version)
    if not jar.exists():
        result = subprocess.run(
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
        if result.returncode != 0 or not jar.exists():
            pytest.fail(f"cannot fetch spark-avro {version} with Maven: {result.stdout[-2000:]}")
    return str(jar)


def _reader(spark: Any, bootstrap: str, **options: str) -> Any:
    r = spark.read.format("kafkaconsumer").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def _evolved_topic(
    broker: Any, running: ApicurioRegistry
) -> tuple[str, list[tuple[bytes, dict[str, Any]]]]:
    topic = unique_name("sp-avro")
    create_topic(broker.bootstrap_servers, topic, 1)
    ids = [running.register(f"{topic}-value", schema) for schema in (V1, V2, V3)]
    at = 1_700_000_000_123
    records = [
        (V1, ids[0], {"id": 1, "name": "ann", "legacy": "x", "at": at, "tags": ["a"]}),
        (
            V2,
            ids[1],
            {
                "id": 2,
                "name": "bob",
                "legacy": "y",
                "at": at + 1,
                "tags": [],
                "score": 2.5,
                "kind": "B",
            },
        ),
        (
            V3,
            ids[2],
            {"id": 3, "name": "cy", "at": at + 2, "tags": ["b", "c"], "score": None, "kind": "A"},
        ),
    ]
    framed = [(frame(schema_id, _avro(schema, rec)), schema) for schema, schema_id, rec in records]
    produce(broker.bootstrap_servers, topic, [(0, None, value, []) for value, _ in framed])
    return topic, framed


def test_evolved_avro_topic_equals_spark_from_avro(
    spark: Any,
    broker: Any,
    registry: ApicurioRegistry,
) -> None:
    topic, framed = _evolved_topic(broker, registry)
    df = _reader(
        spark,
        broker.bootstrap_servers,
        subscribe=topic,
        valueFormat="avro",
        **{"schema.registry.url": registry.url},
    )
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:int,name:string,at:timestamp,tags:array<string>,score:double,kind:string>"
    )
    ours = [row["j"] for row in df.orderBy("offset").selectExpr("to_json(value) AS j").collect()]
    request = {
        "jar": _spark_avro_jar(),
        "reader": json.dumps(V3),
        "rows": [{"value": value.hex(), "writer": json.dumps(schema)} for value, schema in framed],
    }
    oracle = subprocess.run(
        [sys.executable, "-m", "tests.formats.spark_avro_oracle"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert oracle.returncode == 0, oracle.stderr[-3000:]
    expected = oracle.stdout.strip().splitlines()
    assert len(expected) == 3
    assert ours == expected
    assert json.loads(ours[1]) == {
        "id": 2,
        "name": "bob",
        "at": "2023-11-14T22:13:20.124Z",
        "tags": [],
        "score": 2.5,
        "kind": "B",
    }


def test_plain_avro_with_an_inline_schema(spark: Any, broker: Any) -> None:
    topic = unique_name("sp-plain")
    create_topic(broker.bootstrap_servers, topic, 2)
    schema = {
        "type": "record",
        "name": "P",
        "fields": [{"name": "n", "type": "long"}, {"name": "s", "type": ["null", "string"]}],
    }
    produce(
        broker.bootstrap_servers,
        topic,
        [
            (i % 2, None, _avro(schema, {"n": i, "s": None if i % 3 else str(i)}), [])
            for i in range(20)
        ],
    )
    df = _reader(
        spark,
        broker.bootstrap_servers,
        subscribe=topic,
        valueFormat="avro",
        valueSchema=json.dumps(schema),
    )
    rows = sorted((r["n"], r["s"]) for r in df.select("value.*").collect())
    assert rows == [(i, None if i % 3 else str(i)) for i in range(20)]


def test_bad_records_failfast_and_permissive(
    spark: Any,
    broker: Any,
    registry: ApicurioRegistry,
) -> None:
    topic, framed = _evolved_topic(broker, registry)
    produce(
        broker.bootstrap_servers,
        topic,
        [(0, None, frame(987654, b"\x02"), []), (0, None, b"\x07junk!", [])],
    )
    url = {"schema.registry.url": registry.url}
    failfast = _reader(spark, broker.bootstrap_servers, subscribe=topic, valueFormat="avro", **url)
    with pytest.raises(
        Exception, match=f"topic '{topic}' partition 0 offset 3: schema id 987654 is unknown"
    ):
        failfast.collect()
    permissive = _reader(
        spark,
        broker.bootstrap_servers,
        subscribe=topic,
        valueFormat="avro",
        mode="PERMISSIVE",
        **url,
    )
    rows = permissive.orderBy("offset").select("offset", "value.id", "_corrupt_record").collect()
    assert [(r["offset"], r["id"]) for r in rows] == [(0, 1), (1, 2), (2, 3), (3, None), (4, None)]
    assert rows[0]["_corrupt_record"] is None
    assert "unknown to the registry" in rows[3]["_corrupt_record"]
    assert "unknown magic byte" in rows[4]["_corrupt_record"]


def test_bad_options(spark: Any, broker: Any) -> None:
    topic = unique_name("sp-badfmt")
    create_topic(broker.bootstrap_servers, topic, 1)
    with pytest.raises(
        Exception, match="valueFormat='xml' is not one of raw, avro, protobuf, json"
    ):
        _reader(spark, broker.bootstrap_servers, subscribe=topic, valueFormat="xml")
    with pytest.raises(Exception, match="needs schema.registry.url"):
        _reader(spark, broker.bootstrap_servers, subscribe=topic, valueFormat="protobuf")
    url = "http://127.0.0.1:9"
    with pytest.raises(Exception, match=f"schema registry {url} unreachable within 2 s"):
        _reader(
            spark,
            broker.bootstrap_servers,
            subscribe=topic,
            valueFormat="avro",
            **{"schema.registry.url": url, "schema.registry.request.timeout.ms": "2000"},
        )


PROTO = """syntax = "proto3";
package shop;
message Order { int64 id = 1; repeated string tags = 2; Status status = 3;
  enum Status { NEW = 0; PAID = 1; } }
"""


def test_protobuf_and_json_schema_topics(
    spark: Any,
    broker: Any,
    registry: ApicurioRegistry,
) -> None:
    from google.protobuf import message_factory

    from kafkaconsumer.formats.protobuf import compile_proto
    from kafkaconsumer.formats.wire import write_message_indexes

    bs = broker.bootstrap_servers
    url = {"schema.registry.url": registry.url}
    proto_topic = unique_name("sp-proto")
    create_topic(bs, proto_topic, 1)
    proto_id = registry.register(f"{proto_topic}-value", PROTO, "PROTOBUF")
    order = message_factory.GetMessageClass(
        compile_proto({"schema.proto": PROTO}).pool.FindMessageTypeByName("shop.Order")
    )
    values = []
    for i in range(3):
        message = order(id=i, tags=["t"] * i, status=i % 2)
        values.append(frame(proto_id, write_message_indexes([0]) + message.SerializeToString()))
    produce(bs, proto_topic, [(0, None, value, []) for value in values])
    df = _reader(spark, bs, subscribe=proto_topic, valueFormat="protobuf", **url)
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,tags:array<string>,status:string>"
    )
    rows = [r.asDict(recursive=True) for r in df.orderBy("offset").select("value.*").collect()]
    assert rows == [
        {"id": 0, "tags": [], "status": "NEW"},
        {"id": 1, "tags": ["t"], "status": "PAID"},
        {"id": 2, "tags": ["t", "t"], "status": "NEW"},
    ]

    json_topic = unique_name("sp-json")
    create_topic(bs, json_topic, 1)
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
        "required": ["id"],
    }
    json_id = registry.register(f"{json_topic}-value", schema, "JSON")
    docs = [{"id": 1, "name": "a"}, {"name": "no id"}, {"id": 3}]
    produce(bs, json_topic, [(0, None, frame(json_id, json.dumps(d).encode()), []) for d in docs])
    df = _reader(spark, bs, subscribe=json_topic, valueFormat="json", mode="PERMISSIVE", **url)
    rows = df.orderBy("offset").select("value.id", "value.name", "_corrupt_record").collect()
    assert [(r["id"], r["name"]) for r in rows] == [(1, "a"), (None, None), (3, None)]
    assert "'id' is a required property" in rows[1]["_corrupt_record"]


def test_streaming_read_decodes_avro(
    spark: Any,
    broker: Any,
    registry: ApicurioRegistry,
    tmp_path: Path,
) -> None:
    topic, _ = _evolved_topic(broker, registry)
    stream = (
        spark.readStream.format("kafkaconsumer")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("valueFormat", "avro")
        .option("schema.registry.url", registry.url)
        .load()
    )
    query = (
        stream.select("offset", "value.id", "value.kind")
        .writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    rows = spark.read.parquet(str(tmp_path / "out")).orderBy("offset").collect()
    assert [(r["offset"], r["id"], r["kind"]) for r in rows] == [
        (0, 1, "A"),
        (1, 2, "B"),
        (2, 3, "A"),
    ]


KEY: dict[str, Any] = {
    "type": "record",
    "name": "UserKey",
    "namespace": "app",
    "fields": [{"name": "region", "type": "string"}, {"name": "id", "type": "int"}],
}


def test_avro_key_and_value(
    spark: Any,
    broker: Any,
    registry: ApicurioRegistry,
) -> None:
    """``keyFormat=avro`` decodes the key from its ``<topic>-key`` subject into a struct column
    beside the decoded value, a null key stays null, and a corrupt key is reported as such."""
    topic, framed = _evolved_topic(broker, registry)
    key_id = registry.register(f"{topic}-key", KEY)
    produce(
        broker.bootstrap_servers,
        topic,
        [
            (0, frame(key_id, _avro(KEY, {"region": "eu", "id": 7})), framed[0][0], []),
            (0, None, framed[1][0], []),
            (0, b"\x07junk!", framed[2][0], []),
        ],
    )
    url = {"schema.registry.url": registry.url}
    df = _reader(
        spark,
        broker.bootstrap_servers,
        subscribe=topic,
        keyFormat="avro",
        valueFormat="avro",
        mode="PERMISSIVE",
        **url,
    )
    assert df.schema["key"].dataType.simpleString() == "struct<region:string,id:int>"
    rows = (
        df.where("offset >= 3")
        .orderBy("offset")
        .select("key.region", "key.id", "value.id", "value.name", "_corrupt_record")
        .collect()
    )
    assert [tuple(r)[:4] for r in rows] == [
        ("eu", 7, 1, "ann"),
        (None, None, 2, "bob"),
        (None, None, 3, "cy"),
    ]
    assert rows[0]["_corrupt_record"] is None and rows[1]["_corrupt_record"] is None
    assert rows[2]["_corrupt_record"].startswith("key: ")
    assert "unknown magic byte" in rows[2]["_corrupt_record"]
    # The earlier records have null keys: FAILFAST reads them, and fails on the corrupt key.
    failfast = _reader(
        spark,
        broker.bootstrap_servers,
        subscribe=topic,
        keyFormat="avro",
        valueFormat="avro",
        **url,
    )
    assert [
        r["id"] for r in failfast.where("offset < 5").orderBy("offset").select("key.id").collect()
    ] == [None, None, None, 7, None]
    with pytest.raises(Exception, match=f"topic '{topic}' partition 0 offset 5"):
        _reader(
            spark,
            broker.bootstrap_servers,
            subscribe=topic,
            keyFormat="avro",
            valueFormat="avro",
            **url,
        ).collect()


def test_read_kafka_decodes_like_the_data_source(
    spark: Any,
    broker: Any,
    registry: ApicurioRegistry,
) -> None:
    """``read_kafka`` (the driver-side read) takes the format options and returns the same
    columns, types and rows as ``format("kafkaconsumer")``, a corrupt record included."""
    from kafkaconsumer.spark import read_kafka
    from kafkaconsumer.spark.driver import read_kafka_table

    topic, framed = _evolved_topic(broker, registry)
    key_id = registry.register(f"{topic}-key", KEY)
    produce(
        broker.bootstrap_servers,
        topic,
        [
            (0, frame(key_id, _avro(KEY, {"region": "eu", "id": 7})), framed[0][0], []),
            (0, None, b"\x07junk!", [("h", b"1")]),
        ],
    )
    options = {
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "subscribe": topic,
        "keyFormat": "avro",
        "valueFormat": "avro",
        "mode": "PERMISSIVE",
        "includeHeaders": "true",
        "schema.registry.url": registry.url,
    }
    ours = read_kafka(spark, options, progress=False)
    source = _reader(spark, broker.bootstrap_servers, **options)
    assert ours.schema == source.schema
    columns = "offset, to_json(key) AS k, to_json(value) AS v, headers, _corrupt_record AS c"
    rows = ours.selectExpr(*columns.split(", ")).orderBy("offset").collect()
    assert rows == source.selectExpr(*columns.split(", ")).orderBy("offset").collect()
    assert [(r["offset"], r["k"]) for r in rows][3:] == [(3, '{"region":"eu","id":7}'), (4, None)]
    assert json.loads(rows[1]["v"])["kind"] == "B"
    assert rows[4]["v"] is None and "unknown magic byte" in rows[4]["c"]
    table = read_kafka_table(options, progress=False)
    assert table.column("value").type.field("id").type == pa.int32()
    options["mode"] = "FAILFAST"
    with pytest.raises(Exception, match=f"topic '{topic}' partition 0 offset 4"):
        read_kafka(spark, options, progress=False)
