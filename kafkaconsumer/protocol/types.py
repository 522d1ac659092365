"""Primitive types of the Kafka wire protocol.

Fixed-width integers are big-endian. Variable-length integers are little-endian base-128
("unsigned varint"); signed ones are zigzag-encoded first (``varint`` for 32 bits, ``varlong``
for 64). Non-flexible versions prefix strings with an int16 length and bytes and arrays with an
int32 length (-1 for null); flexible versions use "compact" forms whose unsigned-varint prefix is
the length plus one (0 for null) and end each struct with a tagged-field section.

Readers take ``(buf, pos, end)`` and return ``(value, new_pos)``; they raise only
:class:`~kafkaconsumer.errors.KafkaProtocolError` and never allocate more than the remaining
bytes allow. Writers append to a ``bytearray``.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from kafkaconsumer.errors import KafkaProtocolError

__all__ = [
    "Buffer",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "UINT16",
    "UINT32",
    "FLOAT64",
    "ZERO_UUID",
    "MAX_UVARINT32",
    "encode_uvarint",
    "write_uvarint",
    "read_uvarint",
    "read_uvarlong",
    "zigzag32",
    "zigzag64",
    "unzigzag",
    "encode_varint",
    "encode_varlong",
    "read_varint",
    "read_varlong",
    "write_string",
    "write_compact_string",
    "read_string",
    "read_compact_string",
    "write_bytes",
    "write_compact_bytes",
    "read_bytes",
    "read_compact_bytes",
    "read_uuid",
    "write_uuid",
    "read_tagged_raw",
    "write_tagged_raw",
]

#: What readers accept: ``bytes`` or a ``memoryview`` of bytes.
Buffer = bytes | bytearray | memoryview

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT16 = struct.Struct(">H")
UINT32 = struct.Struct(">I")
FLOAT64 = struct.Struct(">d")

#: The all-zero UUID, the default of every uuid field.
ZERO_UUID = uuid.UUID(int=0)

#: Largest value an unsigned varint may carry in this protocol (lengths, counts, tags).
MAX_UVARINT32 = 0xFFFFFFFF


# ---------------------------------------------------------------------------------------------
# Variable-length integers


def encode_uvarint(value: int) -> bytes:
    """Encode a non-negative int as an unsigned varint."""
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def write_uvarint(out: bytearray, value: int) -> None:
    """Append ``value`` as an unsigned varint to ``out``."""
    if 0 <= value < 0x80:
        out.append(value)
        return
    out += encode_uvarint(value)


def _read_uvar(buf: Buffer, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    result = 0
    shift = 0
    for _ in range(max_bytes):
        if pos >= end:
            raise KafkaProtocolError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
    raise KafkaProtocolError("varint is too long")


def read_uvarint(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """Read an unsigned 32-bit varint (at most 5 bytes)."""
    if pos < end:
        # Fast path: one byte, the common case for lengths and tag counts.
        b = buf[pos]
        if not b & 0x80:
            return b, pos + 1
    value, pos = _read_uvar(buf, pos, end, 5)
    if value > MAX_UVARINT32:
        raise KafkaProtocolError("unsigned varint exceeds 32 bits")
    return value, pos


def read_uvarlong(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """Read an unsigned 64-bit varint (at most 10 bytes)."""
    value, pos = _read_uvar(buf, pos, end, 10)
    if value >= 1 << 64:
        raise KafkaProtocolError("unsigned varlong exceeds 64 bits")
    return value, pos


def zigzag32(value: int) -> int:
    """Zigzag-map a signed 32-bit int onto an unsigned one (0, -1, 1, -2 -> 0, 1, 2, 3)."""
    if not -(1 << 31) <= value < (1 << 31):
        raise ValueError(f"varint out of range: {value}")
    return ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF


def zigzag64(value: int) -> int:
    """Zigzag-map a signed 64-bit int onto an unsigned one."""
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"varlong out of range: {value}")
    return ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF


def unzigzag(value: int) -> int:
    """Invert :func:`zigzag32` / :func:`zigzag64`."""
    return (value >> 1) ^ -(value & 1)


def encode_varint(value: int) -> bytes:
    """Encode a signed 32-bit int as a zigzag varint."""
    return encode_uvarint(zigzag32(value))


def encode_varlong(value: int) -> bytes:
    """Encode a signed 64-bit int as a zigzag varlong."""
    return encode_uvarint(zigzag64(value))


def read_varint(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """Read a zigzag-encoded signed 32-bit varint."""
    value, pos = read_uvarint(buf, pos, end)
    return unzigzag(value), pos


def read_varlong(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """Read a zigzag-encoded signed 64-bit varlong."""
    value, pos = read_uvarlong(buf, pos, end)
    return unzigzag(value), pos


# ---------------------------------------------------------------------------------------------
# Strings and bytes


def _utf8(raw: Buffer) -> str:
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError as exc:
        raise KafkaProtocolError(f"string is not valid UTF-8: {exc}") from None


def write_string(out: bytearray, value: str | None) -> None:
    """Append an int16-length (nullable) string."""
    if value is None:
        out += b"\xff\xff"
        return
    raw = value.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ValueError(f"string of {len(raw)} bytes exceeds the int16 length limit")
    out += INT16.pack(len(raw))
    out += raw


def write_compact_string(out: bytearray, value: str | None) -> None:
    """Append a compact (uvarint length + 1) nullable string."""
    if value is None:
        out.append(0)
        return
    raw = value.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ValueError(f"string of {len(raw)} bytes exceeds the int16 length limit")
    write_uvarint(out, len(raw) + 1)
    out += raw


def read_string(buf: Buffer, pos: int, end: int) -> tuple[str | None, int]:
    """Read an int16-length string; length -1 is null."""
    if pos + 2 > end:
        raise KafkaProtocolError("truncated string length")
    n = INT16.unpack_from(buf, pos)[0]
    pos += 2
    if n < 0:
        if n == -1:
            return None, pos
        raise KafkaProtocolError(f"invalid string length {n}")
    if pos + n > end:
        raise KafkaProtocolError(f"string length {n} exceeds the {end - pos} bytes left")
    return _utf8(buf[pos : pos + n]), pos + n


def read_compact_string(buf: Buffer, pos: int, end: int) -> tuple[str | None, int]:
    """Read a compact string; a length prefix of 0 is null."""
    n, pos = read_uvarint(buf, pos, end)
    if n == 0:
        return None, pos
    n -= 1
    if pos + n > end:
        raise KafkaProtocolError(f"string length {n} exceeds the {end - pos} bytes left")
    return _utf8(buf[pos : pos + n]), pos + n


def write_bytes(out: bytearray, value: Buffer | None) -> None:
    """Append int32-length (nullable) bytes."""
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    out += INT32.pack(len(value))
    out += value


def write_compact_bytes(out: bytearray, value: Buffer | None) -> None:
    """Append compact (uvarint length + 1) nullable bytes."""
    if value is None:
        out.append(0)
        return
    n = memoryview(value).nbytes
    write_uvarint(out, n + 1)
    out += value


def read_bytes(buf: Buffer, pos: int, end: int) -> tuple[bytes | None, int]:
    """Read int32-length bytes (a copy); length -1 is null."""
    if pos + 4 > end:
        raise KafkaProtocolError("truncated bytes length")
    n = INT32.unpack_from(buf, pos)[0]
    pos += 4
    if n < 0:
        if n == -1:
            return None, pos
        raise KafkaProtocolError(f"invalid bytes length {n}")
    if pos + n > end:
        raise KafkaProtocolError(f"bytes length {n} exceeds the {end - pos} bytes left")
    return bytes(buf[pos : pos + n]), pos + n


def read_compact_bytes(buf: Buffer, pos: int, end: int) -> tuple[bytes | None, int]:
    """Read compact bytes (a copy); a length prefix of 0 is null."""
    n, pos = read_uvarint(buf, pos, end)
    if n == 0:
        return None, pos
    n -= 1
    if pos + n > end:
        raise KafkaProtocolError(f"bytes length {n} exceeds the {end - pos} bytes left")
    return bytes(buf[pos : pos + n]), pos + n


def read_uuid(buf: Buffer, pos: int, end: int) -> tuple[uuid.UUID, int]:
    """Read a 16-byte UUID."""
    if pos + 16 > end:
        raise KafkaProtocolError("truncated uuid")
    return uuid.UUID(bytes=bytes(buf[pos : pos + 16])), pos + 16


def write_uuid(out: bytearray, value: uuid.UUID) -> None:
    """Append a 16-byte UUID."""
    out += value.bytes


# ---------------------------------------------------------------------------------------------
# Tagged-field sections


def read_tagged_raw(buf: Buffer, pos: int, end: int) -> tuple[dict[int, bytes], int]:
    """Read a tagged-field section keeping every field as raw bytes: ``{tag: bytes}``."""
    count, pos = read_uvarint(buf, pos, end)
    # Each tagged field takes at least two bytes (tag and size).
    if count * 2 > end - pos:
        raise KafkaProtocolError(f"tagged field count {count} exceeds the {end - pos} bytes left")
    fields: dict[int, bytes] = {}
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos, end)
        size, pos = read_uvarint(buf, pos, end)
        if pos + size > end:
            raise KafkaProtocolError(
                f"tagged field {tag} size {size} exceeds the {end - pos} bytes left"
            )
        fields[tag] = bytes(buf[pos : pos + size])
        pos += size
    return fields, pos


def write_tagged_raw(out: bytearray, fields: dict[int, Any] | None) -> None:
    """Append a tagged-field section from ``{tag: raw bytes}``, ascending by tag."""
    if not fields:
        out.append(0)
        return
    write_uvarint(out, len(fields))
    for tag in sorted(fields):
        raw = fields[tag]
        write_uvarint(out, tag)
        write_uvarint(out, len(raw))
        out += raw
