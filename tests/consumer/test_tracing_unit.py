"""Trace-context propagation through record headers, without a broker: what the producer
writes with ``tracing.inject.context`` and what the consumer interceptors read back."""

from __future__ import annotations

from typing import Any, cast

import pytest

from kafkaconsumer.tracing import _GETTER, inject_trace_context

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry import propagate, trace  # noqa: E402


def test_injected_context_is_extracted_again() -> None:
    """The current span's context goes into a traceparent header (replacing a stale one, other
    headers kept) and the header getter reads the same span back."""
    tracer = sdk_trace.TracerProvider().get_tracer("t")
    headers: list[tuple[str, bytes | None]] = [("app", b"1"), ("traceparent", b"stale")]
    with tracer.start_as_current_span("send") as span:
        inject_trace_context(headers)
        expected = span.get_span_context()
    assert [name for name, _ in headers].count("traceparent") == 1
    assert ("app", b"1") in headers
    extracted = trace.get_current_span(propagate.extract(headers, getter=cast(Any, _GETTER)))
    got = extracted.get_span_context()
    assert (got.trace_id, got.span_id) == (expected.trace_id, expected.span_id)


def test_without_a_current_span_nothing_is_injected() -> None:
    """Outside any span the headers stay as they were."""
    headers: list[tuple[str, bytes | None]] = [("app", b"1")]
    inject_trace_context(headers)
    assert headers == [("app", b"1")]
