"""The statistics a sensor feeds (Java ``org.apache.kafka.common.metrics.stats``).

Windowed statistics keep ``metrics.num.samples`` samples of ``metrics.sample.window.ms`` each,
as Java does, so a rate is "per second over roughly the last minute" by default.
"""

from __future__ import annotations

import math

from kafkaconsumer.metrics.metric_config import MetricConfig


class Stat:
    """A statistic fed by :meth:`record` and read by :meth:`measure`.

    Thread-safety: not thread-safe itself; a sensor records into it, and its metric reads it, under
    the registry's ``Metrics._lock``.
    """

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        """Account one recorded value."""
        raise NotImplementedError

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        """The current value of the statistic."""
        raise NotImplementedError


class _Sample:
    """One time window of a sampled statistic.

    Thread-safety: not thread-safe itself; a sensor records into it, and its metric reads it, under
    the registry's ``Metrics._lock``.
    """

    __slots__ = ("initial", "value", "event_count", "last_window_ms")

    def __init__(self, initial: float, now_ms: int) -> None:
        # Every field: guarded by the registry's Metrics._lock (as its statistic).
        self.initial = initial
        self.value = initial
        self.event_count = 0
        self.last_window_ms = now_ms

    def reset(self, now_ms: int) -> None:
        self.value = self.initial
        self.event_count = 0
        self.last_window_ms = now_ms


class _SampledStat(Stat):
    """Keeps up to ``config.samples`` time windows; old windows are reused round-robin.

    Thread-safety: not thread-safe itself; a sensor records into it, and its metric reads it, under
    the registry's ``Metrics._lock``.
    """

    _initial = 0.0

    def __init__(self) -> None:
        self._samples: list[_Sample] = []  # guarded by the registry's Metrics._lock
        self._current = 0  # guarded by Metrics._lock

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
    """Mean of the values recorded in the live windows (NaN when none).

    Thread-safety: not thread-safe itself; a sensor records into it, and its metric reads it, under
    the registry's ``Metrics._lock``.
    """

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value += value

    def _combine(self, samples: list[_Sample]) -> float:
        count = sum(s.event_count for s in samples)
        if count == 0:
            return math.nan
        return sum(s.value for s in samples) / count


class Max(_SampledStat):
    """Largest value recorded in the live windows (NaN when none).

    Thread-safety: not thread-safe itself; a sensor records into it, and its metric reads it, under
    the registry's ``Metrics._lock``.
    """

    _initial = -math.inf

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value = max(sample.value, value)

    def _combine(self, samples: list[_Sample]) -> float:
        if sum(s.event_count for s in samples) == 0:
            return math.nan
        return max(s.value for s in samples)


class Min(_SampledStat):
    """Smallest value recorded in the live windows (NaN when none).

    Thread-safety: not thread-safe itself; a sensor records into it, and its metric reads it, under
    the registry's ``Metrics._lock``.
    """

    _initial = math.inf

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value = min(sample.value, value)

    def _combine(self, samples: list[_Sample]) -> float:
        if sum(s.event_count for s in samples) == 0:
            return math.nan
        return min(s.value for s in samples)


class WindowedSum(_SampledStat):
    """Sum of the values recorded in the live windows.

    Thread-safety: not thread-safe itself; a sensor records into it, and its metric reads it, under
    the registry's ``Metrics._lock``.
    """

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value += value

    def _combine(self, samples: list[_Sample]) -> float:
        return float(sum(s.value for s in samples))


class WindowedCount(WindowedSum):
    """Number of recordings in the live windows.

    Thread-safety: not thread-safe itself; a sensor records into it, and its metric reads it, under
    the registry's ``Metrics._lock``.
    """

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value += 1.0


class Rate(Stat):
    """Per-second rate of a windowed sum (or count) over the elapsed sampled time.

    As in Java, the elapsed time is at least ``samples - 1`` full windows, so a burst right
    after start-up is not reported as a huge rate.

    Thread-safety: not thread-safe itself; a sensor records into it, and its metric reads it, under
    the registry's ``Metrics._lock``.
    """

    def __init__(self, stat: _SampledStat | None = None) -> None:
        """Divide ``stat`` (a windowed sum when None) by the sampled time."""
        self._stat = stat if stat is not None else WindowedSum()  # set once

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
    """Sum of every value ever recorded.

    Thread-safety: not thread-safe itself; a sensor records into it, and its metric reads it, under
    the registry's ``Metrics._lock``.
    """

    def __init__(self) -> None:
        """Start at zero."""
        self._total = 0.0  # guarded by the registry's Metrics._lock

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        """Add ``value``."""
        self._total += value

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        """The running total."""
        return self._total


class CumulativeCount(CumulativeSum):
    """Number of recordings ever made.

    Thread-safety: not thread-safe itself; a sensor records into it, and its metric reads it, under
    the registry's ``Metrics._lock``.
    """

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        """Count one recording."""
        self._total += 1.0


class Value(Stat):
    """The last value recorded (NaN before the first).

    Thread-safety: not thread-safe itself; a sensor records into it, and its metric reads it, under
    the registry's ``Metrics._lock``.
    """

    def __init__(self) -> None:
        """Start with no value (NaN)."""
        self._value = math.nan  # guarded by the registry's Metrics._lock

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        """Remember ``value``."""
        self._value = value

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        """The last value."""
        return self._value
