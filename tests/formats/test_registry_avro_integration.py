"""Avro records framed for a real schema registry: evolution, reader schemas, bad records, and
the deserializer on KafkaConsumer against a real broker."""

from __future__ import annotations

import io
import uuid
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from kafkaconsumer.consumer import KafkaConsumer
from kafkaconsumer.errors import RecordDeserializationError, SerializationError
from kafkaconsumer.formats.arrow import ArrowRecordDecoder, RecordDecodeError
from kafkaconsumer.formats.avro import AvroDeserializer
from kafkaconsumer.formats.registry import SchemaRegistryClient, SchemaRegistryError
from kafkaconsumer.formats.wire import frame
from kafkaconsumer.structs import TopicPartition
from tests.consumer.conftest import create_topic, poll_until, produce
from tests.helpers import unique_name
from tests.support.apicurio_registry import ApicurioRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

V1: dict[str, Any] = {
    "type": "record",
    "name": "User",
    "namespace": "app",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": "string"},
        {"name": "legacy", "type": "string", "default": ""},
    ],
}
# v2 adds a field with a default; v3 then removes ``legacy`` and adds ``score``.
V2: dict[str, Any] = {
    **V1,
    "fields": [*V1["fields"], {"name": "email", "type": ["null", "string"], "default": None}],
}
V3: dict[str, Any] = {
    **V1,
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": "string"},
        {"name": "email", "type": ["null", "string"], "default": None},
        {"name": "score", "type": "double", "default": 1.5},
    ],
}


def _avro(schema: Any, record: Any) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def _evolved_subject(registry: ApicurioRegistry) -> tuple[str, list[int], list[bytes]]:
    subject = unique_name("users") + "-value"
    ids = [registry.register(subject, schema) for schema in (V1, V2, V3)]
    payloads = [
        frame(ids[0], _avro(V1, {"id": 1, "name": "ann", "legacy": "x"})),
        frame(ids[1], _avro(V2, {"id": 2, "name": "bob", "legacy": "y", "email": "b@x"})),
        frame(ids[2], _avro(V3, {"id": 3, "name": "cy", "email": None, "score": 9.0})),
    ]
    return subject, ids, payloads


def test_evolved_topic_reads_as_one_table_in_the_latest_schema(registry: ApicurioRegistry) -> None:
    subject, ids, payloads = _evolved_subject(registry)
    assert len(set(ids)) == 3
    deserializer = AvroDeserializer({"schema.registry.url": registry.url}, subject=subject)
    column = ArrowRecordDecoder(deserializer).decode("users", [0, 0, 0], [0, 1, 2], payloads)
    assert column.values.type == pa.struct(
        [
            pa.field("id", pa.int32(), nullable=False),
            pa.field("name", pa.string(), nullable=False),
            pa.field("email", pa.string()),
            pa.field("score", pa.float64(), nullable=False),
        ]
    )
    assert column.values.to_pylist() == [
        {"id": 1, "name": "ann", "email": None, "score": 1.5},
        {"id": 2, "name": "bob", "email": "b@x", "score": 1.5},
        {"id": 3, "name": "cy", "email": None, "score": 9.0},
    ]


def test_reader_schema_by_version_or_inline(registry: ApicurioRegistry) -> None:
    subject, _, payloads = _evolved_subject(registry)
    first = AvroDeserializer(registry.url, subject=subject, version=1)
    assert [first.deserialize("users", p) for p in payloads[:2]] == [
        {"id": 1, "name": "ann", "legacy": "x"},
        {"id": 2, "name": "bob", "legacy": "y"},
    ]
    # v3 dropped ``legacy`` and v1 has it with a default: the default fills it.
    assert first.deserialize("users", payloads[2]) == {"id": 3, "name": "cy", "legacy": ""}
    inline = AvroDeserializer(registry.url, reader_schema=V2)
    assert inline.deserialize("users", payloads[0])["email"] is None
    # Avro widens int to long when the reader asks for it.
    wide = {**V1, "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}
    assert AvroDeserializer(registry.url, reader_schema=wide).deserialize("users", payloads[0]) == {
        "id": 1,
        "name": "ann",
    }
    # Without a reader schema every record keeps the shape it was written in.
    own = AvroDeserializer(registry.url)
    assert own.deserialize("users", payloads[2]) == {
        "id": 3,
        "name": "cy",
        "email": None,
        "score": 9.0,
    }


def test_schema_id_in_a_header(registry: ApicurioRegistry) -> None:
    subject, ids, _ = _evolved_subject(registry)
    header = [("__value_schema_id", frame(ids[0], b""))]
    deserializer = AvroDeserializer(registry.url, subject=subject)
    raw = _avro(V1, {"id": 5, "name": "eve", "legacy": ""})
    assert deserializer.deserialize("users", raw, header)["id"] == 5


def test_guid_header_against_a_registry_without_guids(registry: ApicurioRegistry) -> None:
    """A header naming the schema by GUID is resolved with GET /schemas/guids/{guid}; this
    registry serves no such path, and the error says that it does not resolve GUIDs and names
    the GUID (not "unknown schema")."""
    subject, _, _ = _evolved_subject(registry)
    guid = uuid.uuid4()
    header = [("__value_schema_id", b"\x01" + guid.bytes)]
    deserializer = AvroDeserializer(registry.url, subject=subject)
    raw = _avro(V1, {"id": 5, "name": "eve", "legacy": ""})
    with pytest.raises(SchemaRegistryError, match="does not resolve schema GUIDs") as info:
        deserializer.deserialize("users", raw, header)
    assert str(guid) in str(info.value)
    assert f"/schemas/guids/{guid}" in str(info.value)


def test_unknown_schema_id_and_unresolvable_writer(registry: ApicurioRegistry) -> None:
    subject, _, payloads = _evolved_subject(registry)
    deserializer = AvroDeserializer(registry.url, subject=subject)
    unknown = frame(987654, payloads[0][5:])
    with pytest.raises(SerializationError, match="schema id 987654 is unknown to the registry"):
        deserializer.deserialize("users", unknown)
    other = registry.register(
        unique_name("other") + "-value",
        {"type": "record", "name": "Z", "fields": [{"name": "z", "type": "boolean"}]},
    )
    with pytest.raises(SerializationError, match="does not resolve"):
        deserializer.deserialize("users", frame(other, b"\x01"))
    with pytest.raises(SchemaRegistryError, match="404") as info:
        SchemaRegistryClient(registry.url).schema_version("no-such-subject")
    assert info.value.status == 404


def test_bad_records_in_both_modes(registry: ApicurioRegistry) -> None:
    subject, _, payloads = _evolved_subject(registry)
    batch = [payloads[0], frame(987654, b"\x02"), payloads[1][:-1] + b"", b"\x07junk", payloads[2]]
    failfast = ArrowRecordDecoder(AvroDeserializer(registry.url, subject=subject))
    with pytest.raises(RecordDecodeError, match="partition 4 offset 101: schema id 987654"):
        failfast.decode("users", [4] * 5, list(range(100, 105)), batch)
    permissive = ArrowRecordDecoder(
        AvroDeserializer(registry.url, subject=subject), mode="PERMISSIVE"
    )
    column = permissive.decode("users", [4] * 5, list(range(100, 105)), batch)
    assert [row is None for row in column.values.to_pylist()] == [False, True, True, True, False]
    assert column.corrupt is not None
    reasons = column.corrupt.to_pylist()
    assert reasons[0] is None and reasons[4] is None
    assert "unknown to the registry" in reasons[1]
    assert "malformed Avro data" in reasons[2]
    assert "unknown magic byte 7" in reasons[3]


def test_deserializer_on_kafka_consumer(broker: Any, registry: ApicurioRegistry) -> None:
    subject, ids, payloads = _evolved_subject(registry)
    topic = create_topic(broker.bootstrap_servers, 1, prefix="avro")
    key_subject = unique_name("keys") + "-key"
    key_id = registry.register(key_subject, {"type": "string"})
    records: list[tuple[int, bytes | None, bytes | None, list[Any], None]] = [
        (0, frame(key_id, _avro("string", f"k{i}")), p, [], None) for i, p in enumerate(payloads)
    ]
    records.append((0, None, None, [], None))
    produce(broker.bootstrap_servers, topic, records)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        auto_offset_reset="earliest",
        key_deserializer=AvroDeserializer(registry.url, subject=key_subject),
        value_deserializer=AvroDeserializer(registry.url, subject=subject),
    )
    consumer.assign([TopicPartition(topic, 0)])
    try:
        got = poll_until(consumer, lambda acc: len(acc) >= 4)
    finally:
        consumer.close()
    assert [r.key for r in got] == ["k0", "k1", "k2", None]
    assert [r.value and r.value["id"] for r in got] == [1, 2, 3, None]
    assert got[1].value["email"] == "b@x"


def test_consumer_reports_where_a_record_failed(broker: Any, registry: ApicurioRegistry) -> None:
    subject, _, payloads = _evolved_subject(registry)
    topic = create_topic(broker.bootstrap_servers, 1, prefix="avro")
    produce(
        broker.bootstrap_servers,
        topic,
        [(0, None, payloads[0], [], None), (0, None, b"\x00\x00", [], None)],
    )
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        auto_offset_reset="earliest",
        value_deserializer=AvroDeserializer(registry.url, subject=subject),
    )
    consumer.assign([TopicPartition(topic, 0)])
    try:
        with pytest.raises(RecordDeserializationError) as info:
            poll_until(consumer, lambda acc: len(acc) >= 2)
    finally:
        consumer.close()
    assert info.value.offset == 1 and info.value.topic == topic
