"""Every key Java's clients define is a key of ours: implemented, or refused with a reason.

The names come from ``ConsumerConfig.configNames()`` (and the producer's and admin client's) of
the kafka-clients jar of the Apache Kafka version the test harness resolves
(``KAFKACONSUMER_KAFKA_VERSION``, default 4.4), read by a few lines of Java compiled once per
version into the harness's cache.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from benchmarks.harness.apache_kafka import (
    ApacheKafkaError,
    _cache_root,
    ensure_kafka,
    requested_version,
)
from kafkaconsumer.config import AdminClientConfig, ConsumerConfig, ProducerConfig
from kafkaconsumer.config.abstract_config import AbstractConfig
from kafkaconsumer.config.share_consumer_config import ShareConsumerConfig

_SOURCE = """
public class ConfigNames {
    public static void main(String[] args) {
        java.util.Set<String> names;
        switch (args[0]) {
            case "consumer": names = org.apache.kafka.clients.consumer.ConsumerConfig.configNames(); break;
            case "producer": names = org.apache.kafka.clients.producer.ProducerConfig.configNames(); break;
            default: names = org.apache.kafka.clients.admin.AdminClientConfig.configNames(); break;
        }
        for (String name : names) System.out.println(name);
    }
}
"""

_names_cache: dict[str, set[str]] = {}


def _java_names(client: str) -> set[str]:
    if client in _names_cache:
        return _names_cache[client]
    missing = [t for t in ("java", "javac") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not found on PATH")
    version = requested_version()
    try:
        libs = ensure_kafka(version)
    except ApacheKafkaError as exc:
        pytest.skip(f"Apache Kafka {version} jars unavailable: {exc}")
    classpath = f"{libs}/*"
    build = _cache_root() / "config-names" / version
    if not (build / "ConfigNames.class").exists():
        build.mkdir(parents=True, exist_ok=True)
        (build / "ConfigNames.java").write_text(_SOURCE)
        subprocess.run(
            ["javac", "-cp", classpath, "-d", str(build), str(build / "ConfigNames.java")],
            check=True,
            capture_output=True,
            timeout=300,
        )
    out = subprocess.run(
        ["java", "-cp", f"{build}:{classpath}", "ConfigNames", client],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    names = {line.strip() for line in out.splitlines() if line.strip()}
    assert names, f"Java printed no {client} keys"
    _names_cache[client] = names
    return names


@pytest.mark.parametrize(
    ("client", "ours"),
    [
        # Java's ConsumerConfig also holds the share consumer's keys; ours sit in its own table.
        ("consumer", (ConsumerConfig, ShareConsumerConfig)),
        ("producer", (ProducerConfig,)),
        ("admin", (AdminClientConfig,)),
    ],
)
def test_every_java_key_is_ours(client: str, ours: tuple[type[AbstractConfig], ...]) -> None:
    """No key of Java's client is unknown to ours (each is implemented or refused)."""
    known: set[str] = set()
    for cls in ours:
        known |= set(cls.config_names())
    missing = sorted(_java_names(client) - known)
    assert not missing, f"Java {requested_version()} {client} keys we lack: {missing}"


def test_java_defaults_load() -> None:
    """A configuration spelling out the new keys at Java's defaults loads in every client."""
    common = {
        "bootstrap.servers": "localhost:9092",
        "metadata.recovery.rebootstrap.trigger.ms": 300000,
        "metadata.cluster.check.enable": "true",
        "config.providers": "",
    }
    ConsumerConfig(common)
    AdminClientConfig({**common, "bootstrap.controllers": ""})
    ProducerConfig(
        {
            **common,
            "compression.gzip.level": -1,
            "compression.lz4.level": 9,
            "compression.zstd.level": 3,
            "partitioner.rack.aware": False,
            "buffer.memory.allocation.strategy": "full",
            "transaction.two.phase.commit.enable": False,
        }
    )


@pytest.mark.parametrize(
    ("cls", "key", "value"),
    [
        (ProducerConfig, "compression.zstd.level", 10),
        (ProducerConfig, "partitioner.rack.aware", True),
        (ProducerConfig, "transaction.two.phase.commit.enable", True),
        (ProducerConfig, "buffer.memory.allocation.strategy", "incremental"),
        (AdminClientConfig, "bootstrap.controllers", "localhost:9093"),
    ],
)
def test_unsupported_values_refused_naming_the_key(
    cls: type[AbstractConfig], key: str, value: object
) -> None:
    """A value this client cannot honour raises at construction with the key in the message."""
    from kafkaconsumer.errors import ConfigError

    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        cls({"bootstrap.servers": "localhost:9092", key: value})


def test_rebootstrap_keys_load_with_any_valid_value() -> None:
    """The rebootstrap trigger and the cluster check take every value Java takes, and a
    negative trigger is refused as Java's ``atLeast(0)`` refuses it."""
    from kafkaconsumer.errors import ConfigError

    config = ConsumerConfig(
        {
            "bootstrap.servers": "localhost:9092",
            "metadata.recovery.strategy": "REBOOTSTRAP",
            "metadata.recovery.rebootstrap.trigger.ms": 1000,
            "metadata.cluster.check.enable": False,
        }
    )
    assert config["metadata.recovery.strategy"] == "rebootstrap"
    assert config["metadata.recovery.rebootstrap.trigger.ms"] == 1000
    assert config["metadata.cluster.check.enable"] is False
    with pytest.raises(ConfigError, match=r"metadata\.recovery\.rebootstrap\.trigger\.ms"):
        ConsumerConfig({"bootstrap.servers": "x:1", "metadata.recovery.rebootstrap.trigger.ms": -1})
