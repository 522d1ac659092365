"""OpenTelemetry tracing against the session's broker, with the SDK's in-memory exporter: the
producer with ``tracing.inject.context`` puts the W3C trace context of the current span into each
record's headers; the per-poll interceptor records one ``poll <topic>`` span linked to every
producer span, the per-record interceptor one ``process <topic>`` span per record as the child
of its producer span; the attributes are the messaging semantic conventions'.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

import pytest

from kafkaconsumer import KafkaConsumer
from kafkaconsumer.producer import KafkaProducer
from tests.helpers import unique_name

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

pytestmark = [pytest.mark.integration]

_EXPORTER = InMemorySpanExporter()


def _attrs(span: Any) -> Mapping[str, Any]:
    """A finished span's attributes (the SDK types them as optional)."""
    assert span.attributes is not None
    return cast(Mapping[str, Any], span.attributes)


@pytest.fixture(scope="module")
def tracer_provider() -> Any:
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    # The global provider can be set once per process; later modules reuse this one.
    trace.set_tracer_provider(provider)
    return trace.get_tracer_provider()


@pytest.fixture
def exporter(tracer_provider: Any) -> Iterator[InMemorySpanExporter]:
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


def _produce_traced(bootstrap: str, topic: str, count: int) -> list[Any]:
    """Send ``count`` keyed records, each inside its own producer span; return the spans'
    contexts in order."""
    tracer = trace.get_tracer("test-producer")
    contexts = []
    with KafkaProducer(
        {"bootstrap.servers": bootstrap, "tracing.inject.context": True}
    ) as producer:
        for i in range(count):
            with tracer.start_as_current_span(f"send {topic}", kind=trace.SpanKind.PRODUCER) as s:
                producer.send(topic, value=f"v{i}".encode(), key=f"k{i}".encode())
                contexts.append(s.get_span_context())
        producer.flush(30000)
    return contexts


def _consume(bootstrap: str, topic: str, count: int, interceptor: str, group: str) -> list[Any]:
    got: list[Any] = []
    with KafkaConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": "traced-consumer",
            "auto.offset.reset": "earliest",
            "interceptor.classes": [interceptor],
        }
    ) as consumer:
        consumer.subscribe([topic])
        for _ in range(60):
            got.extend(consumer.poll(timeout_ms=500))
            if len(got) >= count:
                break
    assert len(got) == count
    for record in got:
        assert any(name == "traceparent" for name, _ in record.headers)
    return got


def test_poll_span_links_every_producer_span(broker: Any, exporter: InMemorySpanExporter) -> None:
    """One CONSUMER span per poll with records, named after the topic, linked to the producer
    span of each record it returned, with the batch's semantic-convention attributes."""
    topic, group = unique_name("traced-poll"), unique_name("g")
    produced = _produce_traced(broker.bootstrap_servers, topic, 5)
    _consume(
        broker.bootstrap_servers,
        topic,
        5,
        "kafkaconsumer.tracing:TracingConsumerInterceptor",
        group,
    )
    polls = [s for s in exporter.get_finished_spans() if s.name == f"poll {topic}"]
    assert polls
    assert sum(_attrs(s)["messaging.batch.message_count"] for s in polls) == 5
    linked = {(link.context.trace_id, link.context.span_id) for s in polls for link in s.links}
    assert linked == {(c.trace_id, c.span_id) for c in produced}
    for span in polls:
        assert span.kind is trace.SpanKind.CONSUMER
        attrs = _attrs(span)
        assert attrs["messaging.system"] == "kafka"
        assert attrs["messaging.operation.type"] == "receive"
        assert attrs["messaging.operation.name"] == "poll"
        assert attrs["messaging.destination.name"] == topic
        assert attrs["messaging.consumer.group.name"] == group
        assert attrs["messaging.client.id"] == "traced-consumer"


def test_record_spans_continue_the_producer_trace(
    broker: Any, exporter: InMemorySpanExporter
) -> None:
    """One CONSUMER span per record whose parent is that record's producer span, with the
    record's partition, offset, key and body size."""
    topic, group = unique_name("traced-record"), unique_name("g")
    produced = _produce_traced(broker.bootstrap_servers, topic, 3)
    records = _consume(
        broker.bootstrap_servers,
        topic,
        3,
        "kafkaconsumer.tracing:RecordTracingConsumerInterceptor",
        group,
    )
    spans = [s for s in exporter.get_finished_spans() if s.name == f"process {topic}"]
    assert len(spans) == 3
    by_offset = {_attrs(s)["messaging.kafka.offset"]: s for s in spans}
    for i, record in enumerate(records):
        span = by_offset[record.offset]
        assert span.kind is trace.SpanKind.CONSUMER
        assert span.parent is not None
        assert (span.parent.trace_id, span.parent.span_id) == (
            produced[i].trace_id,
            produced[i].span_id,
        )
        attrs = _attrs(span)
        assert attrs["messaging.operation.type"] == "process"
        assert attrs["messaging.destination.name"] == topic
        assert attrs["messaging.destination.partition.id"] == str(record.partition)
        assert attrs["messaging.kafka.message.key"] == f"k{i}"
        assert attrs["messaging.message.body.size"] == len(f"v{i}")
        assert attrs["messaging.consumer.group.name"] == group


def test_records_without_trace_context_get_root_spans(
    broker: Any, exporter: InMemorySpanExporter
) -> None:
    """A record produced without trace context gets a record span with no parent and a poll
    span without links."""
    topic = unique_name("untraced")
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        producer.send(topic, value=b"plain")
        producer.flush(30000)
    with KafkaConsumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": unique_name("g"),
            "auto.offset.reset": "earliest",
            "interceptor.classes": [
                "kafkaconsumer.tracing:TracingConsumerInterceptor",
                "kafkaconsumer.tracing:RecordTracingConsumerInterceptor",
            ],
        }
    ) as consumer:
        consumer.subscribe([topic])
        got: list[Any] = []
        for _ in range(60):
            got.extend(consumer.poll(timeout_ms=500))
            if got:
                break
    assert len(got) == 1
    spans = exporter.get_finished_spans()
    (record_span,) = [s for s in spans if s.name == f"process {topic}"]
    assert record_span.parent is None
    assert all(not s.links for s in spans if s.name == f"poll {topic}")
