"""API keys, the versions we implement, version negotiation, and whole-frame encode/decode.

The four frame functions are the protocol layer's entry points:

* :func:`encode_request` -> the full request frame, size prefix included;
* :func:`decode_response` -> ``(correlation_id, body)`` from one response frame without its
  size prefix;
* :func:`decode_request` and :func:`encode_response`, the broker side, for the scripted fake
  broker and the round-trip tests.
"""

from __future__ import annotations

import enum
import logging
import struct
from typing import Any

from kafkaconsumer.errors import KafkaProtocolError, UnsupportedVersionError
from kafkaconsumer.protocol import headers as H
from kafkaconsumer.protocol.codegen import Codec, CodecCache
from kafkaconsumer.protocol.headers import RequestHeader
from kafkaconsumer.protocol.messages import ALL_APIS, APIS
from kafkaconsumer.protocol.schema import Api

logger = logging.getLogger(__name__)

__all__ = [
    "ApiKey",
    "SUPPORTED_VERSIONS",
    "negotiate_version",
    "get_api",
    "get_codec",
    "encode_request",
    "decode_response",
    "decode_request",
    "decode_request_header",
    "encode_response",
    "peek_correlation_id",
    "build_all_codecs",
]


class ApiKey(enum.IntEnum):
    """Kafka API keys (the numbers of the protocol's request types)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47
    DESCRIBE_CLUSTER = 60
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    GET_TELEMETRY_SUBSCRIPTIONS = 71
    PUSH_TELEMETRY = 72
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


#: What we implement: ``{api_key: (min_version, max_version)}``.
SUPPORTED_VERSIONS: dict[int, tuple[int, int]] = {
    api.key: (api.min_version, api.max_version) for api in ALL_APIS
}

_CODECS = CodecCache(APIS)
_SIZE = struct.Struct(">i")


def negotiate_version(api_key: int, broker_min: int, broker_max: int) -> int | None:
    """The highest version of ``api_key`` both we and the broker support, or None if none."""
    ours = SUPPORTED_VERSIONS.get(int(api_key))
    if ours is None:
        return None
    low = max(ours[0], broker_min)
    high = min(ours[1], broker_max)
    return high if low <= high else None


def get_api(api_key: int) -> Api:
    """Our definition of ``api_key``; :class:`UnsupportedVersionError` when we have none."""
    api = APIS.get(int(api_key))
    if api is None:
        raise UnsupportedVersionError(f"api key {int(api_key)} is not implemented by this client")
    return api


def get_codec(api_key: int, api_version: int, direction: str) -> Codec:
    """The generated codec of (api, version, "request" | "response")."""
    codec = _CODECS.get(int(api_key), int(api_version), direction)
    if codec is None:
        api = get_api(api_key)
        raise UnsupportedVersionError(
            f"{api.name} v{api_version} is not implemented by this client (we have {api.versions.text})"
        )
    return codec


def build_all_codecs() -> int:
    """Generate every codec now instead of on first use; returns how many there are."""
    return _CODECS.build_all()


def _as_view(frame: Any) -> memoryview:
    try:
        view = memoryview(frame)
    except TypeError:
        raise KafkaProtocolError(f"frame must be bytes-like, not {type(frame).__name__}") from None
    if view.ndim != 1 or view.itemsize != 1 or not view.c_contiguous:
        view = memoryview(view.tobytes())
    if view.format != "B":
        view = view.cast("B")
    return view


def encode_request(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: dict[str, Any]
) -> bytes:
    """Encode a whole request frame: 4-byte size, header (v1, or v2 if flexible), body."""
    codec = get_codec(api_key, api_version, "request")
    out = bytearray(4)
    H.write_request_header(
        out, int(api_key), int(api_version), correlation_id, client_id, codec.flexible
    )
    codec.encode(out, body)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def decode_response(
    api_key: int, api_version: int, frame: bytes | bytearray | memoryview
) -> tuple[int, dict[str, Any]]:
    """Decode one response frame (without its size prefix): ``(correlation_id, body)``.

    ``records`` fields in the body are zero-copy slices of ``frame``.
    """
    codec = get_codec(api_key, api_version, "response")
    view = _as_view(frame)
    header_version = H.response_header_version(int(api_key), codec.flexible)
    correlation_id, pos = H.read_response_header(view, header_version)
    body, _ = codec.decode(view, pos)
    return correlation_id, body


def decode_request_header(frame: bytes | bytearray | memoryview) -> RequestHeader:
    """The header of a request frame (without its size prefix), readable at any version.

    Lets a broker answer a request whose version it cannot decode.
    """
    header, _, _ = H.read_request_header(_as_view(frame), None)
    return header


def decode_request(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, dict[str, Any]]:
    """Decode one request frame (without its size prefix): ``(header, body)``.

    Raises :class:`UnsupportedVersionError` when we have no definition of the request's
    (api_key, api_version) and :class:`KafkaProtocolError` when the bytes are malformed.
    """
    view = _as_view(frame)
    header, _, _ = H.read_request_header(view, None)
    codec = get_codec(header.api_key, header.api_version, "request")
    header, pos, _ = H.read_request_header(view, codec.flexible)
    body, _ = codec.decode(view, pos)
    return header, body


def encode_response(
    api_key: int, api_version: int, correlation_id: int, body: dict[str, Any]
) -> bytes:
    """Encode a whole response frame: 4-byte size, header (v0 or v1), body."""
    codec = get_codec(api_key, api_version, "response")
    out = bytearray(4)
    H.write_response_header(
        out, correlation_id, H.response_header_version(int(api_key), codec.flexible)
    )
    codec.encode(out, body)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def peek_correlation_id(frame: bytes | bytearray | memoryview) -> int:
    """The correlation id of a response frame (its first 4 bytes), to match it to a request."""
    if len(frame) < 4:
        raise KafkaProtocolError(f"response frame of {len(frame)} bytes has no correlation id")
    value: int = _SIZE.unpack_from(frame, 0)[0]
    return value
