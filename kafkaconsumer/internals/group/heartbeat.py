"""The three group-membership timers (Java ``Heartbeat``).

- heartbeat timer: when the next Heartbeat request is due (``heartbeat.interval.ms``, or after
  a failed one an exponential backoff from ``retry.backoff.ms`` up to ``retry.backoff.max.ms``
  with jitter, KIP-580, reset by the next answer);
- session timer: how long since the coordinator last answered (``session.timeout.ms``); when it
  expires the coordinator must be presumed lost;
- poll timer: how long since the application last called ``poll()`` (``max.poll.interval.ms``);
  when it expires the member must leave the group so that its partitions move on.

All times are integer milliseconds of a monotonic :class:`~kafkaconsumer.utils.clock.Time`.
Every method takes an optional ``now``; ``None`` reads the clock, so production code may omit
it and tests drive a :class:`~kafkaconsumer.utils.clock.MockTime`.
"""

from __future__ import annotations

import logging
import threading

from kafkaconsumer.utils.backoff import ExponentialBackoff
from kafkaconsumer.utils.clock import SYSTEM_TIME, Time
from kafkaconsumer.utils.timer import Timer

logger = logging.getLogger(__name__)

__all__ = ["Heartbeat"]


def _positive_ms(name: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int number of milliseconds, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return value


class Heartbeat:
    """Heartbeat, session and poll timers of one group member.

    Thread-safety: safe; the user's thread (``poll``) and the heartbeat thread both call in, and
    one internal lock makes every method atomic.
    """

    def __init__(
        self,
        *,
        session_timeout_ms: int,
        heartbeat_interval_ms: int,
        max_poll_interval_ms: int,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int | None = None,
        time: Time | None = None,
    ) -> None:
        """Set the three timers from the group settings (ms); ``time`` defaults to the system clock.

        ``retry_backoff_max_ms`` (None: same as ``retry_backoff_ms``) caps the backoff after
        consecutive failed heartbeats.

        Raises ``ValueError`` when the heartbeat interval is not below the session timeout.
        """
        self.session_timeout_ms = _positive_ms("session_timeout_ms", session_timeout_ms)
        self.heartbeat_interval_ms = _positive_ms("heartbeat_interval_ms", heartbeat_interval_ms)
        self.max_poll_interval_ms = _positive_ms("max_poll_interval_ms", max_poll_interval_ms)
        if (
            not isinstance(retry_backoff_ms, int)
            or isinstance(retry_backoff_ms, bool)
            or retry_backoff_ms < 0
        ):
            raise ValueError(f"retry_backoff_ms must be an int >= 0, got {retry_backoff_ms!r}")
        self.retry_backoff_ms = retry_backoff_ms
        cap = retry_backoff_ms if retry_backoff_max_ms is None else retry_backoff_max_ms
        # retry.backoff.ms above the cap means a constant backoff of the cap (as ConsumerConfig
        # warns), as in Java.
        self._retry_backoff = ExponentialBackoff(min(retry_backoff_ms, cap), 2.0, cap, 0.2)
        self._failed_attempts = 0
        if heartbeat_interval_ms >= session_timeout_ms:
            # Java refuses this too: the session would expire between two heartbeats.
            raise ValueError(
                f"heartbeat.interval.ms ({heartbeat_interval_ms}) must be lower than "
                f"session.timeout.ms ({session_timeout_ms})"
            )
        self._time = time if time is not None else SYSTEM_TIME
        self._lock = threading.RLock()
        self._heartbeat_timer = Timer(self._time, heartbeat_interval_ms)
        self._session_timer = Timer(self._time, session_timeout_ms)
        self._poll_timer = Timer(self._time, max_poll_interval_ms)

    @property
    def time(self) -> Time:
        """The clock the timers read."""
        return self._time

    def _update(self, now: int | None) -> int:
        if now is None:
            now = self._time.monotonic_ms()
        self._heartbeat_timer.update(now)
        self._session_timer.update(now)
        self._poll_timer.update(now)
        return now

    def poll(self, now: int | None = None) -> None:
        """The application called ``poll()``: restart the max-poll-interval countdown."""
        with self._lock:
            self._update(now)
            self._poll_timer.reset(self.max_poll_interval_ms)

    def sent_heartbeat(self, now: int | None = None) -> None:
        """A Heartbeat request went out: the next one is due one interval from now."""
        with self._lock:
            self._update(now)
            self._heartbeat_timer.reset(self.heartbeat_interval_ms)

    def fail_heartbeat(self, now: int | None = None) -> None:
        """A Heartbeat failed (retriable): retry after a backoff that grows with each failure."""
        with self._lock:
            self._update(now)
            self._heartbeat_timer.reset(self._retry_backoff.backoff(self._failed_attempts))
            self._failed_attempts += 1

    def received_heartbeat(self, now: int | None = None) -> None:
        """The coordinator answered a heartbeat: the session is alive, restart its countdown."""
        with self._lock:
            self._update(now)
            self._session_timer.reset(self.session_timeout_ms)
            self._failed_attempts = 0

    def should_heartbeat(self, now: int | None = None) -> bool:
        """True when a Heartbeat request is due."""
        with self._lock:
            self._update(now)
            return self._heartbeat_timer.is_expired()

    def time_to_next_heartbeat(self, now: int | None = None) -> int:
        """Milliseconds until the next heartbeat is due (0 when it is due now)."""
        with self._lock:
            self._update(now)
            return self._heartbeat_timer.remaining_ms

    def session_timeout_expired(self, now: int | None = None) -> bool:
        """True when no heartbeat response arrived within ``session_timeout_ms``."""
        with self._lock:
            self._update(now)
            return self._session_timer.is_expired()

    def poll_timeout_expired(self, now: int | None = None) -> bool:
        """True when the application has not called ``poll()`` within ``max_poll_interval_ms``."""
        with self._lock:
            self._update(now)
            return self._poll_timer.is_expired()

    def reset_timeouts(self, now: int | None = None) -> None:
        """Restart all three countdowns (after joining a group, or when heartbeats resume)."""
        with self._lock:
            self._update(now)
            self._session_timer.reset(self.session_timeout_ms)
            self._poll_timer.reset(self.max_poll_interval_ms)
            self._heartbeat_timer.reset(self.heartbeat_interval_ms)

    def reset_session_timeout(self, now: int | None = None) -> None:
        """Restart only the session countdown (for example after finding a new coordinator)."""
        with self._lock:
            self._update(now)
            self._session_timer.reset(self.session_timeout_ms)

    def __repr__(self) -> str:
        return (
            f"Heartbeat(session_timeout_ms={self.session_timeout_ms}, "
            f"heartbeat_interval_ms={self.heartbeat_interval_ms}, "
            f"max_poll_interval_ms={self.max_poll_interval_ms})"
        )
