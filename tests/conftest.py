"""Session fixtures: the real broker every integration test talks to.

Where the broker comes from, in order (DESIGN.md section 6):

1. ``KAFKA_BOOTSTRAP_SERVERS`` is set: that cluster, as it is.
2. A Docker engine answers: Apache Kafka in a container, through testcontainers.
3. Otherwise: the embedded Tansu broker (``kafkaconsumer.embedded.EmbeddedBroker``).

``broker.kind`` says which ("external", "docker-kafka", "tansu"), so a test can skip what a broker
lacks (``broker.supports(api_key)`` after the first ApiVersions, or the known gaps of Tansu).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

# Fails a security-suite test whose logs or errors show a secret (see its docstring).
pytest_plugins = ("tests.support.secret_scan",)


@dataclass
class BrokerInfo:
    """What the tests know about the session's broker."""

    bootstrap_servers: str
    kind: str
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def is_tansu(self) -> bool:
        """True for the embedded Tansu broker (see its known gaps in DESIGN.md)."""
        return self.kind == "tansu"


def _docker_answers() -> bool:
    if os.environ.get("KAFKACONSUMER_NO_DOCKER") == "1":
        return False
    try:
        import docker  # type: ignore[import-untyped]

        client = docker.from_env(timeout=3)
        client.ping()
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def broker() -> Iterator[BrokerInfo]:
    """The real broker of this test session."""
    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if external:
        yield BrokerInfo(external, "external")
        return
    if _docker_answers():
        from testcontainers.kafka import KafkaContainer  # type: ignore[import-untyped]

        with KafkaContainer("apache/kafka:3.7.0") as kafka:
            yield BrokerInfo(kafka.get_bootstrap_server(), "docker-kafka")
        return
    from kafkaconsumer.embedded import EmbeddedBroker

    with EmbeddedBroker() as embedded:
        yield BrokerInfo(embedded.bootstrap_servers, "tansu", {"embedded": embedded})
