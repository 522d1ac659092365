"""Injectable clocks: the real monotonic clock and a fake one for tests.

Every timeout in the client is computed from a :class:`Time` so that tests of timers can
advance a :class:`MockTime` instead of sleeping (Java: ``org.apache.kafka.common.utils.Time``).
"""

from __future__ import annotations

import logging
import threading
import time as _time

from kafkaconsumer.utils.timer import Timer

logger = logging.getLogger(__name__)

__all__ = ["Time", "SystemTime", "MockTime", "SYSTEM_TIME"]


class Time:
    """The real clock: monotonic milliseconds for timeouts, wall milliseconds for timestamps.

    Thread-safety: stateless; safe to share between threads.
    """

    def monotonic_ms(self) -> int:
        """Milliseconds from an arbitrary origin that never goes backwards."""
        return _time.monotonic_ns() // 1_000_000

    def wall_ms(self) -> int:
        """Milliseconds since the Unix epoch (for record timestamps, not for timeouts)."""
        return _time.time_ns() // 1_000_000

    def sleep(self, ms: float) -> None:
        """Block the calling thread for ``ms`` milliseconds (no-op when ``ms <= 0``)."""
        if ms > 0:
            _time.sleep(ms / 1000.0)

    def timer(self, timeout_ms: float) -> Timer:
        """A :class:`~kafkaconsumer.utils.timer.Timer` that expires ``timeout_ms`` from now."""
        return Timer(self, timeout_ms)


#: Java's name for the production clock; kept as an alias so ported code reads naturally.
SystemTime = Time

#: The process-wide real clock.
SYSTEM_TIME = Time()


class MockTime(Time):
    """A fake clock that only moves when told to; ``sleep`` advances it instead of blocking.

    Thread-safety: all methods may be called from any thread (one internal lock).
    """

    def __init__(
        self, start_ms: int = 0, wall_start_ms: int = 1_700_000_000_000, auto_tick_ms: int = 0
    ) -> None:
        """Start the monotonic clock at ``start_ms`` and the wall clock at ``wall_start_ms``;
        ``auto_tick_ms`` (>= 0) is added on every read, so busy-polling code makes progress.
        """
        if auto_tick_ms < 0:
            raise ValueError(f"auto_tick_ms must be >= 0, got {auto_tick_ms}")
        self._lock = threading.Lock()
        self._now = int(start_ms)
        self._wall_offset = int(wall_start_ms) - int(start_ms)
        # Auto tick lets code that busy-polls the clock make progress in tests.
        self._auto_tick = int(auto_tick_ms)

    def monotonic_ms(self) -> int:
        """The fake monotonic time (advanced by ``auto_tick_ms`` on every read)."""
        with self._lock:
            now = self._now
            self._now += self._auto_tick
            return now

    def wall_ms(self) -> int:
        """Fake wall-clock milliseconds, moving with the monotonic time."""
        with self._lock:
            return self._now + self._wall_offset

    def sleep(self, ms: float) -> None:
        """Advance the fake clock by ``ms`` without blocking."""
        self.advance(ms)

    def advance(self, ms: float) -> None:
        """Move the fake clock forward by ``ms`` milliseconds."""
        if ms < 0:
            raise ValueError(f"cannot move time backwards ({ms} ms)")
        with self._lock:
            self._now += int(ms)
