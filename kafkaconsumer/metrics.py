"""A small metrics registry modelled on Java's ``org.apache.kafka.common.metrics``.

A :class:`Metrics` registry holds :class:`Sensor` objects; recording a value on a sensor updates
every statistic attached to it (:class:`Avg`, :class:`Max`, :class:`Min`, :class:`Rate`,
:class:`CumulativeSum`, :class:`CumulativeCount`, :class:`Value`, ...). Windowed statistics keep
``metrics.num.samples`` samples of ``metrics.sample.window.ms`` each, as Java does, so a rate is
"per second over roughly the last minute" by default. Each statistic is published under a
:class:`MetricName` ``(name, group, tags)``; :meth:`Metrics.metrics` returns
``{MetricName: float}`` (NaN where Java reports NaN: an average or maximum with no samples).

The consumer's own metric sets live at the bottom: :class:`FetchManagerMetrics`
(``consumer-fetch-manager-metrics``), :class:`ConsumerCoordinatorMetrics`
(``consumer-coordinator-metrics``) and :class:`KafkaConsumerMetrics` (``consumer-metrics``).

All times come from an injectable :class:`~kafkaconsumer.utils.clock.Time`, so tests drive
windows with a fake clock.
"""

from __future__ import annotations

import enum
import logging
import math
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, NamedTuple

from kafkaconsumer.config import config_value
from kafkaconsumer.errors import IllegalStateError
from kafkaconsumer.structs import TopicPartition
from kafkaconsumer.utils.clock import SYSTEM_TIME, Time

logger = logging.getLogger(__name__)

__all__ = [
    "MetricName",
    "MetricConfig",
    "RecordingLevel",
    "Stat",
    "Avg",
    "Max",
    "Min",
    "WindowedSum",
    "WindowedCount",
    "Rate",
    "CumulativeSum",
    "CumulativeCount",
    "Value",
    "KafkaMetric",
    "Sensor",
    "Metrics",
    "MetricsReporter",
    "FetchManagerMetrics",
    "ConsumerCoordinatorMetrics",
    "KafkaConsumerMetrics",
]


class MetricName:
    """Identity of one metric: ``name``, ``group`` and ``tags`` (Java ``MetricName``).

    Equality and hashing use name, group and tags; the description is informative only.
    """

    __slots__ = ("name", "group", "description", "_tags", "_key")

    def __init__(
        self, name: str, group: str, description: str = "", tags: Mapping[str, str] | None = None
    ) -> None:
        """Name a metric; ``tags`` is copied."""
        self.name = name
        self.group = group
        self.description = description
        self._tags = dict(tags or {})
        self._key = (name, group, tuple(sorted(self._tags.items())))

    @property
    def tags(self) -> Mapping[str, str]:
        """The tags, e.g. ``{"client-id": "consumer-g-1", "topic": "orders"}``."""
        return dict(self._tags)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MetricName) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"MetricName(name={self.name!r}, group={self.group!r}, tags={self._tags!r})"


class RecordingLevel(enum.IntEnum):
    """How detailed a sensor is (Java ``Sensor.RecordingLevel``); a registry records the sensors
    whose level is at most its configured one (``metrics.recording.level``)."""

    INFO = 0
    DEBUG = 1
    TRACE = 2

    @classmethod
    def for_name(cls, name: str) -> RecordingLevel:
        """The level called ``name`` (``"INFO"``, ``"DEBUG"`` or ``"TRACE"``, any case)."""
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown recording level {name!r} (INFO, DEBUG or TRACE)") from None

    def should_record(self, configured: RecordingLevel) -> bool:
        """Whether a sensor of this level records in a registry configured at ``configured``."""
        return self <= configured


class _MetricConfigBase(NamedTuple):
    samples: int
    time_window_ms: int
    recording_level: RecordingLevel


class MetricConfig(_MetricConfigBase):
    """Sampling parameters: ``samples`` windows of ``time_window_ms`` each, and the highest
    ``recording_level`` of the sensors that record (immutable)."""

    __slots__ = ()

    def __new__(
        cls,
        samples: int = 2,
        time_window_ms: int = 30000,
        recording_level: RecordingLevel = RecordingLevel.INFO,
    ) -> MetricConfig:
        if samples < 1:
            raise ValueError(f"samples must be >= 1, got {samples}")
        if time_window_ms < 1:
            raise ValueError(f"time_window_ms must be >= 1, got {time_window_ms}")
        return super().__new__(cls, samples, time_window_ms, RecordingLevel(recording_level))


class Stat:
    """A statistic fed by :meth:`record` and read by :meth:`measure`."""

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        """Account one recorded value."""
        raise NotImplementedError

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        """The current value of the statistic."""
        raise NotImplementedError


class _Sample:
    __slots__ = ("initial", "value", "event_count", "last_window_ms")

    def __init__(self, initial: float, now_ms: int) -> None:
        self.initial = initial
        self.value = initial
        self.event_count = 0
        self.last_window_ms = now_ms

    def reset(self, now_ms: int) -> None:
        self.value = self.initial
        self.event_count = 0
        self.last_window_ms = now_ms


class _SampledStat(Stat):
    """Keeps up to ``config.samples`` time windows; old windows are reused round-robin."""

    _initial = 0.0

    def __init__(self) -> None:
        self._samples: list[_Sample] = []
        self._current = 0

    def _current_sample(self, config: MetricConfig, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(self._initial, now_ms))
        sample = self._samples[self._current]
        if now_ms - sample.last_window_ms >= config.time_window_ms:
            self._current = (self._current + 1) % config.samples
            if self._current >= len(self._samples):
                self._samples.append(_Sample(self._initial, now_ms))
            sample = self._samples[self._current]
            sample.reset(now_ms)
        return sample

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        """Fold ``value`` into the current window."""
        samples = self._samples
        if samples:
            # The common case, inline (poll() records three statistics each call).
            sample = samples[self._current]
            if now_ms - sample.last_window_ms >= config.time_window_ms:
                sample = self._current_sample(config, now_ms)
        else:
            sample = self._current_sample(config, now_ms)
        self._update(sample, value)
        sample.event_count += 1

    def _update(self, sample: _Sample, value: float) -> None:
        raise NotImplementedError

    def _purge(self, config: MetricConfig, now_ms: int) -> None:
        # A window older than the whole sampled span no longer counts.
        expire = config.samples * config.time_window_ms
        for sample in self._samples:
            if now_ms - sample.last_window_ms >= expire:
                sample.reset(now_ms)

    def oldest_window_ms(self, now_ms: int) -> int:
        """Start of the oldest window still held (``now_ms`` when there is none)."""
        if not self._samples:
            return now_ms
        return min(s.last_window_ms for s in self._samples)

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        """Combine the live windows."""
        self._purge(config, now_ms)
        return self._combine(self._samples)

    def _combine(self, samples: list[_Sample]) -> float:
        raise NotImplementedError


class Avg(_SampledStat):
    """Mean of the values recorded in the live windows (NaN when none)."""

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value += value

    def _combine(self, samples: list[_Sample]) -> float:
        count = sum(s.event_count for s in samples)
        if count == 0:
            return math.nan
        return sum(s.value for s in samples) / count


class Max(_SampledStat):
    """Largest value recorded in the live windows (NaN when none)."""

    _initial = -math.inf

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value = max(sample.value, value)

    def _combine(self, samples: list[_Sample]) -> float:
        if sum(s.event_count for s in samples) == 0:
            return math.nan
        return max(s.value for s in samples)


class Min(_SampledStat):
    """Smallest value recorded in the live windows (NaN when none)."""

    _initial = math.inf

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value = min(sample.value, value)

    def _combine(self, samples: list[_Sample]) -> float:
        if sum(s.event_count for s in samples) == 0:
            return math.nan
        return min(s.value for s in samples)


class WindowedSum(_SampledStat):
    """Sum of the values recorded in the live windows."""

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value += value

    def _combine(self, samples: list[_Sample]) -> float:
        return float(sum(s.value for s in samples))


class WindowedCount(WindowedSum):
    """Number of recordings in the live windows."""

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value += 1.0


class Rate(Stat):
    """Per-second rate of a windowed sum (or count) over the elapsed sampled time.

    As in Java, the elapsed time is at least ``samples - 1`` full windows, so a burst right
    after start-up is not reported as a huge rate.
    """

    def __init__(self, stat: _SampledStat | None = None) -> None:
        """Divide ``stat`` (a windowed sum when None) by the sampled time."""
        self._stat = stat if stat is not None else WindowedSum()

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        """Record into the underlying windowed stat."""
        self._stat.record(config, value, now_ms)

    def window_size_ms(self, config: MetricConfig, now_ms: int) -> int:
        """The time span the rate divides by."""
        self._stat._purge(config, now_ms)
        elapsed = now_ms - self._stat.oldest_window_ms(now_ms)
        full = elapsed // config.time_window_ms
        minimum = config.samples - 1
        if full < minimum:
            elapsed += (minimum - full) * config.time_window_ms
        return max(elapsed, 1)

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        """Total over the windows divided by their span, per second."""
        total = self._stat.measure(config, now_ms)
        return total / (self.window_size_ms(config, now_ms) / 1000.0)


class CumulativeSum(Stat):
    """Sum of every value ever recorded."""

    def __init__(self) -> None:
        """Start at zero."""
        self._total = 0.0

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        """Add ``value``."""
        self._total += value

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        """The running total."""
        return self._total


class CumulativeCount(CumulativeSum):
    """Number of recordings ever made."""

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        """Count one recording."""
        self._total += 1.0


class Value(Stat):
    """The last value recorded (NaN before the first)."""

    def __init__(self) -> None:
        """Start with no value (NaN)."""
        self._value = math.nan

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        """Remember ``value``."""
        self._value = value

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        """The last value."""
        return self._value


class KafkaMetric:
    """One published metric: its name and a way to read its current value."""

    __slots__ = ("metric_name", "_read", "_stat", "_registry")

    def __init__(
        self,
        metric_name: MetricName,
        read: Callable[[], float] | None = None,
        *,
        stat: Stat | None = None,
        registry: Metrics | None = None,
    ) -> None:
        """Publish ``metric_name``; its value is ``read()``, or ``stat`` of a sensor in
        ``registry`` measured now (no closure per metric: a consumer of many partitions makes
        six per partition)."""
        if (read is None) == (stat is None) or (stat is not None and registry is None):
            raise ValueError("KafkaMetric needs either read, or stat and registry")
        self.metric_name = metric_name
        self._read = read
        self._stat = stat
        self._registry = registry

    def metric_value(self) -> float:
        """The current value."""
        stat = self._stat
        if stat is None:
            assert self._read is not None
            return self._read()
        registry = self._registry
        assert registry is not None
        with registry._lock:
            return stat.measure(registry.config, registry.time.monotonic_ms())

    def __repr__(self) -> str:
        return f"KafkaMetric({self.metric_name!r})"


class MetricsReporter:
    """Optional listener told about metrics as they come and go (Java ``MetricsReporter``)."""

    def init(self, metrics: list[KafkaMetric]) -> None:
        """Called once with the metrics that already exist."""

    def metric_change(self, metric: KafkaMetric) -> None:
        """A metric was added (or replaced)."""

    def metric_removal(self, metric: KafkaMetric) -> None:
        """A metric was removed."""

    def close(self) -> None:
        """The registry is closing."""


class Sensor:
    """A named recording point feeding several statistics.

    Its ``recording_level`` is fixed when it is made; a sensor above the registry's level is
    made as a sensor that never records (see :meth:`Metrics.sensor`), so that recording costs
    a recording sensor nothing extra.

    Thread-safety: recording and reading take the registry's lock, so the consumer thread and
    the heartbeat thread may record on sensors concurrently.
    """

    def __init__(
        self, registry: Metrics, name: str, recording_level: RecordingLevel = RecordingLevel.INFO
    ) -> None:
        """Create the sensor ``name`` in ``registry`` with no statistics yet."""
        self.name = name
        self.recording_level = recording_level
        self._registry = registry
        self._stats: list[Stat] = []
        self.last_record_ms = registry.time.monotonic_ms()

    def should_record(self) -> bool:
        """Whether values recorded on this sensor reach its statistics (Java
        ``Sensor.shouldRecord``)."""
        return self.recording_level.should_record(self._registry.config.recording_level)

    def add(self, metric_name: MetricName, stat: Stat) -> Sensor:
        """Attach ``stat`` and publish it under ``metric_name``; returns the sensor."""
        self.add_stat(stat)
        self.publish(metric_name, stat)
        return self

    @property
    def stats(self) -> list[Stat]:
        """The statistics attached, in order."""
        with self._registry._lock:
            return list(self._stats)

    def add_stat(self, stat: Stat) -> None:
        """Attach ``stat`` without publishing it yet (see :meth:`Metrics.defer`)."""
        with self._registry._lock:
            self._stats.append(stat)

    def publish(self, metric_name: MetricName, stat: Stat) -> None:
        """Publish ``stat`` (attached already) under ``metric_name``."""
        registry = self._registry
        registry._register(KafkaMetric(metric_name, stat=stat, registry=registry), sensor=self.name)

    def record(self, value: float = 1.0, now_ms: int | None = None) -> None:
        """Record one value on every statistic of the sensor."""
        registry = self._registry
        now = registry.time.monotonic_ms() if now_ms is None else now_ms
        config = registry.config
        with registry._lock:
            self.last_record_ms = now
            for stat in self._stats:
                stat.record(config, value, now)


class _IdleSensor(Sensor):
    """A sensor above the registry's recording level. As in Java, its metrics are still
    published (at their initial values, NaN or 0) so that a reporter sees the same names at
    every level; only the recording is skipped."""

    def record(self, value: float = 1.0, now_ms: int | None = None) -> None:
        """Record nothing: the sensor's level is above the registry's."""


class Metrics:
    """The registry of sensors and metrics of one client.

    ``Metrics(config, time=fake_clock)`` in tests. ``reporters`` are told about every metric.

    Thread-safety: all methods may be called from any thread (one lock, ``_lock``, a leaf;
    ``publish_lock`` is taken before it while deferred metrics are published).
    """

    def __init__(
        self,
        config: MetricConfig | None = None,
        *,
        time: Time = SYSTEM_TIME,
        reporters: Iterable[Any] = (),
    ) -> None:
        """Create an empty registry; ``reporters`` are told of every metric added and removed."""
        self.config = config or MetricConfig()
        self.time = time
        self._lock = threading.RLock()
        self._sensors: dict[str, Sensor] = {}
        self._metrics: dict[MetricName, KafkaMetric] = {}
        self._sensor_metrics: dict[str, list[MetricName]] = {}
        self._reporters: list[Any] = list(reporters)
        # Publications put off until someone reads the registry (see defer).
        self._deferred: list[Callable[[], None]] = []
        #: Held while deferred publications run; taken before any other metrics lock.
        self.publish_lock = threading.RLock()
        for reporter in self._reporters:
            self._call_reporter(reporter, "init", [])

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, time: Time = SYSTEM_TIME) -> Metrics:
        """Build from ``metrics.num.samples``, ``metrics.sample.window.ms``,
        ``metrics.recording.level`` and ``metric.reporters`` of a client configuration (Java's
        default ``JmxReporter`` is skipped)."""
        reporters: list[Any] = []
        for spec in config.get("metric.reporters") or ():
            if isinstance(spec, str):
                from kafkaconsumer.config import JMX_REPORTER

                if spec == JMX_REPORTER:
                    continue  # Java's default: no JMX here, so no reporter
                from kafkaconsumer.utils.loader import resolve_object

                spec = resolve_object(spec, key="metric.reporters")
            reporters.append(spec() if isinstance(spec, type) else spec)
        metric_config = MetricConfig(
            samples=int(config_value(config, "metrics.num.samples")),
            time_window_ms=int(config_value(config, "metrics.sample.window.ms")),
            recording_level=RecordingLevel.for_name(
                str(config_value(config, "metrics.recording.level"))
            ),
        )
        return cls(metric_config, time=time, reporters=reporters)

    def metric_name(
        self, name: str, group: str, description: str = "", tags: Mapping[str, str] | None = None
    ) -> MetricName:
        """Build a :class:`MetricName`."""
        return MetricName(name, group, description, tags)

    def sensor(self, name: str, recording_level: RecordingLevel = RecordingLevel.INFO) -> Sensor:
        """The sensor called ``name``, created on first use at ``recording_level`` (an existing
        sensor keeps the level it was made with, as in Java). A sensor above the registry's
        ``config.recording_level`` publishes its metrics but records nothing."""
        with self._lock:
            sensor = self._sensors.get(name)
            if sensor is None:
                records = recording_level.should_record(self.config.recording_level)
                sensor = (Sensor if records else _IdleSensor)(self, name, recording_level)
                self._sensors[name] = sensor
            return sensor

    def get_sensor(self, name: str) -> Sensor | None:
        """The sensor called ``name`` if it exists (Java's ``getSensor``, kept as API of this
        class; the client keeps its own sensors)."""
        with self._lock:
            return self._sensors.get(name)

    def remove_sensor(self, name: str) -> None:
        """Drop a sensor and every metric it published."""
        with self._lock:
            self._sensors.pop(name, None)
            names = self._sensor_metrics.pop(name, [])
            removed = [self._metrics.pop(n) for n in names if n in self._metrics]
        for metric in removed:
            for reporter in self._reporters:
                self._call_reporter(reporter, "metric_removal", metric)

    def add_gauge(self, metric_name: MetricName, read: Callable[[], float]) -> None:
        """Publish a metric computed on demand by ``read()`` (Java ``Gauge``/``Measurable``)."""

        def safe() -> float:
            try:
                return float(read())
            except Exception:  # noqa: BLE001 - a broken gauge must not break metrics()
                logger.debug("gauge %s failed", metric_name, exc_info=True)
                return math.nan

        self._register(KafkaMetric(metric_name, safe), sensor=None)

    def _register(self, metric: KafkaMetric, sensor: str | None) -> None:
        with self._lock:
            self._metrics[metric.metric_name] = metric
            if sensor is not None:
                self._sensor_metrics.setdefault(sensor, []).append(metric.metric_name)
        for reporter in self._reporters:
            self._call_reporter(reporter, "metric_change", metric)

    @property
    def has_reporters(self) -> bool:
        """Whether reporters are told of each metric as it is added (then nothing may be
        deferred: see :meth:`defer`)."""
        return bool(self._reporters)

    def defer(self, publish: Callable[[], None]) -> None:
        """Run ``publish`` (which publishes metrics whose statistics already record) before
        the registry is next read, under :attr:`publish_lock`.

        Metrics made in numbers, such as six per assigned partition, then cost nothing until
        they are read: publishing them (names, tags, registration) was most of the cost of a
        partition's first fetch on a consumer of 1,000 partitions. Only for a registry with no
        reporters (:attr:`has_reporters`), which must hear of each metric as it comes.
        """
        if self._reporters:
            raise IllegalStateError("metrics cannot be deferred when reporters are configured")
        with self._lock:
            self._deferred.append(publish)

    def _publish_deferred(self) -> None:
        if not self._deferred:
            return
        with self.publish_lock:
            with self._lock:
                pending, self._deferred = self._deferred, []
            for publish in pending:
                publish()

    def metrics(self) -> dict[MetricName, float]:
        """Every metric and its current value."""
        self._publish_deferred()
        with self._lock:
            items = list(self._metrics.values())
        return {m.metric_name: m.metric_value() for m in items}

    def metric(self, metric_name: MetricName) -> KafkaMetric | None:
        """One metric by name, or None."""
        self._publish_deferred()
        with self._lock:
            return self._metrics.get(metric_name)

    def value(self, name: str, group: str, tags: Mapping[str, str] | None = None) -> float:
        """Current value of one metric; KeyError when it does not exist."""
        metric = self.metric(MetricName(name, group, "", tags))
        if metric is None:
            raise KeyError(f"no metric {name!r} in group {group!r} with tags {dict(tags or {})}")
        return metric.metric_value()

    def close(self) -> None:
        """Close the reporters."""
        for reporter in self._reporters:
            self._call_reporter(reporter, "close")
        self._reporters = []

    @staticmethod
    def _call_reporter(reporter: Any, method: str, *args: Any) -> None:
        fn = getattr(reporter, method, None)
        if fn is None:
            return
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 - a reporter's bug must not break the client
            logger.warning("metrics reporter %r failed in %s", reporter, method, exc_info=True)


# --------------------------------------------------------------------------- consumer metric sets


def _topic_tag(topic: str) -> str:
    # Java's fetch-manager metrics write topic names with '.' replaced by '_' in tags.
    return topic.replace(".", "_")


class FetchManagerMetrics:
    """The ``consumer-fetch-manager-metrics`` group (Java ``FetchMetricsManager``).

    The fetcher calls :meth:`record_fetch_latency` per fetch response,
    :meth:`record_fetched` with per-topic ``(bytes, records)`` once per response (or
    :meth:`record_partition_fetched` per partition), :meth:`record_lag` / :meth:`record_lead`
    per partition after each fetch, and :meth:`retain_partitions` when the assignment changes.

    Thread-safety: safe from any thread; its own lock guards the per-topic and per-partition
    sensor tables (order: ``Metrics.publish_lock`` > this lock > ``Metrics._lock``).
    """

    GROUP = "consumer-fetch-manager-metrics"

    def __init__(self, metrics: Metrics, client_id: str) -> None:
        """Register the group's sensors and metrics in ``metrics`` for ``client_id``."""
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
        self._topic_sensors: dict[str, tuple[Sensor, Sensor]] = {}
        self._partition_sensors: dict[TopicPartition, tuple[Sensor, Sensor]] = {}
        # Partitions whose sensors record but whose metrics are not published yet.
        self._unpublished: set[TopicPartition] = set()
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
            for i, stat in enumerate(self._partition_stats()):
                (lag if i < 3 else lead).add_stat(stat)
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


class KafkaConsumerMetrics:
    """The ``consumer-metrics`` poll metrics (Java ``KafkaConsumerMetrics``).

    Call :meth:`record_poll_start` when ``poll()`` is entered and :meth:`record_poll_end` when it
    returns.

    Thread-safety: meant for the user's thread; the registry's lock makes reads safe anywhere.
    """

    GROUP = "consumer-metrics"

    def __init__(self, metrics: Metrics, client_id: str) -> None:
        """Register the group's sensors and metrics in ``metrics`` for ``client_id``."""
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
