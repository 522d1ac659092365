"""Session fixtures: the real broker every integration test talks to.

Where the ``broker`` fixture's broker comes from, in order:

1. ``KAFKACONSUMER_TEST_BROKER=apache|docker|tansu`` forces one kind (an error if it cannot start).
2. ``KAFKA_BOOTSTRAP_SERVERS`` is set: that cluster, as it is (taken to be Apache Kafka).
3. Java and Maven are on PATH: Apache Kafka (``benchmarks/harness/apache_kafka.py``), one combined
   broker+controller, version ``KAFKACONSUMER_KAFKA_VERSION`` or the newest 4.x.
4. A Docker engine answers: Apache Kafka in a container, through testcontainers.
5. Otherwise: the embedded Tansu broker (``kafkaconsumer.embedded.EmbeddedBroker``).

When the choice falls past Apache Kafka, the session says why once in the terminal.
``broker.kind`` says which broker it is ("apache", "external", "docker-kafka", "tansu");
``broker.is_tansu``/``broker.is_apache`` let a test skip what a broker lacks, and
``broker.api_versions`` holds the broker's ApiVersions ranges.

``kafka_cluster`` is a 3-broker Apache Kafka cluster with racks and, on every broker, the
secured listeners of ``secure_kafka`` (``kafka_cluster.security``; see
``benchmarks/harness/apache_kafka.py``), started once per session when a test first asks for it;
after each test that used it, every stopped node is started again and the cluster waits until
all partitions are back in sync. Tests using it get a 300 s timeout (the first one pays the start).
It skips when Java or Maven is missing, or in the Tansu pass (``KAFKACONSUMER_TEST_BROKER=tansu``).

``secure_kafka`` is the :class:`benchmarks.harness.apache_kafka.Security` of an Apache Kafka broker
with SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) and SSL listeners (server-only, mutual
and wrong-host-name certificates): the session broker's when that is Apache Kafka started here,
else a single node started for it once; it skips like ``kafka_cluster``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field

import pytest

from benchmarks.harness import apache_kafka

_KINDS = ("apache", "docker", "tansu")

# Fails a security-suite test whose logs or errors show a secret (see its docstring).
pytest_plugins = ("tests.support.secret_scan",)


@dataclass
class BrokerInfo:
    """What the tests know about the session's broker."""

    bootstrap_servers: str
    kind: str
    #: The Apache Kafka version ("4.4.0") when known, else "".
    version: str = ""
    extra: dict[str, object] = field(default_factory=dict)
    _api_versions: dict[int, tuple[int, int]] | None = None

    @property
    def is_tansu(self) -> bool:
        """True for the embedded Tansu broker (its known gaps are in docs/testing.md)."""
        return self.kind == "tansu"

    @property
    def is_apache(self) -> bool:
        """True for Apache Kafka (started here, in Docker, or the external cluster)."""
        return self.kind in ("apache", "docker-kafka", "external")

    @property
    def api_versions(self) -> dict[int, tuple[int, int]]:
        """``{api_key: (min, max)}`` as the first bootstrap broker advertises them."""
        if self._api_versions is None:
            host, _, port = self.bootstrap_servers.split(",")[0].rpartition(":")
            self._api_versions = apache_kafka.broker_api_versions(host, int(port))
        return self._api_versions

    def supports(self, api_key: int, version: int = 0) -> bool:
        """True when the broker advertises ``api_key`` at ``version``. For
        ConsumerGroupHeartbeat (68) also that the group coordinator serves the consumer
        protocol: Apache Kafka 3.9 advertises the API but answers UNSUPPORTED_VERSION unless
        ``group.coordinator.rebalance.protocols`` names ``consumer`` (not by default)."""
        low_high = self.api_versions.get(int(api_key))
        if low_high is None or not low_high[0] <= version <= low_high[1]:
            return False
        if int(api_key) == 68 and self.is_apache:
            from tests.support.broker_limits import broker_config

            protocols = broker_config(
                self.bootstrap_servers, "group.coordinator.rebalance.protocols"
            )
            return protocols is None or "consumer" in protocols.lower().split(",")
        return True

    def min_session_timeout_ms(self) -> int:
        """The broker's ``group.min.session.timeout.ms`` (0 when it does not say): a classic
        member's session timeout must be at least this."""
        from tests.support.broker_limits import min_session_timeout_ms

        return min_session_timeout_ms(self.bootstrap_servers)


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


def _say(config: pytest.Config, message: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"[broker] {message}", yellow=True)


def _apache() -> Iterator[BrokerInfo]:
    # The secured listeners cost no extra process, so the session broker always has them.
    with apache_kafka.KafkaCluster(security=True) as cluster:
        yield BrokerInfo(cluster.bootstrap_servers, "apache", cluster.version, {"cluster": cluster})


def _docker() -> Iterator[BrokerInfo]:
    from testcontainers.kafka import KafkaContainer

    # The same Kafka version as the Maven-fetched broker would be (the image is tagged by version).
    version = apache_kafka.requested_version()
    kafka = KafkaContainer(f"apache/kafka:{version}")
    # The tests' 3 s sessions and immediate first rebalances, as on the broker started here.
    kafka.with_env("KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS", "500")
    kafka.with_env("KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "0")
    with kafka:
        yield BrokerInfo(kafka.get_bootstrap_server(), "docker-kafka", version)


def _tansu() -> Iterator[BrokerInfo]:
    from kafkaconsumer.embedded import EmbeddedBroker

    with EmbeddedBroker() as embedded:
        yield BrokerInfo(embedded.bootstrap_servers, "tansu", "", {"embedded": embedded})


def choose_broker(say: Callable[[str], None]) -> Generator[BrokerInfo, None, None]:
    """Start (or name) the session's broker in the order of the module docstring, yield it,
    stop it; ``say`` tells the terminal once why the choice fell past Apache Kafka."""
    forced = os.environ.get("KAFKACONSUMER_TEST_BROKER", "").strip().lower()
    if forced:
        if forced not in _KINDS:
            raise pytest.UsageError(
                f"KAFKACONSUMER_TEST_BROKER={forced!r}: expected one of {', '.join(_KINDS)}"
            )
        yield from {"apache": _apache, "docker": _docker, "tansu": _tansu}[forced]()
        return
    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if external:
        yield BrokerInfo(external, "external")
        return
    missing = apache_kafka.missing_tools()
    if missing is None:
        yield from _apache()
        return
    if _docker_answers():
        say(f"{missing}: using Apache Kafka in Docker instead")
        yield from _docker()
        return
    say(f"{missing}: using the embedded Tansu broker instead")
    yield from _tansu()


@pytest.fixture(scope="session")
def broker(request: pytest.FixtureRequest) -> Iterator[BrokerInfo]:
    """The real broker of this test session."""
    yield from choose_broker(lambda message: _say(request.config, message))


#: Seconds granted to a test that uses a fixture which starts JVMs (when it has no own timeout).
_SLOW_FIXTURE_TIMEOUT = 300
_SLOW_FIXTURES = ("kafka_cluster", "secure_kafka")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give the tests that may start a Kafka cluster time for it."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if (
            any(name in names for name in _SLOW_FIXTURES)
            and item.get_closest_marker("timeout") is None
        ):
            item.add_marker(pytest.mark.timeout(_SLOW_FIXTURE_TIMEOUT))


def _skip_unless_apache_possible() -> None:
    if os.environ.get("KAFKACONSUMER_TEST_BROKER", "").strip().lower() == "tansu":
        pytest.skip("the Tansu pass checks the embedded broker only")
    missing = apache_kafka.missing_tools()
    if missing:
        pytest.skip(f"needs Apache Kafka: {missing}")


@pytest.fixture(scope="session")
def _kafka_cluster_session() -> Iterator[apache_kafka.KafkaCluster]:
    _skip_unless_apache_possible()
    # The secured listeners on every broker cost no extra process.
    with apache_kafka.KafkaCluster(brokers=3, racks=True, security=True) as cluster:
        yield cluster


@pytest.fixture
def kafka_cluster(
    _kafka_cluster_session: apache_kafka.KafkaCluster,
) -> Iterator[apache_kafka.KafkaCluster]:
    """The session's 3-broker cluster (controller 100, brokers 1-3 in racks rack-1..rack-3, the
    secured listeners on each: ``kafka_cluster.security``); nodes a test stopped are started
    again after it."""
    yield _kafka_cluster_session
    _kafka_cluster_session.heal()


@pytest.fixture(scope="session")
def secure_kafka(request: pytest.FixtureRequest) -> Iterator[apache_kafka.Security]:
    """Secured listeners of an Apache Kafka broker (see the module docstring)."""
    _skip_unless_apache_possible()
    if (
        not os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        or os.environ.get("KAFKACONSUMER_TEST_BROKER", "").strip().lower() == "apache"
    ):
        info: BrokerInfo = request.getfixturevalue("broker")
        cluster = info.extra.get("cluster")
        if isinstance(cluster, apache_kafka.KafkaCluster) and cluster.security is not None:
            yield cluster.security
            return
    with apache_kafka.KafkaCluster(security=True) as own:
        assert own.security is not None
        yield own.security
