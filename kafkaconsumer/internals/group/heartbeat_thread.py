"""The classic protocol's heartbeat thread (Java ``AbstractCoordinator.HeartbeatThread``).

It sends Heartbeats at ``heartbeat.interval.ms`` while the member is in a generation, suspects
the coordinator when no answer arrives within ``session.timeout.ms``, and makes the member leave
the group when the application has not called ``poll()`` within ``max.poll.interval.ms``. It
reaches its member only through :class:`ClassicHeartbeatHost`.
"""

from __future__ import annotations

import logging
import threading
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.group.group_member import GroupRebalanceConfig
from kafkaconsumer.network.future import Future
from kafkaconsumer.utils.clock import Time

if TYPE_CHECKING:
    from kafkaconsumer.internals.group.heartbeat import Heartbeat

logger = logging.getLogger(__name__)

__all__ = ["ClassicHeartbeatHost", "HeartbeatThread"]


class _JoinState(Protocol):
    """The member's state as the thread reads it (an ``abstract_coordinator.MemberState``).

    Thread-safety: an immutable enum value.
    """

    def has_not_joined_group(self) -> bool:
        """True before a JoinGroup answer made the member part of a generation."""
        ...


class ClassicHeartbeatHost(Protocol):
    """What the classic heartbeat thread needs of its member (an ``AbstractCoordinator``).

    Thread-safety: every member is called from the heartbeat thread, most with the group lock
    held; an implementation takes that (re-entrant) lock itself where it needs it.
    """

    @property
    def rebalance_config(self) -> GroupRebalanceConfig:
        """The group's id and timeouts."""
        ...

    @property
    def time(self) -> Time:
        """The member's clock."""
        ...

    @property
    def heartbeat(self) -> Heartbeat:
        """The heartbeat, session and poll timers."""
        ...

    @property
    def state(self) -> _JoinState:
        """Where the member is in the group's life cycle (guarded by the group lock)."""
        ...

    @property
    def lock(self) -> AbstractContextManager[Any]:
        """The group lock (entered with ``with``)."""
        ...

    @property
    def condition(self) -> threading.Condition:
        """A Condition over :attr:`lock`, only for ``wait`` and ``notify_all``."""
        ...

    @property
    def find_coordinator_future(self) -> Future[None] | None:
        """The FindCoordinator request in flight, if any."""
        ...

    def poll_network_no_wakeup(self) -> None:
        """Process network I/O once without blocking and without honouring ``wakeup()``."""
        ...

    def coordinator_unknown(self) -> bool:
        """True while no live coordinator is known."""
        ...

    def lookup_coordinator(self) -> Future[None]:
        """Start (or return the running) FindCoordinator request."""
        ...

    def clear_find_coordinator_future(self) -> None:
        """Forget the FindCoordinator request so that a new one may be sent."""
        ...

    def lookup_backoff_ms(self) -> int:
        """How long to wait before looking the coordinator up again."""
        ...

    def mark_coordinator_unknown(self, cause: str, is_disconnected: bool = False) -> None:
        """Forget the coordinator so that it is looked up again."""
        ...

    def handle_poll_timeout_expiry(self) -> None:
        """The application stopped polling: leave the group."""
        ...

    def send_heartbeat_request(self) -> Future[None]:
        """Send a Heartbeat for the current generation."""
        ...


class HeartbeatThread(threading.Thread):
    """Sends heartbeats and enforces session and poll timeouts in the background.

    Thread-safety: all its work happens while holding the member's group lock (a Condition it
    waits on between heartbeats); ``enable``/``disable``/``close`` are called with that lock held
    or take it. Its failure is stored in :attr:`failure` and re-raised by the next ``poll()``.
    """

    def __init__(self, coordinator: ClassicHeartbeatHost) -> None:
        """Create the (daemon) heartbeat thread of ``coordinator``; it starts disabled."""
        name = "kafkaconsumer-heartbeat-thread | " + coordinator.rebalance_config.group_id
        super().__init__(name=name, daemon=True)
        self._coordinator = coordinator
        self.enabled = False  # guarded by the group lock
        self.closed = False  # guarded by the group lock
        self.failure: BaseException | None = None  # guarded by the group lock

    def enable(self) -> None:
        """Start heartbeating (timers reset); wakes the thread."""
        c = self._coordinator
        with c.lock:
            logger.debug("enabling heartbeat thread")
            self.enabled = True
            c.heartbeat.reset_timeouts()
            c.condition.notify_all()

    def disable(self) -> None:
        """Stop heartbeating until enabled again."""
        with self._coordinator.lock:
            logger.debug("disabling heartbeat thread")
            self.enabled = False

    def close(self) -> None:
        """Ask the thread to end; it exits at its next wake-up."""
        with self._coordinator.lock:
            self.closed = True
            self._coordinator.condition.notify_all()

    def run(self) -> None:
        """The heartbeat loop (Java ``HeartbeatThread.run``).

        Network I/O happens outside the group lock (its handlers take the lock
        themselves); decisions and sends happen under it.
        """
        c = self._coordinator
        try:
            logger.debug("heartbeat thread started")
            while True:
                with c.lock:
                    if self.closed:
                        return
                    if not self.enabled:
                        c.condition.wait(1.0)
                        continue
                    # No heartbeats before joining, nor after a fatal error.
                    if c.state.has_not_joined_group() or self.failure is not None:
                        self.enabled = False
                        continue
                c.poll_network_no_wakeup()
                with c.lock:
                    if self.closed or not self.enabled:
                        continue
                    now = c.time.monotonic_ms()
                    if c.coordinator_unknown():
                        if c.find_coordinator_future is not None:
                            # Let the next round rediscover in case the user's thread cannot.
                            c.clear_find_coordinator_future()
                        else:
                            c.lookup_coordinator()
                        c.condition.wait(c.lookup_backoff_ms() / 1000.0)
                    elif c.heartbeat.session_timeout_expired(now):
                        # No successful heartbeat for a whole session: suspect the coordinator.
                        c.mark_coordinator_unknown(
                            "session timed out without receiving a heartbeat response"
                        )
                    elif c.heartbeat.poll_timeout_expired(now):
                        c.handle_poll_timeout_expiry()
                    elif not c.heartbeat.should_heartbeat(now):
                        wait_ms = min(
                            c.rebalance_config.retry_backoff_ms,
                            max(1, int(c.heartbeat.time_to_next_heartbeat(now))),
                        )
                        c.condition.wait(wait_ms / 1000.0)
                    else:
                        c.heartbeat.sent_heartbeat(now)
                        future = c.send_heartbeat_request()
                        future.add_callback(self._on_success)
                        future.add_errback(self._on_failure)
        except BaseException as exc:  # stored, re-raised by the user's next poll()
            logger.error("heartbeat thread failed with an unexpected error", exc_info=True)
            if isinstance(exc, Errors.KafkaError):
                failure: BaseException = exc
            else:
                failure = Errors.KafkaError(f"unexpected error in heartbeat thread: {exc!r}")
                failure.__cause__ = exc
            with c.lock:
                self.failure = failure
        finally:
            logger.debug("heartbeat thread has closed")
            with c.lock:
                self.closed = True

    def _on_success(self, _value: Any) -> None:
        c = self._coordinator
        with c.lock:
            c.heartbeat.received_heartbeat()

    def _on_failure(self, exc: BaseException) -> None:
        c = self._coordinator
        with c.lock:
            if isinstance(exc, Errors.RebalanceInProgressError):
                # Heartbeats continue during a rebalance to keep the session alive until we rejoin.
                c.heartbeat.received_heartbeat()
            elif isinstance(
                exc,
                (
                    Errors.FencedInstanceIdError,
                    Errors.GroupAuthorizationFailedError,
                    Errors.AuthenticationError,
                ),
            ):
                logger.error("heartbeat failed fatally: %s", exc)
                self.failure = exc
            else:
                c.heartbeat.fail_heartbeat()
                c.condition.notify_all()
