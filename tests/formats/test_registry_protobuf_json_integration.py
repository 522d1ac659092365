"""Protobuf and JSON Schema records framed for a real schema registry, into typed columns."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
from google.protobuf import message_factory

from kafkaconsumer.errors import ConfigError, SerializationError
from kafkaconsumer.formats.arrow import ArrowRecordDecoder, RecordDecodeError
from kafkaconsumer.formats.json_schema import JsonSchemaDeserializer
from kafkaconsumer.formats.protobuf import ProtobufDeserializer, compile_proto
from kafkaconsumer.formats.wire import frame, write_message_indexes
from tests.helpers import unique_name
from tests.support.apicurio_registry import ApicurioRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PROTO_V1 = """syntax = "proto3";
package shop;

message Order {
  int64 id = 1;
  string name = 2;
  repeated string tags = 3;
  Line line = 4;
  map<string, int32> counts = 5;
  Status status = 6;
  message Line { double price = 1; uint32 qty = 2; }
  enum Status { NEW = 0; PAID = 1; }
}

message Refund { int64 order_id = 1; }
"""
# v2 adds a field, which v1 records lack: it is null in their rows.
PROTO_V2 = PROTO_V1.replace("Status status = 6;", "Status status = 6;\n  string note = 7;")


def _message(text: str, message_name: str, **fields: Any) -> bytes:
    descriptor = compile_proto({"schema.proto": text}).pool.FindMessageTypeByName(message_name)
    message = message_factory.GetMessageClass(descriptor)()
    for key, value in fields.items():
        if key == "line":
            message.line.price, message.line.qty = value
        elif key in ("tags",):
            message.tags.extend(value)
        elif key == "counts":
            message.counts.update(value)
        else:
            setattr(message, key, value)
    return bytes(message.SerializeToString())


def test_protobuf_topic_into_the_latest_schema(registry: ApicurioRegistry) -> None:
    subject = unique_name("orders") + "-value"
    v1 = registry.register(subject, PROTO_V1, "PROTOBUF")
    v2 = registry.register(subject, PROTO_V2, "PROTOBUF")
    payloads = [
        frame(
            v1,
            write_message_indexes([0])
            + _message(
                PROTO_V1,
                "shop.Order",
                id=1,
                name="a",
                tags=["x", "y"],
                line=(2.5, 3),
                counts={"k": 4},
                status=1,
            ),
        ),
        frame(v2, write_message_indexes([0]) + _message(PROTO_V2, "shop.Order", id=2, note="hi")),
    ]
    deserializer = ProtobufDeserializer(registry.url, subject=subject)
    decoder = ArrowRecordDecoder(deserializer)
    assert decoder.arrow_type == pa.struct(
        [
            ("id", pa.int64()),
            ("name", pa.string()),
            ("tags", pa.list_(pa.string())),
            ("line", pa.struct([("price", pa.float64()), ("qty", pa.uint32())])),
            ("counts", pa.map_(pa.string(), pa.int32())),
            ("status", pa.string()),
            ("note", pa.string()),
        ]
    )
    rows = decoder.decode("orders", [0, 0], [0, 1], payloads).values.to_pylist()
    assert rows[0] == {
        "id": 1,
        "name": "a",
        "tags": ["x", "y"],
        "line": {"price": 2.5, "qty": 3},
        "counts": [("k", 4)],
        "status": "PAID",
        "note": None,
    }
    assert rows[1]["id"] == 2 and rows[1]["note"] == "hi" and rows[1]["line"] is None
    # The message-index list picks the second message of the file.
    refund = frame(v1, write_message_indexes([1]) + _message(PROTO_V1, "shop.Refund", order_id=9))
    assert deserializer.deserialize("orders", refund) == {"order_id": 9}


def test_protobuf_bad_records(registry: ApicurioRegistry) -> None:
    subject = unique_name("orders") + "-value"
    v1 = registry.register(subject, PROTO_V1, "PROTOBUF")
    deserializer = ProtobufDeserializer(registry.url, subject=subject)
    with pytest.raises(SerializationError, match="message index"):
        deserializer.deserialize("orders", frame(v1, write_message_indexes([5]) + b""))
    with pytest.raises(SerializationError, match="malformed Protobuf"):
        deserializer.deserialize("orders", frame(v1, b"\x00\x0a\xff"))
    with pytest.raises(ConfigError, match="no message shop.Nope"):
        ProtobufDeserializer(registry.url, subject=subject, message="shop.Nope")
    permissive = ArrowRecordDecoder(deserializer, mode="PERMISSIVE")
    column = permissive.decode("orders", [0], [3], [frame(424242, b"\x00")])
    assert column.corrupt is not None
    assert "unknown to the registry" in column.corrupt.to_pylist()[0]


USER_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {"$ref": "#/definitions/Address"},
        "extra": {},
    },
    "required": ["id"],
    "definitions": {
        "Address": {"type": "object", "properties": {"city": {"type": ["string", "null"]}}}
    },
}


def test_json_schema_topic_into_a_typed_column(registry: ApicurioRegistry) -> None:
    subject = unique_name("users") + "-value"
    schema_id = registry.register(subject, USER_SCHEMA, "JSON")
    deserializer = JsonSchemaDeserializer(registry.url, subject=subject)
    good = {"id": 1, "name": "ann", "tags": ["a"], "address": {"city": "Oslo"}, "extra": [1, 2]}
    bad = {"name": "no id"}
    payloads = [
        frame(schema_id, json.dumps(good).encode()),
        frame(schema_id, json.dumps(bad).encode()),
    ]
    decoder = ArrowRecordDecoder(deserializer)
    assert decoder.arrow_type == pa.struct(
        [
            ("id", pa.int64()),
            ("name", pa.string()),
            ("tags", pa.list_(pa.string())),
            ("address", pa.struct([("city", pa.string())])),
            ("extra", pa.string()),
        ]
    )
    with pytest.raises(RecordDecodeError, match="offset 8: JSON fails its schema at \\(root\\)"):
        decoder.decode("users", [0, 0], [7, 8], payloads)
    column = ArrowRecordDecoder(deserializer, mode="PERMISSIVE").decode(
        "users", [0, 0], [7, 8], payloads
    )
    assert column.values.to_pylist() == [
        {"id": 1, "name": "ann", "tags": ["a"], "address": {"city": "Oslo"}, "extra": "[1, 2]"},
        None,
    ]
    assert column.corrupt is not None
    assert "'id' is a required property" in column.corrupt.to_pylist()[1]


def test_plain_json_with_an_inline_schema() -> None:
    deserializer = JsonSchemaDeserializer(schema=USER_SCHEMA)
    assert deserializer.deserialize("users", b'{"id": 3}') == {"id": 3}
    with pytest.raises(SerializationError, match="at id: 'x' is not of type 'integer'"):
        deserializer.deserialize("users", b'{"id": "x"}')
    with pytest.raises(SerializationError, match="malformed JSON"):
        deserializer.deserialize("users", b"{")
    with pytest.raises(ConfigError, match="invalid JSON schema"):
        JsonSchemaDeserializer(schema={"type": 5})
