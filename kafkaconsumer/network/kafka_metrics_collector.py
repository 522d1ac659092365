"""The client's metrics as OpenTelemetry points, for the pushes of client telemetry (KIP-714).

Java's ``KafkaMetricsCollector``, ``TelemetryMetricNamingConvention`` and ``SinglePointMetric``
in one module. Every metric of the client's registry gets a telemetry name: the domain
``org.apache.kafka``, the group with its ``-metrics`` suffix dropped and the name, lower case,
dots for dashes (``consumer-fetch-manager-metrics`` / ``fetch-latency-avg`` ->
``org.apache.kafka.consumer.fetch.manager.fetch.latency.avg``); its tags become attributes,
snake_case, without ``client_id`` (the broker knows the client from the connection).

Counters (a ``CumulativeSum``, ``CumulativeCount`` or ``WindowedCount`` statistic) are
monotonic sums, pushed as deltas since the previous push or as totals since the metric was
first seen, as the subscription asks; everything else is a gauge. :func:`encode_metrics_data`
writes the points as an OTLP ``MetricsData`` message with the ``opentelemetry-proto`` package,
imported on first use, so that a client that never pushes never loads protobuf.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafkaconsumer.metrics.metrics import KafkaMetric, Metrics
from kafkaconsumer.metrics.stats import CumulativeSum, WindowedCount
from kafkaconsumer.utils.clock import Time

logger = logging.getLogger(__name__)

__all__ = [
    "DOMAIN",
    "EXCLUDED_LABELS",
    "telemetry_metric_name",
    "telemetry_tags",
    "SinglePointMetric",
    "KafkaMetricsCollector",
    "encode_metrics_data",
]

#: The prefix of every telemetry metric name (Java's ``ClientTelemetryProvider.DOMAIN``).
DOMAIN = "org.apache.kafka"

#: Tags left out of the attributes: the broker adds the client id from the request context.
EXCLUDED_LABELS = frozenset({"client_id"})


def telemetry_metric_name(group: str, name: str, domain: str = DOMAIN) -> str:
    """The telemetry name of the metric ``name`` of ``group``."""
    cleaned_group = group.lower().replace("-", ".").replace(".metrics", "")
    return f"{domain}.{cleaned_group}.{name.lower().replace('-', '.')}"


def telemetry_tags(tags: Mapping[str, str]) -> dict[str, str]:
    """The tags as telemetry attributes: snake_case keys, the excluded ones dropped."""
    out = {}
    for key, value in tags.items():
        cleaned = key.lower().replace("-", "_")
        if cleaned not in EXCLUDED_LABELS:
            out[cleaned] = value
    return out


class SinglePointMetric:
    """One metric at one instant: a gauge, or a monotonic sum (cumulative or delta).

    Thread-safety: immutable after construction.
    """

    __slots__ = ("name", "attributes", "value", "time_ns", "kind", "start_ns")

    GAUGE = "gauge"
    SUM = "sum"
    DELTA_SUM = "delta_sum"

    def __init__(
        self,
        name: str,
        attributes: Mapping[str, str],
        value: float,
        time_ns: int,
        kind: str,
        start_ns: int | None = None,
    ) -> None:
        """A point of ``kind`` (``GAUGE``, ``SUM`` or ``DELTA_SUM``) at ``time_ns`` (Unix
        nanoseconds); sums cover ``start_ns`` to ``time_ns``."""
        self.name = name
        self.attributes = dict(attributes)
        self.value = value
        self.time_ns = time_ns
        self.kind = kind
        self.start_ns = start_ns

    def __repr__(self) -> str:
        return f"SinglePointMetric({self.name!r}, {self.kind}, {self.value!r})"


def _is_sum(metric: KafkaMetric) -> bool:
    return isinstance(metric.stat, (WindowedCount, CumulativeSum))


class KafkaMetricsCollector:
    """Reads a client's metrics registry into telemetry points, keeping what deltas need.

    The registry is read at each push (its metrics are not followed one by one as Java's
    reporter does, so that the registry may keep deferring the publication of per-partition
    metrics): a metric is first seen at the push after it appears, and forgotten at the first
    push after it is gone.

    Thread-safety: :meth:`collect` and :meth:`reset` may be called from any thread; one leaf
    lock, ``_lock``, guards the ledger.
    """

    def __init__(self, metrics: Metrics, time: Time) -> None:
        """Collect from ``metrics``; point times are ``time.wall_ms()``."""
        self._metrics = metrics  # set once
        self._time = time  # set once
        self._lock = threading.Lock()  # a leaf
        # Per telemetry key: when the collector first saw the metric (Unix ms), and the value
        # and time of the last delta pushed. Guarded by _lock.
        self._first_seen_ms: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
        self._last: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, float]] = {}

    def reset(self) -> None:
        """Forget every start time and last value (the subscription's temporality changed)."""
        with self._lock:
            self._first_seen_ms.clear()
            self._last.clear()

    def collect(self, selector: Callable[[str], bool], delta: bool) -> list[SinglePointMetric]:
        """The points of every metric whose telemetry name ``selector`` accepts; sums as
        deltas since the previous collection when ``delta``, else as totals."""
        now_ms = self._time.wall_ms()
        now_ns = now_ms * 1_000_000
        points: list[SinglePointMetric] = []
        seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
        for metric in self._metrics.kafka_metrics():
            mn = metric.metric_name
            name = telemetry_metric_name(mn.group, mn.name)
            attributes = telemetry_tags(mn.tags)
            key = (name, tuple(sorted(attributes.items())))
            seen.add(key)
            try:
                value = float(metric.metric_value())
            except Exception:  # noqa: BLE001 - one broken metric must not stop the push
                logger.debug("metric %s could not be read for telemetry", mn, exc_info=True)
                continue
            is_sum = _is_sum(metric)
            with self._lock:
                first_ms = self._first_seen_ms.setdefault(key, now_ms)
                if not (is_sum and selector(name)):
                    start_ns = None
                elif delta:
                    last = self._last.get(key)
                    self._last[key] = (now_ms, value)
                    start_ns = (last[0] if last is not None else first_ms) * 1_000_000
                    if last is not None:
                        value -= last[1]
                else:
                    start_ns = first_ms * 1_000_000
            if not selector(name):
                continue
            if not is_sum:
                kind = SinglePointMetric.GAUGE
            else:
                kind = SinglePointMetric.DELTA_SUM if delta else SinglePointMetric.SUM
            points.append(SinglePointMetric(name, attributes, value, now_ns, kind, start_ns))
        with self._lock:
            for key in [k for k in self._first_seen_ms if k not in seen]:
                del self._first_seen_ms[key]
                self._last.pop(key, None)
        return points


def encode_metrics_data(
    points: Sequence[SinglePointMetric], resource_attributes: Mapping[str, str]
) -> bytes:
    """The points as a serialized OTLP ``MetricsData``: one ``ResourceMetrics`` per point with
    the client's resource attributes (as Java's client writes them)."""
    # Imported here: protobuf and the generated OTLP classes cost a client that never pushes
    # start-up time.
    from opentelemetry.proto.common.v1 import common_pb2
    from opentelemetry.proto.metrics.v1 import metrics_pb2
    from opentelemetry.proto.resource.v1 import resource_pb2

    def key_values(attrs: Mapping[str, str]) -> list[Any]:
        return [
            common_pb2.KeyValue(key=k, value=common_pb2.AnyValue(string_value=v))
            for k, v in attrs.items()
        ]

    resource = resource_pb2.Resource(attributes=key_values(resource_attributes))
    data = metrics_pb2.MetricsData()
    for point in points:
        dp = metrics_pb2.NumberDataPoint(
            time_unix_nano=point.time_ns,
            as_double=point.value,
            attributes=key_values(point.attributes),
        )
        if point.start_ns is not None:
            dp.start_time_unix_nano = point.start_ns
        metric = metrics_pb2.Metric(name=point.name)
        if point.kind == SinglePointMetric.GAUGE:
            metric.gauge.data_points.append(dp)
        else:
            metric.sum.is_monotonic = True
            metric.sum.aggregation_temporality = (
                metrics_pb2.AGGREGATION_TEMPORALITY_DELTA
                if point.kind == SinglePointMetric.DELTA_SUM
                else metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE
            )
            metric.sum.data_points.append(dp)
        rm = data.resource_metrics.add()
        rm.resource.CopyFrom(resource)
        rm.scope_metrics.add().metrics.append(metric)
    return bytes(data.SerializeToString())
