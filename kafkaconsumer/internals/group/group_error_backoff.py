"""Backing off after a fatal group error, so a caller that catches it and polls again does not
spin.

A fatal JoinGroup, SyncGroup or ConsumerGroupHeartbeat error (``session.timeout.ms`` outside
the broker's range, an authorization failure, an unknown assignor, ...) is raised by ``poll()``.
Services often catch it and poll again; without a pause each poll would send the failing request
at once and log it again, thousands of times a second. After such an error the next attempt
waits a backoff growing from ``retry.backoff.ms`` to ``retry.backoff.max.ms`` (Java's
``ExponentialBackoff``), within the poll's own timeout; a poll whose timeout ends first raises
the same error again without a request. The error is logged once, and again only when it
changes (a different error or message), as connection failures are.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kafkaconsumer.utils.backoff import ExponentialBackoff
from kafkaconsumer.utils.clock import Time
from kafkaconsumer.utils.timer import Timer

logger = logging.getLogger(__name__)

__all__ = ["GroupErrorBackoff"]

#: ``wait(timer, ms)``: waits up to ``ms`` (bounded by ``timer``), serving the network meanwhile.
WaitFn = Callable[[Timer, int], None]


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class GroupErrorBackoff:
    """When a member may try again after a fatal group error, and whether to log it.

    Thread-safety: used by the user's thread only (``poll()`` raises these errors).
    """

    def __init__(self, group_id: str | None, backoff: ExponentialBackoff, time: Time) -> None:
        """Back off with ``backoff`` for the member of ``group_id``, reading ``time``."""
        self._group_id = group_id
        self._backoff = backoff
        self._time = time
        self._error: BaseException | None = None  # the last fatal error (user thread)
        self._logged = ""  # the description last logged (user thread)
        self._failures = 0  # consecutive fatal failures (user thread)
        self._retry_at_ms = 0  # monotonic ms before which no attempt goes out (user thread)

    @property
    def failures(self) -> int:
        """Consecutive fatal failures since the last success."""
        return self._failures

    def failed(self, what: str, error: BaseException, *, log: bool = True) -> None:
        """``what`` (the request that failed) ended with the fatal ``error``: schedule the next
        attempt and log the error unless the same one was logged last (or ``log`` is false:
        the caller logged it)."""
        delay = self._backoff.backoff(self._failures)
        self._failures += 1
        self._error = error
        self._retry_at_ms = self._time.monotonic_ms() + delay
        description = f"{what} failed with {_describe(error)}"
        if description != self._logged:
            self._logged = description
            if log:
                logger.error(
                    "group %s: %s; poll() raises it and retries after a backoff of up to %d ms "
                    "(logged again only when the error changes)",
                    self._group_id,
                    description,
                    self._backoff.max_ms,
                )

    def succeeded(self) -> None:
        """The member joined (or heartbeats again): the next fatal error is new."""
        if self._failures:
            logger.info(
                "group %s: recovered after %d failed attempts (%s)",
                self._group_id,
                self._failures,
                self._logged,
            )
        self._error = None
        self._logged = ""
        self._failures = 0
        self._retry_at_ms = 0

    def wait(self, timer: Timer, wait: WaitFn) -> BaseException | None:
        """Before the next attempt: wait out the backoff (at most what ``timer`` has left).

        Returns the last fatal error when ``timer`` ran out first (raise it again: no attempt
        is due yet), else None (go ahead).
        """
        if self._error is None:
            return None
        while True:
            remaining = self._retry_at_ms - self._time.monotonic_ms()
            if remaining <= 0:
                return None
            if timer.is_expired():
                return self._error
            # The network wait may end early (a response came in): wait on until either ends.
            wait(timer, remaining)

    def throttle(self, error: BaseException, timer: Timer, wait: WaitFn) -> BaseException:
        """``error`` is terminal (the caller logged it; nothing is retried): raise it at once
        the first time, afterwards only once the backoff passed (or the poll's time ran out),
        so a loop catching it does not spin. Returns ``error``, to raise."""
        if self._error is not error or self.wait(timer, wait) is None:
            # The first raise, or the backoff passed: the next raise waits (longer).
            self.failed("the group membership", error, log=False)
        return error
