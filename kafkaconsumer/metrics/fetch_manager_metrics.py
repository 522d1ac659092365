"""The consumer's ``consumer-fetch-manager-metrics`` group (Java ``FetchMetricsManager``)."""

from __future__ import annotations

import math
import threading
from collections.abc import Collection, Mapping

from kafkaconsumer.metrics.metric_config import MetricConfig
from kafkaconsumer.metrics.metric_name import MetricName
from kafkaconsumer.metrics.metrics import KafkaMetric, Metrics, Sensor
from kafkaconsumer.metrics.stats import (
    Avg,
    CumulativeCount,
    CumulativeSum,
    Max,
    Min,
    Rate,
    Stat,
    WindowedCount,
)
from kafkaconsumer.structs import TopicPartition


def _topic_tag(topic: str) -> str:
    # Java's fetch-manager metrics write topic names with '.' replaced by '_' in tags.
    return topic.replace(".", "_")


# The statistics of one partition's lag and lead, in the order they are published:
# records-lag, -lag-max, -lag-avg, records-lead, -lead-min, -lead-avg.
_LAG, _LAG_MAX, _LAG_AVG, _LEAD, _LEAD_MIN, _LEAD_AVG = range(6)
# A windowed statistic's starting value per window (Max, Avg and Min of stats.py).
_INITIAL = {_LAG_MAX: -math.inf, _LAG_AVG: 0.0, _LEAD_MIN: math.inf, _LEAD_AVG: 0.0}


class _PartitionLagLead:
    """The six lag and lead statistics of one partition in one object: the latest values, and
    the time windows of the largest, smallest and average values.

    They behave as ``Value``, ``Max``, ``Avg``, ``Value``, ``Min`` and ``Avg`` of stats.py would
    (same windows, same purging, NaN with no samples), but a consumer of thousands of
    partitions makes one object per partition (and four lists on its first record) instead
    of two sensors and six statistics with a list and a sample object each: that set-up, and
    the garbage collections its allocations triggered, were most of the fixed cost of a
    partition's first fetch. Each windowed statistic keeps its windows in one flat list,
    ``[current, start_ms, count, value, start_ms, count, value, ...]``.

    Thread-safety: not thread-safe itself; recorded and measured under the registry's
    ``Metrics._lock``, as a sensor's statistics are.
    """

    __slots__ = ("lag", "lead", "_windows")

    def __init__(self) -> None:
        # All guarded by the registry's Metrics._lock.
        self.lag = math.nan
        self.lead = math.nan
        # The windows of each statistic by its index (None for the latest values and those not
        # recorded yet); made on the first record.
        self._windows: list[list[float] | None] | None = None

    def record_lag(self, config: MetricConfig, lag: float, now_ms: int) -> None:
        """Account one lag value."""
        self.lag = lag
        self._record(_LAG_MAX, config, lag, now_ms)
        self._record(_LAG_AVG, config, lag, now_ms)

    def record_lead(self, config: MetricConfig, lead: float, now_ms: int) -> None:
        """Account one lead value."""
        self.lead = lead
        self._record(_LEAD_MIN, config, lead, now_ms)
        self._record(_LEAD_AVG, config, lead, now_ms)

    def record_one(self, which: int, config: MetricConfig, value: float, now_ms: int) -> None:
        """Account ``value`` in the statistic ``which`` alone."""
        if which == _LAG:
            self.lag = value
        elif which == _LEAD:
            self.lead = value
        else:
            self._record(which, config, value, now_ms)

    def _record(self, which: int, config: MetricConfig, value: float, now_ms: int) -> None:
        windows = self._windows
        if windows is None:
            windows = self._windows = [None] * 6
        w = windows[which]
        if w is None:
            w = windows[which] = [0, now_ms, 0, _INITIAL[which]]
        i = 1 + 3 * int(w[0])
        if now_ms - w[i] >= config.time_window_ms:
            # The next window, reused round-robin once there are config.samples of them.
            current = (int(w[0]) + 1) % config.samples
            w[0] = current
            i = 1 + 3 * current
            if i >= len(w):
                w += (now_ms, 0, _INITIAL[which])
            else:
                w[i] = now_ms
                w[i + 1] = 0
                w[i + 2] = _INITIAL[which]
        if which == _LAG_MAX:
            w[i + 2] = max(w[i + 2], value)
        elif which == _LEAD_MIN:
            w[i + 2] = min(w[i + 2], value)
        else:
            w[i + 2] += value
        w[i + 1] += 1

    def measure(self, which: int, config: MetricConfig, now_ms: int) -> float:
        """The current value of the statistic ``which``."""
        if which == _LAG:
            return self.lag
        if which == _LEAD:
            return self.lead
        windows = self._windows
        w = None if windows is None else windows[which]
        if w is None:
            return math.nan
        # A window older than the whole sampled span no longer counts.
        expire = config.samples * config.time_window_ms
        initial = _INITIAL[which]
        for i in range(1, len(w), 3):
            if now_ms - w[i] >= expire:
                w[i] = now_ms
                w[i + 1] = 0
                w[i + 2] = initial
        count = sum(w[2::3])
        if count == 0:
            return math.nan
        values = w[3::3]
        if which == _LAG_MAX:
            return float(max(values))
        if which == _LEAD_MIN:
            return float(min(values))
        return float(sum(values)) / count


class _PartitionStat(Stat):
    """One of a partition's lag and lead statistics, as its published metric reads it.

    Thread-safety: as :class:`_PartitionLagLead`.
    """

    __slots__ = ("_stats", "_which")

    def __init__(self, stats: _PartitionLagLead, which: int) -> None:
        """The statistic ``which`` (``_LAG`` ... ``_LEAD_AVG``) of ``stats``."""
        self._stats = stats  # set once
        self._which = which  # set once

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        """Account ``value`` in this statistic alone."""
        self._stats.record_one(self._which, config, value, now_ms)

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        """The statistic's current value."""
        return self._stats.measure(self._which, config, now_ms)


class FetchManagerMetrics:
    """The ``consumer-fetch-manager-metrics`` group (Java ``FetchMetricsManager``).

    The fetcher calls :meth:`record_fetch_latency` per fetch response,
    :meth:`record_fetched` with per-topic ``(bytes, records)`` once per response (or
    :meth:`record_partition_fetched` per partition), :meth:`record_lag_and_lead` (or
    :meth:`record_lag` / :meth:`record_lead`) per partition after each fetch, and :meth:`retain_partitions` when the assignment changes.

    Thread-safety: safe from any thread; its own lock guards the per-topic and per-partition
    sensor tables (order: ``Metrics.publish_lock`` > this lock > ``Metrics._lock``).
    """

    GROUP = "consumer-fetch-manager-metrics"

    def __init__(self, metrics: Metrics, client_id: str) -> None:
        """Register the group's sensors and metrics in ``metrics`` for ``client_id``."""
        # The registry, the tags and the group's sensors: set once here.
        self.metrics = metrics
        self.client_id = client_id
        self._tags = {"client-id": client_id}
        g, t = self.GROUP, self._tags
        m = metrics.metric_name
        self._bytes = metrics.sensor("bytes-fetched")
        self._bytes.add(m("fetch-size-avg", g, "Average bytes fetched per request", t), Avg())
        self._bytes.add(m("fetch-size-max", g, "Most bytes fetched in one request", t), Max())
        self._bytes.add(m("bytes-consumed-rate", g, "Bytes consumed per second", t), Rate())
        self._bytes.add(m("bytes-consumed-total", g, "Bytes consumed in total", t), CumulativeSum())
        self._records = metrics.sensor("records-fetched")
        self._records.add(m("records-per-request-avg", g, "Average records per request", t), Avg())
        self._records.add(m("records-consumed-rate", g, "Records consumed per second", t), Rate())
        self._records.add(
            m("records-consumed-total", g, "Records consumed in total", t), CumulativeSum()
        )
        self._latency = metrics.sensor("fetch-latency")
        self._latency.add(m("fetch-latency-avg", g, "Average fetch request latency (ms)", t), Avg())
        self._latency.add(m("fetch-latency-max", g, "Largest fetch request latency (ms)", t), Max())
        self._latency.add(m("fetch-rate", g, "Fetch requests per second", t), Rate(WindowedCount()))
        self._latency.add(m("fetch-total", g, "Fetch requests in total", t), CumulativeCount())
        self._lag = metrics.sensor("records-lag")
        self._lag.add(m("records-lag-max", g, "Largest lag in records of any partition", t), Max())
        self._lead = metrics.sensor("records-lead")
        self._lead.add(
            m("records-lead-min", g, "Smallest lead in records of any partition", t), Min()
        )
        self._throttle = metrics.sensor("fetch-throttle-time")
        self._throttle.add(
            m("fetch-throttle-time-avg", g, "Average broker throttle time (ms)", t), Avg()
        )
        self._throttle.add(
            m("fetch-throttle-time-max", g, "Largest broker throttle time (ms)", t), Max()
        )
        # The sensors made per topic, and the statistics per partition, found without building
        # their names again (the fetcher records per partition response).
        # Written under _lock; looked up without it first (one dict read), then again under it.
        self._topic_sensors: dict[str, tuple[Sensor, Sensor]] = {}
        self._partition_stats: dict[TopicPartition, _PartitionLagLead] = {}
        # Partitions whose statistics record but whose metrics are not published yet.
        self._unpublished: set[TopicPartition] = set()  # guarded by _lock
        #: Below Metrics.publish_lock, above Metrics._lock.
        self._lock = threading.RLock()

    def record_fetch_latency(self, latency_ms: float) -> None:
        """One fetch response arrived ``latency_ms`` after its request was sent."""
        self._latency.record(latency_ms)

    def record_throttle_time(self, throttle_ms: float) -> None:
        """The broker reported ``throttle_time_ms`` in a fetch response."""
        self._throttle.record(throttle_ms)

    def record_fetched(self, per_topic: Mapping[str, tuple[int, int]]) -> None:
        """Record one response's consumption: ``{topic: (bytes, records)}``."""
        now = self.metrics.time.monotonic_ms()
        total_bytes = 0
        total_records = 0
        for topic, (nbytes, nrecords) in per_topic.items():
            fetched_bytes, fetched_records = self._sensors_of_topic(topic)
            fetched_bytes.record(nbytes, now)
            fetched_records.record(nrecords, now)
            total_bytes += nbytes
            total_records += nrecords
        self._bytes.record(total_bytes, now)
        self._records.record(total_records, now)

    def record_partition_fetched(self, tp: TopicPartition, nbytes: int, nrecords: int) -> None:
        """One partition's share, recorded as a response of its own."""
        now = self.metrics.time.monotonic_ms()
        fetched_bytes, fetched_records = self._sensors_of_topic(tp.topic)
        fetched_bytes.record(nbytes, now)
        fetched_records.record(nrecords, now)
        self._bytes.record(nbytes, now)
        self._records.record(nrecords, now)

    def record_lag(self, tp: TopicPartition, lag: int) -> None:
        """Records between the position and the high watermark (or LSO)."""
        self.record_lag_and_lead(tp, lag, None)

    def record_lead(self, tp: TopicPartition, lead: int) -> None:
        """Records between the log start offset and the position."""
        self.record_lag_and_lead(tp, None, lead)

    def record_lag_and_lead(self, tp: TopicPartition, lag: int | None, lead: int | None) -> None:
        """:meth:`record_lag` and :meth:`record_lead` together (either skipped when None), at
        one time and under one acquisition of the registry's lock: the collector records both
        once per partition response."""
        if lag is None and lead is None:
            return
        registry = self.metrics
        now = registry.time.monotonic_ms()
        stats = self._stats_of_partition(tp)
        config = registry.config
        with registry._lock:
            if lag is not None:
                self._lag._record_locked(config, lag, now)
                stats.record_lag(config, lag, now)
            if lead is not None:
                self._lead._record_locked(config, lead, now)
                stats.record_lead(config, lead, now)

    def remove_partition(self, tp: TopicPartition) -> None:
        """Drop the per-partition metrics of an unassigned partition."""
        # Under the publish lock: a publication running now finishes before the partition is
        # forgotten, or later finds it gone. The metrics (and the reporters told of them) go
        # after that lock is let go; they are filed under the two sensor names Java uses.
        with self.metrics.publish_lock:
            with self._lock:
                self._partition_stats.pop(tp, None)
                self._unpublished.discard(tp)
        self.metrics.remove_sensor(f"{tp}.records-lag")
        self.metrics.remove_sensor(f"{tp}.records-lead")

    def retain_partitions(self, assigned: Collection[TopicPartition]) -> None:
        """Drop the per-partition metrics of every partition not in ``assigned`` (Java's
        ``FetchMetricsManager.maybeUpdateAssignment``, on each assignment change)."""
        with self._lock:
            gone = [tp for tp in self._partition_stats if tp not in assigned]
        for tp in gone:
            self.remove_partition(tp)

    def _sensors_of_topic(self, topic: str) -> tuple[Sensor, Sensor]:
        sensors = self._topic_sensors.get(topic)
        if sensors is not None:
            return sensors
        with self._lock:
            sensors = self._topic_sensors.get(topic)
            if sensors is None:
                sensors = self._topic_sensors[topic] = self._new_topic_sensors(topic)
            return sensors

    def _new_topic_sensors(self, topic: str) -> tuple[Sensor, Sensor]:
        g = self.GROUP
        tags = {"client-id": self.client_id, "topic": _topic_tag(topic)}
        m = self.metrics.metric_name
        b = self.metrics.sensor(f"topic.{topic}.bytes-fetched")
        b.add(
            m("fetch-size-avg", g, "Average bytes fetched per request for the topic", tags), Avg()
        )
        b.add(
            m("fetch-size-max", g, "Most bytes fetched in one request for the topic", tags), Max()
        )
        b.add(m("bytes-consumed-rate", g, "Bytes consumed per second for the topic", tags), Rate())
        b.add(
            m("bytes-consumed-total", g, "Bytes consumed in total for the topic", tags),
            CumulativeSum(),
        )
        r = self.metrics.sensor(f"topic.{topic}.records-fetched")
        r.add(
            m("records-per-request-avg", g, "Average records per request for the topic", tags),
            Avg(),
        )
        r.add(
            m("records-consumed-rate", g, "Records consumed per second for the topic", tags), Rate()
        )
        r.add(
            m("records-consumed-total", g, "Records consumed in total for the topic", tags),
            CumulativeSum(),
        )
        return b, r

    def _stats_of_partition(self, tp: TopicPartition) -> _PartitionLagLead:
        stats = self._partition_stats.get(tp)
        if stats is not None:
            return stats
        if self.metrics.has_reporters:
            # Reporters hear of each metric as it is made (and run outside our lock).
            made = _PartitionLagLead()
            with self._lock:
                stats = self._partition_stats.setdefault(tp, made)
            if stats is made:
                self._publish_partition(tp, stats)
            return stats
        with self._lock:
            stats = self._partition_stats.get(tp)
            if stats is not None:
                return stats
            stats = self._partition_stats[tp] = _PartitionLagLead()
            first = not self._unpublished
            self._unpublished.add(tp)
        if first:
            self.metrics.defer(self._publish_partitions)
        return stats

    def _partition_metric_names(self, tp: TopicPartition) -> tuple[MetricName, ...]:
        g = self.GROUP
        m = self.metrics.metric_name
        tags = {
            "client-id": self.client_id,
            "topic": _topic_tag(tp.topic),
            "partition": str(tp.partition),
        }
        return (
            m("records-lag", g, "Latest lag of the partition", tags),
            m("records-lag-max", g, "Largest lag of the partition", tags),
            m("records-lag-avg", g, "Average lag of the partition", tags),
            m("records-lead", g, "Latest lead of the partition", tags),
            m("records-lead-min", g, "Smallest lead of the partition", tags),
            m("records-lead-avg", g, "Average lead of the partition", tags),
        )

    def _publish_partitions(self) -> None:
        # Run by the registry under its publish lock (see remove_partition).
        with self._lock:
            pending, self._unpublished = self._unpublished, set()
            stats_of = [(tp, self._partition_stats.get(tp)) for tp in pending]
        for tp, stats in stats_of:
            if stats is not None:
                self._publish_partition(tp, stats)

    def _publish_partition(self, tp: TopicPartition, stats: _PartitionLagLead) -> None:
        registry = self.metrics
        sensors = (f"{tp}.records-lag", f"{tp}.records-lead")
        for which, name in enumerate(self._partition_metric_names(tp)):
            metric = KafkaMetric(name, stat=_PartitionStat(stats, which), registry=registry)
            registry._register(metric, sensor=sensors[which // 3])
