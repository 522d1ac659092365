"""A fake clock for tests: it moves only when told to (Java's ``MockTime``)."""

from __future__ import annotations

import threading

from kafkaconsumer.utils.clock import Time

__all__ = ["MockTime"]


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

    def nanoseconds(self) -> int:
        """The fake monotonic time in nanoseconds (no auto tick: a duration read around a call
        is the time the fake clock was moved during it)."""
        with self._lock:
            return self._now * 1_000_000

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
