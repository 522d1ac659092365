"""A countdown over an injectable clock (Java: ``org.apache.kafka.common.utils.Timer``).

A ``Timer`` caches "now": call :meth:`Timer.update` to re-read the clock. This keeps a loop's
notion of time consistent between checks and lets tests drive it with a fake clock.
"""

from __future__ import annotations

import datetime
import logging
from typing import Protocol

logger = logging.getLogger(__name__)

__all__ = ["Clock", "Timer", "to_timeout_ms"]


class Clock(Protocol):
    """What a :class:`Timer` reads: :class:`~kafkaconsumer.utils.clock.Time` is one.

    The clock module builds timers (``Time.timer``), so this module names only the methods it
    calls instead of importing the clock back.
    """

    def monotonic_ms(self) -> int:
        """Milliseconds from an arbitrary origin that never goes backwards."""
        ...

    def sleep(self, ms: float) -> None:
        """Block the calling thread for ``ms`` milliseconds."""
        ...


#: Deadlines saturate here instead of overflowing (Java uses Long.MAX_VALUE).
_MAX_MS = 2**63 - 1


def to_timeout_ms(
    timeout: int | float | datetime.timedelta | None,
    default_ms: int | None = None,
    name: str = "timeout_ms",
) -> int:
    """Normalise a user timeout (``int`` ms, ``float`` ms or ``timedelta``) to whole milliseconds.

    ``None`` takes ``default_ms``; a negative value or a wrong type raises ``ValueError`` /
    ``TypeError`` naming ``name``.
    """
    if timeout is None:
        if default_ms is None:
            raise ValueError(f"{name} is required")
        return int(default_ms)
    if isinstance(timeout, bool):
        raise TypeError(f"{name} must be an int number of milliseconds or a timedelta, got bool")
    if isinstance(timeout, datetime.timedelta):
        ms = timeout.total_seconds() * 1000.0
    elif isinstance(timeout, (int, float)):
        ms = float(timeout)
    else:
        raise TypeError(
            f"{name} must be an int number of milliseconds or a timedelta, "
            f"got {type(timeout).__name__}"
        )
    if ms != ms or ms < 0:  # NaN or negative
        raise ValueError(f"{name} must be >= 0, got {timeout!r}")
    return min(int(ms), _MAX_MS)


class Timer:
    """A deadline ``timeout_ms`` after creation, read through a cached current time.

    Thread-safety: not thread-safe; a timer belongs to the thread that created it.
    """

    __slots__ = ("_time", "_start_ms", "_current_ms", "_deadline_ms", "_timeout_ms")

    def __init__(self, time: Clock, timeout_ms: float = 0) -> None:
        """Start a timer of ``timeout_ms`` on the clock ``time`` (read once now)."""
        self._time = time
        now = self._time.monotonic_ms()
        self._start_ms = now
        self._current_ms = now
        self._timeout_ms = 0
        self._deadline_ms = now
        self.reset(timeout_ms)

    @property
    def time(self) -> Clock:
        """The clock this timer reads."""
        return self._time

    def is_expired(self) -> bool:
        """True when the cached current time has reached the deadline."""
        return self._current_ms >= self._deadline_ms

    def not_expired(self) -> bool:
        """The negation of :meth:`is_expired`."""
        return self._current_ms < self._deadline_ms

    def update(self, current_ms: int | None = None) -> None:
        """Re-read the clock (or take ``current_ms``); time never moves backwards."""
        now = self._time.monotonic_ms() if current_ms is None else int(current_ms)
        if now > self._current_ms:
            self._current_ms = now

    def reset(self, timeout_ms: float) -> None:
        """Restart the countdown: expire ``timeout_ms`` after the cached current time."""
        if timeout_ms < 0:
            raise ValueError(f"timeout_ms must be >= 0, got {timeout_ms}")
        self._timeout_ms = min(int(timeout_ms), _MAX_MS)
        self._start_ms = self._current_ms
        self._deadline_ms = min(self._current_ms + self._timeout_ms, _MAX_MS)

    def reset_deadline(self, deadline_ms: int) -> None:
        """Set an absolute deadline (in the clock's monotonic milliseconds); Java's
        ``resetDeadline``, kept as API of this class."""
        if deadline_ms < 0:
            raise ValueError(f"deadline_ms must be >= 0, got {deadline_ms}")
        self._timeout_ms = max(0, deadline_ms - self._current_ms)
        self._start_ms = self._current_ms
        self._deadline_ms = deadline_ms

    def update_and_reset(self, timeout_ms: float) -> None:
        """:meth:`update` then :meth:`reset`."""
        self.update()
        self.reset(timeout_ms)

    def sleep(self, duration_ms: float) -> None:
        """Sleep ``min(duration_ms, remaining_ms)`` on the clock, then update."""
        self._time.sleep(min(duration_ms, self.remaining_ms))
        self.update()

    @property
    def remaining_ms(self) -> int:
        """Milliseconds left before the deadline (0 once expired), as of the cached time."""
        return max(0, self._deadline_ms - self._current_ms)

    @property
    def current_time_ms(self) -> int:
        """The cached current time."""
        return self._current_ms

    @property
    def elapsed_ms(self) -> int:
        """Milliseconds since the last reset, as of the cached time."""
        return self._current_ms - self._start_ms

    @property
    def timeout_ms(self) -> int:
        """The timeout of the current countdown."""
        return self._timeout_ms

    @property
    def deadline_ms(self) -> int:
        """The absolute deadline in the clock's monotonic milliseconds."""
        return self._deadline_ms

    def __repr__(self) -> str:
        return f"Timer(remaining_ms={self.remaining_ms}, timeout_ms={self._timeout_ms})"
