"""JSON Schema records framed for a schema registry (or plain JSON checked against a schema).

Each record's JSON text is parsed and validated with the ``jsonschema`` package against the
schema its frame names (fetched by id and cached), or against the schema given inline when the
records are not framed. JSON Schema has no resolution rules: the reader schema (the latest or a
given version of a subject, or inline) only decides the type of the Arrow column.
"""

from __future__ import annotations

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
    import jsonschema
    import jsonschema.exceptions
    import jsonschema.validators
except ImportError as exc:  # pragma: no cover - only without the [formats] extra
    raise ImportError(
        "JSON Schema records need jsonschema: pip install 'kafkaconsumer[formats]'"
    ) from exc

__all__ = ["JsonSchemaDeserializer"]


def _load(schema: str | Mapping[str, Any]) -> dict[str, Any]:
    try:
        loaded = json.loads(schema) if isinstance(schema, str) else dict(schema)
    except ValueError as exc:
        raise ConfigError(f"the JSON schema is not JSON: {exc}") from exc
    if not isinstance(loaded, dict):
        raise ConfigError("a JSON schema must be a JSON object")
    return loaded


def _validator(schema: dict[str, Any]) -> Any:
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise ConfigError(f"invalid JSON schema: {exc.message}") from exc
    return cls(schema)


class JsonSchemaDeserializer(Deserializer):
    """JSON Schema deserializer for ``key.deserializer`` / ``value.deserializer`` (Confluent's
    ``KafkaJsonSchemaDeserializer``); records come back as parsed JSON.

    * ``JsonSchemaDeserializer(registry)``: framed records validated against their writer schema;
    * ``subject=`` (and ``version=``) or ``reader_schema=``: the schema of the Arrow column;
    * ``JsonSchemaDeserializer(schema=...)`` with no registry: unframed JSON validated against it.

    ``validate=False`` skips validation (parsing still fails on text that is not JSON).

    Thread-safety: safe to share; the validator cache is guarded by ``_lock``.
    """

    def __init__(
        self,
        registry: SchemaRegistryClient | Mapping[str, Any] | str | None = None,
        *,
        subject: str | None = None,
        version: int | str = "latest",
        reader_schema: str | Mapping[str, Any] | None = None,
        schema: str | Mapping[str, Any] | None = None,
        validate: bool = True,
        is_key: bool = False,
    ) -> None:
        """See the class docstring."""
        self._is_key = is_key
        self._validate = validate
        self._lock = threading.Lock()
        self._validators: dict[SchemaId, Any] = {}  # guarded by _lock
        self._reader: dict[str, Any] | None = None
        self._plain: Any = None
        if registry is None:
            if schema is None:
                raise ConfigError("JsonSchemaDeserializer needs a schema registry or a schema")
            if subject is not None or reader_schema is not None:
                raise ConfigError("subject and reader_schema need a schema registry")
            self._registry: SchemaRegistryClient | None = None
            self._reader = _load(schema)
            self._plain = _validator(self._reader)
            return
        if schema is not None:
            raise ConfigError("schema= is for unframed records without a registry")
        if subject is not None and reader_schema is not None:
            raise ConfigError("give reader_schema or subject, not both")
        self._registry = (
            registry
            if isinstance(registry, SchemaRegistryClient)
            else SchemaRegistryClient(registry)
        )
        if reader_schema is not None:
            self._reader = _load(reader_schema)
            _validator(self._reader)
        elif subject is not None:
            self._reader = self._schema_of(self._registry.schema_version(subject, version))

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """Learn whether this deserializer reads keys (it looks for ``__key_schema_id`` then)."""
        self._is_key = is_key

    @property
    def reader_schema(self) -> dict[str, Any] | None:
        """The reader schema (None when none was chosen)."""
        return self._reader

    @staticmethod
    def _schema_of(registered: RegisteredSchema) -> dict[str, Any]:
        if registered.schema_type != "JSON":
            raise SerializationError(
                f"schema {registered.schema_id} is {registered.schema_type}, not JSON"
            )
        if registered.references:
            raise SerializationError(
                f"schema {registered.schema_id} references other schemas, which JSON Schema "
                "records here do not resolve"
            )
        return _load(registered.schema_str)

    def _writer_validator(self, schema_id: SchemaId) -> Any:
        with self._lock:
            found = self._validators.get(schema_id)
        if found is None:
            assert self._registry is not None
            try:
                registered = self._registry.schema_by_id(schema_id)
            except SchemaRegistryError as exc:
                if exc.status != 404:
                    raise
                raise SerializationError(
                    f"{describe_schema_id(schema_id)} is unknown to the registry: {exc}"
                ) from exc
            found = _validator(self._schema_of(registered))
            with self._lock:
                self._validators[schema_id] = found
        return found

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
        """Decode and validate one record (None stays None)."""
        if data is None:
            return None
        if self._registry is None:
            validator = self._plain
            payload: Any = data
        else:
            framed = split_frame(data, headers, self._is_key)
            validator = self._writer_validator(framed.schema_id)
            payload = framed.payload
        try:
            value = json.loads(bytes(payload))
        except ValueError as exc:
            raise SerializationError(f"malformed JSON: {exc}") from exc
        if self._validate:
            error = jsonschema.exceptions.best_match(validator.iter_errors(value))
            if error is not None:
                where = "/".join(str(part) for part in error.absolute_path) or "(root)"
                raise SerializationError(f"JSON fails its schema at {where}: {error.message}")
        return value
