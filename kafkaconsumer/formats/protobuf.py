"""Protobuf records framed for a schema registry, decoded with the ``protobuf`` package.

The registry serves Protobuf schemas as ``.proto`` source text, and the ``protobuf`` package
cannot parse source at run time (it builds classes from compiled descriptors only), so the text
is compiled with ``protoc`` as the ``grpcio-tools`` package ships it, into a descriptor set from
which message classes are made. The frame's message-index list picks the message type inside the
file. Records come back as dicts (field names as in the ``.proto`` file; enums as their names;
unset singular messages as None; maps as dicts), which also feed the Arrow conversion.

Protobuf has no schema resolution: each record is read with its writer schema, and fields a
reader does not know are dropped when the dicts become a column of the reader's type.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Mapping
from typing import Any

from kafkaconsumer.errors import ConfigError, SerializationError
from kafkaconsumer.formats.registry import (
    RegisteredSchema,
    SchemaRegistryClient,
    SchemaRegistryError,
)
from kafkaconsumer.formats.wire import (
    SchemaId,
    describe_schema_id,
    read_message_indexes,
    split_frame,
)
from kafkaconsumer.serialization import Deserializer, Headers

try:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from google.protobuf.descriptor import Descriptor, FieldDescriptor
    from google.protobuf.message import DecodeError
    from grpc_tools import protoc
except ImportError as exc:  # pragma: no cover - only without the [formats] extra
    raise ImportError(
        "Protobuf records need protobuf and grpcio-tools: pip install 'kafkaconsumer[formats]'"
    ) from exc

__all__ = ["ProtobufDeserializer", "compile_proto", "is_repeated", "message_to_dict"]

# protoc keeps global state in one process: one compilation at a time.
_PROTOC_LOCK = threading.Lock()
_MAIN_FILE = "schema.proto"


def _well_known_include() -> str:
    return os.path.join(os.path.dirname(protoc.__file__), "_proto")


def compile_proto(files: Mapping[str, str], main: str = _MAIN_FILE) -> Any:
    """Compile ``.proto`` sources (file name -> text) and return the descriptor of ``main``.

    Imports between the files, and of Google's well-known types, are resolved.
    """
    with tempfile.TemporaryDirectory(prefix="kafkaconsumer-proto-") as workdir:
        for name, text in files.items():
            path = os.path.join(workdir, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as out:
                out.write(text)
        descriptor_set = os.path.join(workdir, "descriptors.pb")
        args = [
            "protoc",
            f"-I{workdir}",
            f"-I{_well_known_include()}",
            "--include_imports",
            f"--descriptor_set_out={descriptor_set}",
            main,
        ]
        with _PROTOC_LOCK:
            code = protoc.main(args)
        if code != 0 or not os.path.exists(descriptor_set):
            raise SerializationError(f"the Protobuf schema does not compile (protoc exit {code})")
        with open(descriptor_set, "rb") as handle:
            parsed = descriptor_pb2.FileDescriptorSet.FromString(handle.read())
    pool = descriptor_pool.DescriptorPool()
    for file_proto in parsed.file:
        pool.Add(file_proto)
    return pool.FindFileByName(main)


def _message_at(file_descriptor: Any, indexes: list[int]) -> Descriptor:
    candidates = list(file_descriptor.message_types_by_name.values())
    found: Descriptor | None = None
    for index in indexes:
        if index >= len(candidates):
            raise SerializationError(
                f"message index {indexes} names no message of {file_descriptor.name}"
            )
        found = candidates[index]
        candidates = list(found.nested_types)
    assert found is not None
    return found


def message_to_dict(message: Any) -> dict[str, Any]:
    """A decoded message as a dict of its fields (see the module docstring)."""
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        out[field.name] = _field_value(field, value, message)
    return out


def is_repeated(field: FieldDescriptor) -> bool:
    """True for a repeated field (``is_repeated`` in protobuf 6, ``label`` before)."""
    flag = getattr(field, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return bool(field.label == FieldDescriptor.LABEL_REPEATED)


def _is_map(field: FieldDescriptor) -> bool:
    message_type = field.message_type
    return bool(
        message_type is not None and message_type.GetOptions().map_entry and is_repeated(field)
    )


def _scalar(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_ENUM:
        enum_value = field.enum_type.values_by_number.get(value)
        return enum_value.name if enum_value is not None else str(value)
    if field.type in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP):
        return message_to_dict(value)
    return value


def _field_value(field: FieldDescriptor, value: Any, parent: Any) -> Any:
    if _is_map(field):
        value_field = field.message_type.fields_by_name["value"]
        return {key: _scalar(value_field, item) for key, item in value.items()}
    if is_repeated(field):
        return [_scalar(field, item) for item in value]
    if field.type in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP):
        return message_to_dict(value) if parent.HasField(field.name) else None
    return _scalar(field, value)


class ProtobufDeserializer(Deserializer):
    """Protobuf deserializer for ``key.deserializer`` / ``value.deserializer`` (Confluent's
    ``KafkaProtobufDeserializer``); records come back as dicts, or as message objects with
    ``as_dict=False``.

    ``subject=`` (and ``version=``, default ``"latest"``) names the reader schema, which the
    Arrow conversion takes its column type from; ``message=`` picks a message of that schema by
    full name (default: its first message).

    Thread-safety: safe to share; the message-class cache is guarded by ``_lock``.
    """

    def __init__(
        self,
        registry: SchemaRegistryClient | Mapping[str, Any] | str,
        *,
        subject: str | None = None,
        version: int | str = "latest",
        message: str | None = None,
        as_dict: bool = True,
        is_key: bool = False,
    ) -> None:
        """See the class docstring; ``registry`` is a client, its configuration or its URL."""
        self._registry = (
            registry
            if isinstance(registry, SchemaRegistryClient)
            else SchemaRegistryClient(registry)
        )
        self._is_key = is_key
        self._as_dict = as_dict
        self._lock = threading.Lock()
        self._files: dict[SchemaId, Any] = {}  # guarded by _lock
        self._reader: Descriptor | None = None
        if message is not None and subject is None:
            raise ConfigError("message= picks a message of the subject's schema: give subject=")
        if subject is not None:
            file_descriptor = self._compile(self._registry.schema_version(subject, version))
            if message is None:
                self._reader = _message_at(file_descriptor, [0])
            else:
                try:
                    self._reader = file_descriptor.pool.FindMessageTypeByName(message)
                except KeyError:
                    raise ConfigError(f"the schema of {subject} has no message {message}") from None

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """Learn whether this deserializer reads keys (it looks for ``__key_schema_id`` then)."""
        self._is_key = is_key

    @property
    def reader_descriptor(self) -> Descriptor | None:
        """The reader message type (None without a subject)."""
        return self._reader

    def _compile(self, registered: RegisteredSchema) -> Any:
        if registered.schema_type != "PROTOBUF":
            raise SerializationError(
                f"schema {registered.schema_id} is {registered.schema_type}, not PROTOBUF"
            )
        files: dict[str, str] = {}
        self._collect(registered, files, _MAIN_FILE)
        return compile_proto(files, _MAIN_FILE)

    def _collect(self, registered: RegisteredSchema, files: dict[str, str], name: str) -> None:
        files[name] = registered.schema_str
        for ref in registered.references:
            if ref.name not in files:
                self._collect(
                    self._registry.schema_version(ref.subject, ref.version), files, ref.name
                )

    def _writer_file(self, schema_id: SchemaId) -> Any:
        with self._lock:
            found = self._files.get(schema_id)
        if found is None:
            try:
                registered = self._registry.schema_by_id(schema_id)
            except SchemaRegistryError as exc:
                if exc.status != 404:
                    raise
                raise SerializationError(
                    f"{describe_schema_id(schema_id)} is unknown to the registry: {exc}"
                ) from exc
            found = self._compile(registered)
            with self._lock:
                self._files[schema_id] = found
        return found

    def deserialize(self, topic: str, data: bytes | None, headers: Headers | None = None) -> Any:
        """Decode one record (None stays None)."""
        if data is None:
            return None
        framed = split_frame(data, headers, self._is_key)
        indexes, payload = read_message_indexes(framed.payload)
        descriptor = _message_at(self._writer_file(framed.schema_id), indexes)
        cls = message_factory.GetMessageClass(descriptor)
        try:
            message = cls.FromString(bytes(payload))
        except DecodeError as exc:
            raise SerializationError(f"malformed Protobuf data: {exc}") from exc
        return message_to_dict(message) if self._as_dict else message
