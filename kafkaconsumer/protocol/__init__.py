"""The Kafka wire protocol: message definitions, generated codecs, headers and framing.

Entry points::

    from kafkaconsumer.protocol import ApiKey, SUPPORTED_VERSIONS, negotiate_version
    from kafkaconsumer.protocol import encode_request, decode_response, decode_request, encode_response

Bodies are plain dicts keyed by the snake_case of the Kafka spec field names; see
docs/internals.md for the full contract.
"""

from __future__ import annotations

from kafkaconsumer.protocol.api import (
    SUPPORTED_VERSIONS,
    ApiKey,
    build_all_codecs,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    get_api,
    get_codec,
    negotiate_version,
    peek_correlation_id,
)
from kafkaconsumer.protocol.headers import RequestHeader

__all__ = [
    "ApiKey",
    "SUPPORTED_VERSIONS",
    "negotiate_version",
    "encode_request",
    "decode_response",
    "decode_request",
    "decode_request_header",
    "encode_response",
    "peek_correlation_id",
    "RequestHeader",
    "get_api",
    "get_codec",
    "build_all_codecs",
]
