"""The share consumer's metric groups: ``consumer-share-fetch-manager-metrics`` (Java
``ShareFetchMetricsManager``) and ``consumer-share-coordinator-metrics`` (the heartbeat part of
Java's ``HeartbeatMetricsManager`` for a share member)."""

from __future__ import annotations

from collections.abc import Callable

from kafkaconsumer.metrics.metrics import Metrics
from kafkaconsumer.metrics.stats import (
    Avg,
    CumulativeCount,
    CumulativeSum,
    Max,
    Rate,
    WindowedCount,
)

__all__ = ["ShareFetchMetricsManager", "ShareCoordinatorMetrics"]


class ShareFetchMetricsManager:
    """The ``consumer-share-fetch-manager-metrics`` group: bytes and records fetched per
    ShareFetch, fetch latency and request rate, throttle time, acknowledgements sent and those
    that failed (counted in records, as Java does).

    Thread-safety: safe from any thread; sensors record under the registry's lock.
    """

    GROUP = "consumer-share-fetch-manager-metrics"

    def __init__(self, metrics: Metrics, client_id: str) -> None:
        """Register the group's sensors in ``metrics`` for ``client_id``."""
        g, t = self.GROUP, {"client-id": client_id}
        m = metrics.metric_name
        # The sensors: set once here.
        self._bytes = metrics.sensor("share-bytes-fetched")
        self._bytes.add(m("fetch-size-avg", g, "Average bytes fetched per request", t), Avg())
        self._bytes.add(m("fetch-size-max", g, "Most bytes fetched in one request", t), Max())
        self._bytes.add(m("bytes-consumed-rate", g, "Bytes fetched per second", t), Rate())
        self._bytes.add(m("bytes-consumed-total", g, "Bytes fetched in total", t), CumulativeSum())
        self._records = metrics.sensor("share-records-fetched")
        self._records.add(m("records-per-request-avg", g, "Average records per request", t), Avg())
        self._records.add(m("records-per-request-max", g, "Most records in a request", t), Max())
        self._records.add(m("records-fetched-rate", g, "Records fetched per second", t), Rate())
        self._records.add(
            m("records-fetched-total", g, "Records fetched in total", t), CumulativeSum()
        )
        self._latency = metrics.sensor("share-fetch-latency")
        self._latency.add(m("fetch-latency-avg", g, "Average ShareFetch time (ms)", t), Avg())
        self._latency.add(m("fetch-latency-max", g, "Longest ShareFetch time (ms)", t), Max())
        self._latency.add(
            m("fetch-request-rate", g, "ShareFetch requests per second", t), Rate(WindowedCount())
        )
        self._latency.add(
            m("fetch-request-total", g, "ShareFetch requests in total", t), CumulativeCount()
        )
        self._throttle = metrics.sensor("share-fetch-throttle-time")
        self._throttle.add(
            m("fetch-throttle-time-avg", g, "Average broker throttle time (ms)", t), Avg()
        )
        self._throttle.add(
            m("fetch-throttle-time-max", g, "Longest broker throttle time (ms)", t), Max()
        )
        self._sent = metrics.sensor("share-sent-acknowledgements")
        self._sent.add(
            m("acknowledgements-send-rate", g, "Record acknowledgements sent per second", t),
            Rate(),
        )
        self._sent.add(
            m("acknowledgements-send-total", g, "Record acknowledgements sent in total", t),
            CumulativeSum(),
        )
        self._failed = metrics.sensor("share-failed-acknowledgements")
        self._failed.add(
            m("acknowledgements-error-rate", g, "Record acknowledgements failed per second", t),
            Rate(),
        )
        self._failed.add(
            m("acknowledgements-error-total", g, "Record acknowledgements failed in total", t),
            CumulativeSum(),
        )

    def record_fetch(self, latency_ms: float, size: int, records: int, throttle_ms: int) -> None:
        """One ShareFetch answered after ``latency_ms`` with ``size`` bytes of record data
        and ``records`` acquired records."""
        self._latency.record(latency_ms)
        self._bytes.record(size)
        self._records.record(records)
        self._throttle.record(throttle_ms)

    def record_acknowledgements_sent(self, count: int) -> None:
        """``count`` record acknowledgements went out."""
        if count:
            self._sent.record(count)

    def record_acknowledgements_failed(self, count: int) -> None:
        """``count`` record acknowledgements came back failed."""
        if count:
            self._failed.record(count)


class ShareCoordinatorMetrics:
    """The ``consumer-share-coordinator-metrics`` group: the share member's heartbeats.

    Thread-safety: safe from any thread; sensors record under the registry's lock, the gauge
    reads a callable that must be safe to call from any thread.
    """

    GROUP = "consumer-share-coordinator-metrics"

    def __init__(
        self, metrics: Metrics, client_id: str, last_heartbeat_ms: Callable[[], int | None]
    ) -> None:
        """Register the group in ``metrics`` for ``client_id``; ``last_heartbeat_ms`` gives
        when the last heartbeat went out (monotonic ms; None before the first)."""
        g, t = self.GROUP, {"client-id": client_id}
        m = metrics.metric_name
        time = metrics.time
        self._heartbeat = metrics.sensor("share-heartbeat-latency")  # set once here
        self._heartbeat.add(
            m("heartbeat-response-time-max", g, "Longest heartbeat response time (ms)", t), Max()
        )
        self._heartbeat.add(
            m("heartbeat-rate", g, "Heartbeats per second", t), Rate(WindowedCount())
        )
        self._heartbeat.add(m("heartbeat-total", g, "Heartbeats in total", t), CumulativeCount())

        def seconds_ago() -> float:
            sent = last_heartbeat_ms()
            return -1.0 if sent is None else (time.monotonic_ms() - sent) / 1000.0

        metrics.add_gauge(
            m(
                "last-heartbeat-seconds-ago",
                g,
                "Seconds since the last heartbeat (-1 before the first)",
                t,
            ),
            seconds_ago,
        )

    def record_heartbeat(self, response_ms: float) -> None:
        """A heartbeat was answered after ``response_ms``."""
        self._heartbeat.record(response_ms)
