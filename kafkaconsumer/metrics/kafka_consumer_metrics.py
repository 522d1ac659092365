"""The consumer's ``consumer-metrics`` poll metrics (Java ``KafkaConsumerMetrics``)."""

from __future__ import annotations

from kafkaconsumer.metrics.metrics import Metrics
from kafkaconsumer.metrics.stats import (
    Avg,
    CumulativeSum,
    Max,
)


class KafkaConsumerMetrics:
    """The ``consumer-metrics`` poll metrics (Java ``KafkaConsumerMetrics``).

    Call :meth:`record_poll_start` when ``poll()`` is entered and :meth:`record_poll_end` when it
    returns.

    Thread-safety: meant for the user's thread; the registry's lock makes reads safe anywhere.
    """

    GROUP = "consumer-metrics"

    def __init__(self, metrics: Metrics, client_id: str) -> None:
        """Register the group's sensors and metrics in ``metrics`` for ``client_id``."""
        # The registry and the group's sensors: set once here.
        self.metrics = metrics
        g, t = self.GROUP, {"client-id": client_id}
        m = metrics.metric_name
        self._between = metrics.sensor("time-between-poll")
        self._between.add(
            m("time-between-poll-avg", g, "Average time between polls (ms)", t), Avg()
        )
        self._between.add(
            m("time-between-poll-max", g, "Longest time between polls (ms)", t), Max()
        )
        self._idle = metrics.sensor("poll-idle-ratio-avg")
        self._idle.add(
            m("poll-idle-ratio-avg", g, "Average share of time spent inside poll()", t), Avg()
        )
        self._commit_sync = metrics.sensor("commit-sync-time-ns-total")
        self._commit_sync.add(
            m("commit-sync-time-ns-total", g, "Time spent in commit_sync (ns)", t), CumulativeSum()
        )
        self._committed = metrics.sensor("committed-time-ns-total")
        self._committed.add(
            m("committed-time-ns-total", g, "Time spent in committed (ns)", t), CumulativeSum()
        )
        # Written by the user's thread only (poll); the gauges read them anywhere.
        self._last_poll_ms: int | None = None
        self._poll_start_ms = 0
        self._time_since_last_poll_ms = 0
        time = metrics.time
        metrics.add_gauge(
            m("last-poll-seconds-ago", g, "Seconds since the last poll (-1 before the first)", t),
            lambda: (
                -1.0
                if self._last_poll_ms is None
                else (time.monotonic_ms() - self._last_poll_ms) / 1000.0
            ),
        )

    def record_poll_start(self, now_ms: int | None = None) -> None:
        """``poll()`` was entered."""
        now = self.metrics.time.monotonic_ms() if now_ms is None else now_ms
        last = self._last_poll_ms
        self._last_poll_ms = now
        self._poll_start_ms = now
        self._time_since_last_poll_ms = 0 if last is None else now - last
        if last is not None:
            self._between.record(self._time_since_last_poll_ms, now)

    def record_poll_end(self, now_ms: int | None = None) -> None:
        """``poll()`` is about to return."""
        now = self.metrics.time.monotonic_ms() if now_ms is None else now_ms
        in_poll = now - self._poll_start_ms
        span = self._time_since_last_poll_ms + in_poll
        if span > 0:
            self._idle.record(in_poll / span, now)

    def record_commit_sync(self, ns: int) -> None:
        """A commit_sync call took ``ns`` nanoseconds."""
        self._commit_sync.record(ns)

    def record_committed(self, ns: int) -> None:
        """A committed() call took ``ns`` nanoseconds."""
        self._committed.record(ns)
