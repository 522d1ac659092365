"""The registry of one client's sensors and metrics (Java ``Metrics``, ``Sensor`` and
``KafkaMetric``).

A :class:`Metrics` registry holds :class:`Sensor` objects; recording a value on a sensor updates
every statistic attached to it. Each statistic is published under a
:class:`~kafkaconsumer.metrics.metric_name.MetricName` ``(name, group, tags)``;
:meth:`Metrics.metrics` returns ``{MetricName: float}`` (NaN where Java reports NaN: an average
or maximum with no samples). All times come from an injectable
:class:`~kafkaconsumer.utils.clock.Time`, so tests drive windows with a fake clock.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafkaconsumer.config import config_value
from kafkaconsumer.errors import IllegalStateError
from kafkaconsumer.metrics.metric_config import MetricConfig, RecordingLevel
from kafkaconsumer.metrics.metric_name import MetricName
from kafkaconsumer.metrics.stats import Stat
from kafkaconsumer.utils.clock import SYSTEM_TIME, Time

logger = logging.getLogger(__name__)


class KafkaMetric:
    """One published metric: its name and a way to read its current value.

    Thread-safety: its name is immutable; :meth:`metric_value` takes the registry's lock (or calls a
    gauge that must be safe from any thread).
    """

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
        # Set once here and only read after (the value is read under the registry's lock).
        self.metric_name = metric_name
        self._read = read
        self._stat = stat
        self._registry = registry

    @property
    def stat(self) -> Stat | None:
        """The sensor statistic behind the metric, or None for a gauge."""
        return self._stat

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
        self.name = name  # set once
        self.recording_level = recording_level  # set once
        self._registry = registry  # set once
        self._stats: list[Stat] = []  # guarded by the registry's Metrics._lock
        self.last_record_ms = registry.time.monotonic_ms()  # guarded by Metrics._lock

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
    every level; only the recording is skipped.

    Thread-safety: as :class:`Sensor`; it records nothing.
    """

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
        self.config = config or MetricConfig()  # set once
        self.time = time  # set once
        #: A leaf below every engine lock; also guards every sensor's statistics.
        self._lock = threading.RLock()
        self._sensors: dict[str, Sensor] = {}  # guarded by _lock
        self._metrics: dict[MetricName, KafkaMetric] = {}  # guarded by _lock
        self._sensor_metrics: dict[str, list[MetricName]] = {}  # guarded by _lock
        # Set here; replaced by close(), on the thread closing the client.
        self._reporters: list[Any] = list(reporters)
        # Publications put off until someone reads the registry (see defer). Guarded by _lock;
        # run under publish_lock.
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

    def kafka_metrics(self) -> list[KafkaMetric]:
        """Every metric object (deferred ones published first), to read one by one."""
        self._publish_deferred()
        with self._lock:
            return list(self._metrics.values())

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
