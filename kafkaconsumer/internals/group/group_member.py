"""The part of group membership every group protocol shares: the membership base.

A group member (classic :class:`~kafkaconsumer.internals.group.consumer_coordinator.ConsumerCoordinator`,
KIP-848 :class:`~kafkaconsumer.internals.group.consumer_protocol_coordinator.ConsumerProtocolCoordinator`,
and a KIP-932 share-group member) finds its group coordinator (FindCoordinator, retried with
an exponential backoff, KIP-580), talks to it over the coordinator's own connection, keeps its
membership alive from a background heartbeat thread while the user's thread processes records,
and leaves the group on close. :class:`GroupMember` holds what is the same for all of them; it
plays the part of Java's ``CoordinatorRequestManager`` and of what ``AbstractCoordinator`` and
``AbstractMembershipManager`` have in common.

Locking (docs/internals.md, "The group lock and who owns each field"): one re-entrant group lock
(``self._lock``, an RLock, with the Condition ``self._cond`` over it for the heartbeat thread's
waits) guards the membership state and the coordinator node. It is taken before the network
client's lock and never after it, and only for short steps: no network wait, sleep or metadata
wait happens under it, so the heartbeat thread always gets it and ``wakeup()`` interrupts every
wait of ``poll()``. Response handlers run after the network client released its own lock and
only record outcomes. User code never runs while the group lock is held.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.config import config_default, config_value
from kafkaconsumer.internals.group.group_error_backoff import GroupErrorBackoff
from kafkaconsumer.internals.interfaces import CoordinatorClient
from kafkaconsumer.metrics import ConsumerCoordinatorMetrics
from kafkaconsumer.network.client import coordinator_node_id
from kafkaconsumer.network.future import Future
from kafkaconsumer.utils.backoff import ExponentialBackoff
from kafkaconsumer.utils.clock import SYSTEM_TIME, Time
from kafkaconsumer.utils.timer import Timer

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import (
        FindCoordinatorRequest,
        FindCoordinatorResponse,
        FindCoordinatorResponseCoordinator,
    )

logger = logging.getLogger(__name__)

__all__ = ["Generation", "NO_GENERATION", "GroupRebalanceConfig", "GroupMember"]

# API keys used here (values of the Kafka protocol; kept local to avoid an import cycle with the
# protocol package at import time).
_FIND_COORDINATOR = 10
_JOIN_GROUP = 11
_HEARTBEAT = 12
_OFFSET_COMMIT = 8
_CONSUMER_GROUP_HEARTBEAT = 68
_SYNC_GROUP = 14
#: The sensor each request's round trip is recorded in (``consumer-coordinator-metrics``).
_LATENCY_SENSORS: dict[int, Callable[[ConsumerCoordinatorMetrics, float], None]] = {
    _JOIN_GROUP: ConsumerCoordinatorMetrics.record_join_latency,
    _SYNC_GROUP: ConsumerCoordinatorMetrics.record_sync_latency,
    _HEARTBEAT: ConsumerCoordinatorMetrics.record_heartbeat,
    _CONSUMER_GROUP_HEARTBEAT: ConsumerCoordinatorMetrics.record_heartbeat,
    _OFFSET_COMMIT: ConsumerCoordinatorMetrics.record_commit_latency,
}
_HEARTBEAT_APIS = frozenset((_HEARTBEAT, _CONSUMER_GROUP_HEARTBEAT))


@dataclass(frozen=True)
class Generation:
    """One generation of the group as this member saw it (id, our member id, chosen protocol).

    Thread-safety: immutable; replaced as a whole under the group lock.
    """

    generation_id: int
    member_id: str
    protocol_name: str | None

    def has_member_id(self) -> bool:
        """True once the coordinator gave us a member id."""
        return bool(self.member_id)

    def __str__(self) -> str:
        return (
            f"Generation(generation_id={self.generation_id}, member_id={self.member_id!r}, "
            f"protocol={self.protocol_name!r})"
        )


#: "Not in any generation": the generation id and member id a fresh member sends.
NO_GENERATION = Generation(-1, "", None)


@dataclass(frozen=True)
class GroupRebalanceConfig:
    """The settings the membership protocol needs (Java ``GroupRebalanceConfig``).

    Thread-safety: immutable after construction; shared freely.
    """

    group_id: str
    group_instance_id: str | None = None
    session_timeout_ms: int = config_default("session.timeout.ms")
    rebalance_timeout_ms: int = config_default("max.poll.interval.ms")
    heartbeat_interval_ms: int = config_default("heartbeat.interval.ms")
    retry_backoff_ms: int = config_default("retry.backoff.ms")
    retry_backoff_max_ms: int = config_default("retry.backoff.max.ms")
    request_timeout_ms: int = config_default("request.timeout.ms")
    leave_group_on_close: bool = config_default("internal.leave.group.on.close")
    client_rack: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.group_id, str) or not self.group_id:
            raise Errors.ConfigError("group.id must be a non-empty string to use group management")
        if self.group_instance_id is not None:
            if not isinstance(self.group_instance_id, str) or not self.group_instance_id:
                raise Errors.ConfigError("group.instance.id must be a non-empty string or None")
        for name in (
            "session_timeout_ms",
            "rebalance_timeout_ms",
            "heartbeat_interval_ms",
            "retry_backoff_ms",
            "request_timeout_ms",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise Errors.ConfigError(
                    f"{name.replace('_', '.')} must be a non-negative int, got {value!r}"
                )
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise Errors.ConfigError(
                f"heartbeat.interval.ms ({self.heartbeat_interval_ms}) must be lower than "
                f"session.timeout.ms ({self.session_timeout_ms})"
            )

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GroupRebalanceConfig:
        """Build from a consumer configuration with Java key names (a key missing from a
        plain mapping takes the ConsumerConfig default)."""

        get = functools.partial(config_value, config)
        return cls(
            group_id=config.get("group.id") or "",
            group_instance_id=config.get("group.instance.id") or None,
            session_timeout_ms=int(get("session.timeout.ms")),
            rebalance_timeout_ms=int(get("max.poll.interval.ms")),
            heartbeat_interval_ms=int(get("heartbeat.interval.ms")),
            retry_backoff_ms=int(get("retry.backoff.ms")),
            retry_backoff_max_ms=int(get("retry.backoff.max.ms")),
            request_timeout_ms=int(get("request.timeout.ms")),
            leave_group_on_close=bool(get("internal.leave.group.on.close")),
            client_rack=config.get("client.rack") or None,
        )


def _error_for(code: int, message: str | None = None) -> Errors.BrokerResponseError:
    return Errors.for_code(code)(message)


class GroupMember:
    """The membership base: coordinator discovery, requests to it, the group lock, close.

    A subclass is one group protocol's member. It provides:

    - :meth:`generation_snapshot`, :meth:`generation_if_stable`, :meth:`member_id` and
      :meth:`rebalance_in_progress`: its identity in the group (generation and member id for
      the classic protocol, member epoch and member id for the KIP-848 and share protocols);
    - its background heartbeat thread, started from its ``poll()`` and stopped by
      :meth:`_close_heartbeat_thread`; the thread stores a fatal failure for the user's next
      ``poll()`` to raise, and enforces ``max.poll.interval.ms`` (the member leaves the group
      when the application stops polling);
    - :meth:`maybe_leave_group` (LeaveGroup, or a heartbeat with the leave epoch) and
      :meth:`_leave_on_close`, which :meth:`close` uses; :meth:`on_leave_prepare` gives up its
      partitions first;
    - optionally :meth:`_on_coordinator_found`, called when a coordinator is discovered.

    Thread-safety: the user's thread calls the public methods; the subclass's heartbeat thread
    runs concurrently. Shared state is guarded by the group lock (taken before the network
    client's lock, never after); response handlers may run on either thread and take the group
    lock themselves.
    """

    def __init__(
        self,
        rebalance_config: GroupRebalanceConfig,
        client: CoordinatorClient,
        *,
        time: Time | None = None,
    ) -> None:
        """Set up a member outside any group over ``client`` (a ConsumerNetworkClient)."""
        self.rebalance_config = rebalance_config
        self.client = client
        self.time: Time = time if time is not None else SYSTEM_TIME
        # The RLock is entered with `with` directly: a Condition's __enter__ is Python code,
        # and a KeyboardInterrupt landing just after it acquired the lock would leave the lock
        # held for good (the heartbeat thread then waits on it forever). The Condition on the
        # same lock is only for wait/notify.
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self.coordinator: int | None = None  # guarded by _lock
        self.find_coordinator_future: Future[None] | None = None  # guarded by _lock
        self.fatal_find_coordinator_error: BaseException | None = None  # guarded by _lock
        self._last_time_of_connection_ms = -1  # guarded by _lock
        self._closed = False  # guarded by _lock
        cap = rebalance_config.retry_backoff_max_ms
        # KIP-580: retry.backoff.ms doubling up to retry.backoff.max.ms, 20% jitter; a
        # retry.backoff.ms above the cap means a constant backoff of the cap, as in Java.
        self.retry_backoff = ExponentialBackoff(
            min(rebalance_config.retry_backoff_ms, cap), 2.0, cap, 0.2
        )
        # Consecutive failed coordinator lookups.
        self._lookup_attempts = 0  # guarded by _lock
        # Consecutive lookups that named a coordinator this client cannot connect to; reset
        # once connected to the coordinator.
        self._unavailable_lookups = 0  # guarded by _lock
        # After a fatal join or heartbeat error: when to try again, what was logged (the
        # user's thread only).
        self.group_error_backoff = GroupErrorBackoff(
            rebalance_config.group_id, self.retry_backoff, self.time
        )
        #: The ``consumer-coordinator-metrics`` sensors (set by the subclass that reports them).
        self.sensors: ConsumerCoordinatorMetrics | None = None  # set once at construction
        # When a heartbeat last went out (the gauge's reference).
        self.last_heartbeat_sent_ms: int | None = None  # guarded by _lock

    # ------------------------------------------------------------ provided by the subclass
    def generation_snapshot(self) -> Generation:
        """The current generation (or member epoch and id), whatever the member's state."""
        raise NotImplementedError

    def generation_if_stable(self) -> Generation | None:
        """What a request proving membership carries while the member is in the group."""
        raise NotImplementedError

    def member_id(self) -> str:
        """The member id ("" before the coordinator or the member chose one)."""
        raise NotImplementedError

    def rebalance_in_progress(self) -> bool:
        """True while the member is joining the group."""
        raise NotImplementedError

    def maybe_leave_group(self, reason: str, force_static: bool = False) -> Future[None] | None:
        """Leave the group (a single attempt); the future completes with the answer."""
        raise NotImplementedError

    def on_leave_prepare(self) -> None:
        """Called before leaving the group on close; gives up the member's partitions."""
        raise NotImplementedError

    def _close_heartbeat_thread(self, timeout_s: float | None = None) -> None:
        raise NotImplementedError

    def _leave_on_close(self, leave_group: bool | None) -> tuple[bool, bool]:
        """(call :meth:`on_leave_prepare`, send the leave) for ``close(leave_group=...)``."""
        raise NotImplementedError

    def _on_coordinator_found(self) -> None:
        """A coordinator was discovered (lock held); nothing to do by default."""

    # --------------------------------------------------------------------- coordinator lookup
    def coordinator_unknown(self) -> bool:
        """True when no live coordinator is known."""
        return self.check_and_get_coordinator() is None

    def check_and_get_coordinator(self) -> int | None:
        """The coordinator node id, or None (marking it unknown when its connection is dead)."""
        with self._lock:
            node = self.coordinator
            if node is not None and self.client.is_unavailable(node):
                self.mark_coordinator_unknown("coordinator unavailable", is_disconnected=True)
                return None
            if node is not None and self._unavailable_lookups and self.client.ready(node):
                # Connected to the coordinator, whichever thread found it: the next loss
                # starts the lookup backoff over.
                self._unavailable_lookups = 0
            return node

    def mark_coordinator_unknown(self, cause: str, is_disconnected: bool = False) -> None:
        """Forget the coordinator so that the next operation rediscovers it."""
        with self._lock:
            if self.coordinator is not None:
                logger.info(
                    "group %s: coordinator %s is unavailable or invalid (%s), "
                    "rediscovery will be attempted",
                    self.rebalance_config.group_id,
                    self.coordinator,
                    cause,
                )
                old = self.coordinator
                # Forget it first: callbacks of in-flight requests may re-enter here.
                self.coordinator = None
                if not is_disconnected:
                    self.client.disconnect_async(old)
                self._last_time_of_connection_ms = self.time.monotonic_ms()
            elif self._last_time_of_connection_ms >= 0:
                gone = self.time.monotonic_ms() - self._last_time_of_connection_ms
                if gone > self.rebalance_config.rebalance_timeout_ms:
                    logger.warning(
                        "group %s: disconnected from the group coordinator for %d ms",
                        self.rebalance_config.group_id,
                        gone,
                    )

    def lookup_coordinator(self) -> Future[None]:
        """Start (or return the running) FindCoordinator request."""
        with self._lock:
            if self.find_coordinator_future is None:
                node = self.client.least_loaded_node()
                if node is None:
                    logger.debug("no broker available to send FindCoordinator")
                    return Future().failure(
                        Errors.NodeNotReadyError(
                            "no broker available to find the group coordinator"
                        )
                    )
                self.find_coordinator_future = self._send_find_coordinator_request(node)
            return self.find_coordinator_future

    def clear_find_coordinator_future(self) -> None:
        """Forget the FindCoordinator request so a new one may be sent."""
        with self._lock:
            self.find_coordinator_future = None

    def _send_find_coordinator_request(self, node: int) -> Future[None]:
        group_id = self.rebalance_config.group_id
        version = self.client.api_version(node, _FIND_COORDINATOR)
        if version is None:
            # Not connected yet, so the version is unknown: v3 (single key) works on every
            # broker since Kafka 2.4 and carries the same answer.
            version = 3
        body: FindCoordinatorRequest = {"key_type": 0}
        if version >= 4:
            body["coordinator_keys"] = [group_id]
        else:
            body["key"] = group_id
        logger.debug("sending FindCoordinator for group %s to node %s", group_id, node)
        result: Future[None] = Future()
        request = self._send(node, _FIND_COORDINATOR, body, version=version)

        def on_success(response: FindCoordinatorResponse) -> None:
            try:
                self._handle_find_coordinator_response(response, result)
            except Exception as exc:  # a malformed answer must still complete the future
                if not result.is_done:
                    result.failure(exc)

        def on_failure(exc: BaseException) -> None:
            if not getattr(exc, "retriable", False):
                # Kept so that the user's thread raises it even if the heartbeat thread sent it.
                self.fatal_find_coordinator_error = exc
            result.failure(exc)

        request.add_callback(on_success)
        request.add_errback(on_failure)
        result.add_callback(lambda _v: self._count_lookup(failed=False))
        result.add_errback(lambda _e: self._count_lookup(failed=True))
        result.add_both(lambda _v: self.clear_find_coordinator_future())
        return result

    def _count_lookup(self, failed: bool) -> None:
        with self._lock:
            self._lookup_attempts = self._lookup_attempts + 1 if failed else 0

    def _handle_find_coordinator_response(
        self, response: FindCoordinatorResponse, result: Future[None]
    ) -> None:
        coordinators = response.get("coordinators") or []
        entry: FindCoordinatorResponseCoordinator | FindCoordinatorResponse
        if coordinators:
            entry = coordinators[0]
        else:
            entry = response
        code = int(entry.get("error_code", 0) or 0)
        if code == 0:
            node_id = int(entry["node_id"])
            host = entry.get("host")
            port = entry.get("port")
            with self._lock:
                # As in Java, group traffic gets a connection of its own (id 2**31 - 1 - broker
                # id, which the network client maps to the broker's address): a broker answers
                # one connection's requests in order, so a JoinGroup it holds for the whole
                # rebalance would otherwise stall the fetches of partitions this member keeps.
                self.coordinator = coordinator_node_id(node_id)
                logger.info(
                    "group %s: discovered group coordinator %s (%s:%s)",
                    self.rebalance_config.group_id,
                    node_id,
                    host,
                    port,
                )
                self.client.try_connect(self.coordinator)
                self._on_coordinator_found()
            result.success(None)
        elif code == Errors.GroupAuthorizationFailedError.errno:
            result.failure(
                Errors.GroupAuthorizationFailedError(
                    f"not authorized to access group {self.rebalance_config.group_id}"
                )
            )
        else:
            logger.debug("group coordinator lookup failed: %s", entry.get("error_message"))
            result.failure(_error_for(code, entry.get("error_message")))

    def ensure_coordinator_ready(self, timer: Timer) -> bool:
        """Block (bounded by ``timer``) until a coordinator is known; True on success.

        The group lock is only held for short steps: the network waits and the backoff
        run without it, so the heartbeat thread (and its max.poll.interval.ms check) goes on
        meanwhile, and :meth:`wakeup` interrupts every wait.
        """
        if not self.coordinator_unknown():
            return True
        while True:
            with self._lock:
                fatal = self.fatal_find_coordinator_error
                self.fatal_find_coordinator_error = None
            if fatal is not None:
                raise fatal
            future = self.lookup_coordinator()
            self.client.poll(timeout_ms=timer.remaining_ms, future=future)
            timer.update()
            if not future.is_done:
                break
            if future.failed():
                exc = future.exception
                assert exc is not None
                if getattr(exc, "retriable", False):
                    # One backoff per failed round, as Java; then fresher metadata.
                    logger.debug("coordinator discovery failed, refreshing metadata: %r", exc)
                    self.backoff_wait(timer, self.lookup_backoff_ms())
                    self._await_metadata_update(timer)
                else:
                    with self._lock:
                        self.fatal_find_coordinator_error = None
                    raise exc
            else:
                with self._lock:
                    node = self.coordinator
                if node is not None and self.client.is_unavailable(node):
                    # Found one but cannot connect to it (a broker that died, which the
                    # brokers name as coordinator until the controller fences it): back off
                    # before asking again, growing as for a failed lookup. Read without
                    # check_and_get_coordinator, which would forget it and skip the backoff.
                    self.mark_coordinator_unknown("coordinator unavailable", is_disconnected=True)
                    with self._lock:
                        self._unavailable_lookups += 1
                    self.backoff_wait(timer, self.lookup_backoff_ms())
            if not self.coordinator_unknown():
                return True
            if timer.is_expired():
                break
        return not self.coordinator_unknown()

    def lookup_backoff_ms(self) -> int:
        """The wait before the next coordinator lookup (grows with consecutive failures).

        Thread-safe; the heartbeat thread also waits this long before rediscovering.
        """
        with self._lock:
            failures = max(self._lookup_attempts, self._unavailable_lookups)
            return self.retry_backoff.backoff(max(0, failures - 1))

    def backoff_wait(self, timer: Timer, backoff_ms: int) -> None:
        """Wait ``backoff_ms`` (at most what ``timer`` has left) without holding any lock.

        Network I/O goes on meanwhile and :meth:`wakeup` interrupts the wait (WakeupError),
        unlike a sleep.
        """
        wait = min(int(backoff_ms), timer.remaining_ms)
        if wait > 0:
            # A future nobody completes: poll for the whole wait, serving other requests.
            self.client.poll(timeout_ms=wait, future=Future())
        timer.update()

    # ------------------------------------------------------------------------------- closing
    def close(self, timer: Timer | None = None, leave_group: bool | None = None) -> None:
        """Stop the heartbeat thread, leave the group when appropriate, flush pending requests.

        ``leave_group``: None -> the protocol's default on close (see :meth:`_leave_on_close`);
        True -> leave, also for a static member; False -> do not leave.
        """
        if timer is None:
            timer = self.time.timer(0)
        try:
            self._close_heartbeat_thread(max(0.1, timer.remaining_ms / 1000.0))
        finally:
            with self._lock:
                self._closed = True
            prepare, leave = self._leave_on_close(leave_group)
            try:
                if prepare:
                    # The user's listener runs here, outside the group lock.
                    self.on_leave_prepare()
            finally:
                future = None
                if leave:
                    future = self.maybe_leave_group(
                        "the consumer is being closed", force_static=leave_group is True
                    )
                self._await_pending_requests(timer, future)

    # -------------------------------------------------------------------- network plumbing
    def _await_pending_requests(self, timer: Timer, future: Future[Any] | None) -> None:
        node = self.check_and_get_coordinator()
        if node is None:
            return
        while future is not None and not future.is_done and timer.not_expired():
            self.client.poll(timeout_ms=timer.remaining_ms, future=future)
            timer.update()

    def _send(
        self,
        node: int,
        api_key: int,
        body: Mapping[str, Any],
        *,
        timeout_ms: int | None = None,
        version: int | None = None,
    ) -> Future[Any]:
        future: Future[Any] = self.client.send(node, api_key, body, version, timeout_ms=timeout_ms)
        sensors = self.sensors
        if sensors is not None:
            record = _LATENCY_SENSORS.get(api_key)
            now = self.time.monotonic_ms()
            if api_key in _HEARTBEAT_APIS:
                with self._lock:
                    self.last_heartbeat_sent_ms = now
            if record is not None:
                # Any answer counts, error codes included: the round trip is what is measured
                # (Java records the response's request latency in each response handler).
                future.add_callback(
                    lambda _response: record(sensors, self.time.monotonic_ms() - now)
                )
        return future

    def _compose(
        self,
        request: Future[Any],
        gen: Generation,
        handler: Callable[[Any, Generation, Future[Any]], None],
    ) -> Future[Any]:
        """Adapt a raw response future through ``handler`` (Java ``CoordinatorResponseHandler``)."""
        result: Future[Any] = Future()

        def on_success(response: Any) -> None:
            try:
                handler(response, gen, result)
            except Exception as exc:
                logger.exception("error handling a group coordinator response")
                if not result.is_done:
                    result.failure(exc)

        def on_failure(exc: BaseException) -> None:
            # A broken connection, or a request timeout (which also closes the connection),
            # means the coordinator must be looked up again (Java: DisconnectException).
            if isinstance(
                exc, (Errors.KafkaConnectionError, Errors.KafkaTimeoutError, ConnectionError)
            ):
                self.mark_coordinator_unknown(f"request failed: {exc}", is_disconnected=True)
            if not result.is_done:
                result.failure(exc)

        request.add_callback(on_success)
        request.add_errback(on_failure)
        return result

    def _client_poll_no_wakeup(self) -> None:
        self.client.poll_no_wakeup()

    def _await_metadata_update(self, timer: Timer) -> None:
        if timer.is_expired():
            return
        try:
            self.client.await_metadata_update(timer.remaining_ms)
        except Errors.KafkaTimeoutError:
            pass
        timer.update()

    @property
    def lock(self) -> Any:
        """The group lock (an RLock, entered with ``with``)."""
        return self._lock

    @property
    def condition(self) -> threading.Condition:
        """The Condition over :attr:`lock`, only for ``wait`` and ``notify_all``."""
        return self._cond

    def poll_network_no_wakeup(self) -> None:
        """Process network I/O once without blocking and without honouring ``wakeup()``."""
        self._client_poll_no_wakeup()

    def coordinator_connection_ready(self, node: int) -> bool:
        """Whether requests can go to ``node`` now (starting its connection when not)."""
        return self.client.ready(node)

    def send_group_request(
        self, node: int, api_key: int, body: Mapping[str, Any], *, version: int | None = None
    ) -> Future[Any]:
        """Send ``body`` as request ``api_key`` to the coordinator ``node``."""
        return self._send(node, api_key, body, version=version)

    def compose(
        self,
        request: Future[Any],
        gen: Generation,
        handler: Callable[[Any, Generation, Future[Any]], None],
    ) -> Future[Any]:
        """Adapt a response future through ``handler``; disconnects forget the coordinator."""
        return self._compose(request, gen, handler)
