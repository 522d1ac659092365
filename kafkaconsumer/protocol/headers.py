"""Request and response headers (the 4-byte size prefix is added by ``protocol.api``).

Request header v1: ``api_key int16, api_version int16, correlation_id int32, client_id
nullable string (int16 length)``. Request header v2 (flexible request versions) adds a
tagged-field section; its ``client_id`` keeps the int16 length so that a broker can read it
before knowing the version. (Header v0, for ControlledShutdown v0 only, is not used.)

Response header v0: ``correlation_id int32``; v1 (flexible response versions) adds a
tagged-field section. ApiVersions responses always use v0, so that a client that asked with a
version the broker does not know can still read the error.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kafkaconsumer.errors import KafkaProtocolError
from kafkaconsumer.protocol import types as T

__all__ = [
    "RequestHeader",
    "API_VERSIONS_KEY",
    "response_header_version",
    "write_request_header",
    "read_request_header",
    "write_response_header",
    "read_response_header",
]

#: ApiVersions' key: its response header is always v0.
API_VERSIONS_KEY = 18

_FIXED_REQUEST = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")


class RequestHeader(NamedTuple):
    """The header fields of a request: api_key, api_version, correlation_id, client_id.

    Thread-safety: immutable.
    """

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def response_header_version(api_key: int, flexible: bool) -> int:
    """Header version of a response: 1 for flexible versions except ApiVersions, else 0."""
    return 1 if flexible and api_key != API_VERSIONS_KEY else 0


def write_request_header(
    out: bytearray,
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    flexible: bool,
) -> None:
    """Append a request header (v1, or v2 when ``flexible``)."""
    try:
        out += _FIXED_REQUEST.pack(api_key, api_version, correlation_id)
        T.write_string(out, client_id)
    except (struct.error, ValueError, TypeError, AttributeError) as exc:
        raise KafkaProtocolError(f"invalid request header: {exc}") from None
    if flexible:
        out.append(0)  # no tagged fields


def read_request_header(
    buf: T.Buffer, flexible: bool | None = None
) -> tuple[RequestHeader, int, dict[int, bytes]]:
    """Read a request header from the start of ``buf`` (no size prefix).

    With ``flexible`` None only the fields common to v1 and v2 are read (enough to identify the
    request); otherwise the v2 tagged section is read too. Returns ``(header, body_offset,
    tagged_fields)``.
    """
    end = len(buf)
    if end < 8:
        raise KafkaProtocolError(f"request header needs at least 8 bytes, got {end}")
    api_key, api_version, correlation_id = _FIXED_REQUEST.unpack_from(buf, 0)
    client_id, pos = T.read_string(buf, 8, end)
    tags: dict[int, bytes] = {}
    if flexible:
        tags, pos = T.read_tagged_raw(buf, pos, end)
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos, tags


def write_response_header(out: bytearray, correlation_id: int, header_version: int) -> None:
    """Append a response header of ``header_version`` (0 or 1)."""
    try:
        out += _SIZE.pack(correlation_id)
    except struct.error as exc:
        raise KafkaProtocolError(f"invalid correlation id {correlation_id!r}: {exc}") from None
    if header_version >= 1:
        out.append(0)


def read_response_header(buf: T.Buffer, header_version: int) -> tuple[int, int]:
    """Read a response header; returns ``(correlation_id, body_offset)``."""
    end = len(buf)
    if end < 4:
        raise KafkaProtocolError(f"response needs at least 4 bytes, got {end}")
    correlation_id: int = _SIZE.unpack_from(buf, 0)[0]
    pos = 4
    if header_version >= 1:
        _, pos = T.read_tagged_raw(buf, pos, end)
    return correlation_id, pos
