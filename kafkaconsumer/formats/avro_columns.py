"""Avro binary decoded straight into Arrow columns by the compiled ``_cavro`` extension.

:class:`AvroColumnDecoder` serves :class:`~kafkaconsumer.formats.arrow.ArrowRecordDecoder` for an
:class:`~kafkaconsumer.formats.avro.AvroDeserializer` with a reader schema. The reader schema
becomes a tree of column builders once; each writer schema met (by its id in the frame, or the
plain schema) is resolved against it once, by Avro's rules, into a plan: per writer field, read
it into the reader's column, skip it, or (a reader field the writer lacks) append the reader's
default. The extension then runs the plans over the payloads with no Python object per value.

Covered shapes: records, the primitives, strings and bytes, enums, arrays and maps of any
covered type, and unions of ``null`` and one covered type, with the numeric promotions and
string/bytes exchange Avro allows. A reader schema outside them (logical types, fixed, unions of
several types, aliases) is not taken: the caller decodes with fastavro as before. A writer
schema outside them, a record whose schema is named in a header, and a record the plan cannot
decode go through the deserializer one by one, so values and error messages stay fastavro's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from kafkaconsumer.errors import SerializationError
from kafkaconsumer.formats.avro import AvroDeserializer
from kafkaconsumer.formats.wire import KEY_SCHEMA_ID_HEADER, MAGIC_BYTE, VALUE_SCHEMA_ID_HEADER
from kafkaconsumer.serialization import Headers

_cavro: Any
try:
    import kafkaconsumer.formats._cavro as _cavro
except ImportError:  # the extension was not built: fastavro decodes every record
    _cavro = None

__all__ = ["AvroColumnDecoder", "available"]

_NUMERIC = ("int", "long", "float", "double")
# Writer type -> reader types it may be read as (Avro's promotions).
_PROMOTIONS = {
    "int": ("int", "long", "float", "double"),
    "long": ("long", "float", "double"),
    "float": ("float", "double"),
    "double": ("double",),
    "string": ("string", "bytes"),
    "bytes": ("bytes", "string"),
    "boolean": ("boolean",),
    "null": ("null",),
}
_SKIP_KINDS = {
    "null": 0,
    "boolean": 1,
    "int": 2,
    "long": 2,
    "enum": 2,
    "float": 3,
    "double": 4,
    "bytes": 5,
    "string": 5,
    "fixed": 6,
    "record": 7,
    "error": 7,
}
# Defaults appended as they are (a bytes or fixed default is text of code points, not bytes).
_PLAIN_DEFAULTS = (type(None), bool, int, float, str)


def available() -> bool:
    """Whether the compiled decoder is built."""
    return _cavro is not None


class _Unsupported(Exception):
    """A schema shape the compiled decoder does not cover."""


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


class _Schemas:
    """A parsed (fastavro) schema's named types, to follow references by name.

    Thread-safety: read-only once built.
    """

    def __init__(self, parsed: Any) -> None:
        self.named: dict[str, Any] = (
            dict(parsed.get("__named_schemas", {})) if isinstance(parsed, dict) else {}
        )

    def resolve(self, schema: Any) -> Any:
        if isinstance(schema, str) and schema not in _PROMOTIONS:
            if schema not in self.named:
                raise _Unsupported(f"unknown named type {schema}")
            return self.named[schema]
        if isinstance(schema, dict) and schema.get("type") in _PROMOTIONS and len(schema) == 1:
            return schema["type"]
        return schema


def _nullable_branch(branches: list[Any]) -> Any:
    others = [b for b in branches if b != "null"]
    if len(others) != 1 or len(branches) > 2:
        raise _Unsupported("a union of several types")
    return others[0]


def _builder(schema: Any, arrow: pa.DataType, names: _Schemas, out: list[Any]) -> Any:
    """The builder of reader ``schema`` (column type ``arrow``); every builder made is added
    to ``out``."""
    assert _cavro is not None
    schema = names.resolve(schema)
    made: Any
    if isinstance(schema, list):
        return _builder(_nullable_branch(schema), arrow, names, out)
    if isinstance(schema, str):
        if schema in ("string", "bytes"):
            made = _cavro.BinaryBuilder(arrow, schema == "string")
        else:
            made = _cavro.FixedBuilder(arrow, schema)
        out.append(made)
        return made
    kind = schema.get("type")
    if "logicalType" in schema:
        raise _Unsupported(f"logical type {schema['logicalType']}")
    if kind == "enum":
        made = _cavro.BinaryBuilder(arrow, True)
    elif kind in ("record", "error"):
        children = []
        for index, field in enumerate(schema["fields"]):
            if field.get("aliases"):
                raise _Unsupported("field aliases")
            children.append(_builder(field["type"], arrow.field(index).type, names, out))
        made = _cavro.StructBuilder(arrow, children)
    elif kind == "array":
        made = _cavro.ListBuilder(arrow, _builder(schema["items"], arrow.value_type, names, out))
    elif kind == "map":
        keys = _cavro.BinaryBuilder(pa.string(), True)
        out.append(keys)
        made = _cavro.ListBuilder(
            arrow, _builder(schema["values"], arrow.item_type, names, out), keys
        )
    else:
        raise _Unsupported(f"type {kind}")
    out.append(made)
    return made


def _skip(schema: Any, names: _Schemas, open_names: frozenset[str] = frozenset()) -> Any:
    assert _cavro is not None
    schema = names.resolve(schema)
    if isinstance(schema, list):
        return _cavro.SkipNode(8, 0, [_skip(b, names, open_names) for b in schema])
    if isinstance(schema, str):
        return _cavro.SkipNode(_SKIP_KINDS[schema])
    kind = schema["type"]
    if kind in _PROMOTIONS:  # a primitive with a logical type
        return _cavro.SkipNode(_SKIP_KINDS[kind])
    if kind == "fixed":
        return _cavro.SkipNode(6, int(schema["size"]))
    if kind == "enum":
        return _cavro.SkipNode(2)
    if kind in ("record", "error"):
        if schema["name"] in open_names:
            raise _Unsupported("a recursive record")
        inner = open_names | {schema["name"]}
        return _cavro.SkipNode(7, 0, [_skip(f["type"], names, inner) for f in schema["fields"]])
    if kind == "array":
        return _cavro.SkipNode(9, 0, [_skip(schema["items"], names, open_names)])
    if kind == "map":
        return _cavro.SkipNode(10, 0, [_skip(schema["values"], names, open_names)])
    raise _Unsupported(f"type {kind}")


class _Planner:
    """Resolves one writer schema against the reader's builders.

    Thread-safety: used by one thread, under AvroColumnDecoder's lock.
    """

    def __init__(self, writer: Any, reader: Any) -> None:
        self.writer = _Schemas(writer)
        self.reader = _Schemas(reader)

    def node(self, w: Any, r: Any, out: Any) -> Any:
        assert _cavro is not None
        w = self.writer.resolve(w)
        r = self.reader.resolve(r)
        if isinstance(r, list):
            target = _nullable_branch(r)
            if isinstance(w, list):
                branches = [None if b == "null" else self.node(b, target, out) for b in w]
                return _cavro.UnionNode(out, branches)
            if w == "null":
                return _cavro.NullNode(out)
            return self.node(w, target, out)
        if isinstance(w, list):
            raise _Unsupported("a writer union read as a non-union")
        if isinstance(w, dict) and "logicalType" in w:
            raise _Unsupported("a writer logical type")
        if isinstance(r, str):
            if not isinstance(w, str) or r not in _PROMOTIONS.get(w, ()):
                raise _Unsupported(f"{w} read as {r}")
            if w == "null":
                return _cavro.NullNode(out)
            if w == "boolean":
                return _cavro.BoolNode(out)
            if w in ("int", "long"):
                return _cavro.LongNode(out)
            if w in ("float", "double"):
                return _cavro.FloatNode(out, 4 if w == "float" else 8)
            return _cavro.BytesNode(out)
        if not isinstance(w, dict) or w.get("type") != r.get("type"):
            raise _Unsupported("writer and reader types differ")
        kind = r["type"]
        if kind == "enum":
            if _short(w["name"]) != _short(r["name"]):
                raise _Unsupported("enums of different names")
            default = r.get("default")
            symbols = [
                s.encode() if s in r["symbols"] else None if default is None else default.encode()
                for s in w["symbols"]
            ]
            return _cavro.EnumNode(out, symbols)
        if kind in ("record", "error"):
            if _short(w["name"]) != _short(r["name"]):
                raise _Unsupported("records of different names")
            reader_fields = {f["name"]: (i, f) for i, f in enumerate(r["fields"])}
            steps = []
            seen = set()
            for field in w["fields"]:
                found = reader_fields.get(field["name"])
                if found is None:
                    steps.append(_skip(field["type"], self.writer))
                    continue
                index, reader_field = found
                seen.add(field["name"])
                steps.append(self.node(field["type"], reader_field["type"], out.children[index]))
            defaults = []
            for name, (index, reader_field) in reader_fields.items():
                if name in seen:
                    continue
                if "default" not in reader_field:
                    raise _Unsupported(f"reader field {name} without a default")
                value = reader_field["default"]
                if not isinstance(value, _PLAIN_DEFAULTS):
                    raise _Unsupported(f"the default of {name}")
                defaults.append((out.children[index], value))
            return _cavro.RecordNode(out, steps, defaults)
        if kind == "array":
            return _cavro.ArrayNode(out, self.node(w["items"], r["items"], out.child))
        if kind == "map":
            return _cavro.ArrayNode(out, self.node(w["values"], r["values"], out.child), out.keys)
        raise _Unsupported(f"type {kind}")


# Stands for a record whose schema a header names: the plans read framed payloads only.
_BY_HEADER = object()


class AvroColumnDecoder:
    """Decodes a batch of Avro payloads into one Arrow column (see the module docstring).

    Thread-safety: the builders are shared state, so :meth:`decode` holds ``_lock``.
    """

    def __init__(self, deserializer: AvroDeserializer, arrow_type: pa.DataType) -> None:
        """Build the columns of ``deserializer``'s reader schema, typed ``arrow_type`` (raises
        ValueError when the schema is not covered)."""
        if _cavro is None:
            raise ValueError("the compiled Avro decoder is not built")
        reader = deserializer.reader_schema
        self._deserializer = deserializer
        self._reader = reader
        self._builders: list[Any] = []
        try:
            self._root = _builder(reader, arrow_type, _Schemas(reader), self._builders)
        except (_Unsupported, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"the reader schema is not covered: {exc}") from exc
        self._lock = threading.Lock()
        # Writer schema id -> plan; ids whose writer schema is not covered.
        self._plans: dict[int, Any] = {}  # guarded by _lock
        self._uncovered: set[int] = set()  # guarded by _lock
        self._plain: Any = None
        plain = deserializer.plain_schema
        if plain is not None:
            self._plain = self._plan(plain)
            if self._plain is None:
                raise ValueError("the plain schema is not covered")

    def _plan(self, writer: Any) -> Any:
        try:
            return _Planner(writer, self._reader).node(writer, self._reader, self._root)
        except (_Unsupported, KeyError, TypeError, AttributeError):
            return None

    def decode(
        self,
        topic: str,
        data: Sequence[bytes | None],
        headers: Sequence[Headers | None] | None,
        fail: Callable[[int, SerializationError], None],
    ) -> tuple[pa.Array, list[str | None]]:
        """The column of ``data`` and, per record, why it could not be decoded (None: it was).
        ``fail(index, error)`` is called first for each record that could not be decoded; it
        raises to stop the batch (FAILFAST)."""
        assert _cavro is not None
        payloads = list(data)
        if headers is not None:
            name = KEY_SCHEMA_ID_HEADER if self._deserializer.is_key else VALUE_SCHEMA_ID_HEADER
            for index, pairs in enumerate(headers):
                if pairs and any(key == name for key, _ in pairs):
                    payloads[index] = _BY_HEADER  # type: ignore[call-overload]
        reasons: list[str | None] = [None] * len(payloads)
        with self._lock:
            try:

                def one_by_one(index: int) -> None:
                    payload = data[index]
                    if payload is not None and payloads[index] is not _BY_HEADER:
                        plan = self._new_plan(payload)
                        if plan is not None:
                            _cavro.decode(
                                {}, plan, self._builders, [payload[5:]], lambda _: slow(index)
                            )
                            return
                    slow(index)

                def slow(index: int) -> None:
                    record_headers = headers[index] if headers is not None else None
                    try:
                        value = self._deserializer.deserialize(topic, data[index], record_headers)
                    except SerializationError as exc:
                        fail(index, exc)
                        _cavro.append_null(self._root)
                        reasons[index] = str(exc)
                        return
                    if value is None:
                        _cavro.append_null(self._root)
                    else:
                        _cavro.append_value(self._root, value)

                _cavro.decode(self._plans, self._plain, self._builders, payloads, one_by_one)
                return self._root.finish(), reasons
            except BaseException:
                self._root.reset()
                raise

    def _new_plan(self, payload: bytes) -> Any:
        # A framed payload whose writer id has no plan yet: resolve it once (the id was
        # either not met before, or it is not covered).
        if self._plain is not None or len(payload) < 5 or payload[0] != MAGIC_BYTE:
            return None
        schema_id = int.from_bytes(payload[1:5], "big")
        if schema_id in self._uncovered:
            return None
        try:
            writer = self._deserializer.writer_schema(schema_id)
        except SerializationError:
            return None  # the deserializer reports it, record by record
        plan = self._plan(writer)
        if plan is None:
            self._uncovered.add(schema_id)
            return None
        self._plans[schema_id] = plan
        return plan
