"""The classic group protocol's member: join, sync, heartbeat (Java ``AbstractCoordinator``).

On top of the membership base (:class:`~kafkaconsumer.internals.group.group_member.GroupMember`:
coordinator discovery, requests, the group lock, close), a member joins the group (JoinGroup,
with the two-step MEMBER_ID_REQUIRED join of KIP-394), takes part in the assignment (SyncGroup),
then stays in the group by sending Heartbeats from a background thread while the user's thread
processes records. What the group protocol carries (the consumer subscription and assignment)
is left to a subclass, :class:`~kafkaconsumer.internals.group.consumer_coordinator.ConsumerCoordinator`.

States: ``UNJOINED -> PREPARING_REBALANCE`` (JoinGroup sent) ``-> COMPLETING_REBALANCE``
(JoinGroup answered, SyncGroup sent) ``-> STABLE`` (SyncGroup answered). Any failure drops back
to ``UNJOINED`` with a request to rejoin at the next ``poll()``.

Locking: the base's group lock guards the state and the generation too, with the same rules
(docs/internals.md): taken before the network client's lock, only for short steps; as leader,
the assignment runs on the user's thread, and user code (rebalance listener, assignors) never
runs while the lock is held.
"""

from __future__ import annotations

import enum
import logging
import threading
from typing import TYPE_CHECKING, Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.internals.group.group_member import (
    NO_GENERATION,
    Generation,
    GroupMember,
    GroupRebalanceConfig,
    _error_for,
)
from kafkaconsumer.internals.group.heartbeat_thread import HeartbeatThread
from kafkaconsumer.internals.interfaces import CoordinatorClient
from kafkaconsumer.network.future import Future
from kafkaconsumer.utils.clock import Time
from kafkaconsumer.utils.timer import Timer

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import (
        HeartbeatResponse,
        JoinGroupResponse,
        JoinGroupResponseMember,
        LeaveGroupRequest,
        LeaveGroupRequestMember,
        LeaveGroupResponse,
        SyncGroupResponse,
    )

logger = logging.getLogger(__name__)

__all__ = ["MemberState", "AbstractCoordinator", "UnjoinedGroupError"]

# API keys used here (values of the Kafka protocol; kept local to avoid an import cycle with the
# protocol package at import time).
_JOIN_GROUP = 11
_HEARTBEAT = 12
_LEAVE_GROUP = 13
_SYNC_GROUP = 14

#: Extra room given to a JoinGroup request on top of the rebalance timeout: the coordinator may
#: hold the request for the whole rebalance timeout before answering.
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5000

#: Broker-side limit on the length of a JoinGroup/LeaveGroup reason (Java truncates to 255).
_MAX_REASON_LENGTH = 255


class MemberState(enum.Enum):
    """Where this member is in the group's life cycle.

    Thread-safety: immutable enum values; the coordinator's field holding one is guarded by the
    coordinator lock.
    """

    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"
    STABLE = "STABLE"

    def has_not_joined_group(self) -> bool:
        """True before a JoinGroup response made us a member of a generation."""
        return self in (MemberState.UNJOINED, MemberState.PREPARING_REBALANCE)


class UnjoinedGroupError(Errors.KafkaError):
    """A JoinGroup answer arrived after this member had already given up on that rebalance.

    Thread-safety: an exception value; raised and caught on the thread that handled the answer.
    """

    retriable = True


def _truncate_reason(reason: str | None) -> str | None:
    if reason is None:
        return None
    return reason if len(reason) <= _MAX_REASON_LENGTH else reason[:_MAX_REASON_LENGTH]


class AbstractCoordinator(GroupMember):
    """Membership of one classic consumer group: coordinator discovery, join, sync, heartbeat.

    Subclasses supply the group protocol: :meth:`protocol_type`, :meth:`protocol_metadata`,
    :meth:`on_join_prepare`, :meth:`on_leader_elected`, :meth:`on_join_complete` and
    :meth:`on_leave_prepare`.

    Thread-safety: the user's thread calls :meth:`ensure_active_group`, :meth:`poll_heartbeat`
    and :meth:`close`; the heartbeat thread (:class:`HeartbeatThread`) runs concurrently.
    Shared state is guarded by the group lock of :class:`GroupMember` (taken before the network
    client's lock, never after); response handlers may run on either thread and take the group
    lock themselves.
    """

    def __init__(
        self,
        rebalance_config: GroupRebalanceConfig,
        client: CoordinatorClient,
        *,
        time: Time | None = None,
        heartbeat: Any = None,
    ) -> None:
        """Set up an unjoined member over ``client`` (a ConsumerNetworkClient).

        ``heartbeat`` replaces the three-timer :class:`Heartbeat` (tests pass one on a fake
        clock); the heartbeat thread starts on the first join.
        """
        super().__init__(rebalance_config, client, time=time)
        self.heartbeat = heartbeat if heartbeat is not None else self._make_heartbeat()
        self.state = MemberState.UNJOINED  # guarded by _lock
        self.generation = NO_GENERATION  # guarded by _lock
        self.rejoin_needed = True  # guarded by _lock
        self.rejoin_reason = ""  # guarded by _lock
        self.needs_join_prepare = True  # guarded by _lock
        self.join_future: Future[bytes] | None = None  # guarded by _lock
        self.heartbeat_thread: HeartbeatThread | None = None  # guarded by _lock
        # Consecutive failed join rounds.
        self._join_attempts = 0  # guarded by _lock
        # Set by the JoinGroup handler when this member was elected leader; the user's thread
        # then runs the assignment (outside response processing, bounded by its timer).
        self._leader_step: Future[JoinGroupResponse] | None = None  # guarded by _lock
        self._leader_deadline_ms: int | None = None  # guarded by _lock
        # When the current rebalance began (None between rebalances; a failed round does not
        # restart it, as in Java).
        self._rebalance_start_ms: int | None = None  # guarded by _lock

    # ------------------------------------------------------------------ hooks for subclasses
    def protocol_type(self) -> str:
        """The JoinGroup ``protocol_type`` ("consumer" for consumer groups)."""
        raise NotImplementedError

    def protocol_metadata(self) -> list[tuple[str, bytes]]:
        """The ``(protocol name, metadata bytes)`` list sent in JoinGroup, preferred first."""
        raise NotImplementedError

    def on_join_prepare(self, timer: Timer, generation_id: int, member_id: str) -> bool:
        """Called before (re)joining; False means "not ready yet, call me again later"."""
        raise NotImplementedError

    def on_leader_elected(
        self,
        leader_id: str,
        protocol: str,
        members: list[JoinGroupResponseMember],
        skip_assignment: bool,
    ) -> dict[str, bytes]:
        """As leader: compute every member's assignment bytes from the members' metadata."""
        raise NotImplementedError

    def on_join_complete(
        self, generation_id: int, member_id: str, protocol: str | None, assignment: bytes
    ) -> None:
        """A rebalance finished with ``assignment`` (this member's SyncGroup bytes)."""
        raise NotImplementedError

    def on_leave_prepare(self) -> None:
        """Called before leaving the group (close, unsubscribe); default does nothing."""

    # ------------------------------------------------------------------------ heartbeat object
    def _make_heartbeat(self) -> Any:
        from kafkaconsumer.internals.group.heartbeat import Heartbeat

        cfg = self.rebalance_config
        return Heartbeat(
            session_timeout_ms=cfg.session_timeout_ms,
            heartbeat_interval_ms=cfg.heartbeat_interval_ms,
            max_poll_interval_ms=cfg.rebalance_timeout_ms,
            retry_backoff_ms=cfg.retry_backoff_ms,
            retry_backoff_max_ms=cfg.retry_backoff_max_ms,
            time=self.time,
        )

    # --------------------------------------------------------------------- coordinator lookup

    # --------------------------------------------------------------------------- join / sync
    def rejoin_needed_or_pending(self) -> bool:
        """True when the member must (re)join or a join is in flight."""
        with self._lock:
            return self.rejoin_needed or self.join_future is not None

    def request_rejoin(self, reason: str, full_reason: str | None = None) -> None:
        """Ask to rejoin at the next poll; ``reason`` is also sent to the coordinator."""
        with self._lock:
            logger.info(
                "group %s: request joining group due to: %s",
                self.rebalance_config.group_id,
                full_reason or reason,
            )
            self.rejoin_reason = reason
            self.rejoin_needed = True

    def request_rejoin_if_necessary(self, reason: str, full_reason: str | None = None) -> None:
        """:meth:`request_rejoin` unless a rejoin is already requested."""
        with self._lock:
            if not self.rejoin_needed:
                self.request_rejoin(reason, full_reason)

    def ensure_active_group(self, timer: Timer) -> bool:
        """Find the coordinator, start the heartbeat thread and (re)join if needed."""
        if not self.ensure_coordinator_ready(timer):
            return False
        self._start_heartbeat_thread_if_needed()
        return self.join_group_if_needed(timer)

    def _start_heartbeat_thread_if_needed(self) -> None:
        with self._lock:
            if self.heartbeat_thread is None and not self._closed:
                self.heartbeat_thread = HeartbeatThread(self)
                self.heartbeat_thread.start()

    def _close_heartbeat_thread(self, timeout_s: float | None = None) -> None:
        with self._lock:
            thread = self.heartbeat_thread
            if thread is None:
                return
            thread.close()
            self.heartbeat_thread = None
        if thread is not threading.current_thread():
            thread.join(timeout_s)
            if thread.is_alive():
                logger.warning("heartbeat thread did not stop within %.1f s", timeout_s or 0)

    def join_group_if_needed(self, timer: Timer) -> bool:
        """Run join/sync rounds until the member is STABLE or ``timer`` expires.

        Raises the fatal errors of the rebalance (FencedInstanceIdError, authorization errors,
        a rebalance listener's exception, ...).
        """
        while self.rejoin_needed_or_pending():
            if (fatal := self.group_error_backoff.wait(timer, self.backoff_wait)) is not None:
                raise fatal
            if not self.ensure_coordinator_ready(timer):
                return False
            with self._lock:
                prepare = self.needs_join_prepare
                # Cleared first: if the listener raises, do not call it again on retry.
                self.needs_join_prepare = False
                gen = self.generation
            if prepare and not self.on_join_prepare(timer, gen.generation_id, gen.member_id):
                with self._lock:
                    self.needs_join_prepare = True
                return False
            future = self._initiate_join_group()
            if not self._await_join(future, timer):
                return False
            if future.succeeded():
                with self._lock:
                    gen = self.generation
                    state = self.state
                    self._join_attempts = 0
                self.group_error_backoff.succeeded()
                if not self._has_generation_reset(gen) and state is MemberState.STABLE:
                    self._record_rebalance()
                    self.on_join_complete(
                        gen.generation_id, gen.member_id, gen.protocol_name, future.value
                    )
                    # Reset only after the callback returns, so a woken-up callback is retried.
                    self._reset_join_group_future()
                    with self._lock:
                        self.needs_join_prepare = True
                else:
                    reason = (
                        f"rebalance failed since the generation/state was modified by the "
                        f"heartbeat thread to {gen}/{state.value} before the rebalance "
                        f"callback ran"
                    )
                    self._reset_state_and_rejoin(reason, True)
                    self._reset_join_group_future()
            else:
                exc = future.exception
                assert exc is not None
                self._reset_join_group_future()
                if not isinstance(exc, Errors.MemberIdRequiredError):
                    self.request_rejoin(
                        f"rebalance failed due to {type(exc).__name__}",
                        f"rebalance failed due to '{exc}' ({type(exc).__name__})",
                    )
                if isinstance(
                    exc,
                    (
                        Errors.UnknownMemberIdError,
                        Errors.IllegalGenerationError,
                        Errors.RebalanceInProgressError,
                        Errors.MemberIdRequiredError,
                    ),
                ):
                    continue
                if not getattr(exc, "retriable", False):
                    self.group_error_backoff.failed("joining the group", exc)
                    raise exc
                if timer.is_expired():
                    return False
                with self._lock:
                    attempts = self._join_attempts
                    self._join_attempts += 1
                self.backoff_wait(timer, self.retry_backoff.backoff(attempts))
        return True

    def _await_join(self, future: Future[bytes], timer: Timer) -> bool:
        """Poll until the join round ``future`` is done; False when ``timer`` expired first.

        When the JoinGroup answer elects this member leader, the assignment runs here, on the
        user's thread and bounded by ``timer``, not inside response processing.
        """
        while True:
            with self._lock:
                leader_step = self._leader_step
            if leader_step is not None and leader_step.is_done and not future.is_done:
                if not self._run_leader_step(leader_step, future, timer):
                    return False
                continue
            wait_on: Future[Any] = future
            if leader_step is not None and not leader_step.is_done:
                wait_on = Future()
                future.add_both(wait_on.complete_if_pending)
                leader_step.add_both(wait_on.complete_if_pending)
            self.client.poll(timeout_ms=timer.remaining_ms, future=wait_on)
            timer.update()
            if future.is_done:
                return True
            with self._lock:
                step_ready = self._leader_step is not None and self._leader_step.is_done
            if not step_ready and timer.is_expired():
                return False

    def _run_leader_step(
        self, leader_step: Future[JoinGroupResponse], future: Future[bytes], timer: Timer
    ) -> bool:
        """As leader: compute the assignment and send SyncGroup; False to come back later."""
        response = leader_step.value
        with self._lock:
            if self._leader_step is not leader_step:
                return True
            if self._leader_deadline_ms is None:
                # The group waits for our SyncGroup at most the rebalance timeout; do not spend
                # more than a request timeout of it waiting for metadata.
                self._leader_deadline_ms = (
                    self.time.monotonic_ms() + self.rebalance_config.request_timeout_ms
                )
            deadline = self._leader_deadline_ms
        if not self.prepare_leader_assignment(response, timer, deadline):
            return False
        with self._lock:
            if self._leader_step is not leader_step:
                return True
            self._leader_step = None
            self._leader_deadline_ms = None
            current = (
                self.state is MemberState.COMPLETING_REBALANCE
                and self.generation.generation_id == int(response["generation_id"])
            )
        if not current:
            future.fail_if_pending(
                UnjoinedGroupError("the generation changed before the leader's assignment was sent")
            )
            return True
        sync = self._on_leader_elected_sync(response)
        # Not Future.chain: the heartbeat thread may already have failed the join future (see
        # _handle_heartbeat_response) when a late SyncGroup answer arrives.
        sync.add_callback(future.complete_if_pending)
        sync.add_errback(future.fail_if_pending)
        return True

    def prepare_leader_assignment(
        self, response: JoinGroupResponse, timer: Timer, deadline_ms: int
    ) -> bool:
        """Hook for the leader before it assigns (metadata of the members' topics).

        Runs on the user's thread without the lock; may wait for up to ``timer``. False means
        "not ready, call again"; past ``deadline_ms`` it must return True. Default: ready.
        """
        return True

    def _record_rebalance(self) -> None:
        """The rebalance that began at ``_rebalance_start_ms`` completed (Java records it when
        the SyncGroup answer lands)."""
        with self._lock:
            start, self._rebalance_start_ms = self._rebalance_start_ms, None
        if self.sensors is not None and start is not None:
            self.sensors.record_rebalance(self.time.monotonic_ms() - start)

    def _record_failed_rebalance(self, exc: BaseException) -> None:
        if self.sensors is not None:
            self.sensors.record_rebalance(0, failed=True)

    def _reset_join_group_future(self) -> None:
        with self._lock:
            self.join_future = None
            self._leader_step = None
            self._leader_deadline_ms = None

    def _initiate_join_group(self) -> Future[bytes]:
        with self._lock:
            # Kept across wakeups so a woken-up poll does not start a second JoinGroup.
            if self.join_future is None:
                self.state = MemberState.PREPARING_REBALANCE
                # Heartbeats would carry a generation the JoinGroup is about to replace.
                if self.heartbeat_thread is not None:
                    self.heartbeat_thread.disable()
                self._leader_step = Future()
                self._leader_deadline_ms = None
                if self._rebalance_start_ms is None:
                    self._rebalance_start_ms = self.time.monotonic_ms()
                self.join_future = self._send_join_group_request()
                self.join_future.add_errback(self._record_failed_rebalance)
            return self.join_future

    def _send_join_group_request(self) -> Future[bytes]:
        node = self.check_and_get_coordinator()
        if node is None:
            return Future().failure(
                Errors.CoordinatorNotAvailableError("the group coordinator is not available")
            )
        cfg = self.rebalance_config
        with self._lock:
            gen = self.generation
            reason = self.rejoin_reason
        logger.info(
            "group %s: (re-)joining group (member id %r, reason: %s)",
            cfg.group_id,
            gen.member_id,
            reason or "initial join",
        )
        body = {
            "group_id": cfg.group_id,
            "session_timeout_ms": cfg.session_timeout_ms,
            "rebalance_timeout_ms": cfg.rebalance_timeout_ms,
            "member_id": gen.member_id,
            "group_instance_id": cfg.group_instance_id,
            "protocol_type": self.protocol_type(),
            "protocols": [
                {"name": name, "metadata": meta} for name, meta in self.protocol_metadata()
            ],
            "reason": _truncate_reason(reason),
        }
        # The coordinator may hold a JoinGroup for the whole rebalance timeout.
        timeout = max(
            cfg.request_timeout_ms, cfg.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS
        )
        request = self._send(node, _JOIN_GROUP, body, timeout_ms=timeout)
        return self._compose(request, gen, self._handle_join_group_response)

    def _handle_join_group_response(
        self, response: JoinGroupResponse, sent: Generation, future: Future[bytes]
    ) -> None:
        code = int(response.get("error_code", 0) or 0)
        group = self.rebalance_config.group_id
        if code == 0:
            ptype = response.get("protocol_type")
            if ptype is not None and ptype != "" and ptype != self.protocol_type():
                logger.debug(
                    "JoinGroup failed: inconsistent protocol type %r, expected %r",
                    ptype,
                    self.protocol_type(),
                )
                future.failure(
                    Errors.InconsistentGroupProtocolError(
                        f"protocol type {ptype!r} does not match {self.protocol_type()!r}"
                    )
                )
                return
            with self._lock:
                if self.state is not MemberState.PREPARING_REBALANCE:
                    # Woken up and left the group meanwhile: do not continue with SyncGroup.
                    future.failure(UnjoinedGroupError("member left the group during the join"))
                    return
                self.state = MemberState.COMPLETING_REBALANCE
                # Heartbeats go on while we wait for SyncGroup (a slow leader).
                if self.heartbeat_thread is not None:
                    self.heartbeat_thread.enable()
                self.generation = Generation(
                    int(response["generation_id"]),
                    str(response["member_id"]),
                    response.get("protocol_name"),
                )
                logger.info("group %s: successfully joined group with %s", group, self.generation)
                is_leader = response.get("leader") == response.get("member_id")
                leader_step = self._leader_step
            if is_leader:
                # The assignment runs on the user's thread (_await_join), which may have to
                # wait for metadata: nothing waits inside response processing.
                if leader_step is None:
                    future.fail_if_pending(UnjoinedGroupError("the join was reset meanwhile"))
                else:
                    leader_step.complete_if_pending(response)
                return
            sync = self._send_sync_group_request([])
            # Not Future.chain: the join future may already have been failed by the heartbeat
            # thread (see _handle_heartbeat_response) when a late SyncGroup answer arrives.
            sync.add_callback(future.complete_if_pending)
            sync.add_errback(future.fail_if_pending)
        elif code == Errors.CoordinatorLoadInProgressError.errno:
            logger.info("JoinGroup failed: coordinator %s is loading the group", self.coordinator)
            future.failure(Errors.CoordinatorLoadInProgressError())
        elif code == Errors.UnknownMemberIdError.errno:
            logger.info("JoinGroup failed: unknown member id; sent %s", sent)
            if self._generation_unchanged(sent):
                self._reset_state_on_response_error("JoinGroup", code, True)
            future.failure(Errors.UnknownMemberIdError())
        elif code in (Errors.CoordinatorNotAvailableError.errno, Errors.NotCoordinatorError.errno):
            self.mark_coordinator_unknown(f"error response {Errors.for_code(code).name}")
            logger.info(
                "JoinGroup failed with %s; marking coordinator unknown", Errors.for_code(code).name
            )
            future.failure(_error_for(code))
        elif code == Errors.FencedInstanceIdError.errno:
            logger.debug(
                "JoinGroup failed: group.instance.id %r was fenced by another instance",
                self.rebalance_config.group_instance_id,
            )
            future.failure(
                Errors.FencedInstanceIdError(
                    f"group.instance.id {self.rebalance_config.group_instance_id!r} is used by another "
                    f"consumer of group {group}"
                )
            )
        elif code in (
            Errors.InconsistentGroupProtocolError.errno,
            Errors.InvalidSessionTimeoutError.errno,
            Errors.InvalidGroupIdError.errno,
            Errors.GroupAuthorizationFailedError.errno,
            Errors.GroupMaxSizeReachedError.errno,
        ):
            logger.debug("JoinGroup failed with fatal error %s", Errors.for_code(code).name)
            if code == Errors.GroupMaxSizeReachedError.errno:
                future.failure(
                    Errors.GroupMaxSizeReachedError(
                        f"consumer group {group} already has the configured maximum number of members"
                    )
                )
            elif code == Errors.InvalidSessionTimeoutError.errno:
                future.failure(
                    Errors.InvalidSessionTimeoutError(
                        f"session.timeout.ms={self.rebalance_config.session_timeout_ms} is outside the "
                        f"broker's group.min.session.timeout.ms..group.max.session.timeout.ms range"
                    )
                )
            else:
                future.failure(_error_for(code))
        elif code == Errors.UnsupportedVersionError.errno:
            future.failure(
                Errors.UnsupportedVersionError(
                    "JoinGroup failed with UNSUPPORTED_VERSION; unset group.instance.id and retry "
                    "to see if that resolves it"
                )
            )
        elif code == Errors.MemberIdRequiredError.errno:
            member_id = str(response.get("member_id") or "")
            logger.debug(
                "JoinGroup answered MEMBER_ID_REQUIRED; rejoining with member id %s", member_id
            )
            with self._lock:
                self.generation = Generation(NO_GENERATION.generation_id, member_id, None)
            self.request_rejoin(f"need to re-join with the given member-id: {member_id}")
            future.failure(Errors.MemberIdRequiredError())
        elif code == Errors.RebalanceInProgressError.errno:
            logger.info("JoinGroup failed with REBALANCE_IN_PROGRESS; will retry")
            future.failure(Errors.RebalanceInProgressError())
        else:
            logger.debug("JoinGroup failed with unexpected error %s", Errors.for_code(code).name)
            future.failure(
                Errors.KafkaError(
                    f"unexpected error in JoinGroup response: {Errors.for_code(code).name}"
                )
            )

    def _on_leader_elected_sync(self, response: JoinGroupResponse) -> Future[bytes]:
        try:
            assignments = self.on_leader_elected(
                str(response.get("leader")),
                str(response.get("protocol_name")),
                list(response.get("members") or []),
                bool(response.get("skip_assignment", False)),
            )
        except Exception as exc:
            return Future().failure(exc)
        return self._send_sync_group_request(
            [{"member_id": member, "assignment": data} for member, data in assignments.items()]
        )

    def _send_sync_group_request(self, assignments: list[dict[str, Any]]) -> Future[bytes]:
        node = self.check_and_get_coordinator()
        if node is None:
            return Future().failure(
                Errors.CoordinatorNotAvailableError("the group coordinator is not available")
            )
        with self._lock:
            gen = self.generation
        body = {
            "group_id": self.rebalance_config.group_id,
            "generation_id": gen.generation_id,
            "member_id": gen.member_id,
            "group_instance_id": self.rebalance_config.group_instance_id,
            "protocol_type": self.protocol_type(),
            "protocol_name": gen.protocol_name,
            "assignments": assignments,
        }
        return self._compose(
            self._send(node, _SYNC_GROUP, body), gen, self._handle_sync_group_response
        )

    def _has_generation_reset(self, gen: Generation) -> bool:
        # ILLEGAL_GENERATION keeps the member id, so look at the generation id and protocol only.
        return gen.generation_id == NO_GENERATION.generation_id and gen.protocol_name is None

    def _handle_sync_group_response(
        self, response: SyncGroupResponse, sent: Generation, future: Future[bytes]
    ) -> None:
        code = int(response.get("error_code", 0) or 0)
        if code == 0:
            ptype = response.get("protocol_type")
            if ptype is not None and ptype != "" and ptype != self.protocol_type():
                future.failure(
                    Errors.InconsistentGroupProtocolError(
                        f"protocol type {ptype!r} does not match {self.protocol_type()!r}"
                    )
                )
                return
            with self._lock:
                if (
                    not self._has_generation_reset(self.generation)
                    and self.state is MemberState.COMPLETING_REBALANCE
                    and self.generation == sent
                ):
                    pname = response.get("protocol_name")
                    if pname and pname != self.generation.protocol_name:
                        future.failure(
                            Errors.InconsistentGroupProtocolError(
                                f"protocol name {pname!r} does not match "
                                f"{self.generation.protocol_name!r}"
                            )
                        )
                        return
                    logger.info(
                        "group %s: successfully synced group in %s",
                        self.rebalance_config.group_id,
                        self.generation,
                    )
                    self.state = MemberState.STABLE
                    self.rejoin_reason = ""
                    self.rejoin_needed = False
                    assignment = response.get("assignment")
                    result = bytes(assignment) if assignment is not None else b""
                else:
                    logger.info(
                        "generation was reset by the heartbeat thread to %s (state %s) "
                        "before the SyncGroup answer; retrying the rebalance",
                        self.generation,
                        self.state.value,
                    )
                    result = None
            if result is None:
                # ILLEGAL_GENERATION makes the join loop retry at once.
                future.failure(Errors.IllegalGenerationError())
            else:
                future.success(result)
            return
        if code == Errors.GroupAuthorizationFailedError.errno:
            future.failure(
                Errors.GroupAuthorizationFailedError(
                    f"not authorized to access group {self.rebalance_config.group_id}"
                )
            )
        elif code == Errors.RebalanceInProgressError.errno:
            logger.info("SyncGroup failed: the group began another rebalance; sent %s", sent)
            future.failure(Errors.RebalanceInProgressError())
        elif code == Errors.FencedInstanceIdError.errno:
            logger.debug(
                "SyncGroup failed: group.instance.id %r was fenced",
                self.rebalance_config.group_instance_id,
            )
            future.failure(
                Errors.FencedInstanceIdError(
                    f"group.instance.id {self.rebalance_config.group_instance_id!r} is used by another "
                    f"consumer of group {self.rebalance_config.group_id}"
                )
            )
        elif code in (Errors.UnknownMemberIdError.errno, Errors.IllegalGenerationError.errno):
            logger.info("SyncGroup failed with %s; sent %s", Errors.for_code(code).name, sent)
            if self._generation_unchanged(sent):
                # ILLEGAL_GENERATION keeps the member id: it may still be valid.
                self._reset_state_on_response_error(
                    "SyncGroup", code, code != Errors.IllegalGenerationError.errno
                )
            future.failure(_error_for(code))
        elif code in (Errors.CoordinatorNotAvailableError.errno, Errors.NotCoordinatorError.errno):
            logger.info(
                "SyncGroup failed with %s; marking coordinator unknown", Errors.for_code(code).name
            )
            self.mark_coordinator_unknown(f"error response {Errors.for_code(code).name}")
            future.failure(_error_for(code))
        else:
            future.failure(
                Errors.KafkaError(
                    f"unexpected error in SyncGroup response: {Errors.for_code(code).name}"
                )
            )
        if code != Errors.GroupAuthorizationFailedError.errno:
            self.request_rejoin(f"SyncGroup failed with {Errors.for_code(code).name}")

    # ------------------------------------------------------------------ generation and state
    def generation_snapshot(self) -> Generation:
        """The current generation, whether or not the group is stable."""
        with self._lock:
            return self.generation

    def generation_if_stable(self) -> Generation | None:
        """The current generation when STABLE, else None."""
        with self._lock:
            return self.generation if self.state is MemberState.STABLE else None

    def rebalance_in_progress(self) -> bool:
        """True while a JoinGroup or SyncGroup is outstanding."""
        with self._lock:
            return self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)

    def member_id(self) -> str:
        """Our member id ("" before the first join)."""
        with self._lock:
            return self.generation.member_id

    def _generation_unchanged(self, sent: Generation) -> bool:
        with self._lock:
            return self.generation == sent

    def _reset_state_and_generation(self, reason: str, reset_member_id: bool) -> None:
        with self._lock:
            logger.info(
                "group %s: resetting generation%s due to: %s",
                self.rebalance_config.group_id,
                " and member id" if reset_member_id else "",
                reason,
            )
            self.state = MemberState.UNJOINED
            if reset_member_id:
                self.generation = NO_GENERATION
            else:
                # Keep the member id so the next join does not wait for the old one to expire.
                self.generation = Generation(
                    NO_GENERATION.generation_id, self.generation.member_id, None
                )

    def _reset_state_and_rejoin(self, reason: str, reset_member_id: bool) -> None:
        with self._lock:
            self._reset_state_and_generation(reason, reset_member_id)
            self.request_rejoin(reason)
            self.needs_join_prepare = True

    def _reset_state_on_response_error(self, api: str, code: int, reset_member_id: bool) -> None:
        self._reset_state_and_rejoin(
            f"encountered {Errors.for_code(code).name} from {api} response", reset_member_id
        )

    def reset_generation_on_leave_group(self) -> None:
        """Forget generation and member id after leaving; the next poll joins afresh."""
        self._reset_state_and_rejoin("consumer pro-actively leaving the group", True)

    # ------------------------------------------------------------------------------ heartbeat
    def poll_heartbeat(self, now_ms: int) -> None:
        """Tell the heartbeat machinery the user polled; re-raise a heartbeat-thread failure."""
        with self._lock:
            thread = self.heartbeat_thread
            if thread is not None:
                failure = thread.failure
                if failure is not None:
                    # Thrown once; a new heartbeat thread starts with the next join.
                    self.heartbeat_thread = None
                    thread.close()
                    raise failure
                if self.heartbeat.should_heartbeat(now_ms):
                    self._cond.notify_all()
            self.heartbeat.poll(now_ms)

    def time_to_next_heartbeat(self, now_ms: int) -> int:
        """Milliseconds until a heartbeat is due (huge when not in a generation)."""
        with self._lock:
            if self.state.has_not_joined_group():
                return 2**62
            return int(self.heartbeat.time_to_next_heartbeat(now_ms))

    def send_heartbeat_request(self) -> Future[None]:
        """Send a Heartbeat for the current generation (the heartbeat thread calls this)."""
        node = self.check_and_get_coordinator()
        with self._lock:
            gen = self.generation
        if node is None:
            return Future().failure(
                Errors.CoordinatorNotAvailableError("the group coordinator is not available")
            )
        logger.debug("sending Heartbeat for %s to coordinator %s", gen, node)
        body = {
            "group_id": self.rebalance_config.group_id,
            "generation_id": gen.generation_id,
            "member_id": gen.member_id,
            "group_instance_id": self.rebalance_config.group_instance_id,
        }
        return self._compose(
            self._send(node, _HEARTBEAT, body), gen, self._handle_heartbeat_response
        )

    def _handle_heartbeat_response(
        self, response: HeartbeatResponse, sent: Generation, future: Future[None]
    ) -> None:
        code = int(response.get("error_code", 0) or 0)
        if code == 0:
            future.success(None)
        elif code in (Errors.CoordinatorNotAvailableError.errno, Errors.NotCoordinatorError.errno):
            logger.info(
                "heartbeat failed: coordinator %s is not available or not valid", self.coordinator
            )
            self.mark_coordinator_unknown(f"error response {Errors.for_code(code).name}")
            future.failure(_error_for(code))
        elif code == Errors.RebalanceInProgressError.errno:
            with self._lock:
                if self.state is MemberState.STABLE:
                    self.request_rejoin("group is already rebalancing")
                    future.failure(Errors.RebalanceInProgressError())
                elif (
                    self.state is MemberState.COMPLETING_REBALANCE
                    and self.generation == sent
                    and self.join_future is not None
                    and not self.join_future.is_done
                ):
                    # A new rebalance began while our SyncGroup for this generation is pending,
                    # so that SyncGroup can only fail (Kafka answers it REBALANCE_IN_PROGRESS;
                    # some brokers never answer it). Give up on it and rejoin now.
                    logger.info(
                        "group %s: a new rebalance began while waiting for SyncGroup of "
                        "%s; rejoining",
                        self.rebalance_config.group_id,
                        sent,
                    )
                    self.request_rejoin("group is already rebalancing")
                    self.join_future.fail_if_pending(
                        Errors.RebalanceInProgressError(
                            "the group began a new rebalance before SyncGroup completed"
                        )
                    )
                    future.success(None)
                else:
                    logger.debug(
                        "ignoring REBALANCE_IN_PROGRESS heartbeat answer in state %s",
                        self.state.value,
                    )
                    future.success(None)
        elif code in (
            Errors.IllegalGenerationError.errno,
            Errors.UnknownMemberIdError.errno,
            Errors.FencedInstanceIdError.errno,
        ):
            if self._generation_unchanged(sent):
                logger.info(
                    "heartbeat with %s failed with %s; resetting generation",
                    sent,
                    Errors.for_code(code).name,
                )
                self._reset_state_on_response_error(
                    "Heartbeat", code, code != Errors.IllegalGenerationError.errno
                )
                if code == Errors.FencedInstanceIdError.errno:
                    future.failure(
                        Errors.FencedInstanceIdError(
                            f"group.instance.id {self.rebalance_config.group_instance_id!r} is used by "
                            f"another consumer of group {self.rebalance_config.group_id}"
                        )
                    )
                else:
                    future.failure(_error_for(code))
            else:
                logger.info(
                    "ignoring %s for a heartbeat of stale %s", Errors.for_code(code).name, sent
                )
                future.success(None)
        elif code == Errors.GroupAuthorizationFailedError.errno:
            future.failure(
                Errors.GroupAuthorizationFailedError(
                    f"not authorized to access group {self.rebalance_config.group_id}"
                )
            )
        else:
            future.failure(
                Errors.KafkaError(
                    f"unexpected error in heartbeat response: {Errors.for_code(code).name}"
                )
            )

    def handle_poll_timeout_expiry(self) -> None:
        """The user did not call poll() within max.poll.interval.ms: leave the group."""
        logger.warning(
            "group %s: consumer poll timeout has expired: the time between two calls to poll() "
            "was longer than max.poll.interval.ms (%d ms), which usually means the poll loop "
            "spends too long processing records. Raise max.poll.interval.ms or lower "
            "max.poll.records (fewer records per poll). The member leaves the group now and "
            "rejoins at its next poll().",
            self.rebalance_config.group_id,
            self.rebalance_config.rebalance_timeout_ms,
        )
        self.maybe_leave_group("consumer poll timeout has expired.")

    # ------------------------------------------------------------------------------- leaving
    def _on_coordinator_found(self) -> None:
        """A new coordinator gets a whole session before heartbeats to it count as missing."""
        self.heartbeat.reset_session_timeout()

    def _leave_on_close(self, leave_group: bool | None) -> tuple[bool, bool]:
        """Java's default: dynamic members leave, static members stay so that a restart within
        session.timeout.ms keeps their partitions."""
        leave = self.rebalance_config.leave_group_on_close if leave_group is None else leave_group
        should_leave = bool(leave) and (self.is_dynamic_member() or leave_group is True)
        return should_leave, should_leave

    def is_dynamic_member(self) -> bool:
        """True without ``group.instance.id`` (static members never leave on their own)."""
        return self.rebalance_config.group_instance_id is None

    def maybe_leave_group(self, reason: str, force_static: bool = False) -> Future[None] | None:
        """Send LeaveGroup (dynamic members, or static ones with ``force_static``), reset state.

        A best-effort, single attempt: the answer is not waited for here.
        """
        future: Future[None] | None = None
        with self._lock:
            leaving_allowed = self.is_dynamic_member() or force_static
            if (
                leaving_allowed
                and not self.coordinator_unknown()
                and self.state is not MemberState.UNJOINED
                and self.generation.has_member_id()
            ):
                node = self.coordinator
                assert node is not None
                gen = self.generation
                logger.info(
                    "group %s: member %s sending LeaveGroup to coordinator %s due to %s",
                    self.rebalance_config.group_id,
                    gen.member_id,
                    node,
                    reason,
                )
                member: LeaveGroupRequestMember = {
                    "member_id": gen.member_id,
                    "group_instance_id": self.rebalance_config.group_instance_id,
                    "reason": _truncate_reason(reason),
                }
                version = self.client.api_version(node, _LEAVE_GROUP)
                body: LeaveGroupRequest = {"group_id": self.rebalance_config.group_id}
                if version is not None and version < 3:
                    body["member_id"] = gen.member_id
                else:
                    body["members"] = [member]
                request = self._send(
                    node,
                    _LEAVE_GROUP,
                    body,
                    **({"version": version} if version is not None else {}),
                )
                future = self._compose(request, gen, self._handle_leave_group_response)
            self.reset_generation_on_leave_group()
        if future is not None:
            # Sends it now; outside the lock, as the answer's handler takes it.
            self._client_poll_no_wakeup()
        return future

    def _handle_leave_group_response(
        self, response: LeaveGroupResponse, sent: Generation, future: Future[None]
    ) -> None:
        code = int(response.get("error_code", 0) or 0)
        if code == 0:
            members = response.get("members") or []
            member_codes = [int(m.get("error_code", 0) or 0) for m in members]
            bad = [c for c in member_codes if c]
            if bad:
                logger.warning(
                    "LeaveGroup for %s failed with %s", sent, Errors.for_code(bad[0]).name
                )
                future.failure(_error_for(bad[0]))
                return
            logger.debug("LeaveGroup for %s succeeded", sent)
            future.success(None)
        else:
            logger.warning("LeaveGroup for %s failed with %s", sent, Errors.for_code(code).name)
            if code in (
                Errors.CoordinatorNotAvailableError.errno,
                Errors.NotCoordinatorError.errno,
            ):
                self.mark_coordinator_unknown(f"error response {Errors.for_code(code).name}")
            future.failure(_error_for(code))

    # -------------------------------------------------------------------- network plumbing

    # A heartbeat thread that is not this class's own reaches the member through these
    # (read at each call, so a wrapped lock or a replaced ``_send`` is seen).
