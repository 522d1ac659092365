"""A tiny blocking client for the record interop tests: fetch a partition's raw ``records``
bytes from a real broker, on top of kafkaconsumer.protocol (no consumer machinery)."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from kafkaconsumer.protocol import ApiKey, decode_response, encode_request, negotiate_version

IO_TIMEOUT_S = 10.0
# Fetch v13+ names topics by id; v12 is the newest by name and every current broker has it.
FETCH_VERSION_CAP = 12


class RawBrokerClient:
    """One connection, one request at a time. Not for use outside the tests."""

    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=IO_TIMEOUT_S)
        self.correlation_id = 0
        self.versions: dict[int, tuple[int, int]] = {}
        body = self.request(ApiKey.API_VERSIONS, 0, {})
        assert body["error_code"] == 0, body
        self.versions = {
            k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]
        }

    def close(self) -> None:
        """Close the connection."""
        self.sock.close()

    def __enter__(self) -> RawBrokerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_exact(self, n: int) -> bytes:
        chunks: list[bytes] = []
        deadline = time.monotonic() + IO_TIMEOUT_S
        while n:
            if time.monotonic() > deadline:
                raise TimeoutError("the broker did not answer in time")
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def version(self, api_key: int, cap: int | None = None) -> int:
        """Highest version of ``api_key`` both sides support (optionally capped)."""
        lo, hi = self.versions[api_key]
        if cap is not None:
            hi = min(hi, cap)
        version = negotiate_version(api_key, lo, hi)
        assert version is not None, f"no common version of API {api_key}"
        return version

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return the decoded response body."""
        self.correlation_id += 1
        frame = encode_request(api_key, version, self.correlation_id, "record-tests", body)
        self.sock.sendall(frame)
        (size,) = struct.unpack(">i", self._read_exact(4))
        assert 0 < size < 256 * 1024 * 1024
        correlation_id, response = decode_response(api_key, version, self._read_exact(size))
        assert correlation_id == self.correlation_id
        return response

    def leader(self, topic: str, partition: int) -> str:
        """``host:port`` of the partition's leader (waits until the topic has one)."""
        version = self.version(ApiKey.METADATA)
        deadline = time.monotonic() + IO_TIMEOUT_S
        while True:
            body = self.request(
                ApiKey.METADATA,
                version,
                {"topics": [{"name": topic}], "allow_auto_topic_creation": False},
            )
            brokers = {b["node_id"]: f"{b['host']}:{b['port']}" for b in body["brokers"]}
            for t in body["topics"]:
                for p in t["partitions"]:
                    if t["error_code"] == 0 and p["partition_index"] == partition:
                        if p["leader_id"] in brokers:
                            return brokers[p["leader_id"]]
            if time.monotonic() > deadline:
                raise TimeoutError(f"no leader for {topic}-{partition}: {body}")
            time.sleep(0.1)

    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_bytes: int = 1 << 20,
        isolation_level: int = 0,
    ) -> dict[str, Any]:
        """One Fetch of one partition; returns that partition's response dict."""
        version = self.version(ApiKey.FETCH, FETCH_VERSION_CAP)
        body = self.request(
            ApiKey.FETCH,
            version,
            {
                "replica_id": -1,
                "max_wait_ms": 200,
                "min_bytes": 1,
                "max_bytes": max_bytes,
                "isolation_level": isolation_level,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [
                            {
                                "partition": partition,
                                "fetch_offset": offset,
                                "partition_max_bytes": max_bytes,
                            }
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )
        assert body["error_code"] == 0, body
        (topic_response,) = body["responses"]
        (part,) = topic_response["partitions"]
        return dict(part)
