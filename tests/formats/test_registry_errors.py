"""The registry client's configuration and its errors when no registry answers."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from kafkaconsumer.errors import ConfigError
from kafkaconsumer.formats.avro import AvroDeserializer
from kafkaconsumer.formats.registry import SchemaRegistryClient, SchemaRegistryError
from kafkaconsumer.formats.wire import frame


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def _closed_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return int(port)


def test_refused_connection_names_the_url() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    client = SchemaRegistryClient({"schema.registry.url": url})
    with pytest.raises(SchemaRegistryError, match=f"schema registry {url} unreachable") as info:
        client.schema_by_id(1)
    assert info.value.status is None


@pytest.mark.timeout(30)
def test_silent_registry_fails_within_the_timeout(silent_port: int) -> None:
    url = f"http://127.0.0.1:{silent_port}"
    client = SchemaRegistryClient(
        {"schema.registry.url": url, "schema.registry.request.timeout.ms": 300}
    )
    started = time.monotonic()
    with pytest.raises(SchemaRegistryError, match=rf"{url} unreachable within 0.3 s"):
        client.schema_version("orders-value")
    # Generous bound: the point is that the configured timeout, not a default, applies.
    assert time.monotonic() - started < 20


def test_every_url_is_tried_and_the_deserializer_reports_the_registry() -> None:
    first, second = (f"http://127.0.0.1:{_closed_port()}" for _ in range(2))
    deserializer = AvroDeserializer(f"{first}, {second}/")
    assert deserializer.registry is not None
    assert deserializer.registry.urls == [first, second]
    with pytest.raises(SchemaRegistryError, match=f"schema registry {second} unreachable"):
        deserializer.deserialize("orders", frame(1, b"\x02"))


def test_credentials_in_the_url_stay_out_of_the_urls() -> None:
    client = SchemaRegistryClient(
        {
            "schema.registry.url": "https://user:secret@registry.invalid:8081",
            "basic.auth.credentials.source": "URL",
        }
    )
    assert client.urls == ["https://registry.invalid:8081"]


@pytest.mark.parametrize(
    ("config", "why"),
    [
        ({}, "schema.registry.url is required"),
        ({"schema.registry.url": "ftp://x"}, "not an http"),
        (
            {"schema.registry.url": "http://x", "basic.auth.credentials.source": "SASL_INHERIT"},
            "USER_INFO or URL",
        ),
        ({"schema.registry.url": "http://x", "schema.registry.request.timeout.ms": 0}, "positive"),
        (
            {"schema.registry.url": "http://x", "auto.register.schemas": True},
            "unknown schema-registry",
        ),
        (
            {
                "schema.registry.url": "http://x",
                "basic.auth.user.info": "u:p",
                "bearer.auth.token": "t",
            },
            "not both",
        ),
    ],
)
def test_bad_configuration_is_refused(config: dict[str, object], why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        SchemaRegistryClient(config)
