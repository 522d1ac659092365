"""The injectable clock: monotonic milliseconds for timeouts, wall milliseconds for timestamps.

Every timeout in the client is computed from a :class:`Time` handed to the object that waits,
so that tests of timers can pass a fake clock and advance it instead of sleeping (Java:
``org.apache.kafka.common.utils.Time``).
"""

from __future__ import annotations

import logging
import time as _time

from kafkaconsumer.utils.timer import Timer

logger = logging.getLogger(__name__)

__all__ = ["Time", "SystemTime", "SYSTEM_TIME"]


class Time:
    """The real clock: monotonic milliseconds for timeouts, wall milliseconds for timestamps.

    Thread-safety: stateless; safe to share between threads.
    """

    def monotonic_ms(self) -> int:
        """Milliseconds from an arbitrary origin that never goes backwards."""
        return _time.monotonic_ns() // 1_000_000

    def nanoseconds(self) -> int:
        """Monotonic nanoseconds from an arbitrary origin (for measuring how long a call
        took)."""
        return _time.monotonic_ns()

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
