"""Round-trip every registered API at every version, request and response, with bodies drawn
from the schema itself: encode, decode, compare (defaults for what the version lacks)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaconsumer.protocol import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    get_codec,
)
from kafkaconsumer.protocol.messages import ALL_APIS
from kafkaconsumer.protocol.schema import Api
from tests.protocol.strategies import normalize, struct_pairs

pytestmark = pytest.mark.timeout(120)

CASES = [
    pytest.param(api, version, direction, id=f"{api.name}-v{version}-{direction}")
    for api in ALL_APIS
    for version in range(api.min_version, api.max_version + 1)
    for direction in ("request", "response")
]


@pytest.mark.parametrize(("api", "version", "direction"), CASES)
def test_round_trip(api: Api, version: int, direction: str) -> None:
    fields = api.request if direction == "request" else api.response
    flexible = api.is_flexible(version)

    @settings(
        max_examples=8,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        pair=struct_pairs(fields, version, flexible),
        correlation_id=st.integers(-(2**31), 2**31 - 1),
    )
    def check(pair: tuple[dict[str, Any], dict[str, Any]], correlation_id: int) -> None:
        body, expected = pair
        if direction == "request":
            frame = encode_request(api.key, version, correlation_id, "client-1", body)
            assert int.from_bytes(frame[:4], "big") == len(frame) - 4
            header, decoded = decode_request(frame[4:])
            assert (
                header.api_key,
                header.api_version,
                header.correlation_id,
                header.client_id,
            ) == (api.key, version, correlation_id, "client-1")
        else:
            frame = encode_response(api.key, version, correlation_id, body)
            assert int.from_bytes(frame[:4], "big") == len(frame) - 4
            got_id, decoded = decode_response(api.key, version, frame[4:])
            assert got_id == correlation_id
        assert normalize(decoded) == expected
        # Decoding is a fixed point: re-encoding the decoded body gives the same bytes.
        out = bytearray()
        get_codec(api.key, version, direction).encode(out, decoded)
        assert bytes(out) == frame[len(frame) - len(out) :]

    check()


def test_every_core_api_is_registered() -> None:
    names = {api.name for api in ALL_APIS}
    assert {
        "ApiVersions",
        "Metadata",
        "FindCoordinator",
        "ListOffsets",
        "Fetch",
        "Produce",
        "SaslHandshake",
        "SaslAuthenticate",
        "CreateTopics",
        "DeleteTopics",
    } <= names
