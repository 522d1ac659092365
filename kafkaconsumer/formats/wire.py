"""The Confluent wire format: how a schema-registry record names the schema it was written with.

A framed payload starts with the magic byte ``0`` and the schema id as a 4-byte big-endian
integer; the encoded data follows. Protobuf payloads carry, between the id and the message, the
path of the message type inside its ``.proto`` file as a list of zigzag varints (the count, then
each index; a single ``0`` byte stands for ``[0]``, the first message). Newer producers may put
the schema in a record header instead (``__value_schema_id`` / ``__key_schema_id``), leaving the
payload unframed: the same five bytes, or the magic byte ``1`` and a 16-byte GUID that names the
schema's content across the whole registry (``GET /schemas/guids/{guid}``).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from kafkaconsumer.errors import SerializationError

__all__ = [
    "GUID_MAGIC_BYTE",
    "MAGIC_BYTE",
    "SchemaId",
    "describe_schema_id",
    "KEY_SCHEMA_ID_HEADER",
    "VALUE_SCHEMA_ID_HEADER",
    "Framed",
    "split_frame",
    "frame",
    "read_message_indexes",
    "write_message_indexes",
]

#: The first byte of a framed payload (and of a schema-id header).
MAGIC_BYTE = 0
#: The first byte of a schema-id header naming the schema by GUID.
GUID_MAGIC_BYTE = 1
#: Header naming the schema of the key when the key itself is not framed.
KEY_SCHEMA_ID_HEADER = "__key_schema_id"
#: Header naming the schema of the value when the value itself is not framed.
VALUE_SCHEMA_ID_HEADER = "__value_schema_id"

_ID = struct.Struct(">bI")
_GUID_HEADER_SIZE = 17

#: How a record names its writer schema: a registry id, or a GUID (its canonical string,
#: ``8-4-4-4-12`` hex digits).
SchemaId = int | str


def describe_schema_id(schema_id: SchemaId) -> str:
    """``schema id 5`` or ``schema GUID 0f8e...``, for messages."""
    return f"schema GUID {schema_id}" if isinstance(schema_id, str) else f"schema id {schema_id}"


@dataclass(frozen=True)
class Framed:
    """A payload split into the schema it names (an id, or a GUID string) and the encoded data
    after the frame."""

    schema_id: SchemaId
    payload: memoryview


def _header(headers: Sequence[tuple[str, bytes | None]] | None, name: str) -> bytes | None:
    if not headers:
        return None
    found = None
    for key, value in headers:
        if key == name and value is not None:
            found = value  # the last one wins, as for Java's Headers.lastHeader
    return found


def split_frame(
    data: bytes | bytearray | memoryview,
    headers: Sequence[tuple[str, bytes | None]] | None = None,
    is_key: bool = False,
) -> Framed:
    """Split ``data`` into its schema id and encoded payload.

    The ``__value_schema_id`` (``__key_schema_id`` when ``is_key``) header, when present, names
    the schema (magic byte 0 and a 4-byte id, or magic byte 1 and a 16-byte GUID, given back as
    its canonical string) and ``data`` is all payload; otherwise ``data`` must start with the
    5-byte frame.
    Raises :class:`~kafkaconsumer.errors.SerializationError` saying what is wrong.
    """
    view = memoryview(data)
    header = _header(headers, KEY_SCHEMA_ID_HEADER if is_key else VALUE_SCHEMA_ID_HEADER)
    if header is not None:
        if len(header) == _ID.size and header[0] == MAGIC_BYTE:
            return Framed(_ID.unpack(header)[1], view)
        if len(header) == _GUID_HEADER_SIZE and header[0] == GUID_MAGIC_BYTE:
            return Framed(str(uuid.UUID(bytes=bytes(header[1:]))), view)
        raise SerializationError(
            f"schema-id header of {len(header)} bytes is neither magic byte 0 and a 4-byte id "
            "nor magic byte 1 and a 16-byte GUID"
        )
    if len(view) < _ID.size:
        raise SerializationError(
            f"payload of {len(view)} bytes is too short for the 5-byte schema-registry frame"
        )
    magic, schema_id = _ID.unpack_from(view)
    if magic != MAGIC_BYTE:
        raise SerializationError(
            f"unknown magic byte {magic & 0xFF}: the payload is not framed for a schema registry"
        )
    return Framed(schema_id, view[_ID.size :])


def frame(schema_id: int, payload: bytes) -> bytes:
    """The framed form of ``payload`` written with schema ``schema_id``."""
    return _ID.pack(MAGIC_BYTE, schema_id) + payload


def _read_varint(view: memoryview, pos: int) -> tuple[int, int]:
    shift = 0
    result = 0
    while True:
        if pos >= len(view):
            raise SerializationError("truncated varint in the Protobuf message-index list")
        byte = view[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift > 63:
            raise SerializationError("varint longer than 64 bits in the message-index list")
    return (result >> 1) ^ -(result & 1), pos


def read_message_indexes(payload: memoryview) -> tuple[list[int], memoryview]:
    """Read the Protobuf message-index list at the start of ``payload``.

    Returns the indexes (``[0]`` for the first message of the file) and the rest of the payload.
    """
    count, pos = _read_varint(payload, 0)
    if count == 0:
        return [0], payload[pos:]
    if count < 0 or count > len(payload):
        raise SerializationError(f"invalid message-index count {count}")
    indexes = []
    for _ in range(count):
        index, pos = _read_varint(payload, pos)
        if index < 0:
            raise SerializationError(f"invalid message index {index}")
        indexes.append(index)
    return indexes, payload[pos:]


def _write_varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = zigzag & 0x7F
        zigzag >>= 7
        if zigzag:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def write_message_indexes(indexes: Sequence[int]) -> bytes:
    """The encoded message-index list (the single byte ``0`` for ``[0]``)."""
    if list(indexes) == [0]:
        return b"\x00"
    return _write_varint(len(indexes)) + b"".join(_write_varint(i) for i in indexes)
