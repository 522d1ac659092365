"""The compiled Avro decoder: the same column as fastavro's dicts converted to Arrow, on random
data of every covered shape, on malformed records in both modes, and fastavro alone when a shape
is not covered or the extension is absent."""

from __future__ import annotations

import io
import random
from typing import Any

import fastavro
import fastavro.utils
import pyarrow as pa
import pytest

from kafkaconsumer.formats import avro_columns
from kafkaconsumer.formats.arrow import ArrowRecordDecoder, RecordDecodeError
from kafkaconsumer.formats.avro import AvroDeserializer

pytestmark = pytest.mark.skipif(
    not avro_columns.available(), reason="the compiled Avro decoder is not built"
)

_LEAVES: list[Any] = [
    "null",
    "boolean",
    "int",
    "long",
    "float",
    "double",
    "string",
    "bytes",
]


def _random_type(rng: random.Random, depth: int, names: list[int]) -> Any:
    roll = rng.random()
    if depth > 2 or roll < 0.45:
        return rng.choice(_LEAVES)
    if roll < 0.55:
        names[0] += 1
        return {"type": "enum", "name": f"E{names[0]}", "symbols": ["A", "B", "C"]}
    if roll < 0.65:
        return {"type": "array", "items": _random_type(rng, depth + 1, names)}
    if roll < 0.75:
        return {"type": "map", "values": _random_type(rng, depth + 1, names)}
    if roll < 0.88:
        inner = _random_type(rng, depth + 1, names)
        while inner == "null" or isinstance(inner, list):  # Avro unions hold neither
            inner = _random_type(rng, depth + 1, names)
        return ["null", inner] if rng.random() < 0.5 else [inner, "null"]
    return _random_record(rng, depth + 1, names)


def _random_record(rng: random.Random, depth: int, names: list[int]) -> dict[str, Any]:
    names[0] += 1
    return {
        "type": "record",
        "name": f"R{names[0]}",
        "fields": [
            {"name": f"f{i}", "type": _random_type(rng, depth, names)}
            for i in range(rng.randint(1, 6))
        ],
    }


def _encode(schema: Any, records: list[Any]) -> list[bytes | None]:
    parsed = fastavro.parse_schema(schema)
    out: list[bytes | None] = []
    for record in records:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, record)
        out.append(buffer.getvalue())
    return out


def _no_nulls_where_forbidden(array: pa.Array) -> None:
    # Arrow refuses (in casts, in Spark) nulls in a non-nullable child, even under a null
    # parent: pyarrow fills those slots with empty values.
    if isinstance(array.type, pa.StructType):
        for index, field in enumerate(array.type):
            child = array.field(index)
            assert field.nullable or child.null_count == 0, field
            _no_nulls_where_forbidden(child)
    elif isinstance(array.type, (pa.ListType, pa.MapType)):
        _no_nulls_where_forbidden(array.values)


def _both(deserializer: AvroDeserializer, data: list[bytes | None], mode: str = "FAILFAST") -> Any:
    fast = ArrowRecordDecoder(deserializer, mode=mode)
    assert fast._columns is not None
    slow = ArrowRecordDecoder(deserializer, mode=mode)
    slow._columns = None
    n = len(data)
    return (
        fast.decode("t", [0] * n, list(range(n)), data),
        slow.decode("t", [0] * n, list(range(n)), data),
    )


@pytest.mark.parametrize("seed", range(40))
def test_random_schemas_and_data_decode_as_fastavro(seed: int) -> None:
    """Random records of primitives, enums, arrays, maps, nullable unions and nested records
    decode to the column fastavro's values give, valid Arrow of the same type."""
    rng = random.Random(seed)
    schema = _random_record(rng, 0, [0])
    records = list(fastavro.utils.generate_many(schema, 60))
    data = _encode(schema, records)
    data[rng.randrange(len(data))] = None
    fast, slow = _both(AvroDeserializer(schema=schema), data)
    fast.values.validate(full=True)
    _no_nulls_where_forbidden(fast.values)
    assert fast.values.type == slow.values.type
    assert fast.values.to_pylist() == slow.values.to_pylist()


def test_batches_in_a_row_start_empty() -> None:
    """Each batch is its own column: the builders start over after each one."""
    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "s", "type": "string"},
            {"name": "l", "type": {"type": "array", "items": "long"}},
        ],
    }
    decoder = ArrowRecordDecoder(AvroDeserializer(schema=schema))
    for size in (3, 0, 5):
        data = _encode(schema, [{"s": "x" * i, "l": list(range(i))} for i in range(size)])
        column = decoder.decode("t", [0] * size, list(range(size)), data).values
        assert column.to_pylist() == [{"s": "x" * i, "l": list(range(i))} for i in range(size)]


BAD_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "R",
    "fields": [
        {"name": "s", "type": "string"},
        {"name": "o", "type": ["null", "int"]},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        {"name": "l", "type": {"type": "array", "items": "long"}},
    ],
}


def _bad_batch() -> list[bytes | None]:
    good = _encode(BAD_SCHEMA, [{"s": "ok", "o": 1, "e": "B", "l": [1, 2]}])[0]
    assert good is not None
    return [
        good,
        good[:-2],  # truncated
        good + b"\x00",  # bytes left after the record
        b"\x04\xff\xfe" + good[3:],  # a string that is not UTF-8
        b"\x04ok\x08",  # union index 4 of 2
        None,
        b"\x04ok\x00\x0a\x00",  # enum index 5 of 2
        good,
    ]


def test_malformed_records_permissive_as_fastavro() -> None:
    """PERMISSIVE: the same null values and the same reasons as with fastavro alone."""
    fast, slow = _both(AvroDeserializer(schema=BAD_SCHEMA), _bad_batch(), mode="PERMISSIVE")
    _no_nulls_where_forbidden(fast.values)
    assert fast.values.to_pylist() == slow.values.to_pylist()
    assert fast.corrupt is not None and slow.corrupt is not None
    assert fast.corrupt.to_pylist() == slow.corrupt.to_pylist()
    assert [reason is None for reason in fast.corrupt.to_pylist()] == [
        True,
        False,
        False,
        False,
        False,
        True,
        False,
        True,
    ]


def test_malformed_record_failfast_names_the_offset() -> None:
    """FAILFAST: the first bad record stops the batch with fastavro's reason, and the next
    batch decodes from empty builders."""
    decoder = ArrowRecordDecoder(AvroDeserializer(schema=BAD_SCHEMA))
    assert decoder._columns is not None
    with pytest.raises(RecordDecodeError, match="partition 2 offset 11: malformed Avro data"):
        decoder.decode("t", [2] * 8, list(range(10, 18)), _bad_batch())
    good = _bad_batch()[:1]
    assert decoder.decode("t", [2], [1], good).values.to_pylist() == [
        {"s": "ok", "o": 1, "e": "B", "l": [1, 2]}
    ]


def test_uncovered_reader_schemas_use_fastavro() -> None:
    """Logical types, fixed and unions of several types are left to fastavro."""
    for field_type in (
        {"type": "long", "logicalType": "timestamp-millis"},
        {"type": "fixed", "name": "F", "size": 4},
        ["null", "int", "string"],
    ):
        schema = {"type": "record", "name": "R", "fields": [{"name": "x", "type": field_type}]}
        assert ArrowRecordDecoder(AvroDeserializer(schema=schema))._columns is None


def test_without_the_extension_fastavro_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the extension absent the decoder falls back to fastavro, with the same column."""
    data = _encode(BAD_SCHEMA, [{"s": "a", "o": None, "e": "A", "l": []}])
    monkeypatch.setattr(avro_columns, "_cavro", None)
    decoder = ArrowRecordDecoder(AvroDeserializer(schema=BAD_SCHEMA))
    assert decoder._columns is None
    column = decoder.decode("t", [0], [0], data).values
    assert column.type == pa.struct(
        [
            pa.field("s", pa.string(), nullable=False),
            pa.field("o", pa.int32()),
            pa.field("e", pa.string(), nullable=False),
            pa.field(
                "l", pa.list_(pa.field("element", pa.int64(), nullable=False)), nullable=False
            ),
        ]
    )
    assert column.to_pylist() == [{"s": "a", "o": None, "e": "A", "l": []}]


WRITER: dict[str, Any] = {
    "type": "record",
    "name": "Evolving",
    "namespace": "app",
    "fields": [
        {"name": "a", "type": "int"},
        {"name": "b", "type": "long"},
        {"name": "c", "type": "float"},
        {"name": "d", "type": "string"},
        {
            "name": "e",
            "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]},
        },
        {
            "name": "gone",
            "type": {
                "type": "record",
                "name": "Gone",
                "fields": [
                    {"name": "x", "type": {"type": "map", "values": ["null", "string"]}},
                    {"name": "y", "type": {"type": "array", "items": "double"}},
                    {"name": "z", "type": {"type": "fixed", "name": "Four", "size": 4}},
                    {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                ],
            },
        },
        {"name": "u", "type": ["null", "int"]},
        {"name": "plain", "type": "int"},
    ],
}
READER: dict[str, Any] = {
    "type": "record",
    "name": "Evolving",
    "namespace": "app",
    "fields": [
        {"name": "plain", "type": ["null", "long"], "default": None},
        {"name": "a", "type": "double"},
        {"name": "b", "type": "float"},
        {"name": "c", "type": "double"},
        {"name": "d", "type": "bytes"},
        {
            "name": "e",
            "type": {
                "type": "enum",
                "name": "Color",
                "symbols": ["GREEN", "RED", "OTHER"],
                "default": "OTHER",
            },
        },
        {"name": "u", "type": ["null", "long"]},
        {"name": "added", "type": "string", "default": "none"},
        {"name": "added_null", "type": ["null", "int"], "default": None},
    ],
}


@pytest.mark.integration
def test_writer_schema_resolved_into_the_reader_as_fastavro(registry: Any) -> None:
    """A writer schema read into an evolved reader schema (promotions, string to bytes, enum
    symbols and default, a removed record of maps, arrays, fixed and logical types skipped,
    added fields' defaults, int into a nullable long): the same column as fastavro's
    resolution, for records framed with the writer's id from a real registry."""
    from tests.helpers import unique_name

    subject = unique_name("evolving") + "-value"
    writer_id = registry.register(subject, WRITER)
    registry.register(subject, READER)
    records = list(fastavro.utils.generate_many(WRITER, 80))
    for i, record in enumerate(records):
        record["e"] = ["RED", "GREEN", "BLUE"][i % 3]
    payloads: list[bytes | None] = [
        b"\x00" + writer_id.to_bytes(4, "big") + (p or b"") for p in _encode(WRITER, records)
    ]
    deserializer = AvroDeserializer(registry.url, subject=subject)
    fast, slow = _both(deserializer, payloads)
    fast.values.validate(full=True)
    assert fast.values.type == slow.values.type
    assert fast.values.to_pylist() == slow.values.to_pylist()
    assert {row["e"] for row in fast.values.to_pylist()} == {"RED", "GREEN", "OTHER"}
    decoder = ArrowRecordDecoder(deserializer)
    decoder.decode("t", [0] * 80, list(range(80)), payloads)
    assert list(decoder._columns._plans) == [writer_id]  # compiled, not read by fastavro
