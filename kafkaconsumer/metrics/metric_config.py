"""How sensors record: window size, sample count and recording level (Java
``MetricConfig`` and ``Sensor.RecordingLevel``)."""

from __future__ import annotations

import enum
from typing import NamedTuple


class RecordingLevel(enum.IntEnum):
    """How detailed a sensor is (Java ``Sensor.RecordingLevel``); a registry records the sensors
    whose level is at most its configured one (``metrics.recording.level``).

    Thread-safety: an immutable enum.
    """

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
    """The fields of :class:`MetricConfig`.

    Thread-safety: immutable (a NamedTuple).
    """

    samples: int
    time_window_ms: int
    recording_level: RecordingLevel


class MetricConfig(_MetricConfigBase):
    """Sampling parameters: ``samples`` windows of ``time_window_ms`` each, and the highest
    ``recording_level`` of the sensors that record (immutable).

    Thread-safety: immutable (a NamedTuple).
    """

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
