"""The session broker's fallback order (tests/conftest.py) with Java, Maven and Docker faked.

No Docker engine runs on our machines or in CI, so the Docker path is exercised here with the
Docker client and the testcontainers container replaced by fakes: the probe, the choice, the
container's settings and its clean stop."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

import tests.conftest as session
from benchmarks.harness import apache_kafka


class _FakeContainer:
    """Stands in for ``testcontainers.kafka.KafkaContainer``."""

    made: list[_FakeContainer] = []

    def __init__(self, image: str) -> None:
        self.image = image
        self.env: dict[str, str] = {}
        self.state = "created"
        _FakeContainer.made.append(self)

    def with_env(self, key: str, value: str) -> _FakeContainer:
        self.env[key] = value
        return self

    def get_bootstrap_server(self) -> str:
        assert self.state == "running"
        return "127.0.0.1:39092"

    def __enter__(self) -> _FakeContainer:
        self.state = "running"
        return self

    def __exit__(self, *exc: object) -> None:
        self.state = "stopped"


def _fake_docker(monkeypatch: pytest.MonkeyPatch, *, answers: bool) -> list[str]:
    """Install a fake ``docker`` module whose engine answers the ping or not; return the calls."""
    calls: list[str] = []

    class Client:
        def ping(self) -> bool:
            calls.append("ping")
            if not answers:
                raise ConnectionError("no Docker engine")
            return True

    def from_env(timeout: int) -> Client:
        calls.append(f"from_env({timeout})")
        return Client()

    module = types.ModuleType("docker")
    module.from_env = from_env  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "docker", module)
    package = types.ModuleType("testcontainers")
    package.__path__ = []
    kafka = types.ModuleType("testcontainers.kafka")
    kafka.KafkaContainer = _FakeContainer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "testcontainers", package)
    monkeypatch.setitem(sys.modules, "testcontainers.kafka", kafka)
    _FakeContainer.made = []
    return calls


@pytest.fixture
def no_java(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KAFKACONSUMER_TEST_BROKER", "KAFKA_BOOTSTRAP_SERVERS", "KAFKACONSUMER_NO_DOCKER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(apache_kafka, "missing_tools", lambda: "java not found on PATH")


def test_docker_probe_says_whether_the_engine_answers(
    monkeypatch: pytest.MonkeyPatch, no_java: None
) -> None:
    calls = _fake_docker(monkeypatch, answers=True)
    assert session._docker_answers() is True
    assert calls == ["from_env(3)", "ping"]
    _fake_docker(monkeypatch, answers=False)
    assert session._docker_answers() is False
    monkeypatch.setenv("KAFKACONSUMER_NO_DOCKER", "1")
    calls = _fake_docker(monkeypatch, answers=True)
    assert session._docker_answers() is False
    assert calls == []  # not even asked


def test_without_java_a_docker_engine_gives_kafka_in_a_container(
    monkeypatch: pytest.MonkeyPatch, no_java: None
) -> None:
    _fake_docker(monkeypatch, answers=True)
    said: list[str] = []
    choice = session.choose_broker(said.append)
    info = next(choice)
    assert info.kind == "docker-kafka" and info.is_apache
    assert info.bootstrap_servers == "127.0.0.1:39092"
    (container,) = _FakeContainer.made
    assert container.image == f"apache/kafka:{apache_kafka.requested_version()}"
    assert info.version == apache_kafka.requested_version()
    # The tests' short sessions and immediate first rebalances, as on the broker started here.
    assert container.env == {
        "KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "500",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    }
    assert said == ["java not found on PATH: using Apache Kafka in Docker instead"]
    with pytest.raises(StopIteration):
        next(choice)
    assert container.state == "stopped"


def test_without_java_or_docker_the_embedded_broker_is_used(
    monkeypatch: pytest.MonkeyPatch, no_java: None
) -> None:
    _fake_docker(monkeypatch, answers=False)
    started: list[str] = []

    class FakeEmbedded:
        bootstrap_servers = "127.0.0.1:29092"

        def __enter__(self) -> Any:
            started.append("start")
            return self

        def __exit__(self, *exc: object) -> None:
            started.append("stop")

    import kafkaconsumer.embedded

    monkeypatch.setattr(kafkaconsumer.embedded, "EmbeddedBroker", FakeEmbedded)
    said: list[str] = []
    choice = session.choose_broker(said.append)
    info = next(choice)
    assert info.is_tansu and info.bootstrap_servers == "127.0.0.1:29092"
    assert said == ["java not found on PATH: using the embedded Tansu broker instead"]
    assert _FakeContainer.made == []
    choice.close()
    assert started == ["start", "stop"]


def test_forced_docker_skips_the_probe(monkeypatch: pytest.MonkeyPatch, no_java: None) -> None:
    calls = _fake_docker(monkeypatch, answers=False)
    monkeypatch.setenv("KAFKACONSUMER_TEST_BROKER", "docker")
    choice = session.choose_broker(lambda message: None)
    assert next(choice).kind == "docker-kafka"
    assert calls == []
    choice.close()
    assert _FakeContainer.made[0].state == "stopped"


def test_an_unknown_forced_kind_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKACONSUMER_TEST_BROKER", "redpanda")
    with pytest.raises(pytest.UsageError, match="redpanda"):
        next(session.choose_broker(lambda message: None))
