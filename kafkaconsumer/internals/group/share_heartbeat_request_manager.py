"""The heartbeat thread of a share-group member (Java ``ShareHeartbeatRequestManager``).

It sends ShareGroupHeartbeat (API 76) at the interval the coordinator returns, at once when the
member joins, and after a failure with an exponential backoff (KIP-580). It enforces
``max.poll.interval.ms``: when the application has not called ``poll()`` for that long, the
member leaves (its acquired records go back to the group when their locks run out) and joins
again at the next ``poll()``.

Error codes get the Java client's reaction: NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE
rediscover the coordinator; COORDINATOR_LOAD_IN_PROGRESS and other retriable errors back off;
FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID fence the member (it joins again with epoch 0);
TOPIC_AUTHORIZATION_FAILED is raised by the next ``poll()`` while heartbeats go on;
GROUP_AUTHORIZATION_FAILED, INVALID_REQUEST, GROUP_MAX_SIZE_REACHED, UNSUPPORTED_VERSION and
unknown codes are fatal.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.group.share_membership_manager import (
    SHARE_GROUP_HEARTBEAT,
    ShareMembershipManager,
    ShareMemberState,
    share_groups_not_supported,
)

logger = logging.getLogger(__name__)

__all__ = ["ShareHeartbeatRequestManager"]

_FATAL = {
    Errors.GroupAuthorizationFailedError.errno,
    Errors.InvalidRequestError.errno,
    Errors.GroupMaxSizeReachedError.errno,
    Errors.UnsupportedVersionError.errno,
}
_IDLE_WAIT_MS = 1000
#: A member given its epoch but no partitions yet asks again this often (for at most one
#: heartbeat interval): the coordinator computes assignments in the background
#: (``group.share.assignment.interval.ms``, 1 s by default) and hands them out only in a
#: heartbeat answer, so waiting the full interval (5 s by default) would idle a new member.
_FIRST_ASSIGNMENT_WAIT_MS = 250
_CONNECT_WAIT_MS = 10


class ShareHeartbeatRequestManager(threading.Thread):
    """Background heartbeats of one share-group member.

    Thread-safety: its fields are guarded by the member's group lock (``member.lock``, waited on
    through ``member.condition``); network I/O happens outside that lock. ``poll``,
    ``request_heartbeat`` and ``close`` are called by the user's thread; ``error`` is read and
    cleared by the user's thread under the lock.
    """

    def __init__(self, member: ShareMembershipManager) -> None:
        """The (daemon) heartbeat thread of ``member``; call ``start()``."""
        name = "kafkaconsumer-share-heartbeat-thread | " + member.rebalance_config.group_id
        super().__init__(name=name, daemon=True)
        self._m = member
        self.closed = False  # guarded by member.lock
        self.error: BaseException | None = None  # guarded by member.lock
        self._in_flight = False  # guarded by member.lock
        self._next_at = 0  # guarded by member.lock
        self._attempts = 0  # guarded by member.lock
        self._joined_at: int | None = None  # guarded by member.lock: last join's answer
        self._poll_deadline = (  # guarded by member.lock
            member.time.monotonic_ms() + member.rebalance_config.rebalance_timeout_ms
        )

    def poll(self, now_ms: int) -> None:
        """The application polled: restart the max.poll.interval.ms countdown (lock held)."""
        self._poll_deadline = now_ms + self._m.rebalance_config.rebalance_timeout_ms

    def request_heartbeat(self) -> None:
        """Send the next heartbeat as soon as possible (lock held)."""
        self._next_at = 0
        self._m.condition.notify_all()

    def close(self) -> None:
        """Ask the thread to end at its next wake-up."""
        with self._m.lock:
            self.closed = True
            self._m.condition.notify_all()

    def run(self) -> None:
        """The heartbeat loop."""
        m = self._m
        try:
            while True:
                with m.lock:
                    if self.closed:
                        return
                    if not m.sends_heartbeats():
                        m.condition.wait(_IDLE_WAIT_MS / 1000.0)
                        continue
                m.poll_network_no_wakeup()
                with m.lock:
                    if self.closed or not m.sends_heartbeats():
                        continue
                    self._step(m.time.monotonic_ms())
        except BaseException as exc:  # stored, raised by the user's next poll()
            logger.error("share heartbeat thread failed with an unexpected error", exc_info=True)
            failure: BaseException = exc
            if not isinstance(exc, Errors.KafkaError):
                failure = Errors.KafkaError(f"unexpected error in heartbeat thread: {exc!r}")
                failure.__cause__ = exc
            with m.lock:
                m.transition_to_fatal(failure)
        finally:
            with m.lock:
                self.closed = True

    def _step(self, now: int) -> None:
        m = self._m
        cfg = m.rebalance_config
        if now >= self._poll_deadline:
            logger.warning(
                "group %s: the time between two calls to poll() was longer than "
                "max.poll.interval.ms (%d ms); the member leaves the share group now and joins "
                "again at its next poll(). Process fewer records per poll (max.poll.records) or "
                "raise max.poll.interval.ms.",
                cfg.group_id,
                cfg.rebalance_timeout_ms,
            )
            m.note_poll_timeout()
            node = m.check_and_get_coordinator()
            if node is not None:
                m.send_group_request(node, SHARE_GROUP_HEARTBEAT, m.build_leave_heartbeat())
            m.transition_to_stale()
            self._in_flight = False
            return
        if m.coordinator_unknown():
            m.lookup_coordinator()
            m.condition.wait(m.lookup_backoff_ms() / 1000.0)
            return
        if self._in_flight:
            m.condition.wait(min(cfg.retry_backoff_ms, _IDLE_WAIT_MS) / 1000.0)
            return
        if now < self._next_at:
            m.condition.wait(min(self._next_at - now, _IDLE_WAIT_MS) / 1000.0)
            return
        node = m.check_and_get_coordinator()
        if node is None:
            return
        if not m.coordinator_connection_ready(node):
            m.condition.wait(_CONNECT_WAIT_MS / 1000.0)
            return
        body = m.build_heartbeat()
        epoch = int(body["member_epoch"])
        self._in_flight = True
        # Until the answer: a full interval, so a lost answer does not stop heartbeats.
        self._next_at = now + max(m.heartbeat_interval_ms, cfg.retry_backoff_ms)
        request = m.send_group_request(node, SHARE_GROUP_HEARTBEAT, body)
        # The group lock is held here (the gauge's field is guarded by it).
        m.last_heartbeat_sent_ms = sent = m.time.monotonic_ms()
        sensors = m.share_sensors
        if sensors is not None:
            # Any answer counts, error codes included: the round trip is what is measured.
            request.add_callback(
                lambda _response: sensors.record_heartbeat(m.time.monotonic_ms() - sent)
            )
        request.add_callback(self._on_response, epoch)
        request.add_errback(self._on_failure)

    def _await_first_assignment(self, sent_epoch: int, now: int) -> None:
        # Lock held: until a member that just joined has partitions, the next heartbeat goes
        # sooner than the interval; one interval after joining, the normal cadence resumes.
        m = self._m
        if sent_epoch == 0:
            self._joined_at = now
        joined = self._joined_at
        if joined is None or m.has_assignment():
            self._joined_at = None
            return
        if now - joined < m.heartbeat_interval_ms:
            self._next_at = min(self._next_at, now + _FIRST_ASSIGNMENT_WAIT_MS)
        else:
            self._joined_at = None

    def _backoff(self, now: int) -> None:
        self._next_at = now + self._m.retry_backoff.backoff(self._attempts)
        self._attempts += 1

    def _on_failure(self, exc: BaseException) -> None:
        m = self._m
        with m.lock:
            self._in_flight = False
            now = m.time.monotonic_ms()
            if isinstance(exc, Errors.UnsupportedVersionError):
                m.transition_to_fatal(share_groups_not_supported(m.broker_description()))
            elif isinstance(
                exc, (Errors.KafkaConnectionError, Errors.KafkaTimeoutError, ConnectionError)
            ):
                m.mark_coordinator_unknown(f"heartbeat failed: {exc}", is_disconnected=True)
                self._next_at = 0
            elif getattr(exc, "retriable", False):
                self._backoff(now)
            else:
                m.transition_to_fatal(exc)
            m.condition.notify_all()

    def _on_response(self, sent_epoch: int, response: dict[str, Any]) -> None:
        m = self._m
        group = m.rebalance_config.group_id
        code = int(response.get("error_code", 0) or 0)
        message = response.get("error_message")
        with m.lock:
            self._in_flight = False
            now = m.time.monotonic_ms()
            if code == 0:
                self._attempts = 0
                if m.state is ShareMemberState.JOINING and sent_epoch != 0:
                    return  # the answer to a heartbeat from before the member was fenced
                m.on_heartbeat_success(response)
                self._next_at = now + max(1, m.heartbeat_interval_ms)
                self._await_first_assignment(sent_epoch, now)
                m.condition.notify_all()
                return
            name = Errors.for_code(code).name
            if not m.sends_heartbeats():
                return
            if code in (
                Errors.NotCoordinatorError.errno,
                Errors.CoordinatorNotAvailableError.errno,
            ):
                m.mark_coordinator_unknown(f"error response {name}")
                self._next_at = 0
            elif code == Errors.CoordinatorLoadInProgressError.errno:
                self._backoff(now)
            elif code in (Errors.FencedMemberEpochError.errno, Errors.UnknownMemberIdError.errno):
                logger.info(
                    "group %s: heartbeat failed with %s for member %s epoch %d; joining again",
                    group,
                    name,
                    m.member_id(),
                    m.member_epoch,
                )
                m.transition_to_fenced()
                self._next_at = 0
            elif code == Errors.TopicAuthorizationFailedError.errno:
                self.error = Errors.TopicAuthorizationFailedError(
                    message or f"not authorized to read a topic subscribed by group {group}"
                )
                self._backoff(now)
            elif code == Errors.UnsupportedVersionError.errno:
                m.transition_to_fatal(share_groups_not_supported(m.broker_description()))
            elif code in _FATAL:
                m.transition_to_fatal(
                    Errors.for_code(code)(message or f"ShareGroupHeartbeat failed with {name}")
                )
            else:
                err = Errors.for_code(code)(message or name)
                if getattr(err, "retriable", False):
                    self._backoff(now)
                else:
                    m.transition_to_fatal(err)
            m.condition.notify_all()
