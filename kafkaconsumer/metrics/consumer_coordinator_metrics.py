"""The consumer's ``consumer-coordinator-metrics`` group (Java
``ConsumerCoordinatorMetrics``)."""

from __future__ import annotations

from collections.abc import Callable

from kafkaconsumer.metrics.metrics import Metrics, Sensor
from kafkaconsumer.metrics.stats import (
    Avg,
    CumulativeCount,
    CumulativeSum,
    Max,
    Rate,
    WindowedCount,
)


class ConsumerCoordinatorMetrics:
    """The ``consumer-coordinator-metrics`` group (commits, joins, syncs, heartbeats,
    rebalances), mirroring Java's ``ConsumerCoordinatorMetrics`` and ``GroupCoordinatorMetrics``.

    ``assigned_partitions`` and ``last_heartbeat_ms`` are callables the coordinator supplies for
    the gauges.

    Thread-safety: safe from any thread (the registry's lock).
    """

    GROUP = "consumer-coordinator-metrics"

    def __init__(
        self,
        metrics: Metrics,
        client_id: str,
        *,
        assigned_partitions: Callable[[], int] | None = None,
        last_heartbeat_ms: Callable[[], int | None] | None = None,
    ) -> None:
        """Register the group's sensors and metrics in ``metrics`` for ``client_id``; the two
        callables, when given, are read by the ``assigned-partitions`` and
        ``last-heartbeat-seconds-ago`` gauges.
        """
        # The registry and the group's sensors: set once here.
        self.metrics = metrics
        g, t = self.GROUP, {"client-id": client_id}
        m = metrics.metric_name

        def latency_sensor(sensor: str, prefix: str, what: str) -> Sensor:
            s = metrics.sensor(sensor)
            s.add(
                m(
                    f"{prefix}-latency-avg" if prefix == "commit" else f"{prefix}-time-avg",
                    g,
                    f"Average {what} time (ms)",
                    t,
                ),
                Avg(),
            )
            s.add(
                m(
                    f"{prefix}-latency-max" if prefix == "commit" else f"{prefix}-time-max",
                    g,
                    f"Longest {what} time (ms)",
                    t,
                ),
                Max(),
            )
            s.add(m(f"{prefix}-rate", g, f"{what} per second", t), Rate(WindowedCount()))
            s.add(m(f"{prefix}-total", g, f"{what} in total", t), CumulativeCount())
            return s

        self._commit = latency_sensor("commit-latency", "commit", "offset commits")
        self._join = latency_sensor("join-latency", "join", "group joins")
        self._sync = latency_sensor("sync-latency", "sync", "group syncs")
        self._heartbeat = metrics.sensor("heartbeat-latency")
        self._heartbeat.add(
            m("heartbeat-response-time-max", g, "Longest heartbeat response time (ms)", t), Max()
        )
        self._heartbeat.add(
            m("heartbeat-rate", g, "Heartbeats per second", t), Rate(WindowedCount())
        )
        self._heartbeat.add(m("heartbeat-total", g, "Heartbeats in total", t), CumulativeCount())
        self._rebalance = metrics.sensor("rebalance-latency")
        self._rebalance.add(m("rebalance-latency-avg", g, "Average rebalance time (ms)", t), Avg())
        self._rebalance.add(m("rebalance-latency-max", g, "Longest rebalance time (ms)", t), Max())
        self._rebalance.add(
            m("rebalance-latency-total", g, "Time spent rebalancing (ms)", t), CumulativeSum()
        )
        self._rebalance.add(m("rebalance-total", g, "Rebalances in total", t), CumulativeCount())
        self._failed = metrics.sensor("failed-rebalance")
        self._failed.add(
            m("failed-rebalance-total", g, "Failed rebalances in total", t), CumulativeCount()
        )
        # Written by the user's thread (the join loop) only; the gauge reads it anywhere.
        self._last_rebalance_ms: int | None = None
        time = metrics.time

        def seconds_since(ms: int | None) -> float:
            return -1.0 if ms is None else (time.monotonic_ms() - ms) / 1000.0

        metrics.add_gauge(
            m(
                "last-rebalance-seconds-ago",
                g,
                "Seconds since the last rebalance (-1 before the first)",
                t,
            ),
            lambda: seconds_since(self._last_rebalance_ms),
        )
        if last_heartbeat_ms is not None:
            metrics.add_gauge(
                m(
                    "last-heartbeat-seconds-ago",
                    g,
                    "Seconds since the last heartbeat (-1 before the first)",
                    t,
                ),
                lambda: seconds_since(last_heartbeat_ms()),
            )
        if assigned_partitions is not None:
            metrics.add_gauge(
                m("assigned-partitions", g, "Partitions currently assigned", t),
                lambda: float(assigned_partitions()),
            )

    def record_commit_latency(self, ms: float) -> None:
        """A commit round trip took ``ms``."""
        self._commit.record(ms)

    def record_join_latency(self, ms: float) -> None:
        """A JoinGroup round trip took ``ms``."""
        self._join.record(ms)

    def record_sync_latency(self, ms: float) -> None:
        """A SyncGroup round trip took ``ms``."""
        self._sync.record(ms)

    def record_heartbeat(self, response_ms: float) -> None:
        """A heartbeat was answered after ``response_ms``."""
        self._heartbeat.record(response_ms)

    def record_rebalance(self, ms: float, *, failed: bool = False) -> None:
        """A rebalance finished (or failed) after ``ms``."""
        if failed:
            self._failed.record()
            return
        self._rebalance.record(ms)
        self._last_rebalance_ms = self.metrics.time.monotonic_ms()
