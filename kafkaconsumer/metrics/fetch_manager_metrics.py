"""The consumer's ``consumer-fetch-manager-metrics`` group (Java ``FetchMetricsManager``)."""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping

from kafkaconsumer.metrics.metric_name import MetricName
from kafkaconsumer.metrics.metrics import Metrics, Sensor
from kafkaconsumer.metrics.stats import (
    Avg,
    CumulativeCount,
    CumulativeSum,
    Max,
    Min,
    Rate,
    Stat,
    Value,
    WindowedCount,
)
from kafkaconsumer.structs import TopicPartition


def _topic_tag(topic: str) -> str:
    # Java's fetch-manager metrics write topic names with '.' replaced by '_' in tags.
    return topic.replace(".", "_")


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
        # The sensors made per topic and per partition, found without building their names
        # again (the fetcher records per partition response).
        # Written under _lock; looked up without it first (one dict read), then again under it.
        self._topic_sensors: dict[str, tuple[Sensor, Sensor]] = {}
        self._partition_sensors: dict[TopicPartition, tuple[Sensor, Sensor]] = {}
        # Partitions whose sensors record but whose metrics are not published yet.
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
        now = self.metrics.time.monotonic_ms()
        self._lag.record(lag, now)
        self._sensors_of_partition(tp)[0].record(lag, now)

    def record_lead(self, tp: TopicPartition, lead: int) -> None:
        """Records between the log start offset and the position."""
        now = self.metrics.time.monotonic_ms()
        self._lead.record(lead, now)
        self._sensors_of_partition(tp)[1].record(lead, now)

    def record_lag_and_lead(self, tp: TopicPartition, lag: int | None, lead: int | None) -> None:
        """:meth:`record_lag` and :meth:`record_lead` together (either skipped when None), at
        one time and under one acquisition of the registry's lock: the collector records both
        once per partition response."""
        if lag is None and lead is None:
            return
        registry = self.metrics
        now = registry.time.monotonic_ms()
        lag_sensor, lead_sensor = self._sensors_of_partition(tp)
        values: list[tuple[Sensor, float]] = []
        if lag is not None:
            values += ((self._lag, lag), (lag_sensor, lag))
        if lead is not None:
            values += ((self._lead, lead), (lead_sensor, lead))
        registry.record_all(values, now)

    def remove_partition(self, tp: TopicPartition) -> None:
        """Drop the per-partition metrics of an unassigned partition."""
        # Under the publish lock: a publication running now finishes before the partition is
        # forgotten, or later finds it gone. The sensors (and the reporters told of their
        # metrics) go after that lock is let go.
        with self.metrics.publish_lock:
            with self._lock:
                self._partition_sensors.pop(tp, None)
                self._unpublished.discard(tp)
        self.metrics.remove_sensor(f"{tp}.records-lag")
        self.metrics.remove_sensor(f"{tp}.records-lead")

    def retain_partitions(self, assigned: Collection[TopicPartition]) -> None:
        """Drop the per-partition metrics of every partition not in ``assigned`` (Java's
        ``FetchMetricsManager.maybeUpdateAssignment``, on each assignment change)."""
        with self._lock:
            gone = [tp for tp in self._partition_sensors if tp not in assigned]
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

    def _sensors_of_partition(self, tp: TopicPartition) -> tuple[Sensor, Sensor]:
        sensors = self._partition_sensors.get(tp)
        if sensors is not None:
            return sensors
        registry = self.metrics
        if registry.has_reporters:
            # Reporters hear of each metric as it is made (and run outside our lock).
            sensors = self._new_partition_sensors(tp, publish=True)
            with self._lock:
                return self._partition_sensors.setdefault(tp, sensors)
        with self._lock:
            sensors = self._partition_sensors.get(tp)
            if sensors is not None:
                return sensors
            sensors = self._partition_sensors[tp] = self._new_partition_sensors(tp, publish=False)
            first = not self._unpublished
            self._unpublished.add(tp)
        if first:
            registry.defer(self._publish_partitions)
        return sensors

    def _new_partition_sensors(self, tp: TopicPartition, publish: bool) -> tuple[Sensor, Sensor]:
        lag = self.metrics.sensor(f"{tp}.records-lag")
        lead = self.metrics.sensor(f"{tp}.records-lead")
        if publish:
            names = self._partition_metric_names(tp)
            for i, stat in enumerate(self._partition_stats()):
                (lag if i < 3 else lead).add(names[i], stat)
        else:
            stats = self._partition_stats()
            lag.add_stats(stats[:3])
            lead.add_stats(stats[3:])
        return lag, lead

    @staticmethod
    def _partition_stats() -> tuple[Stat, ...]:
        # records-lag, -lag-max, -lag-avg, records-lead, -lead-min, -lead-avg
        return (Value(), Max(), Avg(), Value(), Min(), Avg())

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
            sensors_of = [(tp, self._partition_sensors.get(tp)) for tp in pending]
        for tp, sensors in sensors_of:
            if sensors is None:
                continue
            stats = sensors[0].stats + sensors[1].stats
            for i, name in enumerate(self._partition_metric_names(tp)):
                sensors[0 if i < 3 else 1].publish(name, stats[i])
