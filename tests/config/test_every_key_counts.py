"""Every configuration key either changes what the client does or is warned about when set
(issue 11 item 2): no key is accepted and silently ignored.

"Read" means the key's name is looked up somewhere in the library outside its definition
(``cfg["fetch.max.bytes"]``, ``config.get("ssl.cipher.suites")``, a validation rule in
``config.py``), or it is one of the few read under a computed name (checked by behaviour below).
Keys with no effect are ``java_only``: setting one logs a warning, once per configuration
(a configuration re-wrapped by ``KafkaConsumer`` does not warn again). A key
for a feature this client lacks (``transactional.id`` of the test producer) raises when set.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

from kafkaconsumer import KafkaConsumer
from kafkaconsumer.config import (
    AdminClientConfig,
    ConfigKey,
    ConsumerConfig,
    ProducerConfig,
    _unsupported_when_set,
)
from kafkaconsumer.serialization import resolve_deserializer

PACKAGE = Path(__file__).resolve().parent.parent.parent / "kafkaconsumer"

# Keys read under a computed name; each is proven by a behaviour test below.
COMPUTED = {
    "key.deserializer.encoding",
    "value.deserializer.encoding",
    "deserializer.encoding",
    "key.serializer.encoding",
    "value.serializer.encoding",
    "serializer.encoding",
}


def _string_constants_read() -> set[str]:
    """Every string constant in the library except the first argument of a key definition."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        definitions: set[int] = set()
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "_k"
                and node.args
            ):
                definitions.add(id(node.args[0]))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in definitions
            ):
                found.add(node.value)
    return found


@pytest.mark.parametrize("config_cls", [ConsumerConfig, ProducerConfig, AdminClientConfig])
def test_every_key_is_read_or_warned_about(config_cls: type) -> None:
    read = _string_constants_read()
    definitions: dict[str, ConfigKey] = config_cls._DEFINITIONS  # type: ignore[attr-defined]
    ignored = sorted(
        name
        for name, key in definitions.items()
        if not key.java_only
        and key.validator is not _unsupported_when_set
        and name not in read
        and name not in COMPUTED
    )
    assert ignored == [], "accepted but never read: read them, or mark them java_only"


def test_a_key_without_effect_is_warned_about_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="kafkaconsumer"):
        consumer = KafkaConsumer(
            {
                "bootstrap.servers": "127.0.0.1:9",
                "group.id": "g",
                "metrics.recording.level": "DEBUG",
                "sasl.login.refresh.buffer.seconds": 60,
            }
        )
        consumer.close(timeout_ms=0)
    for key in ("metrics.recording.level", "sasl.login.refresh.buffer.seconds"):
        warnings = [r for r in caplog.records if key in r.getMessage()]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
        assert "no effect" in warnings[0].getMessage()


def test_the_warning_is_once_per_configuration_not_per_wrapper_or_process(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A ConsumerConfig handed to KafkaConsumer is re-wrapped: one warning for it. A second
    # configuration with the same key warns again (once per configuration, not per process).
    def warnings() -> list[str]:
        return [
            r.getMessage() for r in caplog.records if "metrics.recording.level" in r.getMessage()
        ]

    with caplog.at_level(logging.WARNING, logger="kafkaconsumer"):
        config = ConsumerConfig(
            {"bootstrap.servers": "127.0.0.1:9", "metrics.recording.level": "DEBUG"}
        )
        assert len(warnings()) == 1
        consumer = KafkaConsumer(config)
        consumer.close(timeout_ms=0)
        assert len(warnings()) == 1, warnings()
        ConsumerConfig({"bootstrap.servers": "127.0.0.1:9", "metrics.recording.level": "DEBUG"})
        assert len(warnings()) == 2, warnings()


def test_a_key_left_at_its_default_is_not_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="kafkaconsumer"):
        ConsumerConfig({"bootstrap.servers": "127.0.0.1:9"})
    assert not [r for r in caplog.records if "no effect" in r.getMessage()]


@pytest.mark.parametrize(
    ("keys", "is_key"),
    [
        ({"key.deserializer.encoding": "latin-1"}, True),
        ({"value.deserializer.encoding": "latin-1"}, False),
        ({"deserializer.encoding": "latin-1"}, True),
    ],
)
def test_computed_encoding_keys_are_read(keys: dict[str, str], is_key: bool) -> None:
    side = "key" if is_key else "value"
    cfg = ConsumerConfig(
        {"bootstrap.servers": "127.0.0.1:9", f"{side}.deserializer": "str", **keys}
    )
    deserializer = resolve_deserializer(cfg[f"{side}.deserializer"], configs=cfg, is_key=is_key)
    assert deserializer is not None
    assert deserializer.deserialize("t", "é".encode("latin-1")) == "é"
