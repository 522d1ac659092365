"""Client metrics pushed to a real Apache Kafka broker (KIP-714).

A broker of its own for this module carries a telemetry receiver: the small Java reporter of
benchmarks/harness/telemetry_receiver.py, compiled with ``javac`` against the broker's jars,
which writes every push it receives (client instance id, decoded metric names, the payload) to
a file read here. A client metrics subscription made with our admin client says what to push.
The session's broker, which has no receiver, checks that nothing is pushed there and nothing is
logged above DEBUG.
"""

from __future__ import annotations

import base64
import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.metrics.v1 import metrics_pb2

from benchmarks.harness import apache_kafka, telemetry_receiver
from benchmarks.harness.apache_kafka import KafkaCluster
from kafkaconsumer import KafkaConsumer
from kafkaconsumer.admin import ConfigResource, KafkaAdminClient
from kafkaconsumer.network.client_telemetry_reporter import ClientTelemetryReporter
from kafkaconsumer.protocol import ApiKey
from kafkaconsumer.structs import TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: Every consumer metric, pushed each second (the broker's lowest interval is 100 ms).
SUBSCRIPTION = {"metrics": "org.apache.kafka.consumer.", "interval.ms": "1000"}
TOPIC = "telemetry-topic"


class ReceiverBroker:
    """The module's broker and the file its telemetry receiver writes."""

    def __init__(self, cluster: KafkaCluster, output: Path) -> None:
        self.cluster = cluster
        self.output = output

    def pushes(self, instance: uuid.UUID | None = None) -> list[dict[str, Any]]:
        """The pushes received so far (of one client instance when given)."""
        found = telemetry_receiver.read_pushes(self.output)
        if instance is not None:
            found = [p for p in found if p["client_instance_id"] == str(instance)]
        return found


@pytest.fixture(scope="module")
def receiver_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReceiverBroker]:
    """An Apache Kafka broker with a telemetry receiver and a subscription of every consumer
    metric each second."""
    missing = apache_kafka.missing_tools()
    if missing:
        pytest.skip(f"needs Apache Kafka: {missing}")
    output = tmp_path_factory.mktemp("telemetry") / "pushes.jsonl"
    try:
        classpath, config = telemetry_receiver.receiver_broker_config(None, output)
    except apache_kafka.ApacheKafkaError as exc:
        pytest.skip(str(exc))
    with KafkaCluster(extra_config=config, extra_classpath=(classpath,)) as cluster:
        with KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
            admin.incremental_alter_configs(
                {ConfigResource("client-metrics", "every-consumer-metric"): SUBSCRIPTION}
            )
        cluster.create_topic(TOPIC, 1, 1)
        yield ReceiverBroker(cluster, output)


def _consume_until(consumer: KafkaConsumer, done: Any, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "telemetry did not arrive in time"
        consumer.poll(200)


def _consumer(bootstrap: str, **extra: Any) -> KafkaConsumer:
    consumer = KafkaConsumer(
        {"bootstrap.servers": bootstrap, "client.id": "telemetry-test", **extra}
    )
    consumer.assign([TopicPartition(TOPIC, 0)])
    return consumer


def test_subscribed_metrics_arrive_decoded_with_our_instance_id(
    receiver_broker: ReceiverBroker,
) -> None:
    """The receiver gets repeated pushes from our client instance id: OTLP MetricsData the
    broker's own OpenTelemetry classes decode, of the subscribed consumer metrics, sent
    compressed; close() ends with a terminating push."""
    broker = receiver_broker
    consumer = _consumer(broker.cluster.bootstrap_servers)
    telemetry = consumer._telemetry
    assert isinstance(telemetry, ClientTelemetryReporter)
    try:
        instance = consumer.client_instance_id(30_000)
        assert isinstance(instance, uuid.UUID)
        _consume_until(consumer, lambda: len(broker.pushes(instance)) >= 2)
        subscription = telemetry.sender.subscription
        assert subscription is not None
        assert subscription.requested_metrics == ("org.apache.kafka.consumer.",)
        # The broker accepts zstd first; the push went compressed (the receiver sees it
        # decompressed by the broker).
        assert subscription.accepted_compression_types[0] == 4
    finally:
        consumer.close()
    deadline = time.monotonic() + 30
    while not any(p["terminating"] for p in broker.pushes(instance)):
        assert time.monotonic() < deadline, "no terminating push"
        time.sleep(0.1)
    pushes = broker.pushes(instance)
    assert len(pushes) >= 3
    assert [p["terminating"] for p in pushes].count(True) == 1 and pushes[-1]["terminating"]
    for push in pushes:
        assert push["error"] is None
        assert push["metrics"], push
        assert all(name.startswith("org.apache.kafka.consumer.") for name in push["metrics"])
    names = set(pushes[0]["metrics"])
    assert "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg" in names
    assert "org.apache.kafka.consumer.last.poll.seconds.ago" in names
    data = metrics_pb2.MetricsData.FromString(base64.b64decode(pushes[-1]["data"]))
    sums = [
        m
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "org.apache.kafka.consumer.fetch.manager.fetch.total"
    ]
    assert sums and sums[0].sum.is_monotonic
    # Apache Kafka asks for deltas.
    assert sums[0].sum.aggregation_temporality == metrics_pb2.AGGREGATION_TEMPORALITY_DELTA


def test_push_disabled_sends_nothing(receiver_broker: ReceiverBroker) -> None:
    """With enable.metrics.push=false the receiver never hears from the client."""
    broker = receiver_broker
    before = len(broker.pushes())
    consumer = _consumer(broker.cluster.bootstrap_servers, **{"enable.metrics.push": False})
    try:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            consumer.poll(200)
    finally:
        consumer.close()
    assert consumer._telemetry is None
    assert len(broker.pushes()) == before


def test_broker_without_receiver_gets_nothing_and_nothing_is_logged(
    broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A broker without a telemetry receiver (the session's) does not advertise the telemetry
    APIs: the consumer asks nothing, pushes nothing, logs nothing about it above DEBUG, and
    client_instance_id answers None."""
    if broker.is_tansu:
        pytest.skip("Tansu advertises the telemetry APIs: it is not a broker without a receiver")
    assert not broker.supports(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)
    with caplog.at_level(logging.DEBUG, logger="kafkaconsumer"):
        consumer = KafkaConsumer({"bootstrap.servers": broker.bootstrap_servers})
        try:
            consumer.list_topics(timeout_ms=30_000)
            assert consumer.client_instance_id(10_000) is None
            telemetry = consumer._telemetry
            assert isinstance(telemetry, ClientTelemetryReporter)
            assert not telemetry.sender.enabled
            assert telemetry.sender.push_count == 0
        finally:
            consumer.close()
    records = [r for r in caplog.records if "telemetry" in r.name]
    assert records and all(r.levelno <= logging.DEBUG for r in records)


def test_pushing_keeps_the_documented_lock_order(receiver_broker: ReceiverBroker) -> None:
    """A group consumer whose heartbeat thread and poll() both push telemetry (the payload
    reads gauges of the subscription state) takes the engine locks in the documented order."""
    from tests.consumer.test_lock_order_integration import LEAVES, ORDER
    from tests.support.lock_order import trace_consumer

    broker = receiver_broker
    consumer = KafkaConsumer(
        {
            "bootstrap.servers": broker.cluster.bootstrap_servers,
            "group.id": "telemetry-lock-order",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200,
        }
    )
    with trace_consumer(consumer) as recorder:
        try:
            consumer.subscribe([TOPIC])
            instance = consumer.client_instance_id(30_000)
            assert instance is not None
            _consume_until(consumer, lambda: len(broker.pushes(instance)) >= 3)
        finally:
            consumer.close(timeout_ms=10_000)
    edges: set[tuple[str, str]] = set(recorder.edges)
    rank: dict[str, Any] = {name: i for i, name in enumerate(ORDER)}
    wrong = sorted(
        (held, taken)
        for held, taken in edges
        if held in LEAVES or (taken not in LEAVES and rank[held] >= rank[taken])
    )
    assert wrong == [], f"taken against the documented order: {wrong}"
