"""Fuzz the decoders: truncated frames, flipped bytes, random garbage and huge length prefixes
must each end in a KafkaProtocolError or a correct decode, never another exception, a hang or
an allocation larger than the input allows."""

from __future__ import annotations

import struct
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaconsumer.errors import KafkaProtocolError, UnsupportedVersionError
from kafkaconsumer.protocol import (
    SUPPORTED_VERSIONS,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    get_api,
)
from kafkaconsumer.protocol.messages import ALL_APIS
from kafkaconsumer.protocol.schema import Api
from kafkaconsumer.protocol.types import encode_uvarint
from tests.protocol.strategies import struct_pairs
from tests.protocol.test_golden_core import GOLDENS, request_header, response_header

pytestmark = pytest.mark.timeout(120)

FUZZ = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def outcome(fn: Callable[[], Any]) -> str:
    """Run a decode; "ok" or "protocol-error". Any other exception fails the test."""
    try:
        fn()
    except KafkaProtocolError:
        return "protocol-error"
    return "ok"


def _response_decoder(api: Api, version: int, frame: bytes) -> Callable[[], Any]:
    return lambda: decode_response(api.key, version, frame)


@st.composite
def valid_frame(draw: st.DrawFn, api: Api) -> tuple[int, str, bytes]:
    """A valid request or response frame (without size prefix) for some version of ``api``."""
    version = draw(st.integers(api.min_version, api.max_version))
    direction = draw(st.sampled_from(["request", "response"]))
    fields = api.request if direction == "request" else api.response
    body, _ = draw(struct_pairs(fields, version, api.is_flexible(version)))
    if direction == "request":
        frame = encode_request(api.key, version, 1, "fuzz", body)
    else:
        frame = encode_response(api.key, version, 1, body)
    return version, direction, frame[4:]


def checked_decode_request(frame: bytes) -> None:
    """decode_request, where UnsupportedVersionError is a correct answer (the fake broker turns
    it into UNSUPPORTED_VERSION) exactly when the header names an api/version we lack."""
    try:
        decode_request(frame)
    except UnsupportedVersionError:
        header = decode_request_header(frame)
        supported = SUPPORTED_VERSIONS.get(header.api_key)
        assert supported is None or not supported[0] <= header.api_version <= supported[1]


def decoder(api: Api, version: int, direction: str, frame: bytes) -> Callable[[], Any]:
    if direction == "request":
        return lambda: checked_decode_request(frame)
    return lambda: decode_response(api.key, version, frame)


@pytest.mark.parametrize("api", ALL_APIS, ids=lambda a: a.name)
@FUZZ
@given(data=st.data())
def test_mutated_frames(api: Api, data: st.DataObject) -> None:
    version, direction, frame = data.draw(valid_frame(api))
    assert outcome(decoder(api, version, direction, frame)) == "ok"
    mutation = data.draw(
        st.sampled_from(["truncate", "flip", "huge-int32", "huge-varint", "insert"])
    )
    mutated = bytearray(frame)
    if mutation == "truncate":
        cut = data.draw(st.integers(0, max(0, len(frame) - 1)))
        mutated = mutated[:cut]
    elif mutation == "flip" and mutated:
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(mutated) - 1))
            mutated[i] ^= data.draw(st.integers(1, 255))
    elif mutation == "huge-int32" and len(mutated) >= 4:
        i = data.draw(st.integers(0, len(mutated) - 4))
        mutated[i : i + 4] = b"\x7f\xff\xff\xff"
    elif mutation == "huge-varint" and mutated:
        i = data.draw(st.integers(0, len(mutated) - 1))
        mutated[i : i + 1] = encode_uvarint(2**31)
    else:
        i = data.draw(st.integers(0, len(mutated)))
        mutated[i:i] = data.draw(st.binary(min_size=1, max_size=8))
    outcome(decoder(api, version, direction, bytes(mutated)))


@pytest.mark.parametrize("api", ALL_APIS, ids=lambda a: a.name)
@FUZZ
@given(data=st.data())
def test_random_garbage(api: Api, data: st.DataObject) -> None:
    version = data.draw(st.integers(api.min_version, api.max_version))
    garbage = data.draw(st.binary(max_size=64))
    outcome(lambda: decode_response(api.key, version, garbage))
    outcome(lambda: checked_decode_request(garbage))


@pytest.mark.parametrize("golden", GOLDENS, ids=lambda g: g.id)
def test_every_truncation_of_goldens(golden: Any) -> None:
    if golden.kind == "request":
        frame = request_header(golden.api_key, golden.version) + golden.body
    else:
        frame = response_header(golden.api_key, golden.version) + golden.body
    results = set()
    api = get_api(golden.api_key)
    for cut in range(len(frame)):
        results.add(outcome(decoder(api, golden.version, golden.kind, frame[:cut])))
    # A strict prefix drops at least the last field, so most cuts must be rejected.
    assert "protocol-error" in results


HUGE_CASES = [
    # (name, api key, version, frame without size prefix)
    ("metadata-v1-brokers-int32-max", 3, 1, struct.pack(">ii", 7, 0x7FFFFFFF) + b"\x00" * 8),
    (
        "metadata-v12-brokers-varint-2^31",
        3,
        12,
        struct.pack(">i", 7) + b"\x00" + struct.pack(">i", 0) + encode_uvarint(2**31) + b"\x00" * 8,
    ),
    (
        "metadata-v1-replica-nodes-int32-max",
        3,
        1,
        struct.pack(">i", 7)
        + struct.pack(">i", 0)
        + struct.pack(">i", -1)
        + struct.pack(">i", 1)
        + struct.pack(">h", 0)
        + b"\x00\x02t1"
        + b"\x00"
        + struct.pack(">i", 1)
        + struct.pack(">hii", 0, 0, 1)
        + struct.pack(">i", 0x7FFFFFFF)
        + b"\x00" * 16,
    ),
    (
        "fetch-v4-records-int32-max",
        1,
        4,
        struct.pack(">ii", 7, 0)
        + struct.pack(">i", 1)
        + b"\x00\x02t1"
        + struct.pack(">i", 1)
        + struct.pack(">ihqq", 0, 0, 0, 0)
        + struct.pack(">i", -1)
        + struct.pack(">i", 0x7FFFFFFF)
        + b"\x00" * 10,
    ),
    ("api-versions-v0-keys-int32-max", 18, 0, struct.pack(">ihi", 7, 0, 0x7FFFFFFF) + b"\x00" * 6),
    (
        "sasl-handshake-string-length-max",
        17,
        1,
        struct.pack(">ihi", 7, 0, 1) + struct.pack(">h", 0x7FFF) + b"x" * 3,
    ),
    (
        "api-versions-v3-tag-count-huge",
        18,
        3,
        struct.pack(">ih", 7, 0) + b"\x01" + struct.pack(">i", 0) + encode_uvarint(2**31 - 1),
    ),
    (
        "api-versions-v3-tag-size-huge",
        18,
        3,
        struct.pack(">ih", 7, 0)
        + b"\x01"
        + struct.pack(">i", 0)
        + b"\x01\x05"
        + encode_uvarint(2**31),
    ),
    ("varint-too-long", 18, 3, struct.pack(">ih", 7, 0) + b"\xff" * 12),
]


@pytest.mark.parametrize(
    ("name", "api_key", "version", "frame"), HUGE_CASES, ids=[c[0] for c in HUGE_CASES]
)
def test_huge_length_prefixes_fail_without_allocating(
    name: str, api_key: int, version: int, frame: bytes
) -> None:
    decode_response(api_key, version, _valid_response(api_key, version))  # warm the codec first
    tracemalloc.start()
    try:
        with pytest.raises(KafkaProtocolError):
            decode_response(api_key, version, frame)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Generating the codec on first use costs some memory; a giant list or buffer would be GBs.
    assert peak < 8 * 1024 * 1024, f"{name}: peak allocation {peak} bytes"


def _valid_response(api_key: int, version: int) -> bytes:
    return encode_response(api_key, version, 7, {})[4:]


def test_null_for_non_nullable_is_rejected() -> None:
    # Metadata v1 response whose brokers array is null (-1): the spec does not allow it.
    frame = struct.pack(">ii", 7, -1) + struct.pack(">i", -1) + struct.pack(">i", 0)
    with pytest.raises(KafkaProtocolError, match="brokers"):
        decode_response(3, 1, frame)


def test_non_bytes_frame_is_a_protocol_error() -> None:
    with pytest.raises(KafkaProtocolError):
        decode_response(3, 1, "not bytes")  # type: ignore[arg-type]
