"""The classic protocol's consumer member (Java ``ConsumerCoordinator``).

On top of :class:`~kafkaconsumer.internals.group.abstract_coordinator.AbstractCoordinator`
(JoinGroup/SyncGroup/Heartbeat) and the shared
:class:`~kafkaconsumer.internals.group.consumer_group_member.ConsumerGroupMember` (listeners,
KIP-983, commits, metadata watch) it

- encodes this member's subscription for JoinGroup and, as leader, runs the assignor;
- applies the assignment: eager (revoke all before joining) or cooperative (KIP-429: only
  partitions that move are revoked, and a follow-up rebalance hands them over);
- auto-commits before a rebalance (bounded by the rebalance timeout);
- as leader, watches the metadata so that new matching topics, partition count changes and
  deleted topics trigger a rebalance.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kafkaconsumer import errors as Errors
from kafkaconsumer.config import config_value
from kafkaconsumer.internals.assignors import (
    ConsumerPartitionAssignor,
    RebalanceProtocol,
    common_protocol,
    resolve_assignors,
    validate_cooperative_assignment,
)
from kafkaconsumer.internals.consumer_protocol import (
    PROTOCOL_TYPE,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafkaconsumer.internals.group.abstract_coordinator import AbstractCoordinator, MemberState
from kafkaconsumer.internals.group.consumer_group_member import ConsumerGroupMember
from kafkaconsumer.internals.group.group_member import (
    NO_GENERATION,
    Generation,
    GroupRebalanceConfig,
)
from kafkaconsumer.internals.interfaces import CoordinatorClient
from kafkaconsumer.internals.subscription_state import SubscriptionState
from kafkaconsumer.metadata import ConsumerMetadata
from kafkaconsumer.metrics import Metrics
from kafkaconsumer.network.future import Future
from kafkaconsumer.structs import ConsumerGroupMetadata, TopicPartition
from kafkaconsumer.utils.clock import Time
from kafkaconsumer.utils.timer import Timer

if TYPE_CHECKING:
    from kafkaconsumer.protocol.message_types import JoinGroupResponse, JoinGroupResponseMember

logger = logging.getLogger(__name__)

__all__ = ["ConsumerCoordinator"]

_COOPERATIVE_STICKY = "cooperative-sticky"
#: How often a consumer that keeps fetching during a rebalance checks on the JoinGroup/SyncGroup.
_JOIN_ATTENTION_MS = 50
_DEFAULT_REASON = "rebalance enforced by user"


class ConsumerCoordinator(ConsumerGroupMember, AbstractCoordinator):
    """Java ``ConsumerCoordinator``: the group side of one ``KafkaConsumer`` (classic protocol).

    Construct with the consumer configuration (a Mapping of Java keys), the thread-safe
    ``ConsumerNetworkClient``, the consumer's :class:`SubscriptionState` and
    :class:`~kafkaconsumer.metadata.ConsumerMetadata`.

    Thread-safety: public methods are called from the user's thread (the consumer's own guard
    keeps it to one); the heartbeat thread shares the membership state through the group lock
    of :class:`~kafkaconsumer.internals.group.group_member.GroupMember`. Listeners, assignors,
    commit callbacks and commit interceptors run on the user's thread outside every lock.
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
        AbstractCoordinator.__init__(
            self, GroupRebalanceConfig.from_config(config), client, time=time, heartbeat=heartbeat
        )
        self._init_consumer_member(
            config, subscriptions, metadata, interceptors=interceptors, metrics=metrics
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
        self.assignors: list[ConsumerPartitionAssignor] = list(assignors)  # set once
        try:
            self.protocol: RebalanceProtocol = common_protocol(self.assignors)  # set once
        except ValueError:
            raise Errors.ConfigError(
                "the assignors in partition.assignment.strategy "
                f"{[a.name for a in self.assignors]} share no rebalance protocol"
            ) from None
        self.is_leader = False  # user's thread
        self.assignment_snapshot: dict[str, int] | None = None  # user's thread
        self.join_prepare_timer: Timer | None = None  # user's thread
        self.auto_commit_offset_request_future: Future[Any] | None = None  # user's thread
        # Delay of the cooperative follow-up rejoin (0 = at once, as Java). Some brokers answer
        # a follower's pending SyncGroup only periodically; rejoining at once can then make
        # that SyncGroup fail and cost the group another round.
        self.cooperative_rejoin_delay_ms = int(
            config_value(config, "internal.cooperative.rejoin.delay.ms")
        )
        self._follow_up_rejoin_at: int | None = None  # user's thread
        # The partitions the last JoinGroup reported as owned.
        self._joined_owned: frozenset[TopicPartition] = frozenset()  # user's thread
        # (generation, metadata version asked for) while the leader waits for one refresh.
        self._leader_metadata_wait: tuple[int, int] | None = None  # user's thread

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
        self._joined_owned = frozenset(owned)
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
        if wait_for_join_group is None:
            wait_for_join_group = not self.subscriptions.assigned_partitions()
        self.maybe_update_subscription_metadata()
        self.commits.invoke_completed_offset_commit_callbacks()
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
        self.commits.maybe_auto_commit_offsets_async(timer.current_time_ms)
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
        if not self.commits.auto_commit_enabled or rebalancing or coordinator_unknown:
            # An auto-commit cannot be sent before the rebalance or the coordinator lookup is
            # over, so an expired auto-commit timer must not make every wait zero: that turns
            # poll() into a busy loop which starves the user's other threads.
            return wait
        self.commits.next_auto_commit_timer.update(now_ms)
        return min(self.commits.next_auto_commit_timer.remaining_ms, wait)

    def enforce_rebalance(self, reason: str | None = None) -> None:
        """Ask for a rebalance at the next poll (Java ``enforceRebalance``)."""
        if not self.subscriptions.has_auto_assigned_partitions():
            raise Errors.IllegalStateError(
                "Tried to force a rebalance but consumer does not have a group."
            )
        self.request_rejoin(reason or _DEFAULT_REASON)

    # ======================================================= generation and commit hooks
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
        self._note_response_error(api, code)
        super()._reset_state_on_response_error(api, code, reset_member_id)

    def handle_poll_timeout_expiry(self) -> None:
        """Classic protocol: note the cause for a later failed commit, then leave the group."""
        self.note_poll_timeout()
        super().handle_poll_timeout_expiry()

    def commit_generation_state(self, sent: Generation) -> tuple[bool, bool]:
        """(the generation is still ``sent``, a rebalance is being prepared)."""
        with self._lock:
            return self.generation == sent, self.state is MemberState.PREPARING_REBALANCE

    def reset_state_on_response_error(self, api: str, code: int, reset_member_id: bool) -> None:
        """A group error in ``api``'s response ended the generation: note why, reset."""
        self._reset_state_on_response_error(api, code, reset_member_id)

    def offset_fetch_member(self) -> Generation | None:
        """None: a classic member's OffsetFetch does not prove membership."""
        return None

    def on_commit_rebalance_in_progress(self) -> None:
        """Only possible between JoinGroup and SyncGroup: rejoin, keep the generation."""
        self.request_rejoin("offset commit failed since group is already rebalancing")

    def _session_timeout_description(self) -> str:
        return f"session.timeout.ms ({self.rebalance_config.session_timeout_ms} ms)"

    # ===================================================================== join prepare
    def on_join_prepare(self, timer: Timer, generation_id: int, member_id: str) -> bool:
        """Before (re)joining: auto-commit, then revoke (eager) or drop unsubscribed topics."""
        logger.debug(
            "executing on_join_prepare with generation %s and member id %s",
            generation_id,
            member_id,
        )
        if self.commits.auto_commit_enabled and self.auto_commit_offset_request_future is None:
            if self.join_prepare_timer is None:
                # Bounded by the rebalance timeout: the group waits at most that long for us.
                self.join_prepare_timer = self.time.timer(
                    self.rebalance_config.rebalance_timeout_ms
                )
            if self.protocol is RebalanceProtocol.EAGER:
                # Stop returning records that the commit below would not cover.
                self.subscriptions.mark_pending_revocation(self.subscriptions.assigned_partitions())
            self.auto_commit_offset_request_future = self.commits.auto_commit_offsets_async_now()
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
            self.commits.invoke_completed_offset_commit_callbacks()

        exc: BaseException | None = None
        assigned = set(self.subscriptions.assigned_partitions())
        if generation_id == NO_GENERATION.generation_id or member_id == NO_GENERATION.member_id:
            self.listener_invoker.revocations.clear()
            # The heartbeat thread reset the generation: others may own these partitions now.
            if assigned:
                logger.info(
                    "group %s: giving up partitions %s as lost: generation was reset",
                    self.rebalance_config.group_id,
                    sorted(assigned),
                )
                exc = self.listener_invoker.invoke_partitions_lost(assigned)
                self.subscriptions.assign_from_subscribed(())
        elif self.protocol is RebalanceProtocol.EAGER:
            self.listener_invoker.revocations.clear()
            exc = self.listener_invoker.invoke_partitions_revoked(assigned)
            self.subscriptions.assign_from_subscribed(())
        else:
            # KIP-983 revocations still pending stay so: the JoinGroup reports them as owned,
            # so no other member gets them before they complete (at a poll where they are not
            # delayed, which the bound on delays guarantees).
            subscribed = self.subscriptions.subscription()
            revoked = {tp for tp in assigned if tp.topic not in subscribed}
            if revoked:
                self.listener_invoker.revocations.forget(revoked)
                exc = self.listener_invoker.invoke_partitions_revoked(revoked)
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
        self,
        leader_id: str,
        protocol: str,
        members: list[JoinGroupResponseMember],
        skip_assignment: bool,
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
        self, response: JoinGroupResponse, timer: Timer, deadline_ms: int
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
        if self.commits.auto_commit_enabled:
            self.commits.next_auto_commit_timer.update_and_reset(
                self.commits.auto_commit_interval_ms
            )
        if self.listener_invoker.kip983_enabled:
            self._kip983_join_complete(owned, assigned)
        if revoked and not self.listener_invoker.kip983_enabled:
            # Java order: the listener sees the old assignment, then it changes.
            revoke_exc = self.listener_invoker.invoke_partitions_revoked(revoked)
            first_exc = first_exc or revoke_exc
            self._request_follow_up_rejoin(revoked)
            self.subscriptions.assign_from_subscribed(sorted(assigned))
        elif revoked:
            # KIP-983: keep owning them until the revocation completes in the next poll.
            self.subscriptions.assign_from_subscribed(sorted(assigned | revoked))
            self.subscriptions.mark_pending_revocation(revoked)
            self.listener_invoker.revocations.request_revoke(
                revoked, self.rebalance_config.rebalance_timeout_ms
            )
            logger.info(
                "group %s: partitions %s will be revoked at the next poll",
                self.rebalance_config.group_id,
                sorted(revoked),
            )
        else:
            self.subscriptions.assign_from_subscribed(sorted(assigned))
        assign_exc = self.listener_invoker.invoke_partitions_assigned(added)
        first_exc = first_exc or assign_exc
        if first_exc is not None:
            raise first_exc

    def _complete_due_revocations(self, due: set[TopicPartition]) -> None:
        """Revoke ``due`` (lost when the generation is gone), then rejoin to hand them over."""
        due = due & set(self.subscriptions.assigned_partitions())
        if not due:
            return
        with self._lock:
            generation = self.generation
            state = self.state
        if generation.generation_id == NO_GENERATION.generation_id or state is MemberState.UNJOINED:
            exc = self.listener_invoker.invoke_partitions_lost(due)
        else:
            exc = self.listener_invoker.invoke_partitions_revoked(due)
            self._request_follow_up_rejoin(due)
        remaining = set(self.subscriptions.assigned_partitions()) - due
        self.subscriptions.assign_from_subscribed(sorted(remaining))
        if exc is not None:
            raise exc

    def on_leave_prepare(self) -> None:
        """Revoke (or, when the generation is gone, lose) everything before leaving."""
        gen = self.generation_snapshot()
        dropped = set(self.subscriptions.assigned_partitions())
        self.listener_invoker.revocations.clear()
        if self.subscriptions.has_auto_assigned_partitions() and dropped:
            if (
                gen.generation_id == NO_GENERATION.generation_id
                or gen.member_id == NO_GENERATION.member_id
                or self.rebalance_in_progress()
            ):
                exc = self.listener_invoker.invoke_partitions_lost(dropped)
            else:
                exc = self.listener_invoker.invoke_partitions_revoked(dropped)
            self.subscriptions.assign_from_subscribed(())
            if exc is not None:
                raise exc

    def _kip983_join_complete(
        self, owned: set[TopicPartition], assigned: set[TopicPartition]
    ) -> None:
        """Pending revocations across a rebalance: keep what is assigned again; hand over
        what completed while the JoinGroup still reported it as owned."""
        kept = self.listener_invoker.revocations.pending() & assigned
        if kept:
            self.listener_invoker.revocations.forget(kept)
            self.subscriptions.clear_pending_revocation(kept)
        released = set(self._joined_owned) - owned - assigned
        if released and self.protocol is RebalanceProtocol.COOPERATIVE:
            # The leader withheld them from their next owner, and the SyncGroup answer
            # cleared the rejoin their completion asked for: ask again.
            self._request_follow_up_rejoin(released)

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
