"""The heartbeat thread of a KIP-848 consumer group (Java's ``ConsumerHeartbeatRequestManager``).

It sends ConsumerGroupHeartbeat (API 68) at the interval the broker returns, at once when the
member joins or has an assignment to acknowledge, and after a failure with an exponential
backoff (KIP-580). It also enforces ``max.poll.interval.ms``: when the application has not
called ``poll()`` for that long, it sends the leave heartbeat and marks the member stale; the
partitions are then lost and the next ``poll()`` rejoins.

Every error code gets the Java client's reaction:

- NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE: rediscover the coordinator, retry at once;
- COORDINATOR_LOAD_IN_PROGRESS and other retriable errors: retry after the backoff;
- FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID: fenced; the partitions are released as lost and the
  member rejoins with epoch 0;
- GROUP_AUTHORIZATION_FAILED, INVALID_REQUEST, GROUP_MAX_SIZE_REACHED, UNSUPPORTED_ASSIGNOR,
  UNSUPPORTED_VERSION, UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, INVALID_REGULAR_EXPRESSION
  and unknown codes: fatal, raised by the next ``poll()``;
- TOPIC_AUTHORIZATION_FAILED: raised by the next ``poll()``; the member keeps heartbeating.
"""

from __future__ import annotations

import logging
import threading
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.group.consumer_membership_manager import (
    ConsumerMembershipManager,
    ConsumerMemberState,
)
from kafkaconsumer.internals.group.group_member import GroupRebalanceConfig
from kafkaconsumer.network.future import Future
from kafkaconsumer.utils.backoff import ExponentialBackoff
from kafkaconsumer.utils.clock import Time

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import ConsumerGroupHeartbeatResponse

logger = logging.getLogger(__name__)

__all__ = ["ConsumerHeartbeatRequestManager", "CONSUMER_GROUP_HEARTBEAT", "HeartbeatRequestHost"]

CONSUMER_GROUP_HEARTBEAT = 68

_FATAL = {
    Errors.GroupAuthorizationFailedError.errno,
    Errors.InvalidRequestError.errno,
    Errors.GroupMaxSizeReachedError.errno,
    Errors.UnsupportedAssignorError.errno,
    Errors.UnsupportedVersionError.errno,
    Errors.UnreleasedInstanceIdError.errno,
    Errors.FencedInstanceIdError.errno,
    Errors.InvalidRegularExpressionError.errno,
}

#: The longest the thread sleeps between two looks at the member (wakes earlier when notified).
_IDLE_WAIT_MS = 1000
#: How often the thread looks again while the coordinator connection is being set up.
_CONNECT_WAIT_MS = 10


class HeartbeatRequestHost(Protocol):
    """What the heartbeat thread needs of the member that owns it.

    The member keeps the group lock, the coordinator connection and the subscription; the
    thread only sends heartbeats through it and reports what the answers mean.

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
    def retry_backoff(self) -> ExponentialBackoff:
        """The exponential backoff (KIP-580) between failed attempts."""
        ...

    @property
    def lock(self) -> AbstractContextManager[Any]:
        """The group lock (entered with ``with``), guarding the membership state."""
        ...

    @property
    def condition(self) -> threading.Condition:
        """A Condition over :attr:`lock`, only for ``wait`` and ``notify_all``."""
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

    def lookup_backoff_ms(self) -> int:
        """How long to wait before looking the coordinator up again."""
        ...

    def check_and_get_coordinator(self) -> int | None:
        """The coordinator's node id, or None."""
        ...

    def coordinator_connection_ready(self, node: int) -> bool:
        """Whether requests can go to ``node`` now (connecting it when not)."""
        ...

    def mark_coordinator_unknown(self, cause: str, is_disconnected: bool = False) -> None:
        """Forget the coordinator so that it is looked up again."""
        ...

    def send_group_request(self, node: int, api_key: int, body: dict[str, Any]) -> Future[Any]:
        """Send ``body`` as request ``api_key`` to the coordinator ``node``."""
        ...

    def heartbeat_subscription(self) -> tuple[list[str] | None, str | None]:
        """What the next heartbeat subscribes to: (topic names, broker regex)."""
        ...

    def broker_description(self) -> str:
        """The coordinator broker, for error messages."""
        ...

    def note_poll_timeout(self) -> None:
        """The member leaves because ``poll()`` was not called within max.poll.interval.ms."""
        ...

    def note_expulsion(self, api: str, error_name: str) -> None:
        """The coordinator said the member is no longer in the group."""
        ...

    def on_new_target(self) -> None:
        """A new target assignment or a fencing awaits the user's thread."""
        ...


def protocol_not_supported(broker: str) -> Errors.UnsupportedVersionError:
    """The error for a broker that does not speak the consumer group protocol."""
    return Errors.UnsupportedVersionError(
        f"group.protocol=consumer needs a broker that supports ConsumerGroupHeartbeat (API 68): "
        f"Apache Kafka 4.0 or later (3.7-3.9 only with the new group coordinator enabled). "
        f"{broker} does not advertise it, so it is an older version or has the consumer "
        f"protocol disabled; use group.protocol=classic with it."
    )


class ConsumerHeartbeatRequestManager(threading.Thread):
    """Background heartbeats of one KIP-848 member.

    Thread-safety: its state is guarded by the member's group lock (``host.lock``, with
    ``host.condition`` to wait on); network I/O happens outside that lock. ``poll``, ``request_heartbeat`` and ``close`` are
    called by the user's thread; ``failure`` (fatal errors) and ``error`` (errors the member
    survives) are read and cleared by the user's thread under the lock.
    """

    def __init__(self, host: HeartbeatRequestHost, membership: ConsumerMembershipManager) -> None:
        """Create the (daemon) thread of ``host``'s ``membership``; call ``start()``."""
        name = "kafkaconsumer-heartbeat-thread | " + host.rebalance_config.group_id
        super().__init__(name=name, daemon=True)
        self._c = host
        self._m = membership
        self.closed = False  # guarded by host.lock
        self.error: BaseException | None = None  # guarded by host.lock
        self._in_flight = False  # guarded by host.lock
        self._next_at = 0  # guarded by host.lock
        self._attempts = 0  # guarded by host.lock
        self._poll_deadline = (  # guarded by host.lock
            host.time.monotonic_ms() + host.rebalance_config.rebalance_timeout_ms
        )

    # ------------------------------------------------------------------- user's thread
    def poll(self, now_ms: int) -> None:
        """The application polled: restart the max.poll.interval.ms countdown (lock held)."""
        self._poll_deadline = now_ms + self._c.rebalance_config.rebalance_timeout_ms

    def request_heartbeat(self) -> None:
        """Send the next heartbeat as soon as possible (lock held)."""
        self._next_at = 0
        self._c.condition.notify_all()

    def time_to_next_heartbeat(self, now_ms: int) -> int:
        """Milliseconds until the next heartbeat is due (lock held)."""
        return max(0, self._next_at - now_ms)

    def close(self) -> None:
        """Ask the thread to end at its next wake-up."""
        with self._c.lock:
            self.closed = True
            self._c.condition.notify_all()

    # ---------------------------------------------------------------------- the loop
    def run(self) -> None:
        """The heartbeat loop."""
        c = self._c
        try:
            while True:
                with c.lock:
                    if self.closed:
                        return
                    if not self._m.sends_heartbeats():
                        c.condition.wait(_IDLE_WAIT_MS / 1000.0)
                        continue
                c.poll_network_no_wakeup()
                with c.lock:
                    if self.closed or not self._m.sends_heartbeats():
                        continue
                    self._step(c.time.monotonic_ms())
        except BaseException as exc:  # stored, raised by the user's next poll()
            logger.error("heartbeat thread failed with an unexpected error", exc_info=True)
            failure: BaseException = exc
            if not isinstance(exc, Errors.KafkaError):
                failure = Errors.KafkaError(f"unexpected error in heartbeat thread: {exc!r}")
                failure.__cause__ = exc
            with c.lock:
                self._m.transition_to_fatal(failure)
        finally:
            with c.lock:
                self.closed = True

    def _step(self, now: int) -> None:
        c = self._c
        m = self._m
        cfg = c.rebalance_config
        if now >= self._poll_deadline:
            logger.warning(
                "group %s: consumer poll timeout has expired: the time between two calls to "
                "poll() was longer than max.poll.interval.ms (%d ms), which usually means the "
                "poll loop spends too long processing records. Raise max.poll.interval.ms or "
                "lower max.poll.records. The member leaves the group now and rejoins at its next "
                "poll().",
                cfg.group_id,
                cfg.rebalance_timeout_ms,
            )
            c.note_poll_timeout()
            epoch = m.transition_to_leaving()
            self._send_leave(epoch)
            m.transition_to_stale()
            self._in_flight = False
            c.condition.notify_all()
            return
        if c.coordinator_unknown():
            c.lookup_coordinator()
            c.condition.wait(c.lookup_backoff_ms() / 1000.0)
            return
        if self._in_flight:
            c.condition.wait(min(cfg.retry_backoff_ms, _IDLE_WAIT_MS) / 1000.0)
            return
        if now < self._next_at:
            c.condition.wait(min(self._next_at - now, _IDLE_WAIT_MS) / 1000.0)
            return
        node = c.check_and_get_coordinator()
        if node is None:
            return
        if not c.coordinator_connection_ready(node):
            # What the heartbeat carries depends on the versions the coordinator speaks (the
            # broker-side regex needs v1): build it once the connection is up.
            c.condition.wait(_CONNECT_WAIT_MS / 1000.0)
            return
        body = m.build_heartbeat(*c.heartbeat_subscription())
        epoch = int(body["member_epoch"])
        logger.debug("sending ConsumerGroupHeartbeat %s", body)
        self._in_flight = True
        # Until the answer: a full interval, so a lost answer does not stop heartbeats.
        self._next_at = now + max(m.heartbeat_interval_ms, cfg.retry_backoff_ms)
        request = c.send_group_request(node, CONSUMER_GROUP_HEARTBEAT, body)
        request.add_callback(self._on_response, epoch)
        request.add_errback(self._on_failure)

    def _send_leave(self, epoch: int) -> Future[Any] | None:
        c = self._c
        node = c.check_and_get_coordinator()
        if node is None:
            return None
        body = self._m.build_leave_heartbeat(epoch)
        logger.info(
            "group %s: member %s leaving the group (epoch %d)",
            c.rebalance_config.group_id,
            self._m.member_id,
            epoch,
        )
        return c.send_group_request(node, CONSUMER_GROUP_HEARTBEAT, body)

    def _backoff(self, now: int) -> None:
        self._next_at = now + self._c.retry_backoff.backoff(self._attempts)
        self._attempts += 1

    def _on_failure(self, exc: BaseException) -> None:
        c = self._c
        with c.lock:
            self._in_flight = False
            self._m.on_heartbeat_failure()
            now = c.time.monotonic_ms()
            if isinstance(exc, Errors.UnsupportedVersionError):
                self._m.transition_to_fatal(protocol_not_supported(c.broker_description()))
            elif isinstance(
                exc, (Errors.KafkaConnectionError, Errors.KafkaTimeoutError, ConnectionError)
            ):
                c.mark_coordinator_unknown(f"heartbeat failed: {exc}", is_disconnected=True)
                self._next_at = 0
            elif getattr(exc, "retriable", False):
                logger.debug("heartbeat failed (will retry): %s", exc)
                self._backoff(now)
            else:
                logger.error("heartbeat failed with an unexpected error: %s", exc)
                self._m.transition_to_fatal(exc)
            c.condition.notify_all()

    def _on_response(self, sent_epoch: int, response: ConsumerGroupHeartbeatResponse) -> None:
        c = self._c
        m = self._m
        group = c.rebalance_config.group_id
        code = int(response.get("error_code", 0) or 0)
        message = response.get("error_message")
        with c.lock:
            self._in_flight = False
            now = c.time.monotonic_ms()
            if code == 0:
                self._attempts = 0
                if m.state is ConsumerMemberState.JOINING and sent_epoch != 0:
                    # An answer to a heartbeat from before we (re)joined.
                    return
                reconcile = m.on_heartbeat_success(response)
                self._next_at = now + max(1, m.heartbeat_interval_ms)
                if m.state is ConsumerMemberState.ACKNOWLEDGING:
                    self._next_at = 0
                if reconcile:
                    c.on_new_target()
                c.condition.notify_all()
                return
            m.on_heartbeat_failure()
            name = Errors.for_code(code).name
            if m.state in (
                ConsumerMemberState.LEAVING,
                ConsumerMemberState.UNSUBSCRIBED,
                ConsumerMemberState.STALE,
            ):
                logger.debug(
                    "group %s: ignoring %s for a heartbeat sent before leaving", group, name
                )
                return
            if code in (
                Errors.NotCoordinatorError.errno,
                Errors.CoordinatorNotAvailableError.errno,
            ):
                logger.info(
                    "group %s: heartbeat failed with %s; rediscovering the coordinator", group, name
                )
                c.mark_coordinator_unknown(f"error response {name}")
                self._next_at = 0
            elif code == Errors.CoordinatorLoadInProgressError.errno:
                logger.info(
                    "group %s: coordinator is loading; heartbeat retried after a backoff", group
                )
                self._backoff(now)
            elif code in (Errors.FencedMemberEpochError.errno, Errors.UnknownMemberIdError.errno):
                logger.info(
                    "group %s: heartbeat failed with %s for member %s epoch %d",
                    group,
                    name,
                    m.member_id,
                    m.member_epoch,
                )
                c.note_expulsion("ConsumerGroupHeartbeat", name)
                m.transition_to_fenced()
                self._next_at = 0
                c.on_new_target()
            elif code == Errors.TopicAuthorizationFailedError.errno:
                logger.error("group %s: heartbeat failed with %s: %s", group, name, message)
                self.error = Errors.TopicAuthorizationFailedError(
                    message or f"not authorized to read a topic subscribed by group {group}"
                )
                self._backoff(now)
            elif code == Errors.UnsupportedVersionError.errno:
                err = protocol_not_supported(c.broker_description())
                if message and "regex" in message.lower():
                    err = Errors.UnsupportedVersionError(message)
                logger.error("group %s: %s", group, err)
                m.transition_to_fatal(err)
            elif code in _FATAL:
                err2: BaseException = Errors.for_code(code)(
                    message or f"ConsumerGroupHeartbeat failed with {name}"
                )
                if code == Errors.GroupAuthorizationFailedError.errno:
                    err2 = Errors.GroupAuthorizationFailedError(
                        f"not authorized to access group {group}"
                    )
                elif code == Errors.InvalidRegularExpressionError.errno:
                    err2 = Errors.InvalidRegularExpressionError(
                        f"the broker rejected the subscription pattern: {message}"
                    )
                logger.error(
                    "group %s: heartbeat failed with fatal error %s: %s", group, name, message
                )
                m.transition_to_fatal(err2)
            else:
                err3 = Errors.for_code(code)(message or name)
                if getattr(err3, "retriable", False):
                    self._backoff(now)
                else:
                    logger.error(
                        "group %s: heartbeat failed with unexpected error %s: %s",
                        group,
                        name,
                        message,
                    )
                    m.transition_to_fatal(err3)
            c.condition.notify_all()
