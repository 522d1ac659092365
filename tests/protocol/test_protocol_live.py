"""Speak the protocol to the real broker over a plain socket: ApiVersions (v3, falling back as
the protocol says), then Metadata at the highest version both sides support."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafkaconsumer.errors import KafkaProtocolError
from kafkaconsumer.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    decode_response,
    encode_request,
    negotiate_version,
)
from tests.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

IO_TIMEOUT_S = 10.0
UNSUPPORTED_VERSION = 35
UNKNOWN_TOPIC_OR_PARTITION = 3


class RawClient:
    """A blocking one-request-at-a-time client on a socket, for this test only."""

    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self.address = (host, int(port))
        self.sock = socket.create_connection(self.address, timeout=IO_TIMEOUT_S)
        self.correlation_id = 0

    def _read_exact(self, n: int) -> bytes:
        chunks: list[bytes] = []
        deadline = time.monotonic() + IO_TIMEOUT_S
        while n:
            if time.monotonic() > deadline:
                raise TimeoutError("broker did not answer in time")
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("broker closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def roundtrip(self, api_key: int, version: int, body: dict[str, Any]) -> bytes:
        """Send one request; return the response frame without its size prefix."""
        self.correlation_id += 1
        self.sock.sendall(
            encode_request(api_key, version, self.correlation_id, "kafkaconsumer-tests", body)
        )
        (size,) = struct.unpack(">i", self._read_exact(4))
        assert 0 < size < 64 * 1024 * 1024
        frame = self._read_exact(size)
        assert struct.unpack_from(">i", frame)[0] == self.correlation_id
        return frame

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw(broker: Any) -> Iterator[RawClient]:
    client = RawClient(broker.bootstrap_servers)
    try:
        yield client
    finally:
        client.close()


def api_versions(client: RawClient) -> tuple[int, dict[int, tuple[int, int]]]:
    """ApiVersions at v3; on UNSUPPORTED_VERSION (answered in v0 format) retry at the highest
    version the broker named for ApiVersions itself. Returns (version used, broker ranges)."""
    version = 3
    frame = client.roundtrip(
        ApiKey.API_VERSIONS,
        version,
        {"client_software_name": "kafkaconsumer-tests", "client_software_version": "0.1.0"},
    )
    try:
        _, body = decode_response(ApiKey.API_VERSIONS, version, frame)
    except KafkaProtocolError:
        _, body = decode_response(ApiKey.API_VERSIONS, 0, frame)
    if body["error_code"] == UNSUPPORTED_VERSION:
        named = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
        retry = negotiate_version(ApiKey.API_VERSIONS, *named.get(ApiKey.API_VERSIONS, (0, 0)))
        version = 0 if retry is None else retry
        _, body = decode_response(
            ApiKey.API_VERSIONS, version, client.roundtrip(ApiKey.API_VERSIONS, version, {})
        )
    assert body["error_code"] == 0
    ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
    return version, ranges


def test_api_versions_then_metadata(raw: RawClient) -> None:
    _, ranges = api_versions(raw)
    for key in (ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.FETCH, ApiKey.LIST_OFFSETS):
        assert key in ranges, f"broker does not advertise {key.name}"
        low, high = ranges[key]
        assert 0 <= low <= high

    version = negotiate_version(ApiKey.METADATA, *ranges[ApiKey.METADATA])
    assert version is not None
    assert version == min(SUPPORTED_VERSIONS[ApiKey.METADATA][1], ranges[ApiKey.METADATA][1])
    request: dict[str, Any] = {
        "topics": None if version >= 1 else [],
        "allow_auto_topic_creation": False,
    }
    _, body = decode_response(
        ApiKey.METADATA, version, raw.roundtrip(ApiKey.METADATA, version, request)
    )

    assert body["brokers"], "metadata lists no broker"
    # The broker we are talking to lists itself (resolve both sides: names may differ).
    ours = {info[4][:2] for info in socket.getaddrinfo(*raw.address, type=socket.SOCK_STREAM)}
    listed = set()
    for b in body["brokers"]:
        assert b["port"] > 0 and b["host"]
        for info in socket.getaddrinfo(b["host"], b["port"], type=socket.SOCK_STREAM):
            listed.add(info[4][:2])
    assert ours & listed, f"{raw.address} not among the listed brokers {body['brokers']}"
    node_ids = {b["node_id"] for b in body["brokers"]}
    for topic in body["topics"]:
        for partition in topic["partitions"]:
            if partition["error_code"] == 0:
                assert partition["leader_id"] in node_ids | {-1}


def test_metadata_for_an_unknown_topic(raw: RawClient) -> None:
    _, ranges = api_versions(raw)
    version = negotiate_version(ApiKey.METADATA, *ranges[ApiKey.METADATA])
    assert version is not None and version >= 4  # both brokers we test against support v4+
    name = unique_name("proto-missing")
    request = {"topics": [{"name": name}], "allow_auto_topic_creation": False}
    _, body = decode_response(
        ApiKey.METADATA, version, raw.roundtrip(ApiKey.METADATA, version, request)
    )
    [topic] = body["topics"]
    assert topic["name"] == name
    assert topic["error_code"] == UNKNOWN_TOPIC_OR_PARTITION
