"""The KIP-848 consumer protocol's member (``group.protocol=consumer``).

ConsumerGroupHeartbeat replaces JoinGroup/SyncGroup/Heartbeat: the broker assigns, the
heartbeat thread (:class:`~kafkaconsumer.internals.group.consumer_heartbeat_request_manager.ConsumerHeartbeatRequestManager`)
keeps the membership (:class:`~kafkaconsumer.internals.group.consumer_membership_manager.ConsumerMembershipManager`,
the state machine), and ``poll()`` reconciles: revoke (auto-commit, listener), assign
(listener), then the next heartbeat acknowledges. Commits carry the member epoch. This is the
part of Java's ``AsyncKafkaConsumer`` that its ``ConsumerMembershipManager`` and
``ConsumerHeartbeatRequestManager`` play, over the shared
:class:`~kafkaconsumer.internals.group.consumer_group_member.ConsumerGroupMember`.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.config import config_value
from kafkaconsumer.internals.group.consumer_group_member import ConsumerGroupMember
from kafkaconsumer.internals.group.consumer_heartbeat_request_manager import (
    CONSUMER_GROUP_HEARTBEAT,
    ConsumerHeartbeatRequestManager,
)
from kafkaconsumer.internals.group.consumer_membership_manager import (
    ConsumerMembershipManager,
    ConsumerMemberState,
    resolve,
)
from kafkaconsumer.internals.group.group_member import (
    NO_GENERATION,
    Generation,
    GroupRebalanceConfig,
)
from kafkaconsumer.internals.interfaces import CoordinatorClient
from kafkaconsumer.internals.subscription_pattern import INTERNAL_TOPICS, to_broker_regex
from kafkaconsumer.internals.subscription_state import SubscriptionState
from kafkaconsumer.metadata import ConsumerMetadata
from kafkaconsumer.metrics import Metrics
from kafkaconsumer.network.future import Future
from kafkaconsumer.structs import ConsumerGroupMetadata, TopicPartition
from kafkaconsumer.utils.clock import Time
from kafkaconsumer.utils.timer import Timer

logger = logging.getLogger(__name__)

__all__ = ["ConsumerProtocolCoordinator"]

#: How often a member that is joining or reconciling looks at the state machine again.
_JOIN_ATTENTION_MS = 50


class ConsumerProtocolCoordinator(ConsumerGroupMember):
    """The group side of one ``KafkaConsumer`` with ``group.protocol=consumer`` (KIP-848).

    Construct with the consumer configuration (a Mapping of Java keys), the thread-safe
    ``ConsumerNetworkClient``, the consumer's :class:`SubscriptionState` and
    :class:`~kafkaconsumer.metadata.ConsumerMetadata`.

    Thread-safety: public methods are called from the user's thread; the heartbeat thread
    (:class:`ConsumerHeartbeatRequestManager`) changes the state machine under the group lock
    and reaches this member only through its
    :class:`~kafkaconsumer.internals.group.consumer_heartbeat_request_manager.HeartbeatRequestHost`
    methods. Reconciliation and listeners run on the user's thread outside every lock.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        client: CoordinatorClient,
        subscriptions: SubscriptionState,
        metadata: ConsumerMetadata,
        *,
        time: Time | None = None,
        interceptors: Any = None,
        metrics: Metrics | None = None,
    ) -> None:
        """Build the member from the consumer's config (Java keys).

        With ``metrics`` (the consumer's registry) it reports the
        ``consumer-coordinator-metrics`` group there; ``interceptors`` receive ``on_commit``
        after successful commits (on the user's thread, no lock held).
        """
        super().__init__(GroupRebalanceConfig.from_config(config), client, time=time)
        #: The state machine (member id, epoch, target and acknowledged assignment).
        self.membership: ConsumerMembershipManager = ConsumerMembershipManager(  # guarded by _lock
            self.rebalance_config.group_id,
            group_instance_id=self.rebalance_config.group_instance_id,
            rack_id=self.rebalance_config.client_rack,
            rebalance_timeout_ms=self.rebalance_config.rebalance_timeout_ms,
            server_assignor=config_value(config, "group.remote.assignor") or None,
        )
        self._hb_manager: ConsumerHeartbeatRequestManager | None = None  # guarded by _lock
        #: The last (pattern, reason it stays on the client) decided, to log each change once.
        self._regex_decision: tuple[re.Pattern[str], str | None] | None = None  # guarded by _lock
        #: The last ((pattern, ConsumerGroupHeartbeat version, internal topics), regex).
        self._regex_cache: tuple[tuple[Any, ...], str | None] | None = None  # guarded by _lock
        self._init_consumer_member(
            config, subscriptions, metadata, interceptors=interceptors, metrics=metrics
        )

    # ============================================================================== poll
    def poll(self, timer: Timer, wait_for_join_group: bool | None = None) -> bool:
        """Heartbeat bookkeeping, reconciliation of a new target, auto-commit.

        ``wait_for_join_group`` is the classic protocol's; this member never blocks for the
        broker's assignment. Raises the heartbeat thread's stored failure and exceptions from
        the rebalance listener. Returns False when the coordinator is not known yet.
        """
        return self._poll_consumer_protocol(timer, self.membership)

    def time_to_next_poll(self, now_ms: int) -> int:
        """How long the consumer may block before the member needs attention."""
        return self._time_to_next_poll_consumer_protocol(now_ms, self.membership)

    def enforce_rebalance(self, reason: str | None = None) -> None:
        """Not supported: as Java, the broker decides when to rebalance; a warning is logged."""
        if not self.subscriptions.has_auto_assigned_partitions():
            raise Errors.IllegalStateError(
                "Tried to force a rebalance but consumer does not have a group."
            )
        logger.warning("enforce_rebalance() is not supported with group.protocol=consumer; ignored")

    # ==================================================================== commit hooks
    def generation_snapshot(self) -> Generation:
        """No classic generation: :data:`NO_GENERATION` (commits carry the member epoch)."""
        return NO_GENERATION

    def commit_generation_state(self, sent: Generation) -> tuple[bool, bool]:
        """Only a commit outside the group (manual assignment) carries :data:`NO_GENERATION`."""
        return sent == NO_GENERATION, False

    def reset_state_on_response_error(self, api: str, code: int, reset_member_id: bool) -> None:
        """Note why the member left; the epoch is the broker's to change, and the next
        heartbeat's answer (fenced, unknown member) makes the member rejoin."""
        self._note_response_error(api, code)

    def offset_fetch_member(self) -> Generation | None:
        """The (epoch, member id) an OffsetFetch v9+ proves membership with (KIP-848)."""
        return self.generation_if_stable()

    def on_commit_rebalance_in_progress(self) -> None:
        """Nothing to rejoin: the broker drives this protocol's rebalances through heartbeats."""
        logger.debug(
            "group %s: an offset commit was refused during a rebalance",
            self.rebalance_config.group_id,
        )

    def _session_timeout_description(self) -> str:
        return "the group's session timeout"

    def _leave_on_close(self, leave_group: bool | None) -> tuple[bool, bool]:
        """A static member leaves too (epoch -2 keeps its partitions for the session timeout),
        also when asked to remain (KIP-1092); a dynamic member asked to remain sends nothing
        and stays until its session times out."""
        static = self.rebalance_config.group_instance_id is not None
        leave = leave_group is not False or static
        return leave and self.rebalance_config.leave_group_on_close, leave

    # ============================================================ heartbeat subscription
    def heartbeat_subscription(self) -> tuple[list[str] | None, str | None]:
        """What the next ConsumerGroupHeartbeat subscribes to: (topic names, broker regex).

        A ``re`` pattern goes to the broker as ``SubscribedTopicRegex`` when the coordinator
        speaks ConsumerGroupHeartbeat v1 (Apache Kafka 4.0+) and RE2 can read it; otherwise it
        is matched locally against the metadata and sent as names, as the Java client does
        for a ``java.util.regex.Pattern``. Called with the group lock held.
        """
        pattern = (
            self.subscriptions.subscribed_pattern
            if self.subscriptions.has_pattern_subscription()
            else None
        )
        if pattern is not None:
            regex = self._broker_regex(pattern)
            if regex is not None:
                return None, regex
        return sorted(self.subscriptions.subscription()), None

    def _broker_regex(self, pattern: re.Pattern[str]) -> str | None:
        node = self.coordinator
        version = (
            self.client.api_version(node, CONSUMER_GROUP_HEARTBEAT) if node is not None else None
        )
        internal: frozenset[str] = frozenset()
        if self.metadata.exclude_internal_topics:
            internal = INTERNAL_TOPICS | frozenset(self.metadata.cluster.internal_topics)
        key = (pattern, version, internal)
        cached = self._regex_cache
        if cached is not None and cached[0] == key:
            # Asked on every poll and heartbeat: analyse a pattern once per situation.
            return cached[1]
        if version is None or version < 1:
            reason: str | None = "the coordinator does not support ConsumerGroupHeartbeat v1"
            regex = None
        else:
            regex, reason = to_broker_regex(pattern, internal)
        self._regex_cache = (key, regex)
        if self._regex_decision != (pattern, reason):
            self._regex_decision = (pattern, reason)
            if reason is None:
                logger.info(
                    "group %s: the broker matches the subscription pattern %r",
                    self.rebalance_config.group_id,
                    regex,
                )
            else:
                logger.info(
                    "group %s: the subscription pattern %r is matched by the client and sent "
                    "as topic names: %s",
                    self.rebalance_config.group_id,
                    pattern.pattern,
                    reason,
                )
        return regex

    def broker_description(self) -> str:
        """The coordinator broker, for error messages."""
        node = self.coordinator
        if node is None:
            return "the group coordinator"
        # Group traffic uses the connection id 2**31 - 1 - broker id.
        return f"the group coordinator (broker {2**31 - 1 - node})"

    def on_new_target(self) -> None:
        """Heartbeat thread (lock held): a new target or a fencing awaits the user's thread."""
        logger.debug(
            "group %s: membership needs the user's thread (state %s)",
            self.rebalance_config.group_id,
            self.membership.state.value,
        )

    # ==================================================================== reconciliation
    def _complete_due_revocations(self, due: set[TopicPartition]) -> None:
        """Revoke ``due`` (lost when out of the group), then acknowledge what is left."""
        due = due & set(self.subscriptions.assigned_partitions())
        if not due:
            return
        with self._lock:
            in_group = self.membership.state.in_group()
        exc = (
            self.listener_invoker.invoke_partitions_revoked(due)
            if in_group
            else self.listener_invoker.invoke_partitions_lost(due)
        )
        remaining = set(self.subscriptions.assigned_partitions()) - due
        self.subscriptions.assign_from_subscribed(sorted(remaining))
        manager = self._hb_manager
        if in_group and manager is not None:
            # Only now may the broker give them to their next owner.
            self._acknowledge_owned(self.membership, manager, remaining)
        if exc is not None:
            raise exc

    def on_leave_prepare(self) -> None:
        """Revoke (or, out of the group, lose) everything before leaving."""
        dropped = set(self.subscriptions.assigned_partitions())
        self.listener_invoker.revocations.clear()
        with self._lock:
            in_group = self.membership.state.in_group()
        if self.subscriptions.has_auto_assigned_partitions() and dropped:
            exc = (
                self.listener_invoker.invoke_partitions_revoked(dropped)
                if in_group
                else self.listener_invoker.invoke_partitions_lost(dropped)
            )
            self.subscriptions.assign_from_subscribed(())
            if exc is not None:
                raise exc

    def _start_heartbeat_manager_if_needed(self) -> ConsumerHeartbeatRequestManager:
        with self._lock:
            manager = self._hb_manager
            if manager is None or (manager.closed and not self._closed):
                manager = ConsumerHeartbeatRequestManager(self, self.membership)
                self._hb_manager = manager
                manager.start()
            return manager

    def _poll_consumer_protocol(self, timer: Timer, m: ConsumerMembershipManager) -> bool:
        self.maybe_update_subscription_metadata()
        self.commits.invoke_completed_offset_commit_callbacks()
        if not self.subscriptions.has_auto_assigned_partitions():
            self.commits.maybe_auto_commit_offsets_async(timer.current_time_ms)
            return True
        with self._lock:
            manager = self._hb_manager
            error: BaseException | None = None
            if manager is not None:
                manager.poll(timer.current_time_ms)
                error, manager.error = manager.error, None
            fatal = m.fatal_error if m.state is ConsumerMemberState.FATAL else None
        if fatal is not None:
            raise self.group_error_backoff.throttle(fatal, timer, self.backoff_wait)
        if error is not None:
            raise error
        if self.coordinator_unknown() and not self.ensure_coordinator_ready(timer):
            return False
        manager = self._start_heartbeat_manager_if_needed()
        with self._lock:
            state = m.state
            if state in (ConsumerMemberState.UNSUBSCRIBED, ConsumerMemberState.LEAVING):
                m.transition_to_joining()
                self._departure = None
                manager.request_heartbeat()
            elif (
                m.sent is not None
                and m.sent.subscribed_topic_names is not None
                and tuple(self.heartbeat_subscription()[0] or ()) != m.sent.subscribed_topic_names
            ):
                # Tell the broker about the new subscription now, not at the next interval.
                manager.request_heartbeat()
        if state in (ConsumerMemberState.FENCED, ConsumerMemberState.STALE):
            self._release_lost_and_rejoin(m, manager)
        self._maybe_reconcile(m, manager)
        self.commits.maybe_auto_commit_offsets_async(timer.current_time_ms)
        return True

    def _release_lost_and_rejoin(
        self, m: ConsumerMembershipManager, manager: ConsumerHeartbeatRequestManager
    ) -> None:
        """Fenced or stale: others may own our partitions now; give them up as lost, rejoin."""
        lost = set(self.subscriptions.assigned_partitions())
        self.listener_invoker.revocations.clear()
        exc = self.listener_invoker.invoke_partitions_lost(lost) if lost else None
        self.subscriptions.assign_from_subscribed(())
        with self._lock:
            m.transition_to_joining()
            self._departure = None
            manager.request_heartbeat()
        if exc is not None:
            raise exc

    def _topic_ids_of(self, partitions: Iterable[TopicPartition]) -> dict[Any, frozenset[int]]:
        cluster = self.metadata.cluster
        out: dict[Any, set[int]] = {}
        for tp in partitions:
            tid = cluster.topic_id(tp.topic)
            if tid is not None:
                out.setdefault(tid, set()).add(tp.partition)
        return {tid: frozenset(parts) for tid, parts in out.items()}

    def _maybe_reconcile(
        self, m: ConsumerMembershipManager, manager: ConsumerHeartbeatRequestManager
    ) -> None:
        """Move towards the broker's target: revoke (commit, listener), assign, acknowledge.

        Runs on the user's thread in poll(), outside every lock. Topics of the target whose
        names the metadata does not know yet stay pending (a metadata refresh is requested) and
        are reconciled once they resolve.
        """
        with self._lock:
            if not m.reconciliation_pending() or m.target is None:
                return
            target = dict(m.target)
            acked = dict(m.current)
        cluster = self.metadata.cluster
        names = {tid: cluster.topic_name(tid) for tid in target}
        resolved, unresolved = resolve(target, {t: n for t, n in names.items() if n is not None})
        if unresolved:
            logger.debug(
                "group %s: assignment names topic ids %s not in the metadata yet",
                self.rebalance_config.group_id,
                sorted(map(str, unresolved)),
            )
            self.metadata.request_update()
        owned = set(self.subscriptions.assigned_partitions())
        pending_revoke = (
            self.listener_invoker.revocations.pending()
            if self.listener_invoker.kip983_enabled
            else set()
        )
        revoked = owned - resolved
        added = resolved - owned
        if revoked and self.listener_invoker.kip983_enabled:
            # KIP-983: the revocation completes at the start of a later poll (begin_poll) and
            # the broker hears of it only then; the partitions that arrive are taken now, so
            # processing goes on at full speed while the revoked ones are being finished.
            new = revoked - pending_revoke
            if new:
                self.subscriptions.mark_pending_revocation(new)
                self.listener_invoker.revocations.request_revoke(
                    new, self._consumer_protocol_delay_bound_ms(m)
                )
                logger.info(
                    "group %s: partitions %s will be revoked at the next poll",
                    self.rebalance_config.group_id,
                    sorted(new),
                )
            if added:
                self._assign_reconciled(m, manager, owned | added, added, revoked=set())
            return
        first_exc: BaseException | None = None
        if revoked:
            # Stop fetching them, commit what was consumed, then tell the listener.
            self.subscriptions.mark_pending_revocation(revoked)
            if self.commits.auto_commit_enabled:
                self.commits.maybe_auto_commit_offsets_sync(
                    self.time.timer(self.rebalance_config.request_timeout_ms)
                )
            first_exc = self.listener_invoker.invoke_partitions_revoked(revoked)
            self.subscriptions.assign_from_subscribed(sorted(owned - revoked))
        new_owned = (owned - revoked) | added
        if not revoked and not added and self._topic_ids_of(new_owned) == acked:
            return
        try:
            self._assign_reconciled(m, manager, new_owned, added, revoked)
        finally:
            if first_exc is not None:
                raise first_exc

    def _consumer_protocol_delay_bound_ms(self, m: ConsumerMembershipManager) -> int:
        # The broker's rebalance timeout started when it sent the new target: leave two
        # heartbeat intervals for the answer to arrive and the completion to be acknowledged.
        with self._lock:
            interval = m.heartbeat_interval_ms
        return max(0, self.rebalance_config.rebalance_timeout_ms - 2 * interval)

    def _assign_reconciled(
        self,
        m: ConsumerMembershipManager,
        manager: ConsumerHeartbeatRequestManager,
        new_owned: set[TopicPartition],
        added: set[TopicPartition],
        revoked: set[TopicPartition],
    ) -> None:
        """Own ``new_owned``, tell the listener about ``added``, acknowledge in a heartbeat."""
        self._maybe_update_joined_subscription(new_owned)
        self.subscriptions.assign_from_subscribed(sorted(new_owned))
        if self.commits.auto_commit_enabled:
            self.commits.next_auto_commit_timer.update_and_reset(
                self.commits.auto_commit_interval_ms
            )
        assign_exc = self.listener_invoker.invoke_partitions_assigned(added)
        self._acknowledge_owned(m, manager, new_owned)
        logger.info(
            "group %s: reconciled assignment at epoch %d: %s (added %s, revoked %s)",
            self.rebalance_config.group_id,
            m.member_epoch,
            sorted(map(str, new_owned)),
            sorted(map(str, added)),
            sorted(map(str, revoked)),
        )
        if assign_exc is not None:
            raise assign_exc

    def _acknowledge_owned(
        self,
        m: ConsumerMembershipManager,
        manager: ConsumerHeartbeatRequestManager,
        owned: set[TopicPartition],
    ) -> None:
        """Report ``owned`` to the broker in the next heartbeat, sent at once."""
        owned_ids = self._topic_ids_of(owned)
        with self._lock:
            m.complete_reconciliation(owned_ids)
            self._group_metadata = ConsumerGroupMetadata(
                self.rebalance_config.group_id,
                m.member_epoch,
                m.member_id,
                self.rebalance_config.group_instance_id,
            )
            manager.request_heartbeat()

    def _time_to_next_poll_consumer_protocol(
        self, now_ms: int, m: ConsumerMembershipManager
    ) -> int:
        with self._lock:
            state = m.state
        if not self.subscriptions.has_auto_assigned_partitions():
            wait = 2**31
        elif state in (ConsumerMemberState.STABLE, ConsumerMemberState.UNSUBSCRIBED):
            # A new target arrives with a heartbeat answer on the heartbeat thread; look soon.
            wait = 100
        else:
            wait = _JOIN_ATTENTION_MS
        if self.commits.auto_commit_enabled and state is ConsumerMemberState.STABLE:
            self.commits.next_auto_commit_timer.update(now_ms)
            wait = min(wait, self.commits.next_auto_commit_timer.remaining_ms)
        return wait

    # ============================================================== identity and leaving
    def generation_if_stable(self) -> Generation | None:
        """(member epoch, member id) while the member holds a valid epoch, which commits carry."""
        with self._lock:
            m = self.membership
            if m.state.in_group() and m.member_epoch > 0:
                return Generation(m.member_epoch, m.member_id, None)
            return None

    def rebalance_in_progress(self) -> bool:
        """True while joining (until the first heartbeat answer gives an epoch)."""
        with self._lock:
            return self.membership.state is ConsumerMemberState.JOINING

    def member_id(self) -> str:
        """Our member id (chosen by the member itself, KIP-1082)."""
        with self._lock:
            return self.membership.member_id

    def maybe_leave_group(self, reason: str, force_static: bool = False) -> Future[None] | None:
        """A heartbeat with epoch -1 (-2 for a static member, which keeps its partitions for
        the session timeout unless ``force_static``)."""
        m = self.membership
        future: Future[None] | None = None
        with self._lock:
            active = m.state not in (
                ConsumerMemberState.UNSUBSCRIBED,
                ConsumerMemberState.FATAL,
                ConsumerMemberState.STALE,
            )
            node = self.check_and_get_coordinator()
            if active and node is not None:
                epoch = m.transition_to_leaving()
                if force_static:
                    epoch = -1
                logger.info(
                    "group %s: member %s leaving the group (epoch %d) due to %s",
                    self.rebalance_config.group_id,
                    m.member_id,
                    epoch,
                    reason,
                )
                request = self._send(node, CONSUMER_GROUP_HEARTBEAT, m.build_leave_heartbeat(epoch))
                left: Future[None] = Future()

                def done(_value: Any) -> None:
                    with self._lock:
                        if m.state is ConsumerMemberState.LEAVING:
                            m.transition_to_unsubscribed()
                    left.complete_if_pending(None)

                request.add_both(done)
                future = left
            else:
                m.transition_to_unsubscribed()
        if future is not None:
            self._client_poll_no_wakeup()
        return future

    def _close_heartbeat_thread(self, timeout_s: float | None = None) -> None:
        with self._lock:
            manager = self._hb_manager
            self._hb_manager = None
        if manager is not None:
            manager.close()
            if manager is not threading.current_thread():
                manager.join(timeout_s)
