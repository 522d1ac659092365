"""Defaults live once, in the key definitions: the engine reads typed settings
built from the configuration, and nothing in the library restates a key's default."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kafkaconsumer import KafkaConsumer
from kafkaconsumer.config import (
    CONSUMER_MAX_IN_FLIGHT_REQUESTS,
    AdminClientConfig,
    ConsumerConfig,
    ProducerConfig,
)
from kafkaconsumer.errors import ConfigError
from kafkaconsumer.network.settings import NetworkSettings

pytestmark = pytest.mark.timeout(30)

PACKAGE = Path(__file__).resolve().parent.parent.parent / "kafkaconsumer"
KEYS = (
    set(ConsumerConfig._DEFINITIONS)
    | set(ProducerConfig._DEFINITIONS)
    | set(AdminClientConfig._DEFINITIONS)
)


def test_one_request_timeout_reaches_every_layer() -> None:
    consumer = KafkaConsumer(
        {"bootstrap.servers": "127.0.0.1:9", "group.id": "g", "request.timeout.ms": 12345}
    )
    try:
        assert consumer._net.settings.request_timeout_ms == 12345
        assert consumer._client.request_timeout_ms == 12345
        assert consumer._fetcher._config.request_timeout_ms == 12345
        assert consumer._offset_fetcher._request_timeout_ms == 12345
        assert consumer._coordinator is not None
        assert consumer._coordinator.rebalance_config.request_timeout_ms == 12345
    finally:
        consumer.close(timeout_ms=0)


def test_in_flight_bound_is_fixed_for_the_consumer_and_a_key_for_the_producer() -> None:
    # Java's consumer has no max.in.flight.requests.per.connection key: it cannot be set, and
    # the network client gets the fixed bound. The producer's configuration has the key.
    with pytest.raises(ConfigError, match="max.in.flight.requests.per.connection"):
        ConsumerConfig(
            {"bootstrap.servers": "127.0.0.1:9", "max.in.flight.requests.per.connection": 1}
        )
    consumer = NetworkSettings.from_config(ConsumerConfig({"bootstrap.servers": "127.0.0.1:9"}))
    assert consumer.max_in_flight_requests_per_connection == CONSUMER_MAX_IN_FLIGHT_REQUESTS
    producer = NetworkSettings.from_config(
        ProducerConfig(
            {"bootstrap.servers": "127.0.0.1:9", "max.in.flight.requests.per.connection": 3}
        )
    )
    assert producer.max_in_flight_requests_per_connection == 3
    assert producer.largest_fetch_bytes == 0  # the producer does not fetch


def test_no_default_is_restated_outside_the_key_definitions() -> None:
    # ``config.get("request.timeout.ms", 30000)`` and the like: a second copy of a default that
    # drifts. Settings read ``config[key]`` or ``config_value(config, key)``. (The CLI's
    # ``setdefault`` calls are its own choices, not the library's defaults.)
    restated = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and len(node.args) == 2
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in KEYS
            ):
                restated.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)}")
    assert restated == []
