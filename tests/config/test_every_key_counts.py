"""Every configuration key either changes what the client does or refuses a value it cannot
honour: no key is accepted and silently ignored.

"Read" means the key's name is looked up somewhere in the library outside its definition
(``cfg["fetch.max.bytes"]``, ``config.get("ssl.cipher.suites")``, a validation rule in
``config/``), or it is one of the few read under a computed name (checked by behaviour below).
A key naming a Java mechanism that cannot work here has an ``unsupported`` reason: its default
loads (so a Java properties file spelling out the defaults still works), and any other value
raises ``ConfigError`` at construction naming the key, unless it is one of the key's
``honoured`` values, which ask for what the client does anyway. A key for a feature this client
lacks (``transactional.id`` of the test producer) raises when set.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path
from typing import Any

import pytest

from kafkaconsumer import KafkaConsumer
from kafkaconsumer.config import (
    AdminClientConfig,
    ConfigKey,
    ConfigType,
    ConsumerConfig,
    ProducerConfig,
)
from kafkaconsumer.config.validators import _unsupported_when_set
from kafkaconsumer.errors import ConfigError
from kafkaconsumer.serialization import resolve_deserializer

PACKAGE = Path(__file__).resolve().parent.parent.parent / "kafkaconsumer"
CLASSES = (ConsumerConfig, ProducerConfig, AdminClientConfig)

# Keys read under a computed name; each is proven by a behaviour test below.
COMPUTED = {
    "key.deserializer.encoding",
    "value.deserializer.encoding",
    "deserializer.encoding",
    "key.serializer.encoding",
    "value.serializer.encoding",
    "serializer.encoding",
}

# A valid value other than the default for the refused keys whose validator narrows the
# choice (the rest get one made from the key's type).
OTHER_VALUE: dict[str, Any] = {
    "ssl.keystore.type": "PKCS12",
    "ssl.truststore.type": "PKCS12",
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


def _refused_keys() -> list[tuple[type, ConfigKey]]:
    return [(cls, key) for cls in CLASSES for key in cls._DEFINITIONS.values() if key.unsupported]


def _other_value(key: ConfigKey) -> Any:
    """A value of the key's type that is neither its default nor one of its honoured values
    (None when there is none: a boolean whose other value is honoured)."""
    if key.name in OTHER_VALUE:
        return OTHER_VALUE[key.name]
    candidates: dict[ConfigType, list[Any]] = {
        ConfigType.BOOLEAN: [True, False],
        ConfigType.STRING: ["something-else"],
        ConfigType.PASSWORD: ["s3cret"],
        ConfigType.CLASS: ["com.example.Handler"],
        ConfigType.LIST: [("something-else",)],
        ConfigType.DOUBLE: [0.5, 0.25],
        ConfigType.SHORT: [7, 8],
        ConfigType.INT: [7, 8],
        ConfigType.LONG: [7, 8],
    }
    for value in candidates[key.type]:
        if value != key.default and value not in key.honoured:
            return value
    return None


@pytest.mark.parametrize("config_cls", CLASSES)
def test_every_key_is_read_or_refuses_what_it_cannot_do(config_cls: type) -> None:
    read = _string_constants_read()
    definitions: dict[str, ConfigKey] = config_cls._DEFINITIONS  # type: ignore[attr-defined]
    ignored = sorted(
        name
        for name, key in definitions.items()
        if not key.unsupported
        and key.validator is not _unsupported_when_set
        and name not in read
        and name not in COMPUTED
    )
    assert ignored == [], "accepted but never read: read them, or give them an unsupported reason"


def test_a_refused_key_is_not_read_as_well() -> None:
    # A key with a refusal reason that the library also reads would be half implemented:
    # either it works (drop the reason) or it does not (do not read it).
    # (A name refused by one client and working in another, as the producer's and the
    # consumer's interceptor.classes, is read for the one where it works.)
    read = _string_constants_read()
    works_somewhere = {
        name for cls in CLASSES for name, key in cls._DEFINITIONS.items() if not key.unsupported
    }
    both = [key.name for _, key in _refused_keys() if key.name in read - works_somewhere]
    assert both == []


@pytest.mark.parametrize(
    ("config_cls", "key"),
    _refused_keys(),
    ids=[f"{cls.__name__}:{key.name}" for cls, key in _refused_keys()],
)
def test_a_refused_key_raises_naming_itself_unless_at_its_default(
    config_cls: type, key: ConfigKey, caplog: pytest.LogCaptureFixture
) -> None:
    base = {"bootstrap.servers": "127.0.0.1:9"}
    with caplog.at_level(logging.WARNING, logger="kafkaconsumer"):
        config_cls({**base, key.name: key.default})  # a Java file spelling out the default
        for value in key.honoured:
            assert config_cls({**base, key.name: value})[key.name] == value
    assert caplog.records == []
    other = _other_value(key)
    if other is None:
        # Every value loads: the key is a switch whose non-default value is honoured.
        assert key.type is ConfigType.BOOLEAN and key.honoured == (not key.default,)
        return
    with pytest.raises(ConfigError) as info:
        config_cls({**base, key.name: other})
    message = str(info.value)
    assert message.startswith(f"{key.name}=") and "cannot work in this client" in message
    assert key.unsupported in message
    if key.type is ConfigType.PASSWORD:
        assert str(other) not in message


def test_no_key_logs_that_it_has_no_effect(caplog: pytest.LogCaptureFixture) -> None:
    # The former "has no effect" warning is gone with the keys it was for: what loads works.
    with caplog.at_level(logging.WARNING, logger="kafkaconsumer"):
        consumer = KafkaConsumer(
            {
                "bootstrap.servers": "127.0.0.1:9",
                "group.id": "g",
                "metrics.recording.level": "DEBUG",
                "sasl.login.refresh.buffer.seconds": 60,
                "enable.metrics.push": False,
            }
        )
        consumer.close(timeout_ms=0)
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
