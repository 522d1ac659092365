"""OpenTelemetry tracing of consumed records, as a consumer interceptor.

Put one of the two interceptors in ``interceptor.classes`` (``pip install
'kafkaconsumer[otel]'`` installs ``opentelemetry-api``; the application configures the SDK, its
exporter and its propagator as usual):

- :class:`TracingConsumerInterceptor`: one ``poll <topic>`` span per ``poll()`` that returned
  records (kind CONSUMER, ``messaging.operation.type=receive``), with a span link to the
  producer's trace context of every record that carries one;
- :class:`RecordTracingConsumerInterceptor`: one ``process <topic>`` span per record (kind
  CONSUMER, ``messaging.operation.type=process``) whose parent is the producer's trace context
  taken from the record's headers, so that the consumer's span continues the producer's trace.

Attributes follow OpenTelemetry's messaging semantic conventions: ``messaging.system=kafka``,
``messaging.operation.name``/``.type``, ``messaging.destination.name``,
``messaging.consumer.group.name``, ``messaging.client.id``, ``messaging.batch.message_count``
(poll spans), and ``messaging.destination.partition.id``, ``messaging.kafka.offset``,
``messaging.kafka.message.key`` (a key that decodes as UTF-8), ``messaging.kafka.message.tombstone``
and ``messaging.message.body.size`` (record spans). The trace context is read from the record
headers with the globally configured propagator (W3C ``traceparent``/``tracestate`` by default).

The producer side: :func:`inject_trace_context` adds the current span's context to a headers
list, and :class:`~kafkaconsumer.producer.KafkaProducer` calls it for every record when its
``tracing.inject.context`` key is true.

The library uses ``opentelemetry-api`` only; without an SDK configured the spans are the API's
no-op spans and cost little.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from kafkaconsumer.errors import ConfigError
from kafkaconsumer.interceptors import ConsumerInterceptor
from kafkaconsumer.structs import ConsumerRecord, ConsumerRecords

logger = logging.getLogger(__name__)

__all__ = [
    "RecordTracingConsumerInterceptor",
    "TracingConsumerInterceptor",
    "inject_trace_context",
]

_SCOPE = "kafkaconsumer"


def _otel() -> Any:
    try:
        from opentelemetry import propagate, trace
    except ImportError:
        raise ConfigError(
            "tracing needs opentelemetry-api: pip install 'kafkaconsumer[otel]'"
        ) from None
    return propagate, trace


class _HeaderGetter:
    """Reads propagation fields from Kafka record headers (a list of (name, bytes) pairs).

    Thread-safety: stateless.
    """

    def get(self, carrier: list[tuple[str, bytes | None]], key: str) -> list[str] | None:
        values = [
            v.decode("utf-8", "replace") for name, v in carrier if name == key and v is not None
        ]
        return values or None

    def keys(self, carrier: list[tuple[str, bytes | None]]) -> list[str]:
        return [name for name, _ in carrier]


class _HeaderSetter:
    """Writes propagation fields into a headers list, replacing a field already there.

    Thread-safety: stateless.
    """

    def set(self, carrier: list[tuple[str, bytes | None]], key: str, value: str) -> None:
        carrier[:] = [(n, v) for n, v in carrier if n != key]
        carrier.append((key, value.encode()))


_GETTER = _HeaderGetter()
_SETTER = _HeaderSetter()


def inject_trace_context(headers: list[tuple[str, bytes | None]]) -> None:
    """Add the current trace context to ``headers`` with the configured propagator."""
    propagate, _ = _otel()
    propagate.inject(headers, setter=_SETTER)


class _TracingBase(ConsumerInterceptor):
    """What both interceptors share: the tracer and the client's identity.

    Thread-safety: configured once, then called on the thread that calls ``poll()``.
    """

    def __init__(self) -> None:
        """Look up the tracer of the globally configured provider."""
        self._propagate, trace = _otel()
        self._trace = trace
        self._tracer = trace.get_tracer(_SCOPE)
        self._common: dict[str, Any] = {"messaging.system": "kafka"}

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Take the group id and client id from the consumer's configuration."""
        group = configs.get("group.id")
        if group:
            self._common["messaging.consumer.group.name"] = str(group)
        client = configs.get("client.id")
        if client:
            self._common["messaging.client.id"] = str(client)

    def _context_of(self, record: ConsumerRecord) -> Any:
        # An empty context when the headers carry none: a record span is then a root span.
        return self._propagate.extract(record.headers or [], getter=_GETTER)


def _destination(records: Iterable[ConsumerRecord]) -> str | None:
    topics = {r.topic for r in records}
    return topics.pop() if len(topics) == 1 else None


class TracingConsumerInterceptor(_TracingBase):
    """One span per ``poll()`` that returned records, linked to each record's producer span.

    Thread-safety: called on the thread that calls ``poll()``.
    """

    def on_consume(self, records: ConsumerRecords) -> ConsumerRecords:
        """Record one ``poll`` span for ``records`` and hand them on unchanged."""
        batch = list(records)
        if not batch:
            return records
        links = []
        for record in batch:
            ctx = self._context_of(record)
            if ctx is None:
                continue
            span_context = self._trace.get_current_span(ctx).get_span_context()
            if span_context.is_valid:
                links.append(
                    self._trace.Link(
                        span_context,
                        {
                            "messaging.destination.name": record.topic,
                            "messaging.destination.partition.id": str(record.partition),
                            "messaging.kafka.offset": record.offset,
                        },
                    )
                )
        topic = _destination(batch)
        attributes = {
            **self._common,
            "messaging.operation.type": "receive",
            "messaging.operation.name": "poll",
            "messaging.batch.message_count": len(batch),
        }
        if topic is not None:
            attributes["messaging.destination.name"] = topic
        span = self._tracer.start_span(
            f"poll {topic}" if topic is not None else "poll",
            kind=self._trace.SpanKind.CONSUMER,
            attributes=attributes,
            links=links,
        )
        span.end()
        return records


class RecordTracingConsumerInterceptor(_TracingBase):
    """One span per record, the child of the producer's span found in its headers.

    Thread-safety: called on the thread that calls ``poll()``.
    """

    def on_consume(self, records: ConsumerRecords) -> ConsumerRecords:
        """Record one ``process`` span per record and hand the records on unchanged."""
        for record in records:
            attributes = {
                **self._common,
                "messaging.operation.type": "process",
                "messaging.operation.name": "process",
                "messaging.destination.name": record.topic,
                "messaging.destination.partition.id": str(record.partition),
                "messaging.kafka.offset": record.offset,
            }
            key = record.key
            if isinstance(key, (bytes, bytearray)):
                try:
                    key = bytes(key).decode("utf-8")
                except UnicodeDecodeError:
                    key = None
            if isinstance(key, str):
                attributes["messaging.kafka.message.key"] = key
            if record.value is None:
                attributes["messaging.kafka.message.tombstone"] = True
            elif record.serialized_value_size >= 0:
                attributes["messaging.message.body.size"] = record.serialized_value_size
            span = self._tracer.start_span(
                f"process {record.topic}",
                context=self._context_of(record),
                kind=self._trace.SpanKind.CONSUMER,
                attributes=attributes,
            )
            span.end()
        return records
