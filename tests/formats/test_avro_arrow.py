"""Avro records decoded with the reader schema and into typed Arrow columns (no registry)."""

from __future__ import annotations

import datetime
import decimal
import io
import uuid
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from kafkaconsumer.errors import ConfigError, SerializationError
from kafkaconsumer.formats.arrow import ArrowRecordDecoder, RecordDecodeError, avro_arrow_type
from kafkaconsumer.formats.avro import AvroDeserializer, parse_avro_schema

ORDER: dict[str, Any] = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "qty", "type": "int"},
        {
            "name": "price",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
        },
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "double"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "either", "type": ["null", "int", "string"], "default": None},
        {
            "name": "address",
            "type": {
                "type": "record",
                "name": "Address",
                "fields": [
                    {"name": "city", "type": "string"},
                    {
                        "name": "zip",
                        "type": {"type": "fixed", "name": "Zip", "size": 5},
                    },
                ],
            },
        },
    ],
}

REF = uuid.UUID("12345678-1234-5678-1234-567812345678")
AT = datetime.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=datetime.timezone.utc)


def _order(i: int, note: str | None = None, either: int | str | None = None) -> dict[str, Any]:
    return {
        "id": i,
        "qty": i * 2,
        "price": decimal.Decimal("12.34"),
        "status": "PAID" if i % 2 else "NEW",
        "tags": ["a", "b"][: i % 3],
        "attrs": {"w": 1.5},
        "note": note,
        "at": AT,
        "day": datetime.date(2026, 1, 2),
        "ref": REF,
        "either": either,
        "address": {"city": "Oslo", "zip": b"01234"},
    }


def _encode(schema: Any, record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def test_arrow_type_follows_the_avro_schema() -> None:
    arrow = avro_arrow_type(parse_avro_schema(ORDER))
    assert arrow == pa.struct(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("qty", pa.int32(), nullable=False),
            pa.field("price", pa.decimal128(9, 2), nullable=False),
            pa.field("status", pa.string(), nullable=False),
            pa.field(
                "tags", pa.list_(pa.field("element", pa.string(), nullable=False)), nullable=False
            ),
            pa.field(
                "attrs",
                pa.map_(pa.string(), pa.field("value", pa.float64(), nullable=False)),
                nullable=False,
            ),
            pa.field("note", pa.string()),
            pa.field("at", pa.timestamp("ms", tz="UTC"), nullable=False),
            pa.field("day", pa.date32(), nullable=False),
            pa.field("ref", pa.string(), nullable=False),
            pa.field("either", pa.struct([("member0", pa.int32()), ("member1", pa.string())])),
            pa.field(
                "address",
                pa.struct(
                    [
                        pa.field("city", pa.string(), nullable=False),
                        pa.field("zip", pa.binary(5), nullable=False),
                    ]
                ),
                nullable=False,
            ),
        ]
    )


def test_plain_avro_decodes_into_a_struct_column() -> None:
    deserializer = AvroDeserializer(schema=ORDER)
    decoder = ArrowRecordDecoder(deserializer)
    data = [_encode(ORDER, _order(1, "gift", 7)), None, _encode(ORDER, _order(2, None, "x"))]
    column = decoder.decode("orders", [0, 0, 1], [10, 11, 5], data)
    assert column.corrupt is None
    rows = column.values.to_pylist()
    assert rows[1] is None
    first = rows[0]
    assert first["id"] == 1 and first["status"] == "PAID" and first["note"] == "gift"
    assert first["price"] == decimal.Decimal("12.34")
    assert first["attrs"] == [("w", 1.5)]
    assert first["at"] == AT and first["day"] == datetime.date(2026, 1, 2)
    assert first["ref"] == str(REF)
    assert first["either"] == {"member0": 7, "member1": None}
    assert rows[2]["either"] == {"member0": None, "member1": "x"}
    assert first["address"] == {"city": "Oslo", "zip": b"01234"}
    assert AvroDeserializer(schema=ORDER).deserialize("orders", data[0])["ref"] == REF


def test_failfast_names_topic_partition_offset_and_why() -> None:
    decoder = ArrowRecordDecoder(AvroDeserializer(schema=ORDER))
    good = _encode(ORDER, _order(1))
    with pytest.raises(RecordDecodeError) as info:
        decoder.decode("orders", [3, 3], [41, 42], [good, good[:7]])
    assert (info.value.topic, info.value.partition, info.value.offset) == ("orders", 3, 42)
    assert "topic 'orders' partition 3 offset 42" in str(info.value)
    assert "malformed Avro data" in str(info.value)


def test_permissive_leaves_null_and_the_reason() -> None:
    decoder = ArrowRecordDecoder(AvroDeserializer(schema=ORDER), mode="permissive")
    good = _encode(ORDER, _order(1))
    column = decoder.decode("orders", [0, 0, 0], [0, 1, 2], [good, good + b"\x02", None])
    assert [row is None for row in column.values.to_pylist()] == [False, True, True]
    assert column.corrupt is not None
    reasons = column.corrupt.to_pylist()
    assert reasons[0] is None and reasons[2] is None
    assert "bytes left after the record" in reasons[1]


def test_reader_schema_resolution_for_plain_avro_is_refused_without_registry() -> None:
    with pytest.raises(ConfigError, match="need a schema registry"):
        AvroDeserializer(schema=ORDER, reader_schema=ORDER)
    with pytest.raises(ConfigError, match="registry or a schema"):
        AvroDeserializer()
    with pytest.raises(ConfigError, match="mode="):
        ArrowRecordDecoder(AvroDeserializer(schema=ORDER), mode="DROPMALFORMED")
    with pytest.raises(ConfigError, match="invalid Avro schema"):
        parse_avro_schema('{"type": "nosuchtype"}')


def test_recursive_records_are_refused_for_arrow() -> None:
    node = {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "next", "type": ["null", "Node"], "default": None}],
    }
    with pytest.raises(ConfigError, match="recursive"):
        avro_arrow_type(parse_avro_schema(node))


def test_primitive_schema_and_malformed_text() -> None:
    deserializer = AvroDeserializer(schema="string")
    assert deserializer.deserialize("t", _encode("string", "hé")) == "hé"  # type: ignore[arg-type]
    with pytest.raises(SerializationError, match="malformed"):
        deserializer.deserialize("t", b"\x06ab")
