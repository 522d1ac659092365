"""The consumer side of group membership: assignment, rebalance callbacks and offsets.

Mirrors Java's ``ConsumerCoordinator``. On top of :class:`AbstractCoordinator` it

- encodes this member's subscription for JoinGroup and, as leader, runs the assignor;
- applies the assignment: eager (revoke all before joining) or cooperative (KIP-429: only
  partitions that move are revoked, and a follow-up rebalance hands them over);
- calls the user's :class:`~kafkaconsumer.listener.ConsumerRebalanceListener` on the user's
  thread, never under a lock;
- commits offsets (sync, async with ordered callbacks, auto-commit) and fetches committed ones;
- watches metadata so that new matching topics, partition count changes and deleted topics
  trigger a rebalance;
- implements KIP-983 (``to_be_revoked``, ``lost_partitions``, ``delay_revoke``);
- with ``group.protocol=consumer`` (KIP-848) replaces JoinGroup/SyncGroup/Heartbeat with
  ConsumerGroupHeartbeat: the broker assigns, the heartbeat thread
  (:class:`~kafkaconsumer.internals.consumer_heartbeat_request_manager.ConsumerHeartbeatRequestManager`)
  keeps the membership (:class:`~kafkaconsumer.internals.consumer_membership_manager.ConsumerMembershipManager`),
  and ``poll()`` reconciles: revoke (auto-commit, listener), assign (listener), then the next
  heartbeat acknowledges. Commits carry the member epoch.

KIP-983 mode. By default a cooperative revocation completes inside the ``poll()`` that learns
of it, as in Java. The first call to :meth:`ConsumerCoordinator.to_be_revoked`,
:meth:`~ConsumerCoordinator.lost_partitions` or :meth:`~ConsumerCoordinator.delay_revoke`
switches this consumer to the KIP's two-step revocation: a revocation requested during one poll
completes at the start of the next one (:meth:`ConsumerCoordinator.begin_poll`, which
``KafkaConsumer.poll`` calls first), unless delayed again. Records of partitions awaiting
revocation are not fetched any more.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.config import config_value
from kafkaconsumer.internals.abstract_coordinator import (
    NO_GENERATION,
    AbstractCoordinator,
    Generation,
    GroupRebalanceConfig,
    MemberState,
    _error_for,
)
from kafkaconsumer.internals.assignors import (
    ConsumerPartitionAssignor,
    RebalanceProtocol,
    common_protocol,
    resolve_assignors,
    validate_cooperative_assignment,
)
from kafkaconsumer.internals.consumer_heartbeat_request_manager import (
    CONSUMER_GROUP_HEARTBEAT,
    ConsumerHeartbeatRequestManager,
)
from kafkaconsumer.internals.consumer_membership_manager import (
    ConsumerMembershipManager,
    ConsumerMemberState,
    resolve,
)
from kafkaconsumer.internals.consumer_protocol import (
    PROTOCOL_TYPE,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafkaconsumer.internals.interfaces import CoordinatorClient
from kafkaconsumer.internals.subscription_pattern import INTERNAL_TOPICS, to_broker_regex
from kafkaconsumer.internals.subscription_state import (
    FetchPosition,
    LeaderAndEpoch,
    SubscriptionState,
)
from kafkaconsumer.listener import RevocationTracker
from kafkaconsumer.metadata import ConsumerMetadata
from kafkaconsumer.metrics import ConsumerCoordinatorMetrics, Metrics
from kafkaconsumer.network.future import Future
from kafkaconsumer.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition
from kafkaconsumer.utils.clock import Time
from kafkaconsumer.utils.timer import Timer

logger = logging.getLogger(__name__)

__all__ = ["ConsumerCoordinator", "OffsetCommitCallback"]

_OFFSET_COMMIT = 8
_OFFSET_FETCH = 9

#: ``callback(offsets, exception_or_None)``, as Java's ``OffsetCommitCallback.onComplete``.
OffsetCommitCallback = Callable[
    [Mapping[TopicPartition, OffsetAndMetadata], "BaseException | None"], Any
]

_COOPERATIVE_STICKY = "cooperative-sticky"
#: How often a consumer that keeps fetching during a rebalance checks on the JoinGroup/SyncGroup.
_JOIN_ATTENTION_MS = 50
_DEFAULT_REASON = "rebalance enforced by user"

#: A failed commit whose cause this member did not witness (e.g. ILLEGAL_GENERATION from a
#: rebalance that completed without it): Java's generic text, not a guess at the cause.
_COMMIT_FAILED_MESSAGE = (
    "Commit cannot be completed since the group has already rebalanced and assigned the "
    "partitions to another member: this consumer's generation is no longer current. The next "
    "poll() rejoins the group; records of the partitions it lost may be delivered again to their "
    "new owner."
)
#: Codes by which a coordinator says it removed the member (ILLEGAL_GENERATION only says the
#: group moved on without it, which the generic text covers).
_EXPULSION_CODES = frozenset(
    {Errors.UnknownMemberIdError.errno, Errors.FencedMemberEpochError.errno}
)


class ConsumerCoordinator(AbstractCoordinator):
    """Java ``ConsumerCoordinator``: the group side of one ``KafkaConsumer``.

    Construct with the consumer configuration (a Mapping of Java keys), the thread-safe
    ``ConsumerNetworkClient``, the consumer's :class:`SubscriptionState` and
    :class:`~kafkaconsumer.metadata.ConsumerMetadata`.

    Thread-safety: public methods are called from the user's thread (the consumer's own guard
    keeps it to one); the heartbeat thread shares the membership state through the coordinator
    lock of :class:`AbstractCoordinator`. Listeners, commit callbacks and commit interceptors run
    on the user's thread outside every lock.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        client: CoordinatorClient,
        subscriptions: SubscriptionState,
        metadata: ConsumerMetadata,
        *,
        time: Time | None = None,
        assignors: list[ConsumerPartitionAssignor] | None = None,
        heartbeat: Any = None,
        interceptors: Any = None,
        metrics: Metrics | None = None,
    ) -> None:
        """Build the coordinator from the consumer's config (Java keys).

        With ``metrics`` (the consumer's registry) it reports the
        ``consumer-coordinator-metrics`` group there, as Java's ``ConsumerCoordinatorMetrics``.

        ``assignors`` overrides ``partition.assignment.strategy``; ``interceptors`` receive
        ``on_commit`` after successful commits (on the user's thread, no lock held); ``heartbeat`` replaces the timers (tests).
        """
        super().__init__(
            GroupRebalanceConfig.from_config(config), client, time=time, heartbeat=heartbeat
        )
        self.config = config
        self.group_protocol = str(config_value(config, "group.protocol")).lower()
        self.membership: ConsumerMembershipManager | None = None
        self._hb_manager: ConsumerHeartbeatRequestManager | None = None
        #: The last (pattern, reason it stays on the client) decided, to log each change once.
        self._regex_decision: tuple[re.Pattern[str], str | None] | None = None
        #: The last ((pattern, ConsumerGroupHeartbeat version, internal topics), regex).
        self._regex_cache: tuple[tuple[Any, ...], str | None] | None = None
        if self.group_protocol == "consumer":
            self.membership = ConsumerMembershipManager(
                self.rebalance_config.group_id,
                group_instance_id=self.rebalance_config.group_instance_id,
                rack_id=self.rebalance_config.client_rack,
                rebalance_timeout_ms=self.rebalance_config.rebalance_timeout_ms,
                server_assignor=config_value(config, "group.remote.assignor") or None,
            )
        self.subscriptions = subscriptions
        self.metadata = metadata
        self.interceptors = interceptors
        if metrics is not None:
            self.sensors = ConsumerCoordinatorMetrics(
                metrics,
                str(config.get("client.id") or ""),
                assigned_partitions=subscriptions.num_assigned_partitions,
                last_heartbeat_ms=lambda: self.last_heartbeat_sent_ms,
            )
        if assignors is None:
            strategy = config_value(config, "partition.assignment.strategy")
            try:
                assignors = resolve_assignors(strategy)
            except (TypeError, ValueError) as exc:
                raise Errors.ConfigError(f"partition.assignment.strategy: {exc}") from None
        if not assignors:
            raise Errors.ConfigError(
                "partition.assignment.strategy must name at least one assignor"
            )
        self.assignors: list[ConsumerPartitionAssignor] = list(assignors)
        try:
            self.protocol: RebalanceProtocol = common_protocol(self.assignors)
        except ValueError:
            raise Errors.ConfigError(
                "the assignors in partition.assignment.strategy "
                f"{[a.name for a in self.assignors]} share no rebalance protocol"
            ) from None
        self.auto_commit_enabled = bool(config_value(config, "enable.auto.commit"))
        self.auto_commit_interval_ms = int(config_value(config, "auto.commit.interval.ms"))
        self.next_auto_commit_timer = self.time.timer(self.auto_commit_interval_ms)
        self.require_stable = (
            str(config_value(config, "isolation.level")).lower() == "read_committed"
        )
        self.throw_on_fetch_stable_offset_unsupported = bool(
            config_value(config, "internal.throw.on.fetch.stable.offset.unsupported")
        )
        # Async commit completions, delivered in order on the user's thread.
        self.completed_offset_commits: collections.deque[
            tuple[
                OffsetCommitCallback | None,
                dict[TopicPartition, OffsetAndMetadata],
                BaseException | None,
            ]
        ] = collections.deque()
        self._in_flight_async_commits: list[Future[Any]] = []
        self.pending_async_commits = 0
        self.async_commit_fenced = False
        self.is_leader = False
        self.joined_subscription: frozenset[str] | None = None
        self.metadata_snapshot: dict[str, int] = {}
        self.assignment_snapshot: dict[str, int] | None = None
        # (metadata update version, pattern, watched topics) of the last metadata snapshot.
        self._metadata_seen: tuple[int, re.Pattern[str] | None, frozenset[str]] | None = None
        self.join_prepare_timer: Timer | None = None
        self.auto_commit_offset_request_future: Future[Any] | None = None
        self._pending_committed_offset_request: (
            tuple[frozenset[TopicPartition], Generation | None, Future[Any]] | None
        ) = None
        self._group_metadata = ConsumerGroupMetadata(
            self.rebalance_config.group_id, -1, "", self.rebalance_config.group_instance_id
        )
        # Why this member last left the group (poll timeout, expulsion by the coordinator,
        # fenced static instance), as the text of a later CommitFailedError: the same error
        # has different remedies. Kept until the member joins again; the first cause wins.
        self._departure: str | None = None
        # Delay of the cooperative follow-up rejoin (0 = at once, as Java). Some brokers answer
        # a follower's pending SyncGroup only periodically; rejoining at once can then make
        # that SyncGroup fail and cost the group another round.
        self.cooperative_rejoin_delay_ms = int(
            config_value(config, "internal.cooperative.rejoin.delay.ms")
        )
        self._follow_up_rejoin_at: int | None = None
        self.revocations = RevocationTracker()
        self.kip983_enabled = False
        self._coordinator_closed = False
        # (generation, metadata version asked for) while the leader waits for one refresh.
        self._leader_metadata_wait: tuple[int, int] | None = None
        self.default_offset_commit_callback: OffsetCommitCallback = self._log_commit_error
        self._update_metadata_snapshot()

    # ================================================================= protocol plumbing
    def protocol_type(self) -> str:
        """``"consumer"``."""
        return PROTOCOL_TYPE

    def protocol_metadata(self) -> list[tuple[str, bytes]]:
        """One Subscription per configured assignor, in preference order."""
        joined = self.subscriptions.subscription()
        self.joined_subscription = joined
        topics = sorted(joined)
        owned = sorted(self.subscriptions.assigned_partitions())
        gen = self.generation_snapshot()
        out = []
        for assignor in self.assignors:
            sub = Subscription(
                topics=topics,
                user_data=assignor.subscription_user_data(set(joined)),
                owned_partitions=owned,
                generation_id=gen.generation_id,
                rack_id=self.rebalance_config.client_rack,
            )
            out.append((assignor.name, encode_subscription(sub)))
        return out

    def lookup_assignor(self, name: str | None) -> ConsumerPartitionAssignor | None:
        """The configured assignor called ``name``."""
        for assignor in self.assignors:
            if assignor.name == name:
                return assignor
        return None

    # ===================================================================== metadata watch
    def _partition_count(self, cluster: Any, topic: str) -> int:
        parts = cluster.partitions_for_topic(topic)
        return len(parts) if parts else 0

    def _update_metadata_snapshot(self) -> None:
        cluster = self.metadata.cluster
        topics = self.subscriptions.metadata_topics()
        self.metadata_snapshot = {t: self._partition_count(cluster, t) for t in topics}

    def maybe_update_subscription_metadata(self) -> None:
        """Follow metadata: re-match the pattern and refresh the partition-count snapshot.

        Does nothing when neither the metadata (its update version) nor the subscription (its
        pattern and the topics watched) changed since the last call.
        """
        version = self.metadata.update_version
        pattern = (
            self.subscriptions.subscribed_pattern
            if self.subscriptions.has_pattern_subscription()
            else None
        )
        if (version, pattern, self.subscriptions.metadata_topics()) == self._metadata_seen:
            return
        if pattern is not None:
            matched = self.metadata.matching_topics(pattern)
            if self.subscriptions.subscribe_from_pattern(matched):
                logger.info(
                    "group %s: pattern %s now matches %s",
                    self.rebalance_config.group_id,
                    pattern.pattern,
                    sorted(matched),
                )
        self._update_metadata_snapshot()
        self._metadata_seen = (version, pattern, self.subscriptions.metadata_topics())

    def update_group_subscription(self, topics: Iterable[str]) -> None:
        """(Leader) watch every topic any member subscribes to."""
        if self.subscriptions.group_subscribe(topics):
            self.metadata.request_update()
        if not self.subscriptions.has_pattern_subscription():
            self.metadata.set_topics(self.subscriptions.metadata_topics())
        self._update_metadata_snapshot()

    def rejoin_needed_or_pending(self) -> bool:
        """Also rejoin when the leader's metadata snapshot or our subscription changed."""
        if not self.subscriptions.has_auto_assigned_partitions():
            return False
        if (
            self.assignment_snapshot is not None
            and self.assignment_snapshot != self.metadata_snapshot
        ):
            self.request_rejoin_if_necessary(
                "cached metadata has changed",
                f"cached metadata changed from {self.assignment_snapshot} to {self.metadata_snapshot}",
            )
            return True
        if (
            self.joined_subscription is not None
            and self.joined_subscription != self.subscriptions.subscription()
        ):
            self.request_rejoin_if_necessary(
                "subscription has changed",
                f"subscription changed from {sorted(self.joined_subscription)} to "
                f"{sorted(self.subscriptions.subscription())}",
            )
            return True
        return super().rejoin_needed_or_pending()

    # ============================================================================== poll
    def poll(self, timer: Timer, wait_for_join_group: bool | None = None) -> bool:
        """Drive the group for one consumer poll: heartbeat bookkeeping, (re)join, auto-commit.

        ``wait_for_join_group``: block (up to ``timer``) until a rebalance completes (True), or
        only advance it and return at once (False, Java's ``poll(Duration)``), so that a member
        keeps fetching the partitions it owns while the group rebalances (cooperative). None
        (default) blocks only while this member owns no partitions, where there is nothing to
        fetch meanwhile. Returns False when the member is not ready yet (the caller goes on and
        polls again; :meth:`time_to_next_poll` says when). Raises the heartbeat thread's stored
        failure, fatal join errors and exceptions from the rebalance listener.
        """
        if self.membership is not None:
            return self._poll_consumer_protocol(timer, self.membership)
        if wait_for_join_group is None:
            wait_for_join_group = not self.subscriptions.assigned_partitions()
        self.maybe_update_subscription_metadata()
        self.invoke_completed_offset_commit_callbacks()
        if self.subscriptions.has_auto_assigned_partitions():
            self.poll_heartbeat(timer.current_time_ms)
            self._maybe_start_follow_up_rejoin(timer.current_time_ms)
            if self.coordinator_unknown() and not self.ensure_coordinator_ready(timer):
                return False
            if self.rejoin_needed_or_pending():
                if self.subscriptions.has_pattern_subscription():
                    # Refresh first so one topic creation does not cause a rebalance per member.
                    self._refresh_metadata_before_join(timer)
                    self.maybe_update_subscription_metadata()
                join_timer = timer if wait_for_join_group else self.time.timer(0)
                if not self.ensure_active_group(join_timer):
                    timer.update()
                    return False
                timer.update()
        self.maybe_auto_commit_offsets_async(timer.current_time_ms)
        return True

    def _refresh_metadata_before_join(self, timer: Timer) -> None:
        if (
            self.metadata.time_to_next_update(timer.current_time_ms) > 0
            and not self.metadata.update_requested()
        ):
            self.metadata.request_update()
        if timer.remaining_ms > 0:
            try:
                self.client.await_metadata_update(
                    min(timer.remaining_ms, self.rebalance_config.request_timeout_ms)
                )
            except Errors.KafkaTimeoutError:
                pass
            timer.update()

    def time_to_next_poll(self, now_ms: int) -> int:
        """How long the consumer may block before the coordinator needs attention."""
        if self.membership is not None:
            return self._time_to_next_poll_consumer_protocol(now_ms, self.membership)
        wait = self.time_to_next_heartbeat(now_ms)
        with self._lock:
            join = self.join_future
        rebalancing = False
        if join is not None and join.is_done:
            wait = 0
        elif join is not None or (
            self.subscriptions.has_auto_assigned_partitions() and self.rejoin_needed_or_pending()
        ):
            # A rebalance is under way: come back soon to take its next step.
            rebalancing = True
            wait = min(wait, _JOIN_ATTENTION_MS)
        coordinator_unknown = (
            self.subscriptions.has_auto_assigned_partitions() and self.coordinator_unknown()
        )
        if coordinator_unknown:
            # The lookup is retried after its backoff; nothing else would wake us then.
            wait = min(wait, self.lookup_backoff_ms())
        if self._follow_up_rejoin_at is not None:
            wait = min(wait, max(0, self._follow_up_rejoin_at - now_ms))
        if not self.auto_commit_enabled or rebalancing or coordinator_unknown:
            # An auto-commit cannot be sent before the rebalance or the coordinator lookup is
            # over, so an expired auto-commit timer must not make every wait zero: that turns
            # poll() into a busy loop which starves the user's other threads.
            return wait
        self.next_auto_commit_timer.update(now_ms)
        return min(self.next_auto_commit_timer.remaining_ms, wait)

    def enforce_rebalance(self, reason: str | None = None) -> None:
        """Ask for a rebalance at the next poll (Java ``enforceRebalance``)."""
        if not self.subscriptions.has_auto_assigned_partitions():
            raise Errors.IllegalStateError(
                "Tried to force a rebalance but consumer does not have a group."
            )
        if self.membership is not None:
            # As Java: the broker decides when to rebalance under the consumer protocol.
            logger.warning(
                "enforce_rebalance() is not supported with group.protocol=consumer; ignored"
            )
            return
        self.request_rejoin(reason or _DEFAULT_REASON)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group id, generation, member id and group instance id."""
        return self._group_metadata

    def _reset_state_and_generation(self, reason: str, reset_member_id: bool) -> None:
        # Java resets the group metadata with the generation: after leaving (poll timeout on
        # the heartbeat thread) or a fencing, a transactional producer must not commit with
        # the old generation.
        with self._lock:
            super()._reset_state_and_generation(reason, reset_member_id)
            self._group_metadata = ConsumerGroupMetadata(
                self.rebalance_config.group_id,
                self.generation.generation_id,
                self.generation.member_id,
                self.rebalance_config.group_instance_id,
            )

    def _reset_state_on_response_error(self, api: str, code: int, reset_member_id: bool) -> None:
        if code == Errors.FencedInstanceIdError.errno:
            self._note_fenced_instance()
        elif code in _EXPULSION_CODES:
            self.note_expulsion(api, Errors.for_code(code).name)
        super()._reset_state_on_response_error(api, code, reset_member_id)

    def handle_poll_timeout_expiry(self) -> None:
        """Classic protocol: note the cause for a later failed commit, then leave the group."""
        self.note_poll_timeout()
        super().handle_poll_timeout_expiry()

    def _note_departure(self, message: str) -> None:
        with self._lock:
            if self._departure is None:
                self._departure = message

    def _note_fenced_instance(self) -> None:
        self._note_departure(
            "Commit cannot be completed since this consumer was fenced: another consumer "
            f"joined group {self.rebalance_config.group_id!r} with the same "
            f"group.instance.id {self.rebalance_config.group_instance_id!r} and took over "
            "its partitions. Give every instance its own group.instance.id."
        )

    def note_poll_timeout(self) -> None:
        """The heartbeat thread left the group because poll() was not called in time."""
        self._note_departure(
            "Commit cannot be completed since this consumer left group "
            f"{self.rebalance_config.group_id!r}: the time between two calls to poll() was "
            f"longer than max.poll.interval.ms ({self.rebalance_config.rebalance_timeout_ms} ms), "
            "so its partitions were assigned to other members. Raise max.poll.interval.ms, or "
            "return fewer records per poll() with max.poll.records, so that each batch is "
            "processed in time; the next poll() rejoins the group."
        )

    def note_expulsion(self, api: str, error_name: str) -> None:
        """The coordinator answered ``api`` saying this member is no longer in the group."""
        if self.membership is None:
            session = f"session.timeout.ms ({self.rebalance_config.session_timeout_ms} ms)"
        else:
            session = "the group's session timeout"
        self._note_departure(
            "Commit cannot be completed since the coordinator of group "
            f"{self.rebalance_config.group_id!r} removed this consumer from the group ({error_name} "
            f"in a {api} response): none of its heartbeats arrived within {session}, usually "
            "because the network or the coordinator's broker was unreachable (or an administrator "
            "removed it). Its partitions may have been assigned to other members; the "
            "next poll() rejoins the group."
        )

    def _commit_failed(self) -> Errors.CommitFailedError:
        """The error of a commit the group no longer accepts, naming the cause when known."""
        with self._lock:
            departure = self._departure
        return Errors.CommitFailedError(departure or _COMMIT_FAILED_MESSAGE)

    # ======================================================================== listeners
    def _listener(self) -> Any:
        return self.subscriptions.rebalance_listener

    def _invoke(self, method: str, partitions: Iterable[TopicPartition]) -> BaseException | None:
        listener = self._listener()
        tps = sorted(partitions)
        if method == "on_partitions_lost" and tps:
            self.revocations.mark_lost(tps)
        if listener is None:
            return None
        if method != "on_partitions_assigned" and not tps:
            return None
        logger.info(
            "group %s: calling %s with %s",
            self.rebalance_config.group_id,
            method,
            [str(tp) for tp in tps],
        )
        try:
            getattr(listener, method)(tps)
        except (Errors.WakeupError, Errors.InterruptError) as exc:
            return exc
        except Exception as exc:
            logger.error("user rebalance callback %s failed for %s", method, tps, exc_info=True)
            return exc
        return None

    def invoke_partitions_assigned(
        self, partitions: Iterable[TopicPartition]
    ) -> BaseException | None:
        """Run ``on_partitions_assigned``; its exception is returned, not raised."""
        return self._invoke("on_partitions_assigned", partitions)

    def invoke_partitions_revoked(
        self, partitions: Iterable[TopicPartition]
    ) -> BaseException | None:
        """Run ``on_partitions_revoked``; its exception is returned, not raised."""
        return self._invoke("on_partitions_revoked", partitions)

    def invoke_partitions_lost(self, partitions: Iterable[TopicPartition]) -> BaseException | None:
        """Run ``on_partitions_lost``; its exception is returned, not raised."""
        return self._invoke("on_partitions_lost", partitions)

    # ===================================================================== join prepare
    def on_join_prepare(self, timer: Timer, generation_id: int, member_id: str) -> bool:
        """Before (re)joining: auto-commit, then revoke (eager) or drop unsubscribed topics."""
        logger.debug(
            "executing on_join_prepare with generation %s and member id %s",
            generation_id,
            member_id,
        )
        if self.auto_commit_enabled and self.auto_commit_offset_request_future is None:
            if self.join_prepare_timer is None:
                # Bounded by the rebalance timeout: the group waits at most that long for us.
                self.join_prepare_timer = self.time.timer(
                    self.rebalance_config.rebalance_timeout_ms
                )
            if self.protocol is RebalanceProtocol.EAGER:
                # Stop returning records that the commit below would not cover.
                self.subscriptions.mark_pending_revocation(self.subscriptions.assigned_partitions())
            self.auto_commit_offset_request_future = self._auto_commit_offsets_async_now()
        future = self.auto_commit_offset_request_future
        if future is not None and self.join_prepare_timer is not None:
            wait = min(timer.remaining_ms, self.join_prepare_timer.remaining_ms)
            if not future.is_done:
                self.client.poll(timeout_ms=wait, future=future)
            self.join_prepare_timer.update()
            timer.update()
            if not future.is_done and self.join_prepare_timer.not_expired():
                # Wait for the commit in a later poll; heartbeats keep us in the group.
                return False
            if not future.is_done:
                logger.warning(
                    "group %s: auto-commit before rebalance did not finish within the "
                    "rebalance timeout; continuing",
                    self.rebalance_config.group_id,
                )
            elif future.failed():
                logger.warning(
                    "group %s: auto-commit before rebalance failed: %s",
                    self.rebalance_config.group_id,
                    future.exception,
                )
            self.invoke_completed_offset_commit_callbacks()

        exc: BaseException | None = None
        assigned = set(self.subscriptions.assigned_partitions())
        # Revocations that KIP-983 delayed cannot outlive a new rebalance.
        pending_kip = self.revocations.clear() & assigned
        if generation_id == NO_GENERATION.generation_id or member_id == NO_GENERATION.member_id:
            # The heartbeat thread reset the generation: others may own these partitions now.
            if assigned:
                logger.info(
                    "group %s: giving up partitions %s as lost: generation was reset",
                    self.rebalance_config.group_id,
                    sorted(assigned),
                )
                exc = self.invoke_partitions_lost(assigned)
                self.subscriptions.assign_from_subscribed(())
        elif self.protocol is RebalanceProtocol.EAGER:
            exc = self.invoke_partitions_revoked(assigned)
            self.subscriptions.assign_from_subscribed(())
        else:
            subscribed = self.subscriptions.subscription()
            revoked = {tp for tp in assigned if tp.topic not in subscribed} | pending_kip
            if revoked:
                exc = self.invoke_partitions_revoked(revoked)
                self.subscriptions.assign_from_subscribed(sorted(assigned - revoked))
        # This join also hands over whatever a pending follow-up rejoin was waiting for.
        self._follow_up_rejoin_at = None
        self.is_leader = False
        self.subscriptions.reset_group_subscription()
        self.join_prepare_timer = None
        self.auto_commit_offset_request_future = None
        timer.update()
        if exc is not None:
            raise exc
        return True

    # ==================================================================== leader assign
    @staticmethod
    def _partition_racks(
        cluster: Any, topics: Iterable[str], subscriptions: Mapping[str, Subscription]
    ) -> dict[TopicPartition, set[str]] | None:
        """The racks of each partition's replicas, for rack-aware assignment (KIP-881).

        None when no member has a rack (``client.rack``) or no broker has one: the assignors
        then work as without racks.
        """
        if not any(sub.rack_id for sub in subscriptions.values()):
            return None
        racks: dict[TopicPartition, set[str]] = {}
        for topic in topics:
            for info in cluster.partitions_for_topic(topic) or ():
                names = {
                    node.rack
                    for node in (cluster.broker(r) for r in info.replicas)
                    if node is not None and node.rack
                }
                if names:
                    racks[TopicPartition(topic, info.partition)] = names
        return racks or None

    def on_leader_elected(
        self, leader_id: str, protocol: str, members: list[dict[str, Any]], skip_assignment: bool
    ) -> dict[str, bytes]:
        """Run the negotiated assignor over all members' subscriptions."""
        assignor = self.lookup_assignor(protocol)
        if assignor is None:
            raise Errors.IllegalStateError(
                f"coordinator selected invalid assignment protocol: {protocol}"
            )
        subscriptions: dict[str, Subscription] = {}
        all_topics: set[str] = set()
        for member in members:
            sub = decode_subscription(member["metadata"])
            sub = dataclasses.replace(sub, group_instance_id=member.get("group_instance_id"))
            subscriptions[str(member["member_id"])] = sub
            all_topics.update(sub.topics)
        # The leader watches every topic of the group so it notices their metadata changes.
        self.update_group_subscription(all_topics)
        self.is_leader = True
        if skip_assignment:
            logger.info(
                "group %s: skipped assignment for a returning static leader; keeping the "
                "existing assignment",
                self.rebalance_config.group_id,
            )
            self.assignment_snapshot = dict(self.metadata_snapshot)
            return {}
        cluster = self.metadata.cluster
        partitions = {t: self._partition_count(cluster, t) for t in sorted(all_topics)}
        partitions = {t: n for t, n in partitions.items() if n > 0}
        logger.debug(
            "performing assignment with %s over %s for members %s",
            assignor.name,
            partitions,
            sorted(subscriptions),
        )
        assignments = assignor.assign(
            partitions, subscriptions, self._partition_racks(cluster, partitions, subscriptions)
        )
        if self.protocol is RebalanceProtocol.COOPERATIVE and assignor.name != _COOPERATIVE_STICKY:
            validate_cooperative_assignment(assignments, subscriptions)
        assigned_topics = {tp.topic for a in assignments.values() for tp in a.partitions}
        not_assigned = all_topics - assigned_topics
        if not_assigned:
            logger.info(
                "subscribed topics not assigned to any member (no metadata or no "
                "partitions yet): %s",
                sorted(not_assigned),
            )
        extra = assigned_topics - all_topics
        if extra:
            logger.warning("the assignor assigned topics nobody subscribed to: %s", sorted(extra))
            all_topics |= extra
            self.update_group_subscription(all_topics)
        self.assignment_snapshot = dict(self.metadata_snapshot)
        logger.info(
            "group %s: finished assignment for generation %s: %s",
            self.rebalance_config.group_id,
            self.generation_snapshot().generation_id,
            {m: [str(tp) for tp in a.partitions] for m, a in assignments.items()},
        )
        return {m: encode_assignment(a) for m, a in assignments.items()}

    def prepare_leader_assignment(
        self, response: dict[str, Any], timer: Timer, deadline_ms: int
    ) -> bool:
        """Wait (bounded by ``timer``) for one metadata refresh when the leader lacks topics.

        As Java's ``ensureFreshMetadata`` before assigning: one refresh that covers the group's
        topics, then the assignment goes ahead with what the metadata has (topics still unknown,
        or deleted, are assigned in a later rebalance once their metadata makes the snapshot
        differ). Past ``deadline_ms`` the leader assigns without waiting more.
        """
        topics: set[str] = set()
        for member in response.get("members") or []:
            try:
                topics.update(decode_subscription(member["metadata"]).topics)
            except Exception:  # a bad subscription fails later, in on_leader_elected
                continue
        generation = int(response.get("generation_id", -1))
        waiting = self._leader_metadata_wait
        if waiting is None or waiting[0] != generation:
            cluster = self.metadata.cluster
            if all(cluster.partitions_for_topic(t) is not None for t in topics):
                return True
            self.update_group_subscription(topics)
            waiting = (generation, self.metadata.request_update())
            self._leader_metadata_wait = waiting
        if self.metadata.update_version > waiting[1]:
            return True
        wait = min(timer.remaining_ms, deadline_ms - self.time.monotonic_ms())
        if wait > 0:
            try:
                self.client.await_metadata_update(wait)
            except Errors.KafkaTimeoutError:
                pass
            timer.update()
        if self.metadata.update_version > waiting[1] or self.time.monotonic_ms() >= deadline_ms:
            return True
        return False

    # ===================================================================== join complete
    def on_join_complete(
        self, generation_id: int, member_id: str, protocol: str | None, assignment: bytes
    ) -> None:
        """Apply the new assignment and call the listener (user thread, no lock held)."""
        if not self.is_leader:
            self.assignment_snapshot = None
        assignor = self.lookup_assignor(protocol)
        if assignor is None:
            raise Errors.IllegalStateError(
                f"coordinator selected invalid assignment protocol: {protocol}"
            )
        self._group_metadata = ConsumerGroupMetadata(
            self.rebalance_config.group_id,
            generation_id,
            member_id,
            self.rebalance_config.group_instance_id,
        )
        self._departure = None
        owned = set(self.subscriptions.assigned_partitions())
        decoded = decode_assignment(assignment)
        assigned = set(decoded.partitions)
        if not self.subscriptions.check_assignment_matched_subscription(assigned):
            self.request_rejoin(
                "received assignment does not match subscription",
                f"received assignment {sorted(assigned)} does not match the current subscription "
                f"{sorted(self.subscriptions.subscription())}; it likely changed since we joined",
            )
            return
        first_exc: BaseException | None = None
        added = assigned - owned
        revoked: set[TopicPartition] = set()
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            revoked = owned - assigned
        self._maybe_update_joined_subscription(assigned)
        try:
            assignor.on_assignment(decoded, generation_id)
        except Exception as exc:  # a faulty custom assignor must not skip the listener calls
            logger.error("assignor %s failed in on_assignment", assignor.name, exc_info=True)
            first_exc = exc
        if self.auto_commit_enabled:
            self.next_auto_commit_timer.update_and_reset(self.auto_commit_interval_ms)
        if revoked and not self.kip983_enabled:
            # Java order: the listener sees the old assignment, then it changes.
            revoke_exc = self.invoke_partitions_revoked(revoked)
            first_exc = first_exc or revoke_exc
            self._request_follow_up_rejoin(revoked)
            self.subscriptions.assign_from_subscribed(sorted(assigned))
        elif revoked:
            # KIP-983: keep owning them until the revocation completes in the next poll.
            self.subscriptions.assign_from_subscribed(sorted(assigned | revoked))
            self.subscriptions.mark_pending_revocation(revoked)
            self.revocations.request_revoke(revoked)
            logger.info(
                "group %s: partitions %s will be revoked at the next poll",
                self.rebalance_config.group_id,
                sorted(revoked),
            )
        else:
            self.subscriptions.assign_from_subscribed(sorted(assigned))
        assign_exc = self.invoke_partitions_assigned(added)
        first_exc = first_exc or assign_exc
        if first_exc is not None:
            raise first_exc

    def _maybe_update_joined_subscription(self, assigned: set[TopicPartition]) -> None:
        if not self.subscriptions.has_pattern_subscription():
            return
        joined = self.joined_subscription or frozenset()
        added = {tp.topic for tp in assigned if tp.topic not in joined}
        if added:
            # The leader saw matching topics before we did: follow its decision.
            if self.subscriptions.subscribe_from_pattern(
                set(self.subscriptions.subscription()) | added
            ):
                self.metadata.request_update()
            self.joined_subscription = frozenset(joined | added)

    def _request_follow_up_rejoin(self, revoked: set[TopicPartition]) -> None:
        """After revoking, rejoin so the partitions reach their new owner (KIP-429)."""
        if self.cooperative_rejoin_delay_ms > 0:
            self._follow_up_rejoin_at = self.time.monotonic_ms() + self.cooperative_rejoin_delay_ms
            logger.info(
                "group %s: revoked %s; re-joining in %d ms",
                self.rebalance_config.group_id,
                [str(tp) for tp in sorted(revoked)],
                self.cooperative_rejoin_delay_ms,
            )
            return
        self.request_rejoin(
            "need to revoke partitions and re-join",
            f"need to revoke partitions {sorted(revoked)} and re-join",
        )

    def _maybe_start_follow_up_rejoin(self, now_ms: int) -> None:
        due = self._follow_up_rejoin_at
        if due is not None and now_ms >= due:
            self._follow_up_rejoin_at = None
            self.request_rejoin("need to revoke partitions and re-join")

    # ===================================================================== KIP-983 hooks
    def begin_poll(self) -> None:
        """Called by ``KafkaConsumer.poll()`` first: completes the revocations due now."""
        due = self.revocations.start_poll()
        self._complete_due_revocations(due)

    def _complete_due_revocations(self, due: set[TopicPartition]) -> None:
        due = due & set(self.subscriptions.assigned_partitions())
        if not due:
            return
        if self.membership is not None:
            with self._lock:
                in_group = self.membership.state.in_group()
            exc = (
                self.invoke_partitions_revoked(due)
                if in_group
                else self.invoke_partitions_lost(due)
            )
            remaining = set(self.subscriptions.assigned_partitions()) - due
            self.subscriptions.assign_from_subscribed(sorted(remaining))
            manager = self._hb_manager
            if in_group and manager is not None:
                # Only now may the broker give them to their next owner.
                self._acknowledge_owned(self.membership, manager, remaining)
            if exc is not None:
                raise exc
            return
        with self._lock:
            generation = self.generation
            state = self.state
        if generation.generation_id == NO_GENERATION.generation_id or state is MemberState.UNJOINED:
            exc = self.invoke_partitions_lost(due)
        else:
            exc = self.invoke_partitions_revoked(due)
            self._request_follow_up_rejoin(due)
        remaining = set(self.subscriptions.assigned_partitions()) - due
        self.subscriptions.assign_from_subscribed(sorted(remaining))
        if exc is not None:
            raise exc

    def to_be_revoked(self) -> set[TopicPartition]:
        """KIP-983: partitions whose revocation completes at the start of the next poll."""
        self.kip983_enabled = True
        return self.revocations.to_be_revoked()

    def lost_partitions(self) -> set[TopicPartition]:
        """KIP-983: partitions lost during the last poll (stop committing them)."""
        self.kip983_enabled = True
        return self.revocations.lost_partitions()

    def delay_revoke(self, partitions: Iterable[TopicPartition]) -> bool:
        """KIP-983: complete these revocations one poll later; False if some were lost."""
        self.kip983_enabled = True
        return self.revocations.delay_revoke(list(partitions))

    # ======================================================================== leave
    def on_leave_prepare(self) -> None:
        """Revoke (or, when the generation is gone, lose) everything before leaving."""
        gen = self.generation_snapshot()
        dropped = set(self.subscriptions.assigned_partitions())
        self.revocations.clear()
        if self.membership is not None:
            with self._lock:
                in_group = self.membership.state.in_group()
            if self.subscriptions.has_auto_assigned_partitions() and dropped:
                exc = (
                    self.invoke_partitions_revoked(dropped)
                    if in_group
                    else self.invoke_partitions_lost(dropped)
                )
                self.subscriptions.assign_from_subscribed(())
                if exc is not None:
                    raise exc
            return
        if self.subscriptions.has_auto_assigned_partitions() and dropped:
            if (
                gen.generation_id == NO_GENERATION.generation_id
                or gen.member_id == NO_GENERATION.member_id
                or self.rebalance_in_progress()
            ):
                exc = self.invoke_partitions_lost(dropped)
            else:
                exc = self.invoke_partitions_revoked(dropped)
            self.subscriptions.assign_from_subscribed(())
            if exc is not None:
                raise exc

    def close(self, timer: Timer | None = None, leave_group: bool | None = None) -> None:
        """Auto-commit, wait for in-flight async commits, then leave (see the base class).

        A second call does nothing.
        """
        if self._coordinator_closed:
            return
        self._coordinator_closed = True
        if timer is None:
            timer = self.time.timer(0)
        # As Java: a wakeup() pending from before close() must not abort the final commit and
        # the leave; the consumer is closing, so wakeups stay disabled.
        self.client.disable_wakeups()
        try:
            if self.subscriptions.has_auto_assigned_partitions() or self.auto_commit_enabled:
                self.maybe_auto_commit_offsets_sync(timer)
            self._invoke_pending_async_commits(timer)
        finally:
            if self.membership is not None:
                self._close_consumer_protocol(timer, leave_group)
            else:
                super().close(timer, leave_group)

    # ======================================================================== commits
    def _pending_async(self) -> bool:
        # The list and the counter are also changed by lookup callbacks, which may run on the
        # heartbeat thread: both are touched only under the coordinator lock, the list in place.
        with self._lock:
            self._in_flight_async_commits[:] = [
                f for f in self._in_flight_async_commits if not f.is_done
            ]
            return bool(self._in_flight_async_commits) or self.pending_async_commits > 0

    def _first_in_flight(self) -> Future[Any] | None:
        with self._lock:
            for f in self._in_flight_async_commits:
                if not f.is_done:
                    return f
        return None

    def invoke_completed_offset_commit_callbacks(self) -> None:
        """Run the interceptors and callbacks of finished async commits, in completion order.

        Called on the user's thread with no lock held: the futures complete on whichever
        thread polled the network (possibly the heartbeat thread, holding the coordinator
        lock), so they only record the completion and the user code runs here.
        """
        if self.async_commit_fenced:
            raise Errors.FencedInstanceIdError(
                f"an async commit was fenced: group.instance.id "
                f"{self.rebalance_config.group_instance_id!r} is used by another consumer"
            )
        while True:
            with self._lock:
                if not self.completed_offset_commits:
                    break
                callback, offsets, exc = self.completed_offset_commits.popleft()
            if isinstance(exc, Errors.FencedInstanceIdError):
                # Owned by the user's thread: the completion only queued the error.
                self.async_commit_fenced = True
            if exc is None:
                # Java calls the interceptors first, then the commit callback.
                self._on_commit_interceptors(offsets)
            cb = callback if callback is not None else self.default_offset_commit_callback
            cb(offsets, exc)
        if self.async_commit_fenced:
            raise Errors.FencedInstanceIdError(
                f"an async commit was fenced: group.instance.id "
                f"{self.rebalance_config.group_instance_id!r} is used by another consumer"
            )

    def _log_commit_error(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], exc: BaseException | None
    ) -> None:
        if exc is not None:
            logger.error("offset commit of %s failed: %s", dict(offsets), exc)

    def commit_offsets_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata] | None,
        callback: OffsetCommitCallback | None = None,
    ) -> None:
        """Commit without waiting; ``callback(offsets, exc)`` runs in a later poll or commit."""
        self.invoke_completed_offset_commit_callbacks()
        offsets = dict(offsets) if offsets else {}
        if not self.coordinator_unknown():
            self._do_commit_offsets_async(offsets, callback)
        else:
            # Find the coordinator first; the commit is sent once it is known. The lookup's
            # callbacks may run on the heartbeat thread: they change the pending count and the
            # in-flight list only under the coordinator lock (taken before the network lock).
            with self._lock:
                self.pending_async_commits += 1
            lookup = self.lookup_coordinator()

            def on_found(_v: Any) -> None:
                with self._lock:
                    try:
                        # Sent (and listed as in flight) before the count drops, so that
                        # _pending_async() never sees this commit as neither pending nor sent.
                        self._do_commit_offsets_async(offsets, callback)
                    finally:
                        self.pending_async_commits -= 1

            def on_lookup_failed(exc: BaseException) -> None:
                err = Errors.RetriableCommitFailedError(
                    f"offset commit failed with a retriable exception: {exc}"
                )
                err.__cause__ = exc
                with self._lock:
                    self.completed_offset_commits.append((callback, offsets, err))
                    self.pending_async_commits -= 1

            lookup.add_callback(on_found)
            lookup.add_errback(on_lookup_failed)
        self._client_poll_no_wakeup()

    def _do_commit_offsets_async(
        self,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        callback: OffsetCommitCallback | None,
    ) -> Future[Any]:
        future = self._send_offset_commit_request(offsets)
        with self._lock:
            self._in_flight_async_commits.append(future)

        # These run on whichever thread completes the future, perhaps the heartbeat thread
        # with the coordinator lock held: they only record the outcome. The interceptors and
        # the callback run later on the user's thread (invoke_completed_offset_commit_callbacks).
        def on_success(_v: Any) -> None:
            with self._lock:
                self.completed_offset_commits.append((callback, offsets, None))

        def on_failure(exc: BaseException) -> None:
            err: BaseException = exc
            if getattr(exc, "retriable", False):
                err = Errors.RetriableCommitFailedError(
                    f"offset commit failed with a retriable exception: {exc}"
                )
                err.__cause__ = exc
            with self._lock:
                self.completed_offset_commits.append((callback, offsets, err))

        future.add_callback(on_success)
        future.add_errback(on_failure)
        return future

    def _on_commit_interceptors(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        if self.interceptors is None:
            return
        fn = getattr(self.interceptors, "on_commit", None)
        if fn is not None:
            try:
                fn(offsets)
            except Exception:
                logger.warning("interceptor on_commit failed", exc_info=True)

    def commit_offsets_sync(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None, timer: Timer
    ) -> bool:
        """Commit and wait, retrying retriable errors within ``timer``; False on timeout.

        Raises CommitFailedError (the group moved on), RebalanceInProgressError (finish the
        rebalance with poll() and retry) and other non-retriable errors.
        """
        self.invoke_completed_offset_commit_callbacks()
        offsets = dict(offsets) if offsets else {}
        if not offsets:
            # Empty commits still wait for earlier async commits, so their callbacks run first.
            return self._invoke_pending_async_commits(timer)
        attempts = 0
        while True:
            if self.coordinator_unknown() and not self.ensure_coordinator_ready(timer):
                return False
            future = self._send_offset_commit_request(offsets)
            self.client.poll(timeout_ms=timer.remaining_ms, future=future)
            timer.update()
            # Earlier async commits finished before this one: keep their callbacks in order.
            self.invoke_completed_offset_commit_callbacks()
            if future.succeeded():
                self._on_commit_interceptors(offsets)
                return True
            if future.failed() and not future.retriable():
                exc = future.exception
                assert exc is not None
                raise exc
            if timer.is_expired():
                return False
            self.backoff_wait(timer, self.retry_backoff.backoff(attempts))
            attempts += 1
            if timer.is_expired():
                return False

    def _invoke_pending_async_commits(self, timer: Timer) -> bool:
        while self._pending_async() and timer.not_expired():
            if not self.ensure_coordinator_ready(timer):
                break
            self.client.poll(timeout_ms=timer.remaining_ms, future=self._first_in_flight())
            timer.update()
            self.invoke_completed_offset_commit_callbacks()
        self.invoke_completed_offset_commit_callbacks()
        return not self._pending_async()

    def _send_offset_commit_request(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> Future[Any]:
        if not offsets:
            done: Future[Any] = Future()
            return done.success(None)
        node = self.check_and_get_coordinator()
        if node is None:
            return Future().failure(
                Errors.CoordinatorNotAvailableError("the group coordinator is not available")
            )
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, om in offsets.items():
            if not isinstance(om, OffsetAndMetadata):
                om = OffsetAndMetadata(*om) if isinstance(om, tuple) else OffsetAndMetadata(int(om))
            if om.offset < 0:
                return Future().failure(ValueError(f"invalid offset {om.offset} for {tp}"))
            by_topic.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "committed_offset": om.offset,
                    "committed_leader_epoch": -1 if om.leader_epoch is None else om.leader_epoch,
                    "committed_metadata": om.metadata,
                }
            )
        gen: Generation | None
        instance_id: str | None
        if self.subscriptions.has_auto_assigned_partitions():
            gen = self.generation_if_stable()
            instance_id = self.rebalance_config.group_instance_id
            if gen is None:
                # Not part of an active generation: the user must rejoin through poll().
                if self.rebalance_in_progress():
                    return Future().failure(
                        Errors.RebalanceInProgressError(
                            "Offset commit cannot be completed since the consumer is undergoing a "
                            "rebalance for auto partition assignment. Complete the rebalance by "
                            "calling poll() and then retry the commit."
                        )
                    )
                return Future().failure(self._commit_failed())
        else:
            gen = NO_GENERATION
            instance_id = None
        body = {
            "group_id": self.rebalance_config.group_id,
            "generation_id_or_member_epoch": gen.generation_id,
            "member_id": gen.member_id,
            "group_instance_id": instance_id,
            "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }
        logger.debug(
            "sending OffsetCommit for %s with %s", {str(k): v for k, v in offsets.items()}, gen
        )
        request = self._send(node, _OFFSET_COMMIT, body)
        return self._compose(request, gen, self._handle_offset_commit_response)

    def _handle_offset_commit_response(
        self, response: dict[str, Any], sent: Generation, future: Future[Any]
    ) -> None:
        unauthorized: set[str] = set()
        for topic in response.get("topics") or []:
            name = topic.get("name")
            for part in topic.get("partitions") or []:
                code = int(part.get("error_code", 0) or 0)
                tp = TopicPartition(str(name), int(part.get("partition_index", -1)))
                if code == 0:
                    continue
                err_name = Errors.for_code(code).name
                logger.debug("OffsetCommit of %s failed with %s", tp, err_name)
                if code == Errors.GroupAuthorizationFailedError.errno:
                    future.failure(
                        Errors.GroupAuthorizationFailedError(
                            f"not authorized to access group {self.rebalance_config.group_id}"
                        )
                    )
                    return
                if code == Errors.TopicAuthorizationFailedError.errno:
                    unauthorized.add(tp.topic)
                    continue
                if code in (
                    Errors.OffsetMetadataTooLargeError.errno,
                    Errors.InvalidCommitOffsetSizeError.errno,
                ):
                    future.failure(_error_for(code, f"offset commit of {tp} failed"))
                    return
                if code in (
                    Errors.CoordinatorLoadInProgressError.errno,
                    Errors.UnknownTopicOrPartitionError.errno,
                ):
                    future.failure(_error_for(code, f"offset commit of {tp} failed"))
                    return
                if code in (
                    Errors.CoordinatorNotAvailableError.errno,
                    Errors.NotCoordinatorError.errno,
                    Errors.RequestTimedOutError.errno,
                ):
                    self.mark_coordinator_unknown(f"error response {err_name}")
                    future.failure(_error_for(code, f"offset commit of {tp} failed"))
                    return
                if code == Errors.FencedInstanceIdError.errno:
                    logger.info(
                        "OffsetCommit with %s failed: group.instance.id %r fenced",
                        sent,
                        self.rebalance_config.group_instance_id,
                    )
                    self._note_fenced_instance()
                    with self._lock:
                        unchanged = self.generation == sent
                        preparing = self.state is MemberState.PREPARING_REBALANCE
                    if unchanged:
                        future.failure(
                            Errors.FencedInstanceIdError(
                                f"group.instance.id {self.rebalance_config.group_instance_id!r} is "
                                f"used by another consumer"
                            )
                        )
                    elif preparing:
                        future.failure(
                            Errors.RebalanceInProgressError(
                                "Offset commit cannot be completed: the member's old generation was "
                                "fenced by its group instance id; it has probably joined a newer "
                                "generation already. Call poll() and retry."
                            )
                        )
                    else:
                        future.failure(self._commit_failed())
                    return
                if code == Errors.StaleMemberEpochError.errno:
                    # Consumer protocol: a heartbeat moved our epoch on since the commit was
                    # built. While still in the group, retry with the new epoch (a sync commit
                    # does); once out of it, the group has moved on.
                    if self.generation_if_stable() is not None:
                        future.failure(
                            Errors.RetriableCommitFailedError(
                                f"offset commit of {tp} carried a stale member epoch "
                                f"({sent.generation_id}); retry with the current one"
                            )
                        )
                    else:
                        future.failure(self._commit_failed())
                    return
                if code == Errors.RebalanceInProgressError.errno:
                    # Only possible between JoinGroup and SyncGroup: rejoin, keep the generation.
                    self.request_rejoin("offset commit failed since group is already rebalancing")
                    future.failure(
                        Errors.RebalanceInProgressError(
                            "Offset commit cannot be completed since the consumer group is executing "
                            "a rebalance at the moment. Complete the rebalance by calling poll() and "
                            "then retry the commit."
                        )
                    )
                    return
                if code in (Errors.UnknownMemberIdError.errno, Errors.IllegalGenerationError.errno):
                    logger.info("OffsetCommit with %s failed with %s", sent, err_name)
                    with self._lock:
                        unchanged = self.generation == sent
                        preparing = self.state is MemberState.PREPARING_REBALANCE
                    if not unchanged and preparing:
                        future.failure(
                            Errors.RebalanceInProgressError(
                                "Offset commit cannot be completed since the member's generation is "
                                "already stale: it is taking part in a newer rebalance. Complete it "
                                "by calling poll() and then retry the commit."
                            )
                        )
                    else:
                        self._reset_state_on_response_error(
                            "OffsetCommit", code, code != Errors.IllegalGenerationError.errno
                        )
                        future.failure(self._commit_failed())
                    return
                future.failure(
                    Errors.KafkaError(f"unexpected error in offset commit of {tp}: {err_name}")
                )
                return
        if unauthorized:
            future.failure(
                Errors.TopicAuthorizationFailedError(
                    f"not authorized to commit to topics {sorted(unauthorized)}",
                    unauthorized_topics=unauthorized,
                )
            )
            return
        future.success(None)

    # =================================================================== auto-commit
    def _auto_commit_offsets_async_now(self) -> Future[Any] | None:
        if not self.auto_commit_enabled or not self.subscriptions.assigned_partitions():
            return None
        offsets = self.subscriptions.all_consumed()
        if not offsets:
            return None
        logger.debug("auto-committing offsets %s", {str(k): v.offset for k, v in offsets.items()})
        if self.coordinator_unknown():
            self.commit_offsets_async(offsets, self._auto_commit_callback)
            return None
        return self._do_commit_offsets_async(offsets, self._auto_commit_callback)

    def _auto_commit_callback(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], exc: BaseException | None
    ) -> None:
        if exc is None:
            logger.debug(
                "auto-commit of %s succeeded", {str(k): v.offset for k, v in offsets.items()}
            )
            return
        if getattr(exc, "retriable", False):
            logger.debug("auto-commit of offsets failed (will retry): %s", exc)
            self.next_auto_commit_timer.update_and_reset(self.rebalance_config.retry_backoff_ms)
        else:
            logger.warning(
                "auto-commit of offsets %s failed: %s",
                {str(k): v.offset for k, v in offsets.items()},
                exc,
            )

    def maybe_auto_commit_offsets_async(self, now_ms: int) -> None:
        """Auto-commit when ``auto.commit.interval.ms`` has passed (called by poll)."""
        if not self.auto_commit_enabled:
            return
        self.next_auto_commit_timer.update(now_ms)
        if self.next_auto_commit_timer.is_expired():
            self.next_auto_commit_timer.reset(self.auto_commit_interval_ms)
            self._auto_commit_offsets_async_now()

    def maybe_auto_commit_offsets_sync(self, timer: Timer) -> None:
        """Auto-commit and wait (close); failures are logged, wakeups propagate."""
        if not self.auto_commit_enabled:
            return
        offsets = self.subscriptions.all_consumed()
        try:
            logger.debug(
                "sending synchronous auto-commit of %s",
                {str(k): v.offset for k, v in offsets.items()},
            )
            if not self.commit_offsets_sync(offsets, timer):
                logger.debug("auto-commit of %s timed out before completion", offsets)
        except (Errors.WakeupError, Errors.InterruptError):
            raise
        except Exception as exc:
            logger.warning(
                "synchronous auto-commit of offsets %s failed: %s",
                {str(k): v.offset for k, v in offsets.items()},
                exc,
            )

    # ================================================================= committed offsets
    def fetch_committed_offsets(
        self, partitions: Iterable[TopicPartition], timer: Timer
    ) -> dict[TopicPartition, OffsetAndMetadata | None] | None:
        """The committed offset of each partition (None value: nothing committed).

        Returns None when ``timer`` expired first. Retriable errors (coordinator moves,
        unstable offsets under read_committed) are retried within the timer.
        """
        wanted = frozenset(partitions)
        if not wanted:
            return {}
        gen = self.generation_if_stable()
        pending = self._pending_committed_offset_request
        if pending is not None and (pending[0] != wanted or pending[1] != gen):
            self._pending_committed_offset_request = None
        attempts = 0
        while True:
            if not self.ensure_coordinator_ready(timer):
                return None
            pending = self._pending_committed_offset_request
            if pending is not None:
                future = pending[2]
            else:
                future = self._send_offset_fetch_request(wanted)
                self._pending_committed_offset_request = (wanted, gen, future)
            self.client.poll(timeout_ms=timer.remaining_ms, future=future)
            timer.update()
            if not future.is_done:
                return None
            self._pending_committed_offset_request = None
            if future.succeeded():
                return dict(future.value)
            exc = future.exception
            assert exc is not None
            # Java retries STALE_MEMBER_EPOCH while the member holds an epoch: the next request
            # carries the current one. Out of the group it fails, as UNKNOWN_MEMBER_ID does.
            stale = isinstance(exc, Errors.StaleMemberEpochError)
            if not getattr(exc, "retriable", False) and not (
                stale and self.generation_if_stable() is not None
            ):
                raise exc
            if timer.is_expired():
                return None
            self.backoff_wait(timer, self.retry_backoff.backoff(attempts))
            attempts += 1
            if timer.is_expired():
                return None

    def _send_offset_fetch_request(self, partitions: frozenset[TopicPartition]) -> Future[Any]:
        node = self.check_and_get_coordinator()
        if node is None:
            return Future().failure(
                Errors.CoordinatorNotAvailableError("the group coordinator is not available")
            )
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
        version = self.client.api_version(node, _OFFSET_FETCH)
        if version is None:
            # Unknown until connected: v7 carries require_stable and the single-group layout.
            version = 7
        body: dict[str, Any] = {"require_stable": self.require_stable}
        member = self.generation_if_stable() if self.membership is not None else None
        if version >= 8:
            group: dict[str, Any] = {"group_id": self.rebalance_config.group_id, "topics": topics}
            if version >= 9 and member is not None:
                # KIP-848: a consumer-protocol member proves it is in the group (v9+); the
                # broker answers STALE_MEMBER_EPOCH or UNKNOWN_MEMBER_ID when it is not.
                group["member_id"] = member.member_id
                group["member_epoch"] = member.generation_id
            body["groups"] = [group]
        else:
            body["group_id"] = self.rebalance_config.group_id
            body["topics"] = topics
        if self.require_stable and version < 7:
            if self.throw_on_fetch_stable_offset_unsupported:
                return Future().failure(
                    Errors.UnsupportedVersionError(
                        "the broker cannot wait for stable offsets (OffsetFetch v7+)"
                    )
                )
            logger.warning(
                "the broker does not support waiting for stable offsets under "
                "read_committed; committed offsets may include pending transactions"
            )
        logger.debug("fetching committed offsets for %s", [str(tp) for tp in sorted(partitions)])
        request = self._send(node, _OFFSET_FETCH, body, version=version)
        return self._compose(
            request, member or self.generation_snapshot(), self._handle_offset_fetch_response
        )

    def _handle_offset_fetch_response(
        self, response: dict[str, Any], sent: Generation, future: Future[Any]
    ) -> None:
        groups = response.get("groups") or []
        if groups:
            group = groups[0]
            top_code = int(group.get("error_code", 0) or 0)
            topics = group.get("topics") or []
        else:
            top_code = int(response.get("error_code", 0) or 0)
            topics = response.get("topics") or []
        if top_code:
            name = Errors.for_code(top_code).name
            logger.debug("OffsetFetch failed with %s", name)
            if top_code == Errors.CoordinatorLoadInProgressError.errno:
                future.failure(Errors.CoordinatorLoadInProgressError())
            elif top_code in (
                Errors.NotCoordinatorError.errno,
                Errors.CoordinatorNotAvailableError.errno,
            ):
                self.mark_coordinator_unknown(f"error response {name}")
                future.failure(_error_for(top_code))
            elif top_code == Errors.GroupAuthorizationFailedError.errno:
                future.failure(
                    Errors.GroupAuthorizationFailedError(
                        f"not authorized to access group {self.rebalance_config.group_id}"
                    )
                )
            elif top_code in (
                Errors.StaleMemberEpochError.errno,
                Errors.UnknownMemberIdError.errno,
            ):
                logger.error(
                    "OffsetFetch failed with %s for member %s epoch %s: the member is not part of "
                    "the group at that epoch (it left, was fenced or moved on)",
                    name,
                    sent.member_id,
                    sent.generation_id,
                )
                future.failure(
                    _error_for(
                        top_code,
                        f"OffsetFetch failed with {name} for group "
                        f"{self.rebalance_config.group_id}",
                    )
                )
            else:
                future.failure(
                    Errors.KafkaError(f"unexpected error in OffsetFetch response: {name}")
                )
            return
        offsets: dict[TopicPartition, OffsetAndMetadata | None] = {}
        unauthorized: set[str] = set()
        unstable: set[TopicPartition] = set()
        for topic in topics:
            tname = str(topic.get("name"))
            for part in topic.get("partitions") or []:
                tp = TopicPartition(tname, int(part.get("partition_index", -1)))
                code = int(part.get("error_code", 0) or 0)
                if code:
                    name = Errors.for_code(code).name
                    if code == Errors.UnknownTopicOrPartitionError.errno:
                        future.failure(Errors.KafkaError(f"topic or partition {tp} does not exist"))
                        return
                    if code == Errors.TopicAuthorizationFailedError.errno:
                        unauthorized.add(tname)
                        continue
                    if code == Errors.UnstableOffsetCommitError.errno:
                        unstable.add(tp)
                        continue
                    future.failure(
                        Errors.KafkaError(
                            f"unexpected error in OffsetFetch response for {tp}: {name}"
                        )
                    )
                    return
                offset = int(part.get("committed_offset", -1))
                if offset >= 0:
                    epoch = part.get("committed_leader_epoch", -1)
                    offsets[tp] = OffsetAndMetadata(
                        offset,
                        part.get("metadata") or "",
                        None if epoch is None or epoch < 0 else int(epoch),
                    )
                else:
                    logger.debug("found no committed offset for %s", tp)
                    offsets[tp] = None
        if unauthorized:
            future.failure(
                Errors.TopicAuthorizationFailedError(
                    f"not authorized to read offsets of topics {sorted(unauthorized)}",
                    unauthorized_topics=unauthorized,
                )
            )
        elif unstable:
            logger.info(
                "offsets of %s are not stable yet (pending transactional commit); retrying",
                [str(tp) for tp in sorted(unstable)],
            )
            future.failure(
                Errors.UnstableOffsetCommitError(
                    f"there are unstable offsets for {[str(tp) for tp in sorted(unstable)]}"
                )
            )
        else:
            future.success(offsets)

    def refresh_committed_offsets_if_needed(self, timer: Timer) -> bool:
        """Seek initializing partitions to their committed offsets; False on timeout."""
        initializing = self.subscriptions.initializing_partitions()
        if not initializing:
            return True
        offsets = self.fetch_committed_offsets(initializing, timer)
        if offsets is None:
            return False
        for tp, om in offsets.items():
            if om is None:
                continue
            if om.leader_epoch is not None:
                self.metadata.update_last_seen_epoch_if_newer(tp, om.leader_epoch)
            # The partition may have been revoked while the request was in flight.
            if self.subscriptions.is_assigned(tp):
                cluster = self.metadata.cluster
                leader = LeaderAndEpoch(cluster.leader_for(tp), cluster.leader_epoch(tp))
                self.subscriptions.seek_unvalidated(
                    tp, FetchPosition(om.offset, om.leader_epoch, leader)
                )
                logger.info(
                    "setting offset for partition %s to the committed offset %s", tp, om.offset
                )
        return True

    # ============================================= consumer group protocol (KIP-848)
    def heartbeat_subscription(self) -> tuple[list[str] | None, str | None]:
        """What the next ConsumerGroupHeartbeat subscribes to: (topic names, broker regex).

        A ``re`` pattern goes to the broker as ``SubscribedTopicRegex`` when the coordinator
        speaks ConsumerGroupHeartbeat v1 (Apache Kafka 4.0+) and RE2 can read it; otherwise it
        is matched locally against the metadata and sent as names, as the Java client does
        for a ``java.util.regex.Pattern``. Called with the coordinator lock held.
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
            self.membership.state.value if self.membership is not None else "-",
        )

    def _start_heartbeat_manager_if_needed(self) -> ConsumerHeartbeatRequestManager:
        with self._lock:
            manager = self._hb_manager
            if manager is None or (manager.closed and not self._closed):
                assert self.membership is not None
                manager = ConsumerHeartbeatRequestManager(self, self.membership)
                self._hb_manager = manager
                manager.start()
            return manager

    def _poll_consumer_protocol(self, timer: Timer, m: ConsumerMembershipManager) -> bool:
        self.maybe_update_subscription_metadata()
        self.invoke_completed_offset_commit_callbacks()
        if not self.subscriptions.has_auto_assigned_partitions():
            self.maybe_auto_commit_offsets_async(timer.current_time_ms)
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
        self.maybe_auto_commit_offsets_async(timer.current_time_ms)
        return True

    def _release_lost_and_rejoin(
        self, m: ConsumerMembershipManager, manager: ConsumerHeartbeatRequestManager
    ) -> None:
        """Fenced or stale: others may own our partitions now; give them up as lost, rejoin."""
        lost = set(self.subscriptions.assigned_partitions())
        self.revocations.clear()
        exc = self.invoke_partitions_lost(lost) if lost else None
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
        pending_revoke = self.revocations.to_be_revoked() if self.kip983_enabled else set()
        revoked = owned - resolved
        added = resolved - owned
        if revoked and self.kip983_enabled:
            # KIP-983: the revocation completes at the start of a later poll (begin_poll) and
            # the broker hears of it only then; the partitions that arrive are taken now, so
            # processing goes on at full speed while the revoked ones are being finished.
            new = revoked - pending_revoke
            if new:
                self.subscriptions.mark_pending_revocation(new)
                self.revocations.request_revoke(new)
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
            if self.auto_commit_enabled:
                self.maybe_auto_commit_offsets_sync(
                    self.time.timer(self.rebalance_config.request_timeout_ms)
                )
            first_exc = self.invoke_partitions_revoked(revoked)
            self.subscriptions.assign_from_subscribed(sorted(owned - revoked))
        new_owned = (owned - revoked) | added
        if not revoked and not added and self._topic_ids_of(new_owned) == acked:
            return
        try:
            self._assign_reconciled(m, manager, new_owned, added, revoked)
        finally:
            if first_exc is not None:
                raise first_exc

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
        if self.auto_commit_enabled:
            self.next_auto_commit_timer.update_and_reset(self.auto_commit_interval_ms)
        assign_exc = self.invoke_partitions_assigned(added)
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
        if self.auto_commit_enabled and state is ConsumerMemberState.STABLE:
            self.next_auto_commit_timer.update(now_ms)
            wait = min(wait, self.next_auto_commit_timer.remaining_ms)
        return wait

    def generation_if_stable(self) -> Generation | None:
        """Classic: the generation when STABLE. Consumer protocol: (member epoch, member id)
        while the member holds a valid epoch, which commits carry."""
        if self.membership is None:
            return super().generation_if_stable()
        with self._lock:
            m = self.membership
            if m.state.in_group() and m.member_epoch > 0:
                return Generation(m.member_epoch, m.member_id, None)
            return None

    def rebalance_in_progress(self) -> bool:
        """Classic: JoinGroup/SyncGroup outstanding. Consumer protocol: joining."""
        if self.membership is None:
            return super().rebalance_in_progress()
        with self._lock:
            return self.membership.state is ConsumerMemberState.JOINING

    def member_id(self) -> str:
        """Our member id ("" before the first join with the classic protocol)."""
        if self.membership is None:
            return super().member_id()
        with self._lock:
            return self.membership.member_id

    def maybe_leave_group(self, reason: str, force_static: bool = False) -> Future[None] | None:
        """Classic: LeaveGroup. Consumer protocol: a heartbeat with epoch -1 (-2 for a static
        member, which keeps its partitions for the session timeout unless ``force_static``)."""
        m = self.membership
        if m is None:
            return super().maybe_leave_group(reason, force_static)
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
        super()._close_heartbeat_thread(timeout_s)

    def _close_consumer_protocol(self, timer: Timer, leave_group: bool | None) -> None:
        self._close_heartbeat_thread(max(0.1, timer.remaining_ms / 1000.0))
        with self._lock:
            self._closed = True
        future = None
        try:
            if leave_group is not False and self.rebalance_config.leave_group_on_close:
                self.on_leave_prepare()
        finally:
            if leave_group is not False:
                future = self.maybe_leave_group(
                    "the consumer is being closed", force_static=leave_group is True
                )
            self._await_pending_requests(timer, future)
