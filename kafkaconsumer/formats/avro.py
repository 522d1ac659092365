"""Avro records, framed for a schema registry or plain, decoded with fastavro.

:class:`AvroDeserializer` reads each record with the schema it was written with (the writer
schema, fetched by the id in its frame and cached) into one reader schema by Avro's resolution
rules, so that a topic whose schema evolved reads as one table: a field the reader has and the
writer lacks takes the reader's default, a field the writer has and the reader lacks is skipped,
and ints widen to longs and doubles as Avro allows. The reader schema is the latest version of a
subject, a given version, or a schema given inline; without any, each record is read with its own
writer schema.

Without a registry, ``AvroDeserializer(schema=...)`` reads unframed Avro binary written with that
schema.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Mapping
from typing import Any

from kafkaconsumer.errors import ConfigError, SerializationError
from kafkaconsumer.formats.registry import (
    RegisteredSchema,
    SchemaRegistryClient,
    SchemaRegistryError,
)
from kafkaconsumer.formats.wire import SchemaId, describe_schema_id, split_frame
from kafkaconsumer.serialization import Deserializer, Headers

try:
    import fastavro
    from fastavro.read import SchemaResolutionError
except ImportError as exc:  # pragma: no cover - only without the [formats] extra
    raise ImportError("Avro records need fastavro: pip install 'kafkaconsumer[formats]'") from exc

__all__ = ["AvroDeserializer", "parse_avro_schema"]


def parse_avro_schema(
    schema: str | Mapping[str, Any] | list[Any], named_schemas: dict[str, Any] | None = None
) -> Any:
    """Parse an Avro schema given as JSON text or as its decoded JSON (fastavro's form)."""
    decoded: Any = schema
    if isinstance(schema, str):
        try:
            decoded = json.loads(schema)
        except ValueError:
            decoded = schema.strip()  # a bare primitive name such as ``string``
    elif isinstance(schema, Mapping):
        decoded = dict(schema)
    try:
        return fastavro.parse_schema(decoded, named_schemas=named_schemas)
    except Exception as exc:
        raise ConfigError(f"invalid Avro schema: {exc}") from exc


def _registry(registry: SchemaRegistryClient | Mapping[str, Any] | str) -> SchemaRegistryClient:
    if isinstance(registry, SchemaRegistryClient):
        return registry
    return SchemaRegistryClient(registry)


class AvroDeserializer(Deserializer):
    """Avro deserializer for ``key.deserializer`` / ``value.deserializer`` (Confluent's
    ``KafkaAvroDeserializer``); records come back as dicts (fastavro's form: logical types as
    ``datetime``/``date``/``Decimal``/``UUID``).

    * ``AvroDeserializer(registry)``: framed records, each read with its writer schema;
    * ``reader_schema=``: framed records read into this schema (JSON text or decoded JSON);
    * ``subject=`` (and ``version=``, default ``"latest"``): the reader schema is that version of
      the subject, fetched once;
    * ``AvroDeserializer(schema=...)`` with no registry: unframed Avro binary of that schema.

    ``registry`` is a :class:`~kafkaconsumer.formats.registry.SchemaRegistryClient`, its
    configuration mapping or the registry URL.

    Thread-safety: safe to share; the parsed-schema cache is guarded by ``_lock``.
    """

    def __init__(
        self,
        registry: SchemaRegistryClient | Mapping[str, Any] | str | None = None,
        *,
        reader_schema: str | Mapping[str, Any] | None = None,
        subject: str | None = None,
        version: int | str = "latest",
        schema: str | Mapping[str, Any] | None = None,
        is_key: bool = False,
    ) -> None:
        """See the class docstring."""
        self._is_key = is_key
        self._lock = threading.Lock()
        self._writers: dict[SchemaId, Any] = {}  # guarded by _lock
        self._reader: Any = None
        if registry is None:
            if schema is None:
                raise ConfigError("AvroDeserializer needs a schema registry or a schema")
            if reader_schema is not None or subject is not None:
                raise ConfigError("reader_schema and subject need a schema registry")
            self._registry: SchemaRegistryClient | None = None
            self._plain = parse_avro_schema(schema)
            self._reader = self._plain
            return
        if schema is not None:
            raise ConfigError("schema= is for unframed records without a registry")
        if reader_schema is not None and subject is not None:
            raise ConfigError("give reader_schema or subject, not both")
        self._registry = _registry(registry)
        self._plain = None
        if reader_schema is not None:
            self._reader = parse_avro_schema(reader_schema)
        elif subject is not None:
            self._reader = self._parse_registered(self._registry.schema_version(subject, version))

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """Learn whether this deserializer reads keys (it looks for ``__key_schema_id`` then)."""
        self._is_key = is_key

    @property
    def reader_schema(self) -> Any:
        """The parsed reader schema (None when each record is read with its writer schema)."""
        return self._reader

    @property
    def plain_schema(self) -> Any:
        """The parsed schema of unframed records (None with a registry)."""
        return self._plain

    @property
    def is_key(self) -> bool:
        """Whether this deserializer reads keys (it looks for ``__key_schema_id`` then)."""
        return self._is_key

    @property
    def registry(self) -> SchemaRegistryClient | None:
        """The registry client (None for plain Avro)."""
        return self._registry

    def _parse_registered(self, registered: RegisteredSchema) -> Any:
        if registered.schema_type != "AVRO":
            raise SerializationError(
                f"schema {registered.schema_id} is {registered.schema_type}, not AVRO"
            )
        named: dict[str, Any] = {}
        self._load_references(registered, named, set())
        return parse_avro_schema(registered.schema_str, named)

    def _load_references(
        self, registered: RegisteredSchema, named: dict[str, Any], seen: set[tuple[str, int]]
    ) -> None:
        assert self._registry is not None
        for ref in registered.references:
            if (ref.subject, ref.version) in seen:
                continue
            seen.add((ref.subject, ref.version))
            imported = self._registry.schema_version(ref.subject, ref.version)
            self._load_references(imported, named, seen)
            parse_avro_schema(imported.schema_str, named)

    def writer_schema(self, schema_id: SchemaId) -> Any:
        """The parsed writer schema registered under ``schema_id`` (fetched once)."""
        with self._lock:
            parsed = self._writers.get(schema_id)
        if parsed is None:
            assert self._registry is not None
            try:
                registered = self._registry.schema_by_id(schema_id)
            except SchemaRegistryError as exc:
                if exc.status != 404:
                    raise
                raise SerializationError(
                    f"{describe_schema_id(schema_id)} is unknown to the registry: {exc}"
                ) from exc
            parsed = self._parse_registered(registered)
            with self._lock:
                self._writers[schema_id] = parsed
        return parsed

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
        """Decode one record (None stays None)."""
        if data is None:
            return None
        if self._registry is None:
            writer = self._plain
            payload: Any = data
        else:
            framed = split_frame(data, headers, self._is_key)
            writer = self.writer_schema(framed.schema_id)
            payload = framed.payload
        buffer = io.BytesIO(payload)
        try:
            value = fastavro.schemaless_reader(buffer, writer, self._reader)
        except SchemaResolutionError as exc:
            raise SerializationError(f"the writer schema does not resolve: {exc}") from exc
        except (EOFError, ValueError, IndexError, KeyError, TypeError, UnicodeError) as exc:
            raise SerializationError(f"malformed Avro data: {exc!r}") from exc
        if buffer.tell() != len(buffer.getbuffer()):
            raise SerializationError(
                f"malformed Avro data: {len(buffer.getbuffer()) - buffer.tell()} bytes left "
                "after the record"
            )
        return value
