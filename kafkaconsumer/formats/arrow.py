"""Decoded records straight into Arrow columns.

:func:`avro_arrow_type` maps an Avro schema to the Arrow type of its values, as Spark's
``from_avro`` maps it to Spark types: records become structs, arrays lists, maps maps with string
keys, a union of ``null`` and one type that type made nullable, a union of several types a struct
of ``member0``, ``member1``... (one set, the others null), enums strings, ``decimal`` decimals,
``date`` dates, ``time-*`` times, ``timestamp-*`` UTC timestamps and ``local-timestamp-*``
timestamps without a zone, ``uuid`` strings.

:class:`ArrowRecordDecoder` decodes a batch of record values with a deserializer into one column
of that type. A record that cannot be decoded stops the batch with
:class:`RecordDecodeError` naming topic, partition, offset and why (``mode="FAILFAST"``, the
default), or becomes a null value with the reason in a second column (``mode="PERMISSIVE"``, as
Spark's file sources fill ``_corrupt_record``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kafkaconsumer.errors import ConfigError, SerializationError
from kafkaconsumer.formats.avro import AvroDeserializer
from kafkaconsumer.serialization import Deserializer, Headers

__all__ = [
    "ArrowRecordDecoder",
    "DecodedColumn",
    "RecordDecodeError",
    "arrow_mapping",
    "avro_arrow_type",
    "json_schema_arrow_type",
    "protobuf_arrow_type",
    "MODES",
    "CORRUPT_RECORD_COLUMN",
]

#: What a decode failure does: raise (the default) or leave a null value and the reason.
MODES = ("FAILFAST", "PERMISSIVE")
#: The name Spark's file sources give the column of records they could not parse.
CORRUPT_RECORD_COLUMN = "_corrupt_record"

_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}

_Convert = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


class RecordDecodeError(SerializationError):
    """A record of a batch could not be decoded (FAILFAST); the message says where and why."""

    def __init__(self, topic: str, partition: int, offset: int, cause: BaseException) -> None:
        """``cause`` is the deserializer's error."""
        super().__init__(
            f"cannot decode the record at topic {topic!r} partition {partition} offset {offset}: "
            f"{cause}"
        )
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.cause = cause


class _AvroMapper:
    """Builds the Arrow type of an Avro schema and the conversion its values need first."""

    def __init__(self, named: dict[str, Any]) -> None:
        self._named = named
        self._open: set[str] = set()

    def field(self, name: str, schema: Any) -> tuple[pa.Field, _Convert | None]:
        arrow, nullable, convert = self.type(schema)
        return pa.field(name, arrow, nullable=nullable), convert

    def type(self, schema: Any) -> tuple[pa.DataType, bool, _Convert | None]:
        """(Arrow type, nullable, conversion or None when pyarrow takes the value as it is)."""
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                return _PRIMITIVES[schema], schema == "null", None
            if schema not in self._named:
                raise ConfigError(f"unknown Avro type {schema!r}")
            return self.named(schema, self._named[schema])
        if isinstance(schema, list):
            return self.union(schema)
        kind = schema["type"]
        logical = schema.get("logicalType")
        if logical is not None:
            mapped = self.logical(kind, logical, schema)
            if mapped is not None:
                return mapped
        if kind in ("record", "error", "enum", "fixed"):
            return self.named(schema["name"], schema)
        if kind == "array":
            item, convert = self.field("element", schema["items"])
            return pa.list_(item), False, _each(convert)
        if kind == "map":
            value, convert = self.field("value", schema["values"])
            return pa.map_(pa.string(), value), False, _each_value(convert)
        return self.type(kind)

    def named(self, name: str, schema: Any) -> tuple[pa.DataType, bool, _Convert | None]:
        kind = schema["type"]
        if kind == "enum":
            return pa.string(), False, None
        if kind == "fixed":
            logical = schema.get("logicalType")
            if logical is not None:
                mapped = self.logical(kind, logical, schema)
                if mapped is not None:
                    return mapped
            return pa.binary(schema["size"]), False, None
        if name in self._open:
            raise ConfigError(f"the Avro record {name} is recursive: Arrow has no recursive types")
        self._open.add(name)
        try:
            fields = []
            converts = []
            for field in schema["fields"]:
                arrow_field, convert = self.field(field["name"], field["type"])
                fields.append(arrow_field)
                if convert is not None:
                    converts.append((field["name"], convert))
        finally:
            self._open.discard(name)
        return pa.struct(fields), False, _record(converts) if converts else None

    def logical(
        self, kind: str, logical: str, schema: Any
    ) -> tuple[pa.DataType, bool, _Convert | None] | None:
        if logical == "decimal" and kind in ("bytes", "fixed"):
            precision = int(schema["precision"])
            scale = int(schema.get("scale", 0))
            arrow = (
                pa.decimal128(precision, scale)
                if precision <= 38
                else pa.decimal256(precision, scale)
            )
            return arrow, False, None
        mapped = {
            ("int", "date"): pa.date32(),
            ("int", "time-millis"): pa.time32("ms"),
            ("long", "time-micros"): pa.time64("us"),
            ("long", "timestamp-millis"): pa.timestamp("ms", tz="UTC"),
            ("long", "timestamp-micros"): pa.timestamp("us", tz="UTC"),
            ("long", "local-timestamp-millis"): pa.timestamp("ms"),
            ("long", "local-timestamp-micros"): pa.timestamp("us"),
        }.get((kind, logical))
        if mapped is not None:
            return mapped, False, None
        if logical == "uuid" and kind == "string":
            return pa.string(), False, _uuid_text
        return None  # an unknown logical type reads as its underlying type, as Avro says

    def union(self, branches: list[Any]) -> tuple[pa.DataType, bool, _Convert | None]:
        others = [branch for branch in branches if branch != "null"]
        nullable = len(others) != len(branches)
        if not others:
            return pa.null(), True, None
        if len(others) == 1:
            arrow, _, convert = self.type(others[0])
            return arrow, nullable, convert
        members = []
        for index, branch in enumerate(others):
            arrow, _, convert = self.type(branch)
            members.append((f"member{index}", arrow, convert, _matcher(branch, self._named)))
        struct = pa.struct([pa.field(name, arrow) for name, arrow, _, _ in members])
        return struct, nullable, _union(members)


def _each(convert: _Convert | None) -> _Convert | None:
    if convert is None:
        return None
    return lambda items: None if items is None else [convert(item) for item in items]


def _each_value(convert: _Convert | None) -> _Convert | None:
    if convert is None:
        return None
    return lambda mapping: (
        None if mapping is None else {key: convert(value) for key, value in mapping.items()}
    )


def _record(converts: list[tuple[str, _Convert]]) -> _Convert:
    def convert(record: Any) -> Any:
        if record is None:
            return None
        out = dict(record)
        for name, fn in converts:
            out[name] = fn(out.get(name))
        return out

    return convert


def _uuid_text(value: Any) -> Any:
    return str(value) if isinstance(value, uuid.UUID) else value


def _matcher(branch: Any, named: dict[str, Any]) -> Callable[[Any], bool]:
    """Which Python values fastavro returns for ``branch`` of a union."""
    if isinstance(branch, str) and branch in named:
        branch = named[branch]
    kind = branch if isinstance(branch, str) else branch.get("type")
    if isinstance(branch, dict) and branch.get("logicalType") is not None:
        return lambda value: not isinstance(value, (bool, int, float, str, bytes, list, dict))
    checks: dict[str, Callable[[Any], bool]] = {
        "boolean": lambda v: isinstance(v, bool),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "long": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, float),
        "double": lambda v: isinstance(v, float),
        "bytes": lambda v: isinstance(v, bytes),
        "fixed": lambda v: isinstance(v, bytes),
        "string": lambda v: isinstance(v, str),
        "enum": lambda v: isinstance(v, str),
        "array": lambda v: isinstance(v, list),
        "map": lambda v: isinstance(v, dict),
        "record": lambda v: isinstance(v, dict),
        "error": lambda v: isinstance(v, dict),
    }
    return checks.get(str(kind), lambda value: False)


def _union(
    members: list[tuple[str, pa.DataType, _Convert | None, Callable[[Any], bool]]],
) -> _Convert:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        out: dict[str, Any] = {name: None for name, _, _, _ in members}
        for name, _, fn, matches in members:
            if matches(value):
                out[name] = fn(value) if fn is not None else value
                return out
        raise SerializationError(f"value {value!r} matches no branch of its union")

    return convert


def _avro_mapping(schema: Any) -> tuple[pa.DataType, bool, _Convert | None]:
    named = dict(schema.get("__named_schemas", {})) if isinstance(schema, dict) else {}
    return _AvroMapper(named).type(schema)


def avro_arrow_type(schema: Any) -> pa.DataType:
    """The Arrow type of values of the parsed Avro ``schema`` (see the module docstring)."""
    return _avro_mapping(schema)[0]


_NO_READER = (
    "typed columns need one reader schema: give the deserializer a subject or a reader schema"
)


def arrow_mapping(deserializer: Deserializer) -> tuple[pa.DataType, _Convert | None]:
    """The Arrow type of what ``deserializer`` returns, and the conversion its values need
    before pyarrow takes them (None when none)."""
    if isinstance(deserializer, AvroDeserializer):
        if deserializer.reader_schema is None:
            raise ConfigError(_NO_READER)
        arrow, _, convert = _avro_mapping(deserializer.reader_schema)
        return arrow, convert
    kind = type(deserializer).__name__
    if kind == "ProtobufDeserializer":
        descriptor = getattr(deserializer, "reader_descriptor", None)
        if descriptor is None:
            raise ConfigError(_NO_READER)
        return protobuf_arrow_type(descriptor), None
    if kind == "JsonSchemaDeserializer":
        schema = getattr(deserializer, "reader_schema", None)
        if schema is None:
            raise ConfigError(_NO_READER)
        arrow, _, convert = _JsonMapper(schema).type(schema)
        return arrow, convert
    raise ConfigError(f"no Arrow type is known for the values of {kind}")


# Protobuf field types (FieldDescriptor.TYPE_*) and their Arrow types.
_PROTOBUF_SCALARS: dict[int, pa.DataType] = {
    1: pa.float64(),  # double
    2: pa.float32(),  # float
    3: pa.int64(),  # int64
    4: pa.uint64(),  # uint64
    5: pa.int32(),  # int32
    6: pa.uint64(),  # fixed64
    7: pa.uint32(),  # fixed32
    8: pa.bool_(),  # bool
    9: pa.string(),  # string
    12: pa.binary(),  # bytes
    13: pa.uint32(),  # uint32
    14: pa.string(),  # enum, as its name
    15: pa.int32(),  # sfixed32
    16: pa.int64(),  # sfixed64
    17: pa.int32(),  # sint32
    18: pa.int64(),  # sint64
}
_PROTOBUF_MESSAGE_TYPES = (10, 11)  # group, message


def _repeated(field: Any) -> bool:
    flag = getattr(field, "is_repeated", None)
    return bool(flag) if flag is not None else field.label == 3  # LABEL_REPEATED


def protobuf_arrow_type(descriptor: Any, _open: frozenset[str] = frozenset()) -> pa.DataType:
    """The Arrow struct type of a Protobuf message descriptor: scalars as their Arrow types
    (enums as their names), repeated fields as lists, maps as maps, messages as structs."""
    if descriptor.full_name in _open:
        raise ConfigError(
            f"the Protobuf message {descriptor.full_name} is recursive: Arrow has no recursive "
            "types"
        )
    inner = _open | {descriptor.full_name}
    fields = []
    for field in descriptor.fields:
        fields.append(pa.field(field.name, _protobuf_field_type(field, inner)))
    return pa.struct(fields)


def _protobuf_field_type(field: Any, inner: frozenset[str]) -> pa.DataType:
    message = field.message_type
    if message is not None and message.GetOptions().map_entry and _repeated(field):
        key = _protobuf_single_type(message.fields_by_name["key"], inner)
        value = _protobuf_single_type(message.fields_by_name["value"], inner)
        return pa.map_(key, value)
    single = _protobuf_single_type(field, inner)
    return pa.list_(single) if _repeated(field) else single


def _protobuf_single_type(field: Any, inner: frozenset[str]) -> pa.DataType:
    if field.type in _PROTOBUF_MESSAGE_TYPES:
        return protobuf_arrow_type(field.message_type, inner)
    return _PROTOBUF_SCALARS[field.type]


_JSON_SCALARS: dict[str, pa.DataType] = {
    "string": pa.string(),
    "integer": pa.int64(),
    "number": pa.float64(),
    "boolean": pa.bool_(),
}


def _json_text(value: Any) -> Any:
    return None if value is None else json.dumps(value, sort_keys=True)


class _JsonMapper:
    """Builds the Arrow type of a JSON schema: objects with ``properties`` as structs, arrays
    with ``items`` as lists, the scalar types as theirs; anything else (no single type,
    ``oneOf``...) as a string column holding the JSON text."""

    def __init__(self, root: dict[str, Any]) -> None:
        self._root = root
        self._open: set[str] = set()

    def _resolve(self, schema: Any) -> tuple[Any, str | None]:
        ref = schema.get("$ref") if isinstance(schema, dict) else None
        if not isinstance(ref, str):
            return schema, None
        if not ref.startswith("#/"):
            return {}, None  # an external reference: kept as JSON text
        target: Any = self._root
        for part in ref[2:].split("/"):
            target = target.get(part.replace("~1", "/").replace("~0", "~"), {})
        return target, ref

    def type(self, schema: Any) -> tuple[pa.DataType, bool, _Convert | None]:
        schema, ref = self._resolve(schema)
        if ref is not None and ref in self._open:
            raise ConfigError(f"the JSON schema {ref} is recursive: Arrow has no recursive types")
        if ref is not None:
            self._open.add(ref)
        try:
            return self._type(schema)
        finally:
            if ref is not None:
                self._open.discard(ref)

    def _type(self, schema: Any) -> tuple[pa.DataType, bool, _Convert | None]:
        if not isinstance(schema, dict):
            return pa.string(), True, _json_text
        kinds = schema.get("type")
        if isinstance(kinds, list):
            others = [kind for kind in kinds if kind != "null"]
            kind = others[0] if len(others) == 1 else None
        else:
            kind = kinds
        if kind == "object" and isinstance(schema.get("properties"), dict):
            fields = []
            converts = []
            for name, sub in schema["properties"].items():
                arrow, _, convert = self.type(sub)
                fields.append(pa.field(name, arrow))
                if convert is not None:
                    converts.append((name, convert))
            return pa.struct(fields), True, _record(converts) if converts else None
        if kind == "array" and isinstance(schema.get("items"), dict):
            arrow, _, convert = self.type(schema["items"])
            return pa.list_(arrow), True, _each(convert)
        if isinstance(kind, str) and kind in _JSON_SCALARS:
            return _JSON_SCALARS[kind], True, None
        return pa.string(), True, _json_text


def json_schema_arrow_type(schema: dict[str, Any]) -> pa.DataType:
    """The Arrow type of values of a JSON ``schema`` (see :class:`JsonSchemaDeserializer`)."""
    return _JsonMapper(schema).type(schema)[0]


@dataclass(frozen=True)
class DecodedColumn:
    """One decoded column of a batch and, in PERMISSIVE mode, why records failed (else None)."""

    values: pa.Array
    corrupt: pa.Array | None


class ArrowRecordDecoder:
    """Decodes batches of keys or values into one typed Arrow column.

    ``deserializer`` is an :class:`~kafkaconsumer.formats.avro.AvroDeserializer`,
    :class:`~kafkaconsumer.formats.protobuf.ProtobufDeserializer` or
    :class:`~kafkaconsumer.formats.json_schema.JsonSchemaDeserializer` with a reader schema (the
    column's type follows it).

    Thread-safety: safe to share once built; each :meth:`decode` call works on its own lists.
    """

    def __init__(self, deserializer: Deserializer, *, mode: str = "FAILFAST") -> None:
        """See the class docstring; ``mode`` is ``FAILFAST`` or ``PERMISSIVE``."""
        normalized = str(mode).upper()
        if normalized not in MODES:
            raise ConfigError(f"mode={mode!r} is not one of {', '.join(MODES)}")
        self._deserializer = deserializer
        self._mode = normalized
        self._type, convert = arrow_mapping(deserializer)
        self._convert = convert or _identity
        # Avro of the shapes the compiled decoder covers skips fastavro's dicts.
        self._columns: Any = None
        if isinstance(deserializer, AvroDeserializer):
            from kafkaconsumer.formats import avro_columns

            if avro_columns.available():
                try:
                    self._columns = avro_columns.AvroColumnDecoder(deserializer, self._type)
                except ValueError:
                    self._columns = None

    @property
    def arrow_type(self) -> pa.DataType:
        """The type of the decoded column."""
        return self._type

    @property
    def mode(self) -> str:
        """``FAILFAST`` or ``PERMISSIVE``."""
        return self._mode

    def decode(
        self,
        topic: str,
        partitions: Sequence[int],
        offsets: Sequence[int],
        data: Sequence[bytes | None],
        headers: Sequence[Headers | None] | None = None,
    ) -> DecodedColumn:
        """Decode ``data`` (one entry per record; None stays a null value)."""
        if self._columns is not None:
            return self._decode_columns(topic, partitions, offsets, data, headers)
        values: list[Any] = []
        reasons: list[str | None] = []
        for index, payload in enumerate(data):
            record_headers = headers[index] if headers is not None else None
            try:
                value = self._convert(
                    self._deserializer.deserialize(topic, payload, record_headers)
                )
            except SerializationError as exc:
                if self._mode == "FAILFAST":
                    raise RecordDecodeError(topic, partitions[index], offsets[index], exc) from exc
                values.append(None)
                reasons.append(str(exc))
                continue
            values.append(value)
            reasons.append(None)
        column = pa.array(values, type=self._type)
        corrupt = pa.array(reasons, type=pa.string()) if self._mode == "PERMISSIVE" else None
        return DecodedColumn(column, corrupt)

    def _decode_columns(
        self,
        topic: str,
        partitions: Sequence[int],
        offsets: Sequence[int],
        data: Sequence[bytes | None],
        headers: Sequence[Headers | None] | None,
    ) -> DecodedColumn:
        def fail(index: int, exc: SerializationError) -> None:
            if self._mode == "FAILFAST":
                raise RecordDecodeError(topic, partitions[index], offsets[index], exc) from exc

        column, reasons = self._columns.decode(topic, data, headers, fail)
        corrupt = pa.array(reasons, type=pa.string()) if self._mode == "PERMISSIVE" else None
        return DecodedColumn(column, corrupt)
